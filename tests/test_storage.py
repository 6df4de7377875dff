"""``tpdisc.storage``: the one SQLite lifecycle of tpdisc's database files."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from tests.storage_faults import read_only, size_limited, small_disk
from tpdisc.storage import Database, StorageError, connect, immediate_transaction


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
    with pytest.raises(StorageError):
        reader.execute("INSERT INTO t VALUES (2)")
    writer.close()
    reader.close()  # the last connection
    assert files(tmp_path) == ["a.sqlite"]
    with Database(path, readonly=True) as store:  # alone
        assert store.db.execute("SELECT x FROM t").fetchall() == [(1,)]
    assert files(tmp_path) == ["a.sqlite"]


def test_a_read_only_opening_makes_no_file(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        connect(tmp_path / "missing.sqlite", readonly=True)
    assert files(tmp_path) == []


# --- every failure is one line naming the file --------------------------------------------


def test_what_sqlite_reports_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    writer = connect(path)
    writer.execute("CREATE TABLE t (x)")
    with pytest.raises(StorageError, match=f"^{path}: no such table: nope$"):
        writer.execute("SELECT * FROM nope")
    other = connect(path, timeout=0.1)
    with (
        immediate_transaction(writer),  # the write lock, held by another connection
        pytest.raises(StorageError, match=f"^{path}: in use by another process"),
        immediate_transaction(other),
    ):
        other.execute("INSERT INTO t VALUES (1)")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StorageError, match=f"^{junk}: damaged, or not an SQLite database"):
        Database(junk)
    writer.close()
    other.close()


def test_a_page_damaged_where_only_a_write_goes_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    with Database(path) as store:
        store.db.execute("CREATE TABLE t (x TEXT)")
        store.db.execute("CREATE INDEX t_x ON t(x)")
        with immediate_transaction(store.db):
            store.db.executemany("INSERT INTO t VALUES (?)", [(f"{k:04d}",) for k in range(50)])
        page = store.db.execute("SELECT rootpage FROM sqlite_master WHERE name='t_x'").fetchone()
        size = store.db.execute("PRAGMA page_size").fetchone()[0]
    with path.open("r+b") as raw:  # the index's page: its type and cell count become garbage
        raw.seek((page[0] - 1) * size)
        raw.write(b"\x77\xff\xff\xff\xff\xff\xff\xff")
    with Database(path) as store:
        assert len(store.db.execute("SELECT x FROM t").fetchall()) == 50  # reads pass it by
        with pytest.raises(StorageError) as info, immediate_transaction(store.db):
            store.db.execute("INSERT INTO t VALUES ('9999')")
    assert str(info.value).startswith(f"{path}: damaged, or not an SQLite database")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kind", ["trigger", "view"])
def test_a_file_holding_a_trigger_or_a_view_is_refused(tmp_path: Path, kind: str) -> None:
    # A trigger runs with every later write: it could refuse it, or change other rows.
    path = tmp_path / "a.sqlite"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE t (x)")
    if kind == "trigger":
        raw.execute("CREATE TRIGGER later BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, 'no'); END")
    else:
        raw.execute("CREATE VIEW later AS SELECT x FROM t")
    raw.commit()
    raw.close()
    for readonly in (False, True):
        with pytest.raises(StorageError, match=f"^{path}: holds a {kind} \\('later'\\)"):
            connect(path, readonly=readonly)


# --- writes that fail, read-only storage: made for real --------------------------------

FILL = """
import sys
from tpdisc.storage import Database, StorageError, immediate_transaction
with Database(sys.argv[1]) as store:
    store.db.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER, blob TEXT)")
    try:
        for k in range(10_000):
            with immediate_transaction(store.db):
                store.db.execute("INSERT INTO t VALUES (?, ?)", (k, "x" * 20_000))
    except StorageError as err:
        print(err)
"""


def stored_rows(path: Path) -> list[int]:
    with Database(path, readonly=True) as store:
        return [k for (k,) in store.db.execute("SELECT k FROM t ORDER BY k")]


def test_a_write_past_the_file_size_limit_is_one_line_and_keeps_what_was_stored(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.sqlite"
    done = size_limited(300_000, [sys.executable, "-c", FILL, str(path)])
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip() == (
        f"{path}: cannot write (File too large: the file-size limit of this process is "
        "300,000 bytes (ulimit -f)); the write was undone, what the file held before is kept"
    )
    rows = stored_rows(path)
    assert rows == list(range(len(rows))) and len(rows) > 5  # every transaction committed


def test_a_write_to_a_full_disk_is_one_line_and_keeps_what_was_stored(tmp_path: Path) -> None:
    disk, kept = tmp_path / "disk", tmp_path / "kept"
    path = disk / "a.sqlite"
    done = small_disk(disk, "400k", [sys.executable, "-c", FILL, str(path)], kept)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith(f"{path}: cannot write (No space left on device (")
    assert done.stdout.strip().endswith("; the write was undone, what the file held before is kept")
    rows = stored_rows(kept / "a.sqlite")
    assert rows == list(range(len(rows))) and len(rows) > 5


READ = """
import sys
from tpdisc.storage import Database
with Database(sys.argv[1], readonly=True) as store:
    print(store.db.execute("SELECT COUNT(*) FROM t").fetchone()[0])
"""


def test_a_closed_database_on_read_only_storage_is_read_without_writing(tmp_path: Path) -> None:
    folder = tmp_path / "colleague"
    folder.mkdir()
    with Database(folder / "a.sqlite") as store:
        store.db.execute("CREATE TABLE t (x)")
        store.db.execute("INSERT INTO t VALUES (1), (2)")
    done = read_only(folder, [sys.executable, "-c", READ, str(folder / "a.sqlite")])
    assert (done.returncode, done.stdout, done.stderr) == (0, "2\n", "")
    assert files(folder) == ["a.sqlite"]
