"""One SQLite lifecycle for every database file tpdisc keeps: a run's archive (with the
analysis table beside it), a study's store and the LLM answer cache.

A file is opened for writing in WAL mode (readers never wait for the writer, and the writer
never for readers), written only inside :func:`immediate_transaction` (all of a body's
writes or none), and closed. A file opened read-only refuses every write, and leaves no
``-wal`` or ``-shm`` file behind once the last connection to it is closed, as a writer's
does: it opens read-write under ``PRAGMA query_only`` (SQLite's ``mode=ro`` would create
both files and could not remove them), unless the file or its folder cannot be written.

A database file, or one of its journals, that is a symbolic link is refused (a folder made
elsewhere must not lead reads or writes out of it): :class:`~tpdisc.safefiles.LinkRefused`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal, Self

from tpdisc.safefiles import checked

# SQLite's own files beside a database: what it writes as well as the database itself.
SIDECARS = ("", "-wal", "-shm", "-journal")


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
    :class:`sqlite3.Error` (and :class:`OSError`) as :func:`sqlite3.connect` does, and
    :class:`~tpdisc.safefiles.LinkRefused` for a link in place of the file or a journal.
    """
    path = Path(path)
    for suffix in SIDECARS:
        checked(path.with_name(path.name + suffix), path.parent)
    same_thread = not threads
    if readonly:
        writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        uri = f"{path.resolve().as_uri()}?mode={'rw' if writable else 'ro'}"
        db = sqlite3.connect(
            uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=same_thread
        )
        db.execute("PRAGMA query_only=ON")
        return db
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=same_thread)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return db


@contextmanager
def immediate_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """All of the body's writes, or none: one ``BEGIN IMMEDIATE`` … ``COMMIT`` on ``db``
    (opened with ``isolation_level=None``)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


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
