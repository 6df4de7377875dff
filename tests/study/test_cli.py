"""``tpdisc study`` as a user runs it: presets printed, a study killed with SIGKILL in the
middle of its search and rerun, the status, and one-line errors."""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from tests.study.test_runner import TINY
from tpdisc.cli import app
from tpdisc.cli import study as study_cli
from tpdisc.protocols.baselines import STANDARD_BASELINES
from tpdisc.study.layout import StudyDir
from tpdisc.study.runner import STAGE_NAMES
from tpdisc.study.store import StudyStore

runner = CliRunner()
TPDISC = [sys.executable, "-m", "tpdisc.cli"]


def test_the_paper_preset_prints_the_studys_sizes() -> None:
    result = runner.invoke(app, ["study", "--preset", "paper", "--print-config"])
    assert result.exit_code == 0, result.output
    printed = yaml.safe_load(result.output)
    assert (printed["runs"], printed["long_steps"]) == (5, 300)
    search = printed["search"]
    assert (search["iterations"], search["sims"]) == (200, 30)
    assert (search["sim"]["n_agents"], search["sim"]["n_steps"]) == (10, 150)


def test_bad_input_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("best: {sims: 0}\n")
    result = runner.invoke(app, ["study", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "best.sims must be at least 1, got 0" in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["study", "--status", str(tmp_path)])
    assert result.exit_code == 1 and "not a study folder" in result.output
    result = runner.invoke(app, ["study", "--preset", "smoke"])
    assert result.exit_code == 1 and "--out DIR" in result.output


def _iterations_done(run: Path) -> int:
    path = run / "archive.sqlite"
    if not path.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            row = db.execute("SELECT MAX(iteration) FROM iterations").fetchone()
    except sqlite3.OperationalError:  # the search has not made its tables yet
        return 0
    return int(row[0] or 0)


def test_a_study_killed_in_its_search_resumes_without_redoing_anything(
    tmp_path: Path, real_recipes: Path
) -> None:
    study_file = tmp_path / "tiny.yaml"
    study_file.write_text(TINY.replace("iterations: 4", "iterations: 8"))
    out = tmp_path / "out"
    command = [*TPDISC, "study", str(study_file), "--out", str(out)]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while _iterations_done(out / "runs" / "evolve-1") < 2:
        assert first.poll() is None, "the study ended before it could be killed"
        assert time.monotonic() < deadline, "the search never reached iteration 2"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    with StudyStore(StudyDir(out).database) as store:
        before = {e["stage"] for e in store.events() if e["event"] == "finished"}
    killed_at = _iterations_done(out / "runs" / "evolve-1")
    assert before == {"baselines"} and killed_at < 8

    status = runner.invoke(app, ["study", "--status", str(out)])
    assert status.exit_code == 0
    assert "baselines" in status.output and "evolve-1 " in status.output

    second = subprocess.run([*TPDISC, "study", "--out", str(out)], capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "baselines: done earlier, skipped" in second.stderr
    with StudyStore(StudyDir(out).database) as store:
        events = store.events()
        baseline_sessions = store.sessions_of("baselines")
    finished = sorted(e["stage"] for e in events if e["event"] == "finished")
    assert finished == sorted(STAGE_NAMES)  # every stage finished exactly once
    resumed = {e["stage"] for e in events if e["event"] == "resumed"}
    assert resumed == {"search"}
    assert set(baseline_sessions) == {1}  # not one baseline simulation ran again
    with sqlite3.connect(out / "runs" / "evolve-1" / "archive.sqlite") as db:
        repeated = db.execute(
            "SELECT iteration, attempt FROM protocols WHERE mode != 'seed' "
            "GROUP BY iteration, attempt HAVING COUNT(*) > 1"
        ).fetchall()
        seeds = db.execute("SELECT COUNT(*) FROM protocols WHERE mode = 'seed'").fetchone()[0]
        iterations = [r[0] for r in db.execute("SELECT iteration FROM iterations")]
    assert repeated == []  # no iteration was proposed twice
    assert seeds == len(STANDARD_BASELINES)  # the archive was seeded once
    assert sorted(iterations) == list(range(1, 9))
    assert (out / "report" / "index.html").is_file()
    assert "report" in second.stdout


@pytest.mark.parametrize("preset", ["smoke", "paper"])
def test_presets_are_valid_configs(preset: str) -> None:
    result = runner.invoke(app, ["study", "--preset", preset, "--print-config"])
    assert result.exit_code == 0, result.output


def test_searches_at_once_share_one_display_with_each_bar_named_by_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=120)
    monkeypatch.setattr(study_cli, "err_console", terminal)
    ui = study_cli._CommandLineUI()
    with ui.search(3, 0, 10, "evolve-1") as one, ui.search(3, 1, 10, "evolve-2") as two:
        bars = one.progress
        assert two.progress is bars and bars.live.is_started
        assert [t.description for t in bars.tasks] == [
            "evolve-1 iterations",
            "evolve-1 simulations",
            "evolve-2 iterations",
            "evolve-2 simulations",
        ]
    assert not bars.live.is_started
    assert [t.description for t in bars.tasks] == ["evolve-1 iterations", "evolve-2 iterations"]
    with ui.search(3, 0, 10, "generate-1") as three:  # a display of its own, once both ended
        assert three.progress is not bars
