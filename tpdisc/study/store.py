"""The study's own simulations and its log, in ``study.sqlite``.

Stages that are not searches or run analyses (baselines, best protocols, generalization)
simulate *cells*: one protocol under one simulation config over some seeds. Each
simulation's summary is written in its own transaction the moment it arrives, under
(stage, item, seed), so a study killed at any moment loses at most the simulations in
flight, and a rerun runs only the missing ones. Every invocation of the study is a
*session*; each row and each log line carries the session that wrote it, which is how one
checks that a rerun redid nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tpdisc.analysis.simulate import Summarised
from tpdisc.analysis.store import SimSummary
from tpdisc.domain.variants import Domain
from tpdisc.errors import ConfigError, excerpt
from tpdisc.executors.base import Executor
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import SimTask
from tpdisc.storage import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS sims (
    stage TEXT NOT NULL,
    item TEXT NOT NULL,
    seed INTEGER NOT NULL,
    value TEXT NOT NULL,
    session INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (stage, item, seed)
);
CREATE TABLE IF NOT EXISTS events (
    session INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    stage TEXT NOT NULL,
    event TEXT NOT NULL,
    detail TEXT NOT NULL
);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _is_time(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > 40:
        return False
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False


def _is_session(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**53


def _is_short_text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 10_000


_EVENT_COLUMNS: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    ("session", "a whole number from 1", _is_session),
    ("time", "a date and time with its offset (ISO 8601)", _is_time),
    ("stage", "text", _is_short_text),
    ("event", "text", _is_short_text),
    ("detail", "text of at most 10,000 characters", _is_short_text),
)


@dataclass(frozen=True)
class Cell:
    """One protocol under one simulation config: ``item`` names it within its stage."""

    item: str
    domain: Domain
    sim: SimConfig
    spec: ProtocolSpec
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class Stored:
    """A cell's simulation as stored: its summary, or why the protocol failed."""

    summary: SimSummary | None
    error: str | None = None


class StudyStore(Database):
    """``study.sqlite`` of one study folder, opened for one session (one invocation)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        try:
            self.db.executescript(SCHEMA)
            last = max((e["session"] for e in self.events()), default=0)
        except BaseException:
            self.close()
            raise
        self.session = last + 1

    def log(self, stage: str, event: str, detail: str = "") -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                (self.session, _now(), stage, event, detail),
            )

    def events(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT session, created_at, stage, event, detail FROM events ORDER BY rowid"
        )
        keys = ("session", "time", "stage", "event", "detail")
        return [self._event(k, dict(zip(keys, row, strict=True))) for k, row in enumerate(rows)]

    def _event(self, k: int, event: dict[str, Any]) -> dict[str, Any]:
        """One row of ``events``, checked: a study folder may come from anyone."""
        for column, expected, fine in _EVENT_COLUMNS:
            if not fine(event[column]):
                row = f"events row {k + 1}"
                column_name = "created_at" if column == "time" else column
                raise ConfigError(
                    f"{self.path}: {row}: column {column_name}: expected {expected}, "
                    f"got {excerpt(event[column])}"
                )
        return event

    def stored(
        self, stage: str, items: Iterable[str] | None = None
    ) -> dict[str, dict[int, Stored]]:
        """Per item of ``stage`` (all, or those of ``items``), its stored simulations by seed."""
        wanted = None if items is None else set(items)
        out: dict[str, dict[int, Stored]] = {}
        rows = self.db.execute("SELECT item, seed, value FROM sims WHERE stage=?", (stage,))
        for item, seed, value in rows:
            if wanted is not None and item not in wanted:
                continue
            out.setdefault(item, {})[seed] = self._stored(stage, item, seed, value)
        return out

    def _stored(self, stage: str, item: Any, seed: Any, value: Any) -> Stored:
        """One row of ``sims``, checked: a study folder may come from anyone."""
        row = f"sims row ({stage}, {excerpt(item, 40)}, {excerpt(seed, 20)})"
        if not isinstance(item, str) or not isinstance(seed, int) or isinstance(seed, bool):
            raise ConfigError(f"{self.path}: {row}: expected a text item and a whole seed")
        try:
            data = json.loads(value) if isinstance(value, str) else value
        except (ValueError, RecursionError):  # RecursionError: nesting thousands deep
            raise ConfigError(
                f"{self.path}: {row}: column value: expected JSON text, got {excerpt(value)}"
            ) from None
        try:
            if isinstance(data, dict) and "error" in data:
                if not isinstance(data["error"], str):
                    raise ValueError(f"field error: expected text, got {excerpt(data['error'])}")
                return Stored(None, data["error"])
            return Stored(SimSummary.from_json(data))
        except ValueError as err:
            raise ConfigError(f"{self.path}: {row}: column value: {err}") from None

    def _check(self, stage: str, cell: Cell, stored: dict[int, Stored]) -> None:
        """The stored simulations of ``cell`` must be of its own agents and steps: a study
        folder may come from anyone, and its curves are indexed by step."""
        for seed, got in stored.items():
            if got.summary is None:
                continue
            try:
                got.summary.check(cell.sim.n_agents, cell.sim.n_steps)
            except ValueError as err:
                row = f"sims row ({stage}, {excerpt(cell.item, 40)}, {seed})"
                raise ConfigError(f"{self.path}: {row}: column value: {err}") from None

    def count(self, stage: str) -> int:
        row = self.db.execute("SELECT COUNT(*) FROM sims WHERE stage=?", (stage,)).fetchone()
        return int(row[0])

    def sessions_of(self, stage: str) -> dict[int, int]:
        """How many of ``stage``'s simulations each session ran."""
        rows = self.db.execute(
            "SELECT session, COUNT(*) FROM sims WHERE stage=? GROUP BY session", (stage,)
        )
        return {s: int(n) for s, n in rows if isinstance(s, int)}  # a bad session: none of ours

    def _put(self, stage: str, item: str, seed: int, value: dict[str, Any]) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO sims VALUES (?, ?, ?, ?, ?, ?)",
                (stage, item, seed, json.dumps(value), self.session, _now()),
            )

    def missing(self, stage: str, cells: Sequence[Cell]) -> int:
        have = self.stored(stage, [c.item for c in cells])
        return sum(len(set(c.seeds) - set(have.get(c.item, {}))) for c in cells)

    def simulate(
        self,
        stage: str,
        cells: Sequence[Cell],
        executor: Executor,
        on_simulation: Callable[[str], None] | None = None,
    ) -> dict[str, dict[int, Stored]]:
        """Every simulation of ``cells`` the store lacks, run in one batch and each stored
        as it arrives; returns all of the cells' simulations, by item and seed."""
        have = self.stored(stage, [c.item for c in cells])
        for cell in cells:
            self._check(stage, cell, have.get(cell.item, {}))
        tasks = [
            Summarised(k, 0, SimTask(c.domain, c.sim, c.spec, seed))
            for k, c in enumerate(cells)
            for seed in c.seeds
            if seed not in have.get(c.item, {})
        ]

        def arrived(out: tuple[int, int, int, tuple[SimSummary, ...] | str]) -> None:
            k, _, seed, got = out
            item = cells[k].item
            if isinstance(got, str):
                self._put(stage, item, seed, {"error": got})
                have.setdefault(item, {})[seed] = Stored(None, got)
            else:
                self._put(stage, item, seed, got[0].to_json())
                have.setdefault(item, {})[seed] = Stored(got[0])
            if on_simulation is not None:
                on_simulation(item)

        if tasks:
            executor.run(tasks, arrived)
        return {c.item: {s: have[c.item][s] for s in c.seeds} for c in cells}
