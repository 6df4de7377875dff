"""Analysis results kept beside the search, in the run's own ``archive.sqlite``.

Analyses re-simulate archived protocols (other seeds, the ablated replay, logged runs for
behavioural features): hours of work on a real run. Each result is stored under the key
(protocol id, kind, seed, settings), so a rerun or a second analysis reads what an
earlier one computed, and an interrupted analysis resumes: every protocol's results are
written in one transaction once all of them are in, never half a protocol.

``settings`` is a hash of everything that, with the protocol and the seed, fixes the
outcome (the simulation config and the recipe file's sha256); the table
``analysis_settings`` keeps what each hash stands for. ``kind`` names what a value is:

- ``original`` / ``ablated``: one simulation's summary (:class:`SimSummary`), per seed;
- ``features/original`` / ``features/ablated``: a protocol's behavioural features under
  one condition, pooled over its seeds (``seed`` = :data:`ALL_SEEDS`), stored as
  ``{"seeds": [...], "features": {name: number or None}}`` so that features pooled over
  other seeds are never taken for these (see :meth:`AnalysisStore.features`);
- anything else a later analysis needs, under its own kind.

The table lives in the archive file, but the search never reads it: the archive's own
schema and version are untouched, and the search may keep writing while it is filled
(WAL; each writer's transactions are short).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tpdisc.errors import ConfigError, excerpt
from tpdisc.safefiles import why_not_written
from tpdisc.storage import Database, StorageError

ORIGINAL = "original"
ABLATED = "ablated"
FEATURES = "features/"  # + condition (original, ablated)
ALL_SEEDS = -1  # the seed of a value pooled over a protocol's seeds

SCHEMA = """
CREATE TABLE IF NOT EXISTS analysis (
    protocol_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    seed INTEGER NOT NULL,
    settings TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (protocol_id, kind, seed, settings)
);
CREATE TABLE IF NOT EXISTS analysis_settings (
    settings TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class SimSummary:
    """What an analysis keeps of one simulation (the full result, with its schedule and
    log, is far too large to keep for thousands of runs)."""

    seed: int
    final: int  # coverage after the last step, start elements included
    received: int  # memories delivered past the bottleneck, all agents together
    novel_received: int  # of those, pairs the learner had not tried itself before
    n_agents: int
    curve: tuple[int, ...] = ()  # coverage before the first step, then after each step

    @property
    def novel_per_agent(self) -> float:
        return self.novel_received / self.n_agents

    @property
    def received_per_agent(self) -> float:
        return self.received / self.n_agents

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["curve"] = list(self.curve)
        return data

    @classmethod
    def from_json(cls, data: Any) -> SimSummary:
        """From what :meth:`to_json` wrote; anything else (a damaged or forged store) is a
        ValueError saying which field is wrong. Values are checked for range, not only
        type: a count of 10**400 is a whole number too, and overflows whatever sums it."""
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object, got {excerpt(data)}")
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(map(str, data)) - set(names))
        if unknown:
            raise ValueError(f"unknown field {excerpt(unknown[0])}")
        for name in names[:-1]:
            value = data.get(name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"field {name}: expected a whole number, got {excerpt(value)}")
            if not 0 <= value <= MAX_COUNT:
                raise ValueError(f"field {name}: {excerpt(value)} is out of range")
        curve = data.get("curve", [])
        if (
            not isinstance(curve, list)
            or len(curve) > MAX_CURVE
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in curve)
        ):
            raise ValueError(f"field curve: expected a list of whole numbers, got {excerpt(curve)}")
        if not all(0 <= v <= MAX_COUNT for v in curve):
            raise ValueError("field curve: a value is out of range")
        if data["n_agents"] < 1:
            raise ValueError(f"field n_agents: expected at least 1, got {data['n_agents']}")
        if curve and curve[-1] != data["final"]:
            raise ValueError(f"field final: {data['final']} is not the curve's last value")
        return cls(**{**data, "curve": tuple(curve)})

    def check(self, n_agents: int, n_steps: int) -> None:
        """ValueError unless this is a simulation of ``n_agents`` over ``n_steps`` (a stored
        summary read back for a known simulation)."""
        if self.n_agents != n_agents:
            raise ValueError(f"field n_agents: {self.n_agents}, not the simulation's {n_agents}")
        if self.curve and len(self.curve) != n_steps + 1:
            raise ValueError(
                f"field curve: {len(self.curve)} points, not the {n_steps + 1} of {n_steps} steps"
            )


# Bounds of a stored summary: far above any game (a count of deliveries over a long game
# of many agents), far below what overflows a float.
MAX_COUNT = 2**53
MAX_CURVE = 10_000_001


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# A stored feature is a share, a rate or a count: these bound any honest one.
MAX_FEATURES = 1_000
MAX_FEATURE_VALUE = 1e12


def _features_fault(data: Mapping[str, Any]) -> str | None:
    """What is wrong with stored features (None: nothing): seeds are whole numbers, each
    feature a name and a finite number in range or null."""
    if not all(_whole(seed) and seed >= 0 for seed in data["seeds"]):
        return f"field seeds: expected whole numbers, got {excerpt(data['seeds'])}"
    features = data["features"]
    if len(features) > MAX_FEATURES:
        return f"field features: more than {MAX_FEATURES:,} features"
    for name, value in features.items():
        if value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not -MAX_FEATURE_VALUE <= value <= MAX_FEATURE_VALUE:
            return (
                f"field features: {excerpt(name, 40)}: expected a finite number or null, "
                f"got {excerpt(value)}"
            )
    return None


def settings_hash(settings: Mapping[str, Any]) -> str:
    """A short stable name for ``settings`` (plain JSON data): equal settings, equal hash."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _on_read_only(err: StorageError) -> Exception:
    """What an archive on read-only storage says to an analysis, which keeps its
    simulations in the run's archive (SQLite's own words there: "unable to open database
    file")."""
    if why_not_written(err.path) != "Read-only file system":
        return err
    return ConfigError(
        f"{err.path}: cannot store the analysis' simulations (Read-only file system): an "
        "analysis keeps them in the run's archive; copy the run folder to writable storage"
    )


class AnalysisStore(Database):
    """The ``analysis`` table of one archive file."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"{path}: no archive here")
        try:
            super().__init__(path)
        except StorageError as err:
            raise _on_read_only(err) from None
        try:
            self.db.executescript(SCHEMA)
        except StorageError as err:
            self.close()
            raise _on_read_only(err) from None
        except BaseException:
            self.close()
            raise

    def register(self, settings: Mapping[str, Any]) -> str:
        """The hash of ``settings``, recorded with them so a reader can tell what it means."""
        key = settings_hash(settings)
        self.db.execute(
            "INSERT OR IGNORE INTO analysis_settings VALUES (?, ?)",
            (key, json.dumps(settings, sort_keys=True)),
        )
        return key

    def settings(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT value FROM analysis_settings WHERE settings=?", (key,)
        ).fetchone()
        if row is None:
            return None
        data = self._decoded(f"analysis_settings row {excerpt(key, 20)}", row[0])
        if not isinstance(data, dict):
            raise ConfigError(
                f"{self.path}: analysis_settings row {excerpt(key, 20)}: column value: "
                f"expected a JSON object, got {excerpt(data)}"
            )
        return data

    def put(self, protocol_id: int, settings: str, rows: Iterable[tuple[str, int, Any]]) -> None:
        """Store one protocol's results, ``(kind, seed, value)`` each, in one transaction
        (a value already there is replaced)."""
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO analysis VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (protocol_id, kind, seed, settings, json.dumps(value), stamp)
                    for kind, seed, value in rows
                ],
            )

    def get(
        self, kind: str, settings: str, protocol_ids: Iterable[int]
    ) -> dict[int, dict[int, Any]]:
        """Per protocol of ``protocol_ids``, its stored values of ``kind`` by seed (protocols
        with none are left out)."""
        wanted = sorted(set(protocol_ids))
        out: dict[int, dict[int, Any]] = {}
        # In chunks: SQLite caps the parameters of one statement.
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows = self.db.execute(
                "SELECT protocol_id, seed, value FROM analysis WHERE kind=? AND settings=?"
                f" AND protocol_id IN ({marks})",
                [kind, settings, *chunk],
            )
            for protocol_id, seed, value in rows:
                row = f"analysis row ({excerpt(protocol_id, 20)}, {kind}, {excerpt(seed, 20)})"
                if not _whole(protocol_id) or not _whole(seed):
                    raise ConfigError(f"{self.path}: {row}: expected whole-number ids and seeds")
                out.setdefault(protocol_id, {})[seed] = self._decoded(row, value)
        return out

    def _decoded(self, row: str, value: Any) -> Any:
        try:
            if not isinstance(value, str):
                raise ValueError
            return json.loads(value)
        except (ValueError, RecursionError):
            raise ConfigError(
                f"{self.path}: {row}: column value: expected JSON text, got {excerpt(value)}"
            ) from None

    def summaries(
        self,
        kind: str,
        settings: str,
        protocol_ids: Iterable[int],
        shape: tuple[int, int] | None = None,
    ) -> dict[int, dict[int, SimSummary]]:
        """As :meth:`get`, the values read as :class:`SimSummary`; with ``shape``, each one
        must be of that many agents and steps (the settings' own)."""
        out: dict[int, dict[int, SimSummary]] = {}
        for pid, values in self.get(kind, settings, protocol_ids).items():
            for seed, value in values.items():
                try:
                    summary = SimSummary.from_json(value)
                    if shape is not None:
                        summary.check(*shape)
                    out.setdefault(pid, {})[seed] = summary
                except ValueError as err:
                    raise ConfigError(
                        f"{self.path}: analysis row ({pid}, {kind}, {seed}): column value: {err}"
                    ) from None
        return out

    def features(
        self, settings: str, protocol_ids: Iterable[int], seeds: Sequence[int] | None = None
    ) -> dict[int, dict[str, dict[str, Any]]]:
        """Per protocol, its stored features by condition (``original``, ``ablated``, …),
        only those pooled over exactly ``seeds`` when given."""
        wanted = sorted(set(protocol_ids))
        out: dict[int, dict[str, dict[str, Any]]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows = self.db.execute(
                "SELECT protocol_id, kind, value FROM analysis WHERE kind LIKE ? AND seed=?"
                f" AND settings=? AND protocol_id IN ({marks})",
                [FEATURES + "%", ALL_SEEDS, settings, *chunk],
            )
            for protocol_id, kind, value in rows:
                row = f"analysis row ({excerpt(protocol_id, 20)}, {excerpt(kind, 40)})"
                data = self._decoded(row, value)
                if not (
                    _whole(protocol_id)
                    and isinstance(data, dict)
                    and isinstance(data.get("seeds"), list)
                    and isinstance(data.get("features"), dict)
                ):
                    raise ConfigError(
                        f"{self.path}: {row}: column value: expected an object of seeds and "
                        f"features, got {excerpt(data)}"
                    )
                fault = _features_fault(data)
                if fault:
                    raise ConfigError(f"{self.path}: {row}: column value: {fault}")
                if seeds is None or list(data["seeds"]) == list(seeds):
                    condition = kind[len(FEATURES) :]
                    out.setdefault(protocol_id, {})[condition] = dict(data["features"])
        return out

    def count(self, kind: str | None = None) -> int:
        sql, params = "SELECT COUNT(*) FROM analysis", []
        if kind is not None:
            sql, params = sql + " WHERE kind=?", [kind]
        return int(self.db.execute(sql, params).fetchone()[0])
