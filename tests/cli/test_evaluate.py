"""The command line: evaluate, compare, variants; output shapes, one-line errors, exit codes.

Every run uses a toy recipe file written to tmp_path, stochastic agents, a few agents and
steps, and the serial executor (no process pool to start).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tests.helpers import APPENDIX
from tests.storage_faults import TPDISC, read_only, size_limited
from tests.storage_faults import one_line_error as failed_in_one_line
from tpdisc.cli import app
from tpdisc.domain import data

runner = CliRunner()
FAST = ["--agents", "3", "--steps", "5", "--sims", "2", "--agent-type", "stochastic"]
SERIAL = ["--executor", "serial"]


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def evaluate(*args: str | Path):
    return runner.invoke(app, ["evaluate", *map(str, args), *SERIAL])


def one_line_error(result, *fragments: str) -> str:
    """The run failed with exit code 1 and a single 'error: ...' line naming ``fragments``."""
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def test_evaluate_json_shape(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "res" / "out.json"
    result = evaluate("paired", "asocial", *FAST, "--recipes", recipes, "--json", out)
    assert result.exit_code == 0, result.output
    assert "paired" in result.stdout and "asocial" in result.stdout
    payload = json.loads(out.read_text())
    assert set(payload) == {"run", "config", "evaluation", "results", "versus_reference"}
    run = payload["run"]
    assert run["tpdisc_version"] and run["started"] <= run["finished"]
    assert payload["evaluation"]["protocols"] == ["paired", "asocial"]
    config = payload["config"]
    assert (config["n_agents"], config["n_steps"], config["agent_type"]) == (3, 5, "stochastic")
    assert config["seeds"] == [0, 1]
    assert config["recipes_sha256"] and config["reachable"] == 15
    assert [r["protocol"] for r in payload["results"]] == ["paired", "asocial"]
    for r in payload["results"]:
        assert {"protocol", "mean", "sem", "final", "curve_mean"} <= set(r)
        assert len(r["final"]) == 2 and all(type(v) is int for v in r["final"])
        assert r["mean"] == pytest.approx(np.mean(r["final"]))
        assert r["sem"] == pytest.approx(np.std(r["final"], ddof=1) / np.sqrt(2))
        assert len(r["curve_mean"]) == 6 and r["curve_mean"][0] == 4.0
        assert r["curve_mean"][-1] == pytest.approx(r["mean"])


def test_evaluate_defaults_to_the_five_standard_baselines(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = evaluate(*FAST, "--sims", "1", "--recipes", recipes, "--json", out)
    assert result.exit_code == 0, result.output
    names = [r["protocol"] for r in json.loads(out.read_text())["results"]]
    assert names == ["asocial", "paired", "dynamic", "graph", "stochastic"]


def test_evaluate_population_and_log_dir(recipes: Path, tmp_path: Path) -> None:
    out, logs = tmp_path / "out.json", tmp_path / "logs"
    result = evaluate(
        "paired", *FAST, "--population", "stochastic:2,stochastic:3", "--recipes", recipes,
        "--json", out, "--log-dir", logs,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    config = json.loads(out.read_text())["config"]
    assert config["n_agents"] == 5 and config["population"] == [
        ["stochastic", 2],
        ["stochastic", 3],
    ]
    assert sorted(p.name for p in logs.iterdir()) == [
        "paired-seed0.parquet",
        "paired-seed1.parquet",
    ]


def test_evaluate_is_reproducible_and_seeded(recipes: Path, tmp_path: Path) -> None:
    def finals(seed: str, name: str) -> list[list[int]]:
        out = tmp_path / name
        args = ["stochastic", *FAST, "--sims", "3", "--seed", seed, "--steps", "12"]
        assert evaluate(*args, "--recipes", recipes, "--json", out).exit_code == 0
        return [r["final"] for r in json.loads(out.read_text())["results"]]

    assert finals("0", "a.json") == finals("0", "b.json")
    assert finals("0", "a.json") != finals("5", "c.json")


def test_evaluate_plot_writes_pngs(recipes: Path, tmp_path: Path) -> None:
    plot = tmp_path / "figs"
    result = evaluate("paired", "graph", *FAST, "--recipes", recipes, "--plot", plot)
    assert result.exit_code == 0, result.output
    for name in ("coverage.png", "pairwise.png"):
        assert (plot / name).read_bytes()[:4] == b"\x89PNG"
    assert json.loads((plot / "pairwise.json").read_text())["names"]


def test_evaluate_ablate(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = evaluate("paired", "--ablate", *FAST, "--recipes", recipes, "--json", out)
    assert result.exit_code == 0, result.output
    results = json.loads(out.read_text())["results"]
    assert [r["protocol"] for r in results] == ["paired", "paired (ablated)"]
    assert results[0]["seeds"] == results[1]["seeds"]


def test_compare_writes_results_and_figures(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = runner.invoke(
        app, ["compare", "asocial", "stochastic", *FAST, *SERIAL, "--recipes", str(recipes),
              "--out", str(out)]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} >= {"results.json", "coverage.png", "pairwise.png"}
    names = [r["protocol"] for r in json.loads((out / "results.json").read_text())["results"]]
    assert names == ["asocial", "stochastic"]


def test_spec_style_file_runs_trusted(recipes: Path, tmp_path: Path) -> None:
    path = tmp_path / "recency.py"
    path.write_text(APPENDIX)
    out = tmp_path / "out.json"
    result = evaluate(path, "--trusted", *FAST, "--recipes", recipes, "--json", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["results"][0]["protocol"] == "recency"


def test_spec_style_file_runs_sandboxed_like_trusted(recipes: Path, tmp_path: Path) -> None:
    from tpdisc.sandbox import sandbox_support

    if not sandbox_support():
        pytest.skip("the sandbox cannot confine protocols on this platform")
    path = tmp_path / "recency.py"
    path.write_text(APPENDIX)
    finals = []
    for extra in ([], ["--trusted"]):
        out = tmp_path / f"out{len(extra)}.json"
        result = evaluate(path, *extra, *FAST, "--recipes", recipes, "--json", out)
        assert result.exit_code == 0, result.output
        finals.append(json.loads(out.read_text())["results"][0]["final"])
    assert finals[0] == finals[1]


def test_variants_json(recipes: Path) -> None:
    result = runner.invoke(app, ["variants", "--recipes", str(recipes), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {row["variant"]: row for row in data["variants"]}
    assert list(rows) == ["full", "depth-limited", "3-item", "heterogeneous", "dropout"]
    assert rows["full"]["reachable"] == 15
    assert rows["depth-limited"]["reachable"] == 14
    assert rows["3-item"]["reachable_per_start_set"] == [13, 6, 7, 7]
    assert rows["heterogeneous"]["reachable_per_start_set"] == [3, 4, 4, 4, 3, 4]
    assert rows["heterogeneous"]["start_sets"][0] == ["air", "earth"]
    assert rows["dropout"]["reachable"] <= 15
    depth2 = runner.invoke(
        app, ["variants", "--recipes", str(recipes), "--json", "--max-depth", "2"]
    )
    assert json.loads(depth2.stdout)["variants"][1]["reachable"] == 13
    # the toy game's start sets all reach far fewer than the reference's 587: flagged
    (note,) = [n for n in data["notes"] if n.startswith("3-item")]
    assert "587–684" in note and "reaches 6" in note
    (depth,) = [n for n in data["notes"] if n.startswith("depth-limited")]
    assert "the reference's depth-3 game 86" in depth and "the closest" in depth


def test_variants_table(recipes: Path) -> None:
    result = runner.invoke(app, ["variants", "--recipes", str(recipes)])
    assert result.exit_code == 0
    assert "depth-limited" in result.stdout and "heterogeneous" in result.stdout


# --- errors ---------------------------------------------------------------------------------


def test_malformed_recipe_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    broken = json.loads(json.dumps(TOY))
    broken["entities"]["mud"]["recipes"] = [["earth", "sand"]]
    bad.write_text(json.dumps(broken))
    one_line_error(evaluate("paired", *FAST, "--recipes", bad), str(bad), "'sand'", "'mud'")
    bad.write_text("{")
    one_line_error(evaluate("paired", *FAST, "--recipes", bad), str(bad), "not valid JSON")
    missing = tmp_path / "missing.json"
    one_line_error(
        runner.invoke(app, ["variants", "--recipes", str(missing)]), str(missing), "cannot read"
    )


def test_no_recipe_data_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setattr(data, "URL", "http://127.0.0.1:9/alchemy2.json")
    line = one_line_error(evaluate("paired", *FAST), "no recipe data", "TPDISC_RECIPES=PATH")
    assert "127.0.0.1:9" in line


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["pairs"], ["unknown protocol 'pairs'"]),
        (["nothere.py"], ["nothere.py: no such protocol file"]),
        (["paired", "--variant", "deep"], ["unknown variant 'deep'"]),
        (["paired", "--population", "robot:2"], ["unknown agent type 'robot'"]),
    ],
)
def test_bad_options(recipes: Path, args: list[str], fragments: list[str]) -> None:
    one_line_error(evaluate(*args, *FAST, "--recipes", recipes), *fragments)


def test_bad_agent_type(recipes: Path) -> None:
    result = evaluate("paired", *FAST, "--agent-type", "robot", "--recipes", recipes)
    one_line_error(result, "unknown agent type 'robot'")


def test_out_of_range_numbers_are_one_line_naming_the_range(recipes: Path) -> None:
    result = evaluate("paired", *FAST, "--agents", "0", "--recipes", recipes)
    one_line_error(result, "--agents 0: out of range, must be at least 1")


@pytest.mark.parametrize(
    ("source", "fragments"),
    [
        ("class P(:\n    pass\n", ["SyntaxError at line 1"]),
        (
            "class P:\n    def __init__(self, n, t):\n        pass\n"
            "    def share_memories(self, i_step, states):\n"
            "        return {} if 1 / (2 - i_step) else {}\n",
            ["ZeroDivisionError", "(line 5)", "share_memories at step 2"],
        ),
        (
            "class P:\n    def __init__(self, n, t):\n        pass\n"
            "    def share_memories(self, i_step, states):\n        return {0: [(7, 0)]}\n",
            ["invalid exchange at step 0", "sender 7 does not exist"],
        ),
        (
            "class A:\n    def share_memories(self, i, s):\n        return {}\n"
            "class B:\n    def share_memories(self, i, s):\n        return {}\n",
            ["several classes define share_memories (A, B)"],
        ),
    ],
)
def test_broken_protocol_file_names_the_file(
    recipes: Path, tmp_path: Path, source: str, fragments: list[str]
) -> None:
    path = tmp_path / "broken_proto.py"
    path.write_text(source)
    result = evaluate(path, "--trusted", *FAST, "--recipes", recipes)
    one_line_error(result, "broken_proto", *fragments)


def test_help_documents_every_option() -> None:
    for command in ("evaluate", "compare", "variants"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0
    text = runner.invoke(app, ["evaluate", "--help"]).output
    for option in ("--agents", "--steps", "--sims", "--seed", "--agent-type", "--variant",
                   "--ablate", "--recipes", "--json", "--plot"):  # fmt: skip
        assert option in text


def test_empowerment_options_reach_the_config(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "emp.json"
    args = ["--agents", "3", "--steps", "5", "--sims", "2", "--recipes", recipes]
    result = evaluate("asocial", *args, "--empowerment-choices", "owned=zero", "--json", out)
    assert result.exit_code == 0, result.output
    params = json.loads(out.read_text())["config"]["params"]
    assert params["empowerment"]["prior"]["backend"] == "ngram"
    assert params["empowerment"]["owned"] == "zero"
    assert params["empowerment"]["name"] == "calibrated-text"


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        (["--prior", "bogus"], "unknown prior backend 'bogus'"),
        (["--empowerment-choices", "owned=weird"], "owned='weird'"),
        (["--empowerment-choices", "colour=red"], "expected name=value"),
    ],
)
def test_bad_empowerment_options_are_one_line_errors(
    recipes: Path, option: list[str], fragment: str
) -> None:
    args = ["--agents", "3", "--steps", "5", "--sims", "2", "--recipes", recipes]
    one_line_error(evaluate("asocial", *args, *option), fragment)


def test_evaluate_json_keeps_the_protocols_own_metrics(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    protocol = Path(__file__).resolve().parents[2] / "examples" / "protocols" / "state_aware.py"
    result = evaluate(protocol, *FAST, "--recipes", recipes, "--json", out, "--trusted")
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())["results"][0]
    assert len(row["protocol_logs"]) == 2  # one list per simulation
    metrics = row["protocol_metrics"]
    assert set(metrics) == {"successes_sent", "failures_sent"}
    sent = [next(m["metric_value"] for m in logs if m["metric_name"] == "successes_sent")
            for logs in row["protocol_logs"]]  # fmt: skip
    assert metrics["successes_sent"]["mean"] == pytest.approx(sum(sent) / 2)
    assert metrics["successes_sent"]["description"] and metrics["successes_sent"]["sims"] == 2


def test_compare_keeps_the_earlier_results(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = ["compare", "paired", *FAST, *SERIAL, "--recipes", str(recipes), "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    first = (out / "results.json").read_text()
    again = runner.invoke(app, [*args, "--seed", "5"])
    assert again.exit_code == 0 and "are now in" in again.stderr
    assert (out / "previous" / "results.json").read_text() == first
    assert (out / "results.json").read_text() != first


def test_one_agent_and_a_sharing_protocol_is_said(recipes: Path) -> None:
    result = evaluate("paired", *FAST, "--agents", "1", "--recipes", recipes)
    assert result.exit_code == 0 and "with 1 agent no one shares: paired" in result.stderr


def test_table_tests_each_protocol_against_the_best_standard_baseline(
    recipes: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    args = ["stochastic", "asocial", "ring", *FAST, "--sims", "4", "--steps", "12"]
    result = evaluate(*args, "--recipes", recipes, "--json", out)
    assert result.exit_code == 0, result.output
    payload = json.loads(out.read_text())
    means = {r["protocol"]: r["mean"] for r in payload["results"]}
    best = max(("stochastic", "asocial"), key=means.__getitem__)  # ring is not standard
    versus = payload["versus_reference"]
    assert versus["reference"] == best and set(versus["protocols"]) == set(means) - {best}
    assert f"Δ vs {best}" in result.stdout and "reference" in result.stdout
    for name, row in versus["protocols"].items():
        assert row["difference"] == pytest.approx(means[name] - means[best])
        assert f"{row['difference']:+.2f}" in result.stdout


def test_reference_option_picks_the_protocol_to_beat(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = ["stochastic", "asocial", *FAST, "--sims", "3", "--reference", "asocial"]
    result = evaluate(*args, "--recipes", recipes, "--json", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["versus_reference"]["reference"] == "asocial"
    assert "Δ vs asocial" in result.stdout
    bad = evaluate("asocial", "paired", *FAST, "--recipes", recipes, "--reference", "ring")
    one_line_error(bad, "--reference 'ring'", "asocial, paired")


def test_no_standard_baseline_no_significance_column(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = evaluate("ring", "caveman", *FAST, "--recipes", recipes, "--json", out)
    assert result.exit_code == 0, result.output
    assert "versus_reference" not in json.loads(out.read_text()) and "Δ vs" not in result.stdout


def test_results_keep_every_simulations_curve_and_mechanism(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = evaluate(
        "paired", "asocial", *FAST, "--sims", "3", "--recipes", recipes, "--json", out
    )
    assert result.exit_code == 0, result.output
    for r in json.loads(out.read_text())["results"]:
        assert len(r["curves"]) == 3 and all(len(c) == 6 for c in r["curves"])
        assert [c[-1] for c in r["curves"]] == r["final"]
        assert np.mean(r["curves"], axis=0).tolist() == pytest.approx(r["curve_mean"])
        runs = r["mechanism_per_simulation"]
        assert len(runs) == 3 and all(set(m) == {"stochastic"} for m in runs)
        gains = [m["stochastic"]["inventory_gain"] for m in runs]
        assert r["mechanism"]["stochastic"]["inventory_gain"] == pytest.approx(np.mean(gains))


def test_compare_moves_nothing_through_a_link(recipes: Path, tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "cmp", tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ["compare", "paired", *FAST, *SERIAL, "--recipes", str(recipes), "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    (out / "previous").symlink_to(elsewhere, target_is_directory=True)
    again = runner.invoke(app, [*args, "--seed", "5"])
    assert again.exit_code == 1 and f"{out / 'previous'}: a symbolic link" in again.stderr
    assert not list(elsewhere.iterdir())


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "protocols" / "state_aware.py"


def test_a_file_alone_is_compared_with_the_standard_baselines(recipes: Path) -> None:
    result = evaluate(EXAMPLE, *FAST, "--recipes", recipes, "--trusted", "--json")
    assert result.exit_code == 0, result.output
    names = [r["protocol"] for r in json.loads(result.stdout)["results"]]
    assert names == ["state_aware", "asocial", "paired", "dynamic", "graph", "stochastic"]
    assert "compared with the standard baselines too" in result.stderr
    assert "--alone for only the protocols given" in result.stderr


def test_alone_evaluates_only_the_protocols_given(recipes: Path) -> None:
    result = evaluate(EXAMPLE, *FAST, "--recipes", recipes, "--trusted", "--alone", "--json")
    assert result.exit_code == 0, result.output
    assert [r["protocol"] for r in json.loads(result.stdout)["results"]] == ["state_aware"]
    assert "standard baselines" not in result.stderr
    named = evaluate(EXAMPLE, "paired", *FAST, "--recipes", recipes, "--trusted", "--json")
    assert [r["protocol"] for r in json.loads(named.stdout)["results"]] == [
        "state_aware",
        "paired",
    ]  # a baseline named: the protocols as given
    # several files are a comparison already (the reference's files with its own baselines)
    other = EXAMPLE.with_name("rarity_first.py")
    both = evaluate(EXAMPLE, other, *FAST, "--recipes", recipes, "--trusted", "--json")
    assert [r["protocol"] for r in json.loads(both.stdout)["results"]] == [
        "state_aware",
        "rarity_first",
    ]
    assert "standard baselines" not in both.stderr


def test_every_protocol_is_also_tested_against_asocial_play(recipes: Path) -> None:
    """A table of baselines against the best one says "not better" on every row; beside
    it, each against asocial play says whether sharing beats not sharing."""
    result = evaluate(*FAST, "--recipes", recipes, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    versus = data["versus_asocial"]
    assert versus["reference"] == "asocial"
    assert set(versus["protocols"]) == {"paired", "dynamic", "graph", "stochastic"}
    assert data["versus_reference"]["reference"] != "asocial"
    table = evaluate(*FAST, "--recipes", recipes)
    assert "Δ vs asocial" in table.stdout and "Δ vs " in table.stdout.replace("Δ vs asocial", "")
    against_asocial = evaluate(*FAST, "--recipes", recipes, "--reference", "asocial", "--json")
    assert "versus_asocial" not in json.loads(against_asocial.stdout)  # said once is enough


# --- round 5: one command at a time per output folder; writes that fail ------------------

# A protocol that waits for a file to appear before its first step: the command that runs
# it holds its output folder for as long as the test wants.
WAITING = """
import os
import time


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        pass

    def share_memories(self, i_step, agent_states):
        while not os.path.exists({gate!r}):
            time.sleep(0.05)
        return {{}}
"""


def test_a_second_compare_into_the_same_folder_is_refused_and_loses_nothing(
    recipes: Path, tmp_path: Path
) -> None:
    out, gate = tmp_path / "cmp", tmp_path / "gate"
    protocol = tmp_path / "waiting.py"
    protocol.write_text(WAITING.format(gate=str(gate)))
    first = subprocess.Popen(
        [*TPDISC, "compare", str(protocol), "paired", "--trusted", *FAST, *SERIAL,
         "--recipes", str(recipes), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (out / ".lock").is_file() or not (out / ".lock").read_text():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = runner.invoke(
            app, ["compare", "paired", *FAST, *SERIAL, "--recipes", str(recipes), "--out", str(out)]
        )
        assert one_line_error(second) == (
            f"error: {out}: another tpdisc command is writing into this folder (pid "
            f"{first.pid}); wait for it to end, or give another folder"
        )
    finally:
        gate.touch()
        _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "coverage.png", "pairwise.json", "pairwise.png", "results.json"
    ]  # fmt: skip
    names = [r["protocol"] for r in json.loads((out / "results.json").read_text())["results"]]
    assert names == ["waiting", "paired"]
    again = runner.invoke(
        app, ["compare", "paired", *FAST, *SERIAL, "--recipes", str(recipes), "--out", str(out)]
    )
    assert again.exit_code == 0 and (out / "previous" / "results.json").is_file()


@pytest.mark.parametrize(
    "command",
    [
        ["compare", "paired", *FAST, "--out", "OUT"],
        ["evaluate", "paired", *FAST, "--plot", "OUT"],
        ["evaluate", "paired", *FAST, "--log-dir", "OUT"],
        ["inspect", "paired", *FAST, "--out", "OUT"],
        ["report", "RUN", "--portraits", "0", "--out", "OUT"],
        ["analyze", "ablation", "RUN", "--plot", "OUT"],
        ["analyze", "volume", "paired", *FAST, "--plot", "OUT"],
        ["analyze", "features", "paired", *FAST, "--plot", "OUT"],
        ["analyze", "generalize", "paired", *FAST, "--plot", "OUT"],
        ["analyze", "embeddings", "RUN", "--plot", "OUT"],
    ],
    ids=lambda command: "-".join(w for w in command[:2] if w.isalpha()),
)
def test_every_command_writing_an_output_folder_is_refused_while_another_writes_there(
    recipes: Path, tmp_path: Path, command: list[str]
) -> None:
    from tpdisc.safefiles import hold_outputs
    from tpdisc.search.archive import Archive

    out, run = tmp_path / "out", tmp_path / "run"
    run.mkdir()
    Archive(run / Archive.FILE_NAME).close()
    (out / "mine.txt").parent.mkdir()
    (out / "mine.txt").write_text("kept")
    places = {"OUT": str(out), "RUN": str(run)}
    with hold_outputs(out):  # the lock every such command takes, held by another
        args = [places.get(a, a) for a in command]
        if command[1] != "embeddings":  # reads no recipes
            args += ["--recipes", str(recipes)]
        result = runner.invoke(app, args)
        assert one_line_error(result, f"{out}: another tpdisc command is writing into this")
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def test_compare_past_the_file_size_limit_is_one_line(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = ["compare", "paired", "asocial", *FAST, *SERIAL, "--recipes", str(recipes)]
    result = size_limited(20_000, [*TPDISC, *args, "--out", str(out)])
    line = failed_in_one_line(result)
    assert line.startswith(f"error: {out}/") and line.endswith(
        ": cannot write (File too large: the file-size limit of this process is 20,000 bytes "
        "(ulimit -f))"
    )


def test_compare_into_a_read_only_folder_is_one_line_before_simulating(
    recipes: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "colleague"
    folder.mkdir()
    args = ["compare", "paired", *FAST, *SERIAL, "--recipes", str(recipes)]
    for out in (folder / "cmp", folder):
        result = read_only(folder, [*TPDISC, *args, "--out", str(out)])
        assert failed_in_one_line(result) in (
            f"error: {out}: cannot make the folder (Read-only file system)",
            f"error: {out / '.lock'}: cannot lock (Read-only file system)",
        )
        assert "simulating" not in result.stderr


def test_protocols_that_name_no_run_load_no_search_module(tmp_path: Path) -> None:
    """Baselines and files are resolved without the archive, SQLite and pygments (a
    command's start: issue 48, item 5); a run's protocols still are (tests/search)."""
    protocol = tmp_path / "mine.py"
    protocol.write_text("class TransmissionProtocol: ...\n")
    code = (
        "import sys\n"
        "from tpdisc.cli.runs import run_references\n"
        f"assert run_references(('paired', {str(protocol)!r}, 'x:y'), trusted=False) == {{}}\n"
        "loaded = {'sqlite3', 'pygments', 'tpdisc.search.archive'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
