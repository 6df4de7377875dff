"""``tpdisc inspect``: pages and JSON, whose numbers agree with ``evaluate --details`` and
the behavioural features of ``analyze features`` on the same seeds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from typer.testing import CliRunner

from tests.analysis.test_portrait import ZERO_TO_ONE
from tests.conftest import TOY
from tpdisc.analysis.features import feature_values
from tpdisc.cli import app
from tpdisc.domain.recipes import parse_wordcraft
from tpdisc.domain.variants import VariantSpec, make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate

runner = CliRunner()
FAST = ["--agents", "4", "--steps", "9", "--sims", "3", "--agent-type", "stochastic"]
SERIAL = ["--executor", "serial"]


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def test_inspect_writes_pages_and_json_that_agree_with_evaluate_details(
    recipes: Path, tmp_path: Path
) -> None:
    protocol = tmp_path / "zero_to_one.py"
    protocol.write_text(ZERO_TO_ONE)
    out, numbers = tmp_path / "insp", tmp_path / "insp.json"
    args = [str(protocol), "stochastic", *FAST, *SERIAL, "--recipes", str(recipes), "--trusted"]
    result = runner.invoke(app, ["inspect", *args, "--out", str(out), "--json", str(numbers)])
    assert result.exit_code == 0, result.output
    for page in ("index.html", "zero_to_one/index.html", "stochastic/index.html"):
        assert (out / page).is_file()
    assert "Where the elements come from" in result.stdout
    payload = json.loads(numbers.read_text())
    zero, stochastic = payload["portraits"]
    assert zero["seeds"] == [0, 1, 2] and payload["evaluation"]["sims"] == 3
    flow = zero["flow"]
    delivered = [
        [s + f for s, f in zip(successes, failures, strict=True)]
        for successes, failures in zip(flow["successes"], flow["failures"], strict=True)
    ]
    assert delivered == [[0, 9, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    details = tmp_path / "details.json"
    result = runner.invoke(
        app, ["evaluate", *args, "--ablate", "--details", "--json", str(details)]
    )
    assert result.exit_code == 0, result.output
    evaluated = {r["protocol"]: r for r in json.loads(details.read_text())["results"]}
    for portrait in (zero, stochastic):
        name = portrait["name"]
        mechanism = evaluated[name]["mechanism"]["stochastic"]
        assert portrait["mechanism"]["stochastic"] == pytest.approx(mechanism)
        agents = portrait["agents"]["protocol"]
        assert agents["jaccard"][-1] == pytest.approx(mechanism["jaccard_distance"])
        assert agents["remake_fraction"] == pytest.approx(mechanism["remake_fraction"])
        assert agents["mean_inventory"][-1] == pytest.approx(mechanism["inventory_size"])
        assert portrait["coverage"]["protocol"]["final"] == evaluated[name]["final"]
        ablated = evaluated[f"{name} (ablated)"]
        assert portrait["coverage"]["ablation"]["final"] == ablated["final"]
        assert portrait["coverage"]["protocol"]["mean"] == pytest.approx(
            evaluated[name]["curve_mean"]
        )
        # where the elements come from: the same simulations, the same counts
        counts = evaluated[name]["accounting"]["stochastic"]["counts"]
        for way, cell in portrait["accounting"]["protocol"].items():
            assert cell["group"] == pytest.approx(counts[way]["group"])
            assert cell["self"] == pytest.approx(counts[way]["self"])
    # the behavioural features of the same simulations (analyze features' computation)
    domain = make_domain(parse_wordcraft(TOY, "toy"), VariantSpec())
    config = SimConfig(n_agents=4, n_steps=9, agent_type="stochastic")
    logged = []
    evaluate(domain, config, BaselineProtocol("stochastic"), [0, 1, 2],
             on_result=logged.append, record_log=True)  # fmt: skip
    features = feature_values(logged)
    whole = stochastic["content"]["whole_game"]
    assert whole["lacks_result"] == pytest.approx(features["item_novelty"])
    assert whole["rarity"] == pytest.approx(features["rarity_bias"])
    assert whole["has_2"] == pytest.approx(features["has_2_fraction"])


def test_inspect_defaults_to_five_sims_and_explains_every_option(recipes: Path) -> None:
    result = runner.invoke(app, ["inspect", "asocial", "--recipes", str(recipes), "--print-config"])
    assert result.exit_code == 0, result.output
    assert "sims: 5" in result.stdout
    result = runner.invoke(app, ["inspect", "--help"], env={"COLUMNS": "200"})
    for option in ("--sims", "--out", "--json", "--agent-type", "--population", "--beta",
                   "--variant", "--executor", "--trusted", "--time-limit"):  # fmt: skip
        assert option in result.stdout


def test_inspect_names_an_unknown_protocol_in_one_line(recipes: Path) -> None:
    result = runner.invoke(app, ["inspect", "nonesuch", "--recipes", str(recipes), *SERIAL])
    assert result.exit_code == 1
    assert "unknown protocol 'nonesuch'" in result.stderr


ODD_METRIC = '''
"""Says \x1b]0;pwned\x07 and \x1b[2J in its docstring."""


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.step = 0

    def share_memories(self, i_step, agent_states):
        self.step += 1
        return {}

    def get_logs(self):
        return [{"metric_name": "$\\\\notacommand{x}$", "metric_description": "$\\\\frac",
                 "metric_value": self.step}]
'''

MANY_METRICS = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.step = 0

    def share_memories(self, i_step, agent_states):
        self.step += 1
        return {}

    def get_logs(self):
        return [{"metric_name": f"m{k:04d}", "metric_description": "", "metric_value": k}
                for k in range(2000)]
"""


def test_outside_text_is_drawn_and_printed_as_it_is(recipes: Path, tmp_path: Path) -> None:
    protocol = tmp_path / "odd.py"
    protocol.write_text(ODD_METRIC)
    out, numbers = tmp_path / "insp", tmp_path / "insp.json"
    args = [str(protocol), *FAST, *SERIAL, "--recipes", str(recipes), "--trusted"]
    result = runner.invoke(app, ["inspect", *args, "--out", str(out), "--json", str(numbers)])
    assert result.exit_code == 0, result.output
    assert (out / "odd" / "metrics.png").read_bytes().startswith(b"\x89PNG")
    (portrait,) = json.loads(numbers.read_text())["portraits"]
    assert list(portrait["metrics"]) == ["$\\notacommand{x}$"]
    assert "\x1b" not in result.output


def test_thousands_of_metrics_a_step_cost_inspect_little(recipes: Path, tmp_path: Path) -> None:
    from tpdisc.analysis.portrait import MAX_METRICS

    protocol = tmp_path / "many.py"
    protocol.write_text(MANY_METRICS)
    out, numbers = tmp_path / "insp", tmp_path / "insp.json"
    args = ["--agents", "4", "--steps", "30", "--sims", "1", "--agent-type", "stochastic"]
    started = time.monotonic()
    result = runner.invoke(
        app,
        ["inspect", str(protocol), *args, *SERIAL, "--recipes", str(recipes), "--out", str(out),
         "--json", str(numbers)],
    )  # fmt: skip
    took = time.monotonic() - started
    assert result.exit_code == 0, result.output
    (portrait,) = json.loads(numbers.read_text())["portraits"]
    assert len(portrait["metrics"]) == MAX_METRICS
    height, width, _ = plt.imread(out / "many" / "metrics.png").shape
    assert height < 2_000 and width < 2_000
    assert took < 120  # sandboxed, on a busy machine; minutes and gigabytes before


def test_links_in_the_output_folder_are_replaced_or_refused(recipes: Path, tmp_path: Path) -> None:
    out, victim, elsewhere = tmp_path / "insp", tmp_path / "bashrc", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    victim.write_text("alias ls='ls -F'\n")
    (out / "index.html").symlink_to(victim)
    args = ["inspect", "asocial", *FAST, *SERIAL, "--recipes", str(recipes), "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "alias ls='ls -F'\n" and not (out / "index.html").is_symlink()
    (out / "asocial").rename(tmp_path / "old")
    (out / "asocial").symlink_to(elsewhere, target_is_directory=True)
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and f"{out / 'asocial'}: a symbolic link" in result.stderr
    assert not list(elsewhere.iterdir())
