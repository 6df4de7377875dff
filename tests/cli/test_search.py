"""The search commands: evolve (offline and LLM, resume, kill -9) and archive."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tests.search.answers import final, requested
from tests.storage_faults import one_line_error as failed_in_one_line
from tests.storage_faults import size_limited, small_disk
from tpdisc.cli import app
from tpdisc.search.archive import Archive
from tpdisc.search.config import SearchConfig
from tpdisc.search.pick import run_pick
from tpdisc.testing.chat_server import FakeChatServer, Reply
from tpdisc.testing.fake_author import ProtocolAuthor

runner = CliRunner()
TINY = [
    "--sims",
    "2",
    "--steps",
    "8",
    "--agents",
    "4",
    "--agent-type",
    "stochastic",
    "--executor",
    "serial",
]


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def evolve(run_dir: Path, recipes: Path, *args: str):
    return runner.invoke(
        app, ["evolve", "--run-dir", str(run_dir), "--recipes", str(recipes), *TINY, *args]
    )


def test_offline_evolve_then_archive_commands(tmp_path, recipes) -> None:
    run_dir = tmp_path / "run"
    result = evolve(run_dir, recipes, "--iterations", "4")
    assert result.exit_code == 0, result.output
    assert "offline proposer" in result.stderr and "4 iterations: 4 valid" in result.output
    assert (run_dir / "best_fitness.png").stat().st_size > 0
    assert "warmup: 1" in (run_dir / "config.yaml").read_text()  # a quarter of 4

    listing = runner.invoke(app, ["archive", str(run_dir)])
    assert listing.exit_code == 0 and "stochastic" in listing.output and "i0004" in listing.output

    shown = runner.invoke(app, ["archive", str(run_dir), "--show", "i0001"])
    assert shown.exit_code == 0 and "class TransmissionProtocol" in shown.output
    # One name per protocol: its own, its parent's and its lineage's, never a row id.
    facts = shown.output.split("\n\n")[0]
    assert facts.startswith("i0001 — valid, warm-up, iteration 1")
    assert "parent none; lineage none; contrasts none" in facts
    missing = runner.invoke(app, ["archive", str(run_dir), "--show", "i0099"])
    assert missing.exit_code == 1 and "no protocol named 'i0099'" in missing.stderr
    evolved = runner.invoke(app, ["archive", str(run_dir), "--show", "i0004"]).output
    parent = r"(i\d{4}|asocial|paired|dynamic|graph|stochastic)"
    assert re.search(rf"parent {parent}; lineage {parent}( ← {parent})*; contrasts", evolved)
    by_id = runner.invoke(app, ["archive", str(run_dir), "--show", "6"])  # i0001's row id
    assert by_id.exit_code == 1 and "lists them by name (i0001, paired" in by_id.stderr

    data = json.loads(runner.invoke(app, ["archive", str(run_dir), "--json"]).output)
    assert data["totals"]["valid"] == 4 and data["totals"]["seeds"] == 5
    assert len(data["protocols"]) == 9
    assert "code" not in data["protocols"][0]
    shown_json = runner.invoke(app, ["archive", str(run_dir), "--json", "--show", "i0001"])
    one = json.loads(shown_json.output)
    assert one["name"] == "i0001" and "class TransmissionProtocol" in one["code"]

    exported = tmp_path / "best.py"
    result = runner.invoke(app, ["archive", str(run_dir), "--export", "i0001", str(exported)])
    assert result.exit_code == 0 and exported.is_file()
    again = runner.invoke(
        app,
        [
            "evaluate",
            str(exported),
            "--recipes",
            str(recipes),
            *TINY,
            "--json",
            str(tmp_path / "eval.json"),
        ],
    )
    assert again.exit_code == 0, again.output
    evaluated = json.loads((tmp_path / "eval.json").read_text())["results"][0]
    assert evaluated["final"] == one["fitness_values"]  # same seeds, same fitness

    plot = runner.invoke(app, ["archive", str(run_dir), "--plot", str(tmp_path / "f.png")])
    assert plot.exit_code == 0 and (tmp_path / "f.png").is_file()


def test_resume_extends_and_refuses_changes(tmp_path, recipes) -> None:
    run_dir = tmp_path / "run"
    assert evolve(run_dir, recipes, "--iterations", "2").exit_code == 0
    longer = evolve(run_dir, recipes, "--iterations", "3")
    assert longer.exit_code == 0 and "resuming" in longer.stderr
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        assert archive.last_iteration() == 3 and len(archive.candidates(valid_only=True)) == 8
    changed = runner.invoke(
        app,
        [
            "evolve",
            "--run-dir",
            str(run_dir),
            "--recipes",
            str(recipes),
            "--sims",
            "3",
            "--executor",
            "serial",
        ],
    )
    assert changed.exit_code == 1 and "sims=2" in changed.stderr


def test_a_search_records_its_prior_and_keeps_its_prior_seed(tmp_path, recipes) -> None:
    run_dir = tmp_path / "run"
    args = ["--iterations", "1", "--agent-type", "empowerment", "--prior-seed", "2"]
    result = evolve(run_dir, recipes, *args)
    assert result.exit_code == 0, result.output
    assert SearchConfig.load(run_dir / "config.yaml").sim.params.empowerment.prior.seed == 2
    printed = json.loads((run_dir / "agent_models.json").read_text())["empowerment"]["prior"]
    rows = json.loads(runner.invoke(app, ["prior", "show", "--json"]).output)
    assert printed in [row["fingerprint"] for row in rows] and printed["seed"] == 2
    changed = evolve(run_dir, recipes, *args[:4], "--prior-seed", "1")
    assert changed.exit_code == 1 and "prior.seed=2" in changed.stderr


def test_archive_errors_are_one_line(tmp_path) -> None:
    result = runner.invoke(app, ["archive", str(tmp_path)])
    assert result.exit_code == 1 and "not a search run directory" in result.stderr
    half = runner.invoke(app, ["evolve", "--run-dir", str(tmp_path / "r"), "--model", "m"])
    assert half.exit_code == 1 and "--base-url and --model" in half.stderr


def counts(archive_path: Path) -> tuple[int, int]:
    """(iterations done, valid protocols), read while another process may be writing."""
    if not archive_path.is_file():
        return 0, 0
    try:
        db = sqlite3.connect(f"file:{archive_path}?mode=ro", uri=True, timeout=5)
        try:
            iterations = db.execute("SELECT COUNT(*) FROM iterations").fetchone()[0]
            valid = db.execute("SELECT COUNT(*) FROM protocols WHERE status='valid'").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0, 0
    return iterations, valid


def test_llm_run_killed_with_sigkill_resumes_without_loss_or_duplicates(tmp_path, recipes) -> None:
    """The acceptance run in miniature: 12 iterations, 4 warm-up, broken code, 429s, 500s."""
    author = ProtocolAuthor(seed=2, slow_every=1, slow_delay=0.1)  # every answer slow
    with FakeChatServer(author) as server:

        def command(run_dir: Path) -> list[str]:
            return [
                sys.executable,
                "-m",
                "tpdisc.cli",
                "evolve",
                "--run-dir",
                str(run_dir),
                "--recipes",
                str(recipes),
                "--iterations",
                "12",
                "--warmup",
                "4",
                *TINY,
                "--base-url",
                server.base_url,
                "--model",
                "fake",
            ]

        killed = tmp_path / "killed"
        proc = subprocess.Popen(command(killed), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 240
        while counts(killed / Archive.FILE_NAME)[0] < 5:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
        time.sleep(0.1)  # into the next iteration: an LLM call or a simulation
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        done_at_kill, _ = counts(killed / Archive.FILE_NAME)
        assert 5 <= done_at_kill < 12
        resumed = subprocess.run(command(killed), capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr

        straight = tmp_path / "straight"
        whole = subprocess.run(command(straight), capture_output=True, text=True, timeout=300)
        assert whole.returncode == 0, whole.stderr

    with (
        Archive(killed / Archive.FILE_NAME, readonly=True) as a,
        Archive(straight / Archive.FILE_NAME, readonly=True) as b,
    ):
        for archive in (a, b):
            valid = archive.candidates(valid_only=True)
            totals = archive.totals()
            assert len(valid) == 5 + 12 and totals.iterations == 12
            assert [i["iteration"] for i in archive.iterations()] == list(range(1, 13))
            per_iteration = [c.iteration for c in valid if c.mode != "seed"]
            assert sorted(per_iteration) == list(range(1, 13))  # one protocol each, no copies
            names = [c.name for c in archive.candidates()]
            assert len(names) == len(set(names))
            assert totals.repairs >= 1 and all(
                c.error for c in archive.candidates(status="invalid")
            )
            assert totals.prompt_tokens > 0 and totals.completion_tokens > 0
        assert len(a.candidates(valid_only=True)) == len(b.candidates(valid_only=True))


def test_rescore_on_fresh_seeds(tmp_path, recipes) -> None:
    run_dir = tmp_path / "run"
    result = evolve(run_dir, recipes, "--iterations", "3", "--no-rescore")
    assert result.exit_code == 0, result.output
    assert "fresh seeds" not in result.output  # told not to
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        assert archive.rescores() == {}
        ranked = archive.summaries(valid_only=True, order="fitness")
        top = [c.id for c in ranked if c.mode != "seed"][:2]  # the best it found
    args = ["archive", str(run_dir), "--recipes", str(recipes), "--executor", "serial"]
    done = runner.invoke(app, [*args, "--rescore", "2", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)  # the verdict goes to stderr, so stdout stays JSON
    rescored = {p["id"]: p["rescored"] for p in data["protocols"] if p["rescored"]}
    assert sorted(rescored) == sorted(top)
    for scores in rescored.values():
        assert scores["seeds"] == [2, 3]  # the search scored on 0..1: the next block
        assert scores["mean"] == pytest.approx(sum(scores["fitness_values"]) / 2)
        assert scores["sem"] >= 0
    assert "on fresh seeds 2..3" in done.stderr
    table = runner.invoke(app, ["archive", str(run_dir)])
    assert "fresh seeds" in table.output and "never used" in table.output
    # seeds the search used are refused, in one line
    used = runner.invoke(app, [*args, "--rescore", "1", "--rescore-seed", "1"])
    assert used.exit_code == 1 and "seeds 1..2 are not fresh" in used.stderr
    alone = runner.invoke(app, [*args, "--rescore-seed", "7"])
    assert alone.exit_code == 1 and "--rescore-seed only applies with --rescore" in alone.stderr


def test_evolve_rescores_its_best_and_says_which_is_best_there(tmp_path, recipes) -> None:
    run_dir = tmp_path / "run"
    result = evolve(run_dir, recipes, "--iterations", "2")
    assert result.exit_code == 0, result.output
    assert "on fresh seeds 2..3" in result.output and "fresh seeds" in result.output
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        ranked = archive.summaries(valid_only=True, order="fitness")
        top = [c.id for c in ranked if c.mode != "seed"][:3]
        # The best it found, never its seeded baselines (not selected, so unbiased).
        assert sorted(archive.rescores()) == sorted(top) and top
        pick = run_pick(archive)
    assert f"best: {pick.name}, the best of the {len(top)} re-scored" in result.output
    assert "$0.0000" not in result.output + result.stderr  # offline: nothing spent, none said
    assert "LLM calls" not in result.output


def test_archive_show_takes_names_and_says_what_a_number_could_mean(tmp_path, recipes) -> None:
    help_text = " ".join(runner.invoke(app, ["archive", "--help"]).output.split())
    assert "not the row ids of --json" in help_text and "7 or i0002" not in help_text
    run_dir = tmp_path / "run"
    assert evolve(run_dir, recipes, "--iterations", "2").exit_code == 0
    data = json.loads(runner.invoke(app, ["archive", str(run_dir), "--json"]).output)
    ids = {p["name"]: p["id"] for p in data["protocols"]}
    by_name = runner.invoke(app, ["archive", str(run_dir), "--show", "i0002"])
    assert by_name.exit_code == 0 and by_name.output.startswith("i0002 — valid")
    number = str(ids["i0001"])  # after the seeds' rows; no iteration has that number
    by_number = runner.invoke(app, ["archive", str(run_dir), "--show", number])
    assert by_number.exit_code == 1
    expected = f"no protocol named '{number}' (protocols go by name: row id {number} of --json"
    assert f"{expected} is i0001);" in " ".join(by_number.stderr.split())
    two = runner.invoke(app, ["archive", str(run_dir), "--export", "2", str(tmp_path / "x.py")])
    assert "iteration 2's proposal is i0002" in " ".join(two.stderr.split())


def test_evolve_names_an_answer_cut_off_at_max_tokens(tmp_path, recipes) -> None:
    cut = requested(final(3))[:-200]
    script = [
        Reply.text(cut, finish_reason="length", completion_tokens=512),
        Reply.text(requested(final(3))),
    ]
    with FakeChatServer(script) as server:
        result = evolve(
            tmp_path / "run",
            recipes,
            *("--iterations", "1", "--base-url", server.base_url, "--model", "fake"),
            *("--max-tokens", "512"),
        )
        sent = [r.body.get("max_tokens") for r in server.requests]
    assert result.exit_code == 0, result.output
    assert sent == [512, 512]
    said = " ".join(result.stderr.split())
    assert (
        "i0001: the answer was cut off at 512 tokens (max_tokens 512) before its code was "
        "complete; raise --max-tokens (llm.max_tokens) if answers keep being cut off" in said
    )
    shown = runner.invoke(app, ["archive", str(tmp_path / "run"), "--show", "i0001"])
    assert "error: the answer was cut off at 512 tokens" in " ".join(shown.output.split())


# --- round 5: writes that fail keep what was stored, and the rerun resumes -----------------


def stored_iterations(run_dir: Path) -> int:
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        return archive.last_iteration()


def test_evolve_past_the_file_size_limit_is_one_line_and_the_rerun_resumes(
    tmp_path: Path, recipes: Path
) -> None:
    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "tpdisc.cli", "evolve", "--run-dir", str(run_dir)]
    args += ["--recipes", str(recipes), *TINY, "--iterations", "40", "--no-rescore"]
    stopped = size_limited(300_000, args)
    assert failed_in_one_line(stopped) == (
        f"error: {run_dir / Archive.FILE_NAME}: cannot write (File too large: the file-size "
        "limit of this process is 300,000 bytes (ulimit -f)); the write was undone, what the "
        "file held before is kept"
    )
    done = stored_iterations(run_dir)
    assert 1 <= done < 40
    rerun = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    said = " ".join(rerun.stderr.split())  # a long path may wrap the line
    assert f"resuming {run_dir}: offline proposer" in said
    assert f"iteration {done + 1} of 40" in said
    assert stored_iterations(run_dir) == 40


def test_evolve_on_a_full_disk_is_one_line_and_keeps_what_was_stored(
    tmp_path: Path, recipes: Path
) -> None:
    disk, kept = tmp_path / "disk", tmp_path / "kept"
    args = [sys.executable, "-m", "tpdisc.cli", "evolve", "--run-dir", str(disk / "run")]
    args += ["--recipes", str(recipes), *TINY, "--iterations", "40", "--no-rescore"]
    stopped = small_disk(disk, "400k", args, kept)
    line = failed_in_one_line(stopped)
    assert line.startswith(f"error: {disk / 'run'}/")
    assert ": cannot write (No space left on device (" in line
    assert 1 <= stored_iterations(kept / "run") < 40
