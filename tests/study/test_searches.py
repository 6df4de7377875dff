"""``tpdisc.study.searches``: offline searches run two at a time, with the archives they
would leave one after another; the first failure stops the others and is raised, and a
rerun resumes them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.study.test_runner import TINY
from tpdisc.study import searches
from tpdisc.study.config import StudyConfig, load_study_config
from tpdisc.study.layout import StudyDir
from tpdisc.study.runner import run_study

# Two of each kind of run, so that two searches run at once twice.
TWO_RUNS = TINY.replace("runs: 1", "runs: 2").replace("iterations: 4", "iterations: 3")
TIMESTAMPS = ("created_at", "evaluated_at")


class _AfterSearch(Exception):
    pass


def _stop_after_search(stage: str) -> None:
    if stage == "search":
        raise _AfterSearch


def _config(tmp_path: Path, executor: str) -> StudyConfig:
    path = tmp_path / "study.yaml"
    path.write_text(TWO_RUNS.replace("executor: {kind: serial}", executor))
    return load_study_config(path)


def _search_only(out: Path, config: StudyConfig) -> None:
    with pytest.raises(_AfterSearch):
        run_study(out, config, after_stage=_stop_after_search)


def _archives(out: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every run's protocols as stored, but for when they were stored."""
    found = {}
    for ref in StudyDir(out).runs(2):
        with sqlite3.connect(ref.path / "archive.sqlite") as db:
            columns = [row[1] for row in db.execute("PRAGMA table_info(protocols)")]
            keep = ", ".join(c for c in columns if c not in TIMESTAMPS)
            found[ref.label] = db.execute(f"SELECT {keep} FROM protocols ORDER BY id").fetchall()
    return found


def test_searches_at_once_leave_the_archives_of_searches_one_after_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_recipes: Path
) -> None:
    at_once: list[int] = []
    real = searches._searches_at_once
    monkeypatch.setattr(
        searches,
        "_searches_at_once",
        lambda ctx, pending, n: (at_once.append(n), real(ctx, pending, n))[1],
    )
    together = tmp_path / "together"
    _search_only(together, _config(tmp_path, "executor: {kind: processes, workers: 2}"))
    assert at_once == [2]
    alone = tmp_path / "alone"
    _search_only(alone, _config(tmp_path, "executor: {kind: serial}"))
    assert at_once == [2]  # a serial executor runs the searches one after another
    assert _archives(together) == _archives(alone)
    assert all(len(rows) > 3 for rows in _archives(together).values())


def test_the_first_failing_search_stops_the_others_and_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_recipes: Path
) -> None:
    started: list[str] = []
    real = searches.evolve

    def evolve(path: Path, *args: Any, **kwargs: Any) -> Any:
        started.append(path.name)
        if path.name == "evolve-2":
            raise RuntimeError("evolve-2 cannot start")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(searches, "evolve", evolve)
    config = _config(tmp_path, "executor: {kind: processes, workers: 2}")
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="evolve-2 cannot start"):
        run_study(out, config)
    # evolve-1 and evolve-2 began together; the generation runs never started.
    assert sorted(started) == ["evolve-1", "evolve-2"]
    # A rerun resumes what evolve-1 stored and ends where searches never stopped would.
    monkeypatch.setattr(searches, "evolve", real)
    _search_only(out, config)
    alone = tmp_path / "alone"
    _search_only(alone, _config(tmp_path, "executor: {kind: serial}"))
    assert _archives(out) == _archives(alone)
