"""An on-disk cache of chat answers, so that rerunning a seeded experiment asks nothing.

One SQLite file (WAL mode, so simulations in several processes can read and write it at
once) maps a key to the answer text and its token counts. The key is a SHA-256 over the
model, the sampling settings, the messages and a *sample tag*; see :func:`cache_key`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tpdisc.errors import ConfigError
from tpdisc.storage import StorageError, connect, immediate_transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""
_ANSWER = "SELECT text, prompt_tokens, completion_tokens FROM responses WHERE key = ?"


@dataclass(frozen=True)
class CachedAnswer:
    text: str
    prompt_tokens: int
    completion_tokens: int


def cache_key(
    model: str,
    messages: Sequence[Mapping[str, str]],
    *,
    temperature: float | None,
    max_tokens: int | None,
    sample: str,
) -> str:
    """The key of one request.

    ``sample`` names the draw: two agents (or two seeds) that happen to send the same
    messages still get independent answers, as they would from a model sampled without a
    cache, while a rerun of the same seeded agent finds its own answers again.
    """
    payload = json.dumps(
        {
            "model": model,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "messages": [dict(m) for m in messages],
            "sample": sample,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class ResponseCache:
    """Thread-safe get/put on one SQLite file; errors name the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Several threads share this connection, one at a time under the lock.
            self._db = connect(path, synchronous="NORMAL", timeout=60.0, threads=True)
            self._db.execute(_SCHEMA)
        except OSError as err:
            raise ConfigError(f"LLM response cache {path}: {err}") from None
        except StorageError as err:
            raise ConfigError(f"LLM response cache {err}") from None

    def get(self, key: str) -> CachedAnswer | None:
        try:
            with self._lock:
                row = self._db.execute(_ANSWER, (key,)).fetchone()
        except StorageError as err:
            raise ConfigError(f"LLM response cache {err}") from None
        return CachedAnswer(row[0], int(row[1]), int(row[2])) if row else None

    def put(self, key: str, model: str, answer: CachedAnswer) -> CachedAnswer:
        """Store ``answer`` unless ``key`` already has one; return the answer kept.

        The first answer stored wins: when two simulations running at once ask the same
        question, both go on with that one answer, as a rerun will.
        """
        try:
            with self._lock, immediate_transaction(self._db):
                self._db.execute(
                    "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        model,
                        answer.text,
                        answer.prompt_tokens,
                        answer.completion_tokens,
                        time.time(),
                    ),
                )
                row = self._db.execute(_ANSWER, (key,)).fetchone()
        except StorageError as err:
            raise ConfigError(f"LLM response cache {err}") from None
        return CachedAnswer(row[0], int(row[1]), int(row[2]))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
