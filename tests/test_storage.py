"""``tpdisc.storage``: the one SQLite lifecycle of tpdisc's database files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tpdisc.storage import Database, connect, immediate_transaction


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_written_file_is_in_wal_mode_and_leaves_only_itself(tmp_path: Path) -> None:
    with Database(tmp_path / "a.sqlite") as store:
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        store.db.execute("CREATE TABLE t (x)")
    assert files(tmp_path) == ["a.sqlite"]


def test_a_transaction_writes_all_or_nothing(tmp_path: Path) -> None:
    db = connect(tmp_path / "a.sqlite")
    db.execute("CREATE TABLE t (x)")
    with pytest.raises(RuntimeError), immediate_transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError
    with immediate_transaction(db):
        db.execute("INSERT INTO t VALUES (2)")
    assert db.execute("SELECT x FROM t").fetchall() == [(2,)]
    db.close()


def test_a_read_only_opening_refuses_writes_and_leaves_no_wal_or_shm(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    writer = connect(path)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("INSERT INTO t VALUES (1)")
    reader = connect(path, readonly=True)  # while the writer is open
    assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]
    with pytest.raises(sqlite3.OperationalError):
        reader.execute("INSERT INTO t VALUES (2)")
    writer.close()
    reader.close()  # the last connection
    assert files(tmp_path) == ["a.sqlite"]
    with Database(path, readonly=True) as store:  # alone
        assert store.db.execute("SELECT x FROM t").fetchall() == [(1,)]
    assert files(tmp_path) == ["a.sqlite"]


def test_a_read_only_opening_makes_no_file(tmp_path: Path) -> None:
    with pytest.raises(sqlite3.OperationalError):
        connect(tmp_path / "missing.sqlite", readonly=True)
    assert files(tmp_path) == []
