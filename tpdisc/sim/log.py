"""The transmission log: every memory a protocol sent, as columns."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


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

    def append(
        self,
        step: int,
        teacher: int,
        learner: int,
        index: int,
        memory: tuple[int, int, int],
        survived: bool,
    ) -> None:
        self.step.append(step)
        self.teacher.append(teacher)
        self.learner.append(learner)
        self.memory_index.append(index)
        self.e1.append(memory[0])
        self.e2.append(memory[1])
        self.result.append(memory[2])
        self.survived.append(survived)

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
        table = pa.table(self.columns())
        if names is not None:
            lookup = np.asarray([*names, ""], dtype=object)  # -1 (failure) maps to ""
            for col in ("e1", "e2", "result"):
                table = table.append_column(f"{col}_name", pa.array(lookup[self.columns()[col]]))
        return table

    def to_parquet(self, path: str | Path, names: tuple[str, ...] | None = None) -> None:
        pq.write_table(self.to_table(names), str(path))
