"""The transmission log: every memory a protocol sent, as columns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported on use: every simulation imports this module, few write Arrow
    import pyarrow as pa


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
