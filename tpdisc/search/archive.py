"""The persistent archive of a search: every candidate, its fitness and its history.

One SQLite file in WAL mode. An iteration's rows (the accepted protocol together with the
failed attempts that led to it) are written in a single transaction along with the
iteration's completion mark, so a process killed at any moment leaves either the whole
iteration or none of it: resuming redoes an interrupted iteration and never duplicates a
finished one. LLM calls are written as they happen, since their cost is spent either way.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from tpdisc.errors import ConfigError, TpdiscError, excerpt
from tpdisc.storage import Database, StorageError, has_table

Mode = Literal["seed", "warm-up", "improve", "diversify", "repair"]
# raced: stopped after a race's first round, clearly worse than the archive's best (its
# fitness is over those seeds only, so it is never ranked, chosen or reported as valid)
Status = Literal["valid", "invalid", "duplicate", "raced"]
MODES: tuple[str, ...] = get_args(Mode)
STATUSES: tuple[str, ...] = get_args(Status)

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS protocols (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    code TEXT,
    code_sha256 TEXT,
    description TEXT NOT NULL DEFAULT '',
    logging TEXT NOT NULL DEFAULT '',
    reasoning TEXT NOT NULL DEFAULT '',
    parent_id INTEGER REFERENCES protocols(id),
    lineage TEXT NOT NULL DEFAULT '[]',
    contrast_ids TEXT NOT NULL DEFAULT '[]',
    repair_of INTEGER REFERENCES protocols(id),
    duplicate_of INTEGER REFERENCES protocols(id),
    genome TEXT,
    fitness_mean REAL,
    fitness_sem REAL,
    fitness_values TEXT,
    seeds TEXT,
    curve_mean TEXT,
    logs TEXT,
    proposer TEXT NOT NULL,
    model TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    prompt TEXT,
    answer TEXT,
    created_at TEXT NOT NULL,
    evaluated_at TEXT,
    UNIQUE (iteration, attempt, name)
);
CREATE INDEX IF NOT EXISTS protocols_status ON protocols(status);
-- Added after the first archives were written; IF NOT EXISTS adds them to those on open.
-- protocols_summary holds every column of CandidateSummary, so that ranking, selection
-- and statistics never read the rows themselves (tens of KB each: code, prompts, logs).
CREATE INDEX IF NOT EXISTS protocols_code ON protocols(code_sha256);
CREATE INDEX IF NOT EXISTS protocols_summary ON protocols(
    status, id, fitness_mean, name, iteration, attempt, mode, proposer, parent_id, lineage,
    fitness_sem, prompt_tokens, completion_tokens
);
CREATE TABLE IF NOT EXISTS iterations (
    iteration INTEGER PRIMARY KEY,
    mode TEXT NOT NULL,
    outcome TEXT NOT NULL,
    protocol_id INTEGER REFERENCES protocols(id),
    note TEXT NOT NULL DEFAULT '',
    finished_at TEXT NOT NULL
);
-- Added later too: re-evaluations of protocols on seeds the search never used (the
-- winner's curse check). Archives opened read-only before a write added it have none.
CREATE TABLE IF NOT EXISTS rescores (
    protocol_id INTEGER NOT NULL REFERENCES protocols(id),
    seeds TEXT NOT NULL,
    fitness_values TEXT NOT NULL,
    mean REAL NOT NULL,
    sem REAL NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (protocol_id, seeds)
);
-- Added with the search's records (issue 48): a valid protocol's simulations on the seeds
-- the run keeps for its analyses (tpdisc.sim.records: outcome, schedule, transmission
-- tally), written in the iteration's transaction, under the settings they were simulated
-- with and the code they ran. An archive without the table (older runs, opened read-only)
-- has no records, and its analyses simulate everything, as before it.
CREATE TABLE IF NOT EXISTS records (
    protocol_id INTEGER PRIMARY KEY REFERENCES protocols(id),
    settings TEXT NOT NULL,
    code_sha256 TEXT NOT NULL,
    seeds TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY,
    iteration INTEGER NOT NULL,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost REAL NOT NULL,
    requests INTEGER NOT NULL,
    seconds REAL NOT NULL,
    usage_estimated INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
"""

_JSON_FIELDS = frozenset(
    {"lineage", "contrast_ids", "genome", "fitness_values", "seeds", "curve_mean", "logs"}
)


# What SQLite can hold: a JSON column may carry a whole number of any size, which passes
# a type check and then overflows the first query or float that meets it.
_WHOLE = 2**63


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_WHOLE <= value < _WHOLE


def _is_number(value: Any) -> bool:
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _list_of(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(test(v) for v in value)


def _optional(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or test(value)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


# What each column of ``protocols`` must hold once read (JSON columns decoded). An archive
# may come from anyone (a colleague's run folder, a damaged disk): every value is checked
# before the search, a report or an analysis uses it, so a bad one is a line naming it.
_COLUMNS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "id": ("an id", _is_int),
    "name": ("text", _is_text),
    "iteration": ("a whole number", _is_int),
    "attempt": ("a whole number", _is_int),
    "mode": (f"one of {', '.join(MODES)}", lambda v: v in MODES),
    "status": (f"one of {', '.join(STATUSES)}", lambda v: v in STATUSES),
    "error": ("text or null", _optional(_is_text)),
    "code": ("text or null", _optional(_is_text)),
    "code_sha256": ("text or null", _optional(_is_text)),
    "description": ("text", _is_text),
    "logging": ("text", _is_text),
    "reasoning": ("text", _is_text),
    "parent_id": ("an id or null", _optional(_is_int)),
    "lineage": ("a JSON list of ids", _list_of(_is_int)),
    "contrast_ids": ("a JSON list of ids", _list_of(_is_int)),
    "repair_of": ("an id or null", _optional(_is_int)),
    "duplicate_of": ("an id or null", _optional(_is_int)),
    "genome": ("a JSON object or null", _optional(lambda v: isinstance(v, dict))),
    "fitness_mean": ("a finite number or null", _optional(_is_number)),
    "fitness_sem": ("a finite number or null", _optional(_is_number)),
    "fitness_values": ("a JSON list of numbers or null", _optional(_list_of(_is_number))),
    "seeds": ("a JSON list of whole numbers or null", _optional(_list_of(_is_int))),
    "curve_mean": ("a JSON list of numbers or null", _optional(_list_of(_is_number))),
    "logs": ("a JSON list or null", _optional(lambda v: isinstance(v, list))),
    "proposer": ("text", _is_text),
    "model": ("text or null", _optional(_is_text)),
    "prompt_tokens": ("a whole number", _is_int),
    "completion_tokens": ("a whole number", _is_int),
    "cost": ("a finite number", _is_number),
    "prompt": ("text or null", _optional(_is_text)),
    "answer": ("text or null", _optional(_is_text)),
    "created_at": ("text", _is_text),
    "evaluated_at": ("text or null", _optional(_is_text)),
}
_ITERATION_COLUMNS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "iteration": ("a whole number", _is_int),
    "mode": (f"one of {', '.join(MODES)}", lambda v: v in MODES),
    "outcome": ("text", _is_text),
    "protocol_id": ("an id or null", _optional(_is_int)),
    "note": ("text", _is_text),
    "finished_at": ("text", _is_text),
}

_RESCORE_COLUMNS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "protocol_id": ("an id", _is_int),
    "seeds": (
        "a JSON list of whole numbers, not empty",
        lambda v: bool(v) and _list_of(_is_int)(v),
    ),
    "fitness_values": ("a JSON list of numbers", _list_of(_is_number)),
    "mean": ("a finite number", _is_number),
    "sem": ("a finite number", _is_number),
    "created_at": ("text", _is_text),
}

# What the values of ``meta`` must be, by key (text by default): the schema version is
# stored as a number by archives that SQLite's type affinity made text of it.
_META_VALUES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "schema_version": (
        "a whole number",
        lambda v: (_is_int(v) or isinstance(v, str)) and str(v).isdigit() and len(str(v)) < 10,
    ),
}

_TABLES = {
    "protocols": _COLUMNS,
    "iterations": _ITERATION_COLUMNS,
    "rescores": _RESCORE_COLUMNS,
}


def bad_value(path: Path, row: str, column: str, expected: str, value: Any) -> ConfigError:
    """The one-line refusal of a stored value: the file, the row, the column and what is
    there instead (an excerpt)."""
    return ConfigError(f"{path}: {row}: column {column}: expected {expected}, got {excerpt(value)}")


def _decoded(path: Path, row: str, column: str, text: Any) -> Any:
    if not isinstance(text, str):
        raise bad_value(path, row, column, "JSON text", text)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting a few thousand deep
        raise bad_value(path, row, column, "JSON text", text) from None


def _row(pid: Any) -> str:
    return f"protocols row {excerpt(pid, 24)}"


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def code_hash(code: str) -> str:
    return hashlib.sha256(code.strip().encode()).hexdigest()


class _Scored:
    """Validity and fitness, read the same way from a whole row and from its summary."""

    name: str
    status: str
    fitness_mean: float | None

    @property
    def valid(self) -> bool:
        return self.status == "valid" and self.fitness_mean is not None

    @property
    def fitness(self) -> float:
        if self.fitness_mean is None:
            raise ValueError(f"{self.name} has no fitness")
        return self.fitness_mean


@dataclass
class Candidate(_Scored):
    """One row of the archive: a protocol proposed at some iteration, valid or not."""

    name: str
    iteration: int
    attempt: int  # 0 for the first proposal of an iteration, then 1.. for repairs
    mode: str
    status: str
    proposer: str
    code: str | None = None
    error: str | None = None
    description: str = ""
    logging: str = ""
    reasoning: str = ""
    parent_id: int | None = None
    lineage: list[int] = field(default_factory=list)  # parent first, then its ancestors
    contrast_ids: list[int] = field(default_factory=list)
    repair_of: int | None = None
    duplicate_of: int | None = None
    genome: dict[str, Any] | None = None
    fitness_mean: float | None = None
    fitness_sem: float | None = None
    fitness_values: list[float] | None = None
    seeds: list[int] | None = None
    curve_mean: list[float] | None = None
    logs: list[Any] | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    prompt: str | None = None
    answer: str | None = None
    created_at: str = field(default_factory=now)
    evaluated_at: str | None = None
    code_sha256: str | None = None
    id: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}")
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if self.code is not None and self.code_sha256 is None:
            self.code_sha256 = code_hash(self.code)

    def to_json(self, *, full: bool = True) -> dict[str, Any]:
        data = asdict(self)
        if not full:
            for key in ("code", "prompt", "answer", "curve_mean", "fitness_values", "logs"):
                data.pop(key)
        return data


@dataclass(frozen=True)
class CandidateSummary(_Scored):
    """A row without its code, prompts, logs and curves: what ranking and selection need."""

    id: int
    name: str
    iteration: int
    attempt: int
    mode: str
    status: str
    proposer: str
    parent_id: int | None
    lineage: tuple[int, ...]  # parent first, then its ancestors
    fitness_mean: float | None
    fitness_sem: float | None
    prompt_tokens: int
    completion_tokens: int


_SUMMARY_NAMES = tuple(f.name for f in fields(CandidateSummary))
_SUMMARY_COLUMNS = ", ".join(_SUMMARY_NAMES)
_LINEAGE_AT = _SUMMARY_NAMES.index("lineage")


def _sql_number(column: str) -> str:
    """SQL true when ``column`` is not null and not a finite number."""
    return (
        f"({column} IS NOT NULL AND (typeof({column}) NOT IN ('integer', 'real')"
        f" OR abs({column}) > 1.7976931348623157e308))"
    )


# True for a row whose summary columns break _COLUMNS (CASE: SQLite's JSON functions fail
# on text that is not JSON, and only CASE promises not to evaluate the other branch).
_BAD_SUMMARY = " OR ".join(
    [
        "typeof(id) != 'integer'",
        "typeof(name) != 'text'",
        "typeof(iteration) != 'integer'",
        "typeof(attempt) != 'integer'",
        f"mode NOT IN ({', '.join(repr(m) for m in MODES)})",
        f"status NOT IN ({', '.join(repr(m) for m in STATUSES)})",
        "typeof(proposer) != 'text'",
        "(parent_id IS NOT NULL AND typeof(parent_id) != 'integer')",
        "CASE WHEN typeof(lineage) = 'text' AND json_valid(lineage) THEN"
        " json_type(lineage) != 'array' OR EXISTS"
        " (SELECT 1 FROM json_each(lineage) WHERE json_each.type != 'integer'"
        # an integer too large for SQLite is read as a real: too large for an id too
        " OR typeof(json_each.value) != 'integer') ELSE 1 END",
        _sql_number("fitness_mean"),
        _sql_number("fitness_sem"),
        "typeof(prompt_tokens) != 'integer'",
        "typeof(completion_tokens) != 'integer'",
    ]
)
_VALID = "status='valid' AND fitness_mean IS NOT NULL"
# Best first; among equal fitness the earlier protocol, as a stable sort by id would.
_ORDERS = {"id": "id", "fitness": "fitness_mean DESC, id"}


@dataclass(frozen=True)
class ArchiveStats:
    """What the prompts quote about the archive."""

    n_valid: int
    n_invalid: int
    mean_fitness: float
    best_fitness: float
    best_name: str


@dataclass(frozen=True)
class Rescore:
    """A protocol's fitness on fresh seeds: mean final coverage over ``seeds``, none of
    which the search scored it on."""

    protocol_id: int
    seeds: list[int]
    fitness_values: list[float]
    mean: float
    sem: float
    created_at: str = field(default_factory=now)

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "sem": self.sem,
            "seeds": self.seeds,
            "fitness_values": self.fitness_values,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class RecordRow:
    """A protocol's records as the archive keeps them: under the hash of the settings
    they were simulated with, the seeds, and the bytes of :func:`tpdisc.sim.records.encode`."""

    settings: str
    seeds: tuple[int, ...]
    data: bytes


@dataclass(frozen=True)
class Totals:
    """Counts of a run: ``valid``, ``invalid`` and ``duplicates`` are the search's own
    protocols; the baselines it was seeded with are counted apart (``seeds``)."""

    protocols: int
    valid: int
    invalid: int
    duplicates: int
    raced: int
    repairs: int
    iterations: int
    seeds: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float


def _unusable(err: StorageError) -> TpdiscError:
    """What a failure to open an archive says: a damaged or foreign file is not one."""
    if err.kind == "damaged":
        return ConfigError(f"{err.path}: not a usable archive ({err.reason})")
    return err


class Archive(Database):
    """The SQLite archive of one run directory (``archive.sqlite``)."""

    FILE_NAME = "archive.sqlite"

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        path = Path(path)
        if readonly and not path.is_file():
            raise ConfigError(f"{path}: no archive here")
        try:
            super().__init__(path, readonly=readonly)
        except StorageError as err:
            raise _unusable(err) from None
        try:
            self.db.row_factory = sqlite3.Row
            if not readonly:
                self.db.executescript(SCHEMA)
                self.db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
                )
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self.meta("schema_version")
        except StorageError as err:
            self.close()
            raise _unusable(err) from None
        except BaseException:
            self.close()
            raise
        if version != str(SCHEMA_VERSION):
            self.close()
            raise ConfigError(f"{self.path}: archive schema {version} unsupported")

    # --- writing -------------------------------------------------------------------------

    def _insert(self, db: sqlite3.Connection, candidate: Candidate) -> int:
        data = {f.name: getattr(candidate, f.name) for f in fields(candidate) if f.name != "id"}
        for key in _JSON_FIELDS:
            if data[key] is not None:
                data[key] = json.dumps(data[key])
        columns = ", ".join(data)
        marks = ", ".join(f":{k}" for k in data)
        cursor = db.execute(f"INSERT INTO protocols ({columns}) VALUES ({marks})", data)
        candidate.id = int(cursor.lastrowid or 0)
        return candidate.id

    def add_seed(self, candidate: Candidate) -> int:
        """Store one evaluated baseline (its own transaction)."""
        with self._transaction() as db:
            return self._insert(db, candidate)

    def finish_iteration(
        self,
        iteration: int,
        mode: str,
        candidates: Sequence[Candidate],
        note: str = "",
        records: Mapping[str, RecordRow] | None = None,
    ) -> int | None:
        """Store an iteration's candidates and mark it done, all in one transaction, with
        the ``records`` of its valid protocol (by candidate name), if given.

        Repairs point at the candidate they repair (``repair_of``); ids are filled in as
        rows are written. Returns the id of the iteration's valid protocol, if any.
        """
        accepted: int | None = None
        with self._transaction() as db:
            previous: int | None = None
            for candidate in candidates:
                if candidate.attempt > 0:
                    candidate.repair_of = previous
                previous = self._insert(db, candidate)
                if candidate.status == "valid":
                    accepted = previous
                    kept = (records or {}).get(candidate.name)
                    if kept is not None and candidate.code_sha256 is not None:
                        db.execute(
                            "INSERT INTO records VALUES (?, ?, ?, ?, ?)",
                            (
                                previous,
                                kept.settings,
                                candidate.code_sha256,
                                json.dumps(list(kept.seeds)),
                                kept.data,
                            ),
                        )
            outcome = candidates[-1].status if candidates else "no-candidate"
            db.execute(
                "INSERT INTO iterations VALUES (?, ?, ?, ?, ?, ?)",
                (iteration, mode, outcome, accepted, note, now()),
            )
        return accepted

    def record_call(
        self,
        iteration: int,
        purpose: str,
        *,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        cost: float,
        requests: int,
        seconds: float,
        usage_estimated: bool,
    ) -> None:
        self.db.execute(
            "INSERT INTO llm_calls (iteration, purpose, model, prompt_tokens, completion_tokens,"
            " cost, requests, seconds, usage_estimated, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                iteration,
                purpose,
                model,
                prompt_tokens,
                completion_tokens,
                cost,
                requests,
                seconds,
                int(usage_estimated),
                now(),
            ),
        )

    def add_rescore(self, rescore: Rescore) -> None:
        """Store a re-evaluation on fresh seeds (replacing one on the same seeds)."""
        self.db.execute(
            "INSERT OR REPLACE INTO rescores VALUES (?, ?, ?, ?, ?, ?)",
            (
                rescore.protocol_id,
                json.dumps(rescore.seeds),
                json.dumps(rescore.fitness_values),
                rescore.mean,
                rescore.sem,
                rescore.created_at,
            ),
        )

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # --- reading -------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        """The value stored under ``key`` in ``meta`` (text: every value tpdisc stores
        there is), None when there is none."""
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        expected, test = _META_VALUES.get(key, ("text", _is_text))
        if not test(row[0]):
            raise bad_value(self.path, f"meta row {excerpt(key, 40)}", "value", expected, row[0])
        return str(row[0])

    def _checked(self, table: str, data: dict[str, Any]) -> dict[str, Any]:
        """``data``, a row of ``table`` as read, with its JSON columns decoded, once each
        of its columns is what it should be."""
        key = data.get("id", data.get("iteration", data.get("protocol_id")))
        row = f"{table} row {excerpt(key, 24)}"
        for column, (expected, test) in _TABLES[table].items():
            if column not in data:
                continue
            if column in _JSON_FIELDS and data[column] is not None:
                data[column] = _decoded(self.path, row, column, data[column])
            if not test(data[column]):
                raise bad_value(self.path, row, column, expected, data[column])
        self._agrees(row, data)
        return data

    def _agrees(self, row: str, data: dict[str, Any]) -> None:
        """The columns of a row that must agree with each other do: as many fitness values
        as seeds, and code that hashes to its ``code_sha256`` (code changed after it was
        scored must not be shown, run or re-scored under that row's fitness)."""
        seeds, values = data.get("seeds"), data.get("fitness_values")
        if seeds is not None and values is not None and len(seeds) != len(values):
            expected = f"a value per seed ({len(seeds)} seeds)"
            raise bad_value(self.path, row, "fitness_values", expected, values)
        code = data.get("code")
        if code is not None and "code_sha256" in data and data["code_sha256"] != code_hash(code):
            stored = str(data["code_sha256"])[:16]
            raise ConfigError(
                f"{self.path}: {row}: column code: does not hash to the row's code_sha256 "
                f"({stored}...): changed after it was scored, so refused"
            )

    def check_rows(self) -> None:
        """Read every protocol's row through the checks, keeping none: for a command that
        must refuse a bad row before it writes anything (a report of half the pages)."""
        for row in self.db.execute("SELECT * FROM protocols ORDER BY id"):
            self._checked("protocols", dict(row))

    def _candidate(self, row: sqlite3.Row) -> Candidate:
        return Candidate(**self._checked("protocols", dict(row)))

    @staticmethod
    def _where(
        valid_only: bool, status: Status | None = None, mode: Mode | None = None
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = ["1"]
        params: list[Any] = []
        if valid_only:
            clauses.append(_VALID)
        if status is not None:
            if status not in STATUSES:
                raise ValueError(f"unknown status {status!r}")
            clauses.append("status=?")
            params.append(status)
        if mode is not None:
            if mode not in MODES:
                raise ValueError(f"unknown mode {mode!r}")
            clauses.append("mode=?")
            params.append(mode)
        return " AND ".join(clauses), params

    def candidates(
        self, *, valid_only: bool = False, status: Status | None = None, mode: Mode | None = None
    ) -> list[Candidate]:
        """Whole rows, code, prompts and logs included, in the order they were stored.

        ``valid_only``: protocols with a fitness (status valid and scored).
        """
        where, params = self._where(valid_only, status, mode)
        rows = self.db.execute(f"SELECT * FROM protocols WHERE {where} ORDER BY id", params)
        return [self._candidate(r) for r in rows]

    def summaries(
        self,
        *,
        valid_only: bool = False,
        order: Literal["id", "fitness"] = "id",
        limit: int | None = None,
    ) -> list[CandidateSummary]:
        """Rows without their texts and curves, for ranking and selection: an iteration
        reads these for the whole archive and whole rows only for the protocols it shows.

        ``order``: "id" (the order they were stored) or "fitness" (best first).
        """
        if order not in _ORDERS:
            raise ValueError(f"unknown order {order!r}")
        where, params = self._where(valid_only)
        sql = f"SELECT {_SUMMARY_COLUMNS} FROM protocols WHERE {where} ORDER BY {_ORDERS[order]}"
        self._refuse_bad_summary(where, params)
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        cursor = self.db.cursor()
        cursor.row_factory = None  # plain tuples: thousands of rows, built positionally
        out = []
        for row in cursor.execute(sql, params):
            values = list(row)
            values[_LINEAGE_AT] = tuple(json.loads(values[_LINEAGE_AT]))
            out.append(CandidateSummary(*values))
        return out

    def _refuse_bad_summary(
        self, where: str, params: Sequence[Any], bad: str = _BAD_SUMMARY
    ) -> None:
        """Check the summary columns of the rows ``where`` selects, in SQL: each iteration
        reads thousands of them, which a check in Python would make twice as slow. The
        first bad row found is read again and named by :meth:`_checked`."""
        row = self.db.execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM protocols WHERE ({where}) AND ({bad})"
            " ORDER BY id LIMIT 1",
            params,
        ).fetchone()
        if row is not None:
            self._checked("protocols", dict(zip(_SUMMARY_NAMES, row, strict=True)))
            raise ConfigError(f"{self.path}: protocols row {excerpt(row[0], 24)}: a bad value")

    def get(self, protocol_id: int) -> Candidate:
        return self.get_many([protocol_id])[0]

    def get_many(self, ids: Iterable[int]) -> list[Candidate]:
        """The whole rows of ``ids``, in that order."""
        wanted = list(ids)
        marks = ", ".join("?" * len(wanted))
        rows = self.db.execute(f"SELECT * FROM protocols WHERE id IN ({marks})", wanted)
        found = {c.id: c for c in map(self._candidate, rows)}
        for protocol_id in wanted:
            if protocol_id not in found:
                raise ConfigError(f"{self.path}: no protocol with id {protocol_id}")
        return [found[i] for i in wanted]

    def ids_named(self, name: str) -> list[int]:
        """The ids of the protocols called ``name`` (several when repairs kept the name)."""
        if not name.isascii() and not _is_utf8(name):  # an argument in bytes of no encoding
            return []
        rows = self.db.execute("SELECT id FROM protocols WHERE name = ? ORDER BY id", (name,))
        return [row[0] for row in rows]

    def seed_names(self) -> set[str]:
        rows = self.db.execute("SELECT name FROM protocols WHERE mode='seed'")
        return {str(r[0]) for r in rows}

    def last_iteration(self) -> int:
        return max((row["iteration"] for row in self.iterations()), default=0)

    def iterations(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM iterations ORDER BY iteration")
        return [self._checked("iterations", dict(r)) for r in rows]

    def find_code(self, code: str) -> int | None:
        """The id of a scored protocol (valid, or raced) with this exact code, if there is
        one."""
        row = self.db.execute(
            "SELECT id FROM protocols WHERE code_sha256=? AND status IN ('valid', 'raced') "
            "ORDER BY id LIMIT 1",
            (code_hash(code),),
        ).fetchone()
        return None if row is None else int(row[0])

    def scored_designs(self) -> list[tuple[dict[str, Any], float]]:
        """Every scored block-built design (valid, raced, or a twin stopped after its first
        round) as (genome JSON, fitness)."""
        rows = self.db.execute(
            "SELECT id, genome, fitness_mean FROM protocols WHERE status IN "
            "('valid', 'raced', 'duplicate') AND genome IS NOT NULL "
            "AND fitness_mean IS NOT NULL ORDER BY id"
        ).fetchall()
        out = []
        for pid, text, fitness in rows:
            genome = self._column(pid, "genome", _decoded(self.path, _row(pid), "genome", text))
            out.append((genome, float(self._column(pid, "fitness_mean", fitness))))
        return out

    def first_results(self, k: int) -> dict[tuple[int, ...], int]:
        """The final coverages on their first ``k`` seeds of the protocols scored on that
        many (valid or raced), as a key to the first one that gave them."""
        rows = self.db.execute(
            "SELECT id, fitness_values FROM protocols WHERE status IN ('valid', 'raced') "
            "AND fitness_values IS NOT NULL ORDER BY id"
        ).fetchall()
        out: dict[tuple[int, ...], int] = {}
        for pid, text in rows:
            decoded = _decoded(self.path, _row(pid), "fitness_values", text)
            values = self._column(pid, "fitness_values", decoded)
            if len(values) >= k:
                out.setdefault(tuple(int(v) for v in values[:k]), int(pid))
        return out

    def _column(self, pid: int, column: str, value: Any) -> Any:
        """``value``, read from ``column`` of row ``pid``, if it is what the column holds;
        else the one-line refusal naming them."""
        expected, test = _COLUMNS[column]
        if not test(value):
            raise bad_value(self.path, _row(pid), column, expected, value)
        return value

    def fitness_at_rank(self, rank: int) -> float | None:
        """The fitness of the ``rank``-th best valid protocol (1: the best), or None when
        there are fewer."""
        self._refuse_bad_summary(_VALID, [], _sql_number("fitness_mean"))
        row = self.db.execute(
            f"SELECT fitness_mean FROM protocols WHERE {_VALID} "
            "ORDER BY fitness_mean DESC LIMIT 1 OFFSET ?",
            (rank - 1,),
        ).fetchone()
        return None if row is None else float(row[0])

    def rescores(self) -> dict[int, Rescore]:
        """Each re-evaluated protocol's latest re-evaluation on fresh seeds, by id."""
        if not has_table(self.db, "rescores"):  # an older archive, opened read-only
            return {}
        rows = self.db.execute("SELECT * FROM rescores ORDER BY created_at, rowid")
        latest = {}
        for row in rows:
            data = self._checked("rescores", dict(row))
            latest[data["protocol_id"]] = Rescore(
                protocol_id=data["protocol_id"],
                seeds=data["seeds"],
                fitness_values=data["fitness_values"],
                mean=float(data["mean"]),
                sem=float(data["sem"]),
                created_at=data["created_at"],
            )
        return latest

    def records(self, settings: str, ids: Iterable[int]) -> dict[int, RecordRow]:
        """The records of the protocols ``ids`` kept under ``settings`` (by id), of the
        code each protocol row holds; protocols without any are left out."""
        if not has_table(self.db, "records"):  # an older archive, opened read-only
            return {}
        wanted = sorted(set(ids))
        out: dict[int, RecordRow] = {}
        for start in range(0, len(wanted), 500):  # SQLite caps a statement's parameters
            chunk = wanted[start : start + 500]
            rows = self.db.execute(
                "SELECT r.protocol_id, r.seeds, r.data FROM records r JOIN protocols p"
                " ON p.id = r.protocol_id AND p.code_sha256 = r.code_sha256"
                f" WHERE r.settings = ? AND r.protocol_id IN ({', '.join('?' * len(chunk))})",
                [settings, *chunk],
            )
            for pid, seeds_text, data in rows:
                row = f"records row {excerpt(pid, 24)}"
                seeds = _decoded(self.path, row, "seeds", seeds_text)
                if not _list_of(lambda v: _is_int(v) and v >= 0)(seeds):
                    raise bad_value(self.path, row, "seeds", "a JSON list of seeds", seeds)
                if not isinstance(data, bytes):
                    raise bad_value(self.path, row, "data", "bytes", data)
                out[int(pid)] = RecordRow(settings, tuple(seeds), data)
        return out

    def record_sizes(self) -> tuple[int, int]:
        """How many protocols have records, and their bytes together."""
        if not has_table(self.db, "records"):
            return 0, 0
        count, size = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(length(data)), 0) FROM records"
        ).fetchone()
        return int(count), int(size)

    def spent(self) -> float:
        row = self.db.execute("SELECT COALESCE(SUM(cost), 0) FROM llm_calls").fetchone()
        return float(row[0])

    def stats(self) -> ArchiveStats:
        n_invalid = int(
            self.db.execute("SELECT COUNT(*) FROM protocols WHERE status='invalid'").fetchone()[0]
        )
        self._refuse_bad_summary(
            _VALID, [], f"typeof(name) != 'text' OR {_sql_number('fitness_mean')}"
        )
        scored = self.db.execute(
            f"SELECT name, fitness_mean FROM protocols WHERE {_VALID} ORDER BY id"
        ).fetchall()
        if not scored:
            return ArchiveStats(0, n_invalid, float("nan"), float("nan"), "")
        best = max(scored, key=lambda r: float(r[1]))
        mean = sum(float(r[1]) for r in scored) / len(scored)
        return ArchiveStats(len(scored), n_invalid, mean, float(best[1]), str(best[0]))

    def totals(self) -> Totals:
        counts = dict(
            self.db.execute(
                "SELECT status, COUNT(*) FROM protocols WHERE mode != 'seed' GROUP BY status"
            ).fetchall()
        )
        seeds = self.db.execute("SELECT COUNT(*) FROM protocols WHERE mode = 'seed'").fetchone()
        repairs = self.db.execute("SELECT COUNT(*) FROM protocols WHERE attempt > 0").fetchone()
        calls = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), "
            "COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost), 0) FROM llm_calls"
        ).fetchone()
        iterations = self.db.execute("SELECT COUNT(*) FROM iterations").fetchone()
        return Totals(
            protocols=sum(counts.values()) + int(seeds[0]),
            valid=counts.get("valid", 0),
            invalid=counts.get("invalid", 0),
            duplicates=counts.get("duplicate", 0),
            raced=counts.get("raced", 0),
            repairs=int(repairs[0]),
            iterations=int(iterations[0]),
            seeds=int(seeds[0]),
            llm_calls=int(calls[0]),
            prompt_tokens=int(calls[1]),
            completion_tokens=int(calls[2]),
            cost=float(calls[3]),
        )
