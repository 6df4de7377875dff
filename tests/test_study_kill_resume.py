"""benchmarks/study_kill_resume.py reads a study that is still being written: files and
tables that do not exist yet are empty, not errors."""

from __future__ import annotations

import importlib.util
from contextlib import closing
from pathlib import Path
from types import ModuleType

from tpdisc.storage import connect

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "study_kill_resume.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("study_kill_resume", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_db(path: Path, script: str) -> None:
    with closing(connect(path)) as db:
        db.executescript(script)


def test_a_study_whose_tables_are_not_made_yet_reads_as_empty(tmp_path: Path) -> None:
    script = load_script()
    (tmp_path / "runs" / "evolve-1").mkdir(parents=True)
    make_db(tmp_path / "study.sqlite", "CREATE TABLE other (x);")
    # an archive with its protocols but, as before the analyses start, no analysis table
    make_db(
        tmp_path / "runs" / "evolve-1" / "archive.sqlite",
        "CREATE TABLE protocols (id, iteration, attempt, code);"
        "INSERT INTO protocols VALUES (1, 0, 0, 'x = 1');",
    )
    rows = script.snapshot(tmp_path)
    assert list(rows) == ["evolve-1 protocol 1"]
    assert script.events(tmp_path) == []


def test_rows_are_read_with_their_rowids(tmp_path: Path) -> None:
    script = load_script()
    make_db(
        tmp_path / "study.sqlite",
        "CREATE TABLE sims (stage, item, seed, value);"
        "INSERT INTO sims VALUES ('features', 'i1', 3, 7.5);"
        "CREATE TABLE events (session, stage, event);"
        "INSERT INTO events VALUES (1, 'features', 'start');",
    )
    assert script.snapshot(tmp_path) == {"study features i1 seed 3": (1, 7.5)}
    assert script.events(tmp_path) == [(1, "features", "start")]


def test_a_missing_file_reads_as_empty(tmp_path: Path) -> None:
    script = load_script()
    assert script.read(tmp_path / "study.sqlite", "sims", "SELECT * FROM sims") == []
    assert not (tmp_path / "study.sqlite").exists()
