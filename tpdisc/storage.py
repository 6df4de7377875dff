"""One SQLite lifecycle for every database file tpdisc keeps: a run's archive (with the
analysis table beside it), a study's store and the LLM answer cache.

A file is opened for writing in WAL mode (readers never wait for the writer, and the writer
never for readers), written only inside :func:`immediate_transaction` (all of a body's
writes or none), and closed. A file opened read-only refuses every write, and leaves no
``-wal`` or ``-shm`` file behind once the last connection to it is closed, as a writer's
does: it opens read-write under ``PRAGMA query_only`` (SQLite's ``mode=ro`` would create
both files and could not remove them), unless the file or its folder cannot be written.

A file on read-only storage (a colleague's folder, a read-only mount) is read as it is:
SQLite opens a closed WAL database there without writing beside it (``immutable``).

A database file, or one of its journals, that is a symbolic link is refused (a folder made
elsewhere must not lead reads or writes out of it): :class:`~tpdisc.safefiles.LinkRefused`.
So is one that holds a trigger or a view: tpdisc makes neither, and a trigger runs with
every later write (it could refuse it, or change other rows).

Whatever SQLite reports while a file is opened, read or written is a :class:`StorageError`:
one line naming the file and the reason in words (the disk is full, the file-size limit is
reached, the folder is read-only, the file is damaged or in use), never a traceback. A
failed write rolls its transaction back, so what the file held before is kept.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any, Literal, Self

from tpdisc.errors import TpdiscError, excerpt
from tpdisc.safefiles import checked, why_not_written

# SQLite's own files beside a database: what it writes as well as the database itself.
SIDECARS = ("", "-wal", "-shm", "-journal")


class StorageError(TpdiscError):
    """A database file that cannot be opened, read or written: ``path`` and ``reason``;
    ``kind`` is ``write``, ``read``, ``damaged``, ``busy``, ``refused`` or ``other``."""

    def __init__(self, path: Path, reason: str, kind: str = "other") -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.kind = kind


def failure(path: Path, err: sqlite3.Error) -> StorageError:
    """The one-line :class:`StorageError` of what SQLite reported on the file ``path``."""
    name = str(getattr(err, "sqlite_errorname", "") or "")
    said = excerpt(str(err), 200).strip("'\"") if str(err) else type(err).__name__
    if name.startswith(("SQLITE_IOERR_READ", "SQLITE_IOERR_SHORT_READ")):
        return StorageError(path, f"cannot read ({said})", "read")
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY")):
        reason = why_not_written(path) or said
        return StorageError(
            path,
            f"cannot write ({reason}); the write was undone, what the file held before is kept",
            "write",
        )
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return StorageError(path, f"damaged, or not an SQLite database ({said})", "damaged")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StorageError(path, f"in use by another process ({said})", "busy")
    if name.startswith("SQLITE_CONSTRAINT"):
        return StorageError(
            path, f"the database refused a write ({said}): was the file changed by hand?", "refused"
        )
    return StorageError(path, said)


_NO_ROW = object()


class _Cursor(sqlite3.Cursor):
    """A cursor whose every SQLite error is a :class:`StorageError` naming the file."""

    connection: _Connection

    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as err:
            raise failure(self.connection.path, err) from None

    def executemany(self, sql: str, parameters: Any, /) -> Self:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.Error as err:
            raise failure(self.connection.path, err) from None

    def executescript(self, script: str, /) -> Self:
        try:
            super().executescript(script)
            return self
        except sqlite3.Error as err:
            raise failure(self.connection.path, err) from None

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as err:
            raise failure(self.connection.path, err) from None

    def fetchmany(self, size: int | None = None) -> list[Any]:
        try:
            return super().fetchmany(self.arraysize if size is None else size)
        except sqlite3.Error as err:
            raise failure(self.connection.path, err) from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as err:
            raise failure(self.connection.path, err) from None

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        # Rows are read by sqlite3's own step (no Python call per row), in one try.
        rows = iter(partial(sqlite3.Cursor.__next__, self), _NO_ROW)
        try:
            yield from rows
        except sqlite3.Error as err:
            raise failure(self.connection.path, err) from None


class _Connection(sqlite3.Connection):
    """A connection whose statements run on :class:`_Cursor`s: whatever SQLite reports,
    on this connection or any cursor of it, names the file."""

    path: Path

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    # sqlite3's own shortcuts make their cursor in C, past cursor(): go through it.
    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, parameters)

    def executescript(self, script: str, /) -> Any:
        return self.cursor().executescript(script)


def _open(target: str | Path, path: Path, timeout: float, same_thread: bool, uri: bool) -> Any:
    try:
        db = sqlite3.connect(
            target,
            uri=uri,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=same_thread,
            factory=_Connection,
        )
    except sqlite3.Error as err:
        raise failure(path, err) from None
    db.path = path
    return db


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the database holds the table ``name`` (an older file, or one still being
    written, may not: reading it would be a StorageError)."""
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,))
    return row.fetchone() is not None


def _refuse_code(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that holds a trigger or a view: tpdisc makes neither, and a trigger
    runs with every later write."""
    found = db.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') LIMIT 1"
    ).fetchone()
    if found is not None:
        db.close()
        raise StorageError(
            path,
            f"holds a {found[0]} ({excerpt(found[1], 40)}), which tpdisc never makes: "
            "not a database of tpdisc's",
            "damaged",
        )


def connect(
    path: str | Path,
    *,
    readonly: bool = False,
    synchronous: Literal["FULL", "NORMAL"] = "FULL",
    timeout: float = 30.0,
    threads: bool = False,
) -> sqlite3.Connection:
    """A connection to the database at ``path`` in autocommit mode (``isolation_level=None``:
    transactions only through :func:`immediate_transaction`).

    For writing, the file is made if missing and put in WAL mode with ``synchronous``
    (``FULL``: a transaction reported committed survives a crash of the machine too).
    ``readonly`` opens an existing file only. ``threads``: the connection may be used from
    other threads than this one (one at a time, under the caller's lock). Raises
    :class:`StorageError` for whatever SQLite reports, on opening or later, and
    :class:`~tpdisc.safefiles.LinkRefused` for a link in place of the file or a journal.
    """
    path = Path(path)
    for suffix in SIDECARS:
        checked(path.with_name(path.name + suffix), path.parent)
    same_thread = not threads
    if readonly:
        db = _open(_read_only_uri(path), path, timeout, same_thread, uri=True)
        db.execute("PRAGMA query_only=ON")
        _refuse_code(db, path)
        return db
    db = _open(path, path, timeout, same_thread, uri=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    _refuse_code(db, path)
    return db


def _read_only_uri(path: Path) -> str:
    """How to open ``path`` for reading: read-write under ``query_only`` where the file and
    its folder can be written (no ``-wal`` or ``-shm`` left behind); else read-only, and a
    closed WAL database (no ``-wal`` file with changes in it) as immutable: SQLite then
    needs no ``-shm`` file, which read-only storage could not hold."""
    uri = path.resolve().as_uri()
    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        return f"{uri}?mode=rw"
    try:
        pending = os.stat(path.with_name(path.name + "-wal")).st_size > 0
    except OSError:
        pending = False
    return f"{uri}?mode=ro" if pending else f"{uri}?mode=ro&immutable=1"


@contextmanager
def immediate_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """All of the body's writes, or none: one ``BEGIN IMMEDIATE`` … ``COMMIT`` on ``db``
    (opened with ``isolation_level=None``)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (a full disk at COMMIT): the first error
        # is the one to tell.
        with suppress(TpdiscError, sqlite3.Error):
            db.execute("ROLLBACK")
        raise


class Database:
    """A database file held open by one object: ``db`` from :func:`connect`, closed by
    :meth:`close` or at the end of a ``with`` block."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.db = connect(self.path, readonly=readonly)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate_transaction(self.db)
