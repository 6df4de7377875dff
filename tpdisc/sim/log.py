"""The transmission log: every memory a protocol sent, as columns.

:class:`TransmissionLog` holds a whole game's log in memory, for callers that want it;
:class:`ParquetLogWriter` streams it to a file as the game goes, so that a protocol routing
many memories costs the host disk, not memory (``tpdisc evaluate --log-dir``).
:class:`AttemptHistory` goes with an in-memory log: every agent's own attempts, from which
the states behind each logged memory can be rebuilt (see :mod:`tpdisc.analysis.features`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tpdisc.safefiles import NewFile

if TYPE_CHECKING:  # imported on use: every simulation imports this module, few write Arrow
    import pyarrow as pa
    import pyarrow.parquet as pq

# Rows buffered before a row group is written: a few MB at most, few groups per file.
ROWS_PER_GROUP = 1 << 16


@dataclass
class TransmissionLog:
    """One row per memory sent: when, from whom, to whom, which, what it said, whether the
    learner's attention bottleneck let it through. ``result`` is -1 for a failed attempt."""

    step: list[int] = field(default_factory=list)
    teacher: list[int] = field(default_factory=list)
    learner: list[int] = field(default_factory=list)
    memory_index: list[int] = field(default_factory=list)
    e1: list[int] = field(default_factory=list)
    e2: list[int] = field(default_factory=list)
    result: list[int] = field(default_factory=list)
    survived: list[bool] = field(default_factory=list)

    def extend(
        self,
        step: int,
        learner: int,
        entries: Sequence[tuple[int, int]],
        memories: Sequence[tuple[int, int, int]],
        survived: Sequence[bool] | None = None,
    ) -> None:
        """Every memory one learner was sent at one step (``survived``: all when None)."""
        n = len(entries)
        self.step.extend([step] * n)
        self.teacher.extend([teacher for teacher, _ in entries])
        self.learner.extend([learner] * n)
        self.memory_index.extend([index for _, index in entries])
        self.e1.extend([m[0] for m in memories])
        self.e2.extend([m[1] for m in memories])
        self.result.extend([m[2] for m in memories])
        self.survived.extend([True] * n if survived is None else survived)

    def __len__(self) -> int:
        return len(self.step)

    def columns(self) -> dict[str, np.ndarray]:
        return {
            f.name: np.asarray(
                getattr(self, f.name), dtype=bool if f.name == "survived" else np.int32
            )
            for f in fields(self)
        }

    def to_table(self, names: tuple[str, ...] | None = None) -> pa.Table:
        """As an Arrow table; with ``names``, element names are added beside the ids."""
        import pyarrow as pa

        columns = self.columns()
        table = pa.table(columns)
        if names is not None:
            lookup = np.asarray([*names, ""], dtype=object)  # -1 (failure) maps to ""
            for col in ("e1", "e2", "result"):
                table = table.append_column(f"{col}_name", pa.array(lookup[columns[col]]))
        return table

    def to_parquet(self, path: str | Path, names: tuple[str, ...] | None = None) -> None:
        import pyarrow.parquet as pq

        pq.write_table(self.to_table(names), str(path))


@dataclass(frozen=True)
class AttemptHistory:
    """Every agent's start elements and own attempts, kept beside a transmission log.

    ``memories[i][s]`` is agent ``i``'s attempt at step ``s`` (0-based), ``(e1, e2,
    result)`` with ``result`` -1 on failure. The game makes one memory per attempt and one
    attempt per step, and a received memory never joins the learner's own; so the
    ``memory_index`` of a logged memory is also the step its teacher made it. An element
    enters an inventory only by its owner's own success, so the start elements and these
    attempts give any agent's inventory after any step: the game copies nothing while it
    plays, and the history is made, at the end, of the memory lists it already holds.
    """

    n_elements: int
    starts: tuple[tuple[int, ...], ...]
    memories: tuple[tuple[tuple[int, int, int], ...], ...]

    @property
    def n_agents(self) -> int:
        return len(self.starts)

    @property
    def n_steps(self) -> int:
        return len(self.memories[0]) if self.memories else 0


def log_file(prefix: Path, seed: int, ablated: bool = False) -> Path:
    """Where a simulation's log goes: ``PREFIX[-ablated]-seedN.parquet``."""
    return prefix.with_name(f"{prefix.name}{'-ablated' if ablated else ''}-seed{seed}.parquet")


class ParquetLogWriter:
    """A transmission log written to ``path`` as it grows: the same columns (and element
    names) as :meth:`TransmissionLog.to_parquet`, in row groups of ``rows_per_group``.

    Memory holds one group and one step at most, whatever the length of the game. The
    file is written under a temporary name beside ``path`` (never through a link there:
    :class:`~tpdisc.safefiles.NewFile`) and renamed by :meth:`close`; :meth:`abort` (a
    failed simulation) removes it, so no half log is ever taken for a whole one.
    """

    def __init__(
        self,
        path: str | Path,
        names: tuple[str, ...] | None = None,
        rows_per_group: int = ROWS_PER_GROUP,
    ) -> None:
        import pyarrow as pa

        self.path = Path(path)
        self.file: NewFile | None = None
        self.names = names
        self.rows_per_group = rows_per_group
        self.buffer = TransmissionLog()
        self.rows = 0
        # The schema is fixed up front: a group whose name columns are all empty must not
        # change the file's types (Arrow would infer null for them).
        schema = TransmissionLog().to_table().schema
        if names is not None:
            for col in ("e1", "e2", "result"):
                schema = schema.append(pa.field(f"{col}_name", pa.string()))
        self.schema = schema
        self.writer: pq.ParquetWriter | None = None

    def extend(
        self,
        step: int,
        learner: int,
        entries: Sequence[tuple[int, int]],
        memories: Sequence[tuple[int, int, int]],
        survived: Sequence[bool] | None = None,
    ) -> None:
        """As :meth:`TransmissionLog.extend`; a full group goes to the file."""
        self.buffer.extend(step, learner, entries, memories, survived)
        self.rows += len(entries)
        if len(self.buffer) >= self.rows_per_group:
            self.flush()

    def __len__(self) -> int:
        return self.rows

    def _open(self) -> pq.ParquetWriter:
        import pyarrow.parquet as pq

        if self.writer is None:
            self.file = NewFile(self.path)
            self.writer = pq.ParquetWriter(self.file.stream, self.schema)
        return self.writer

    def flush(self) -> None:
        if len(self.buffer):
            table = self.buffer.to_table(self.names).cast(self.schema)
            self._open().write_table(table)
            self.buffer = TransmissionLog()

    def close(self) -> None:
        """Write what is left and put the file in place (an empty log has a schema too)."""
        self.flush()
        self._open().close()
        assert self.file is not None
        self.file.commit()

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.file is not None:
            self.file.discard()
