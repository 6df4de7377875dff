"""Who sent how many memories to whom, step by step."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter

import numpy as np

# (teacher, learner, number of memories sent, before the attention bottleneck)
Transfer = tuple[int, int, int]


@dataclass
class Schedule:
    """The routing of one simulation, without the content."""

    steps: list[list[Transfer]] = field(default_factory=list)

    def record(self, exchanges: dict[int, list[tuple[int, int]]]) -> None:
        transfers: list[Transfer] = []
        for learner, entries in exchanges.items():
            if not entries:
                continue
            teachers = list(map(itemgetter(0), entries))
            first = teachers[0]
            # Mostly one teacher per learner: counted without a Counter, a third of the time.
            if teachers.count(first) == len(teachers):
                transfers.append((first, learner, len(teachers)))
                continue
            counts: dict[int, int] = {}
            for teacher in teachers:
                counts[teacher] = counts.get(teacher, 0) + 1
            transfers.extend((teacher, learner, n) for teacher, n in counts.items())
        transfers.sort()  # each (teacher, learner) once: the counts never decide the order
        self.steps.append(transfers)

    def at(self, step: int) -> list[Transfer]:
        return self.steps[step] if step < len(self.steps) else []

    def total_sent(self) -> int:
        return sum(n for step in self.steps for _, _, n in step)

    def to_json(self) -> list[list[list[int]]]:
        return [[list(t) for t in step] for step in self.steps]

    @classmethod
    def from_json(cls, data: list[list[list[int]]]) -> Schedule:
        return cls([[(int(t), int(learner), int(n)) for t, learner, n in step] for step in data])

    def packed(self) -> PackedSchedule:
        sizes = np.fromiter(map(len, self.steps), dtype=np.int64, count=len(self.steps))
        flat = chain.from_iterable(chain.from_iterable(self.steps))
        transfers = np.fromiter(flat, dtype=np.int64, count=3 * int(sizes.sum()))
        return PackedSchedule(sizes, transfers.reshape(-1, 3))


@dataclass(frozen=True, eq=False)
class PackedSchedule:
    """A :class:`Schedule` as two arrays, a few kB where the lists take tens: how many
    transfers each step has, and every transfer ``(teacher, learner, count)`` in order."""

    sizes: np.ndarray  # (steps,)
    transfers: np.ndarray  # (transfers, 3)

    def unpacked(self) -> Schedule:
        rows = list(map(tuple, self.transfers.tolist()))
        ends = np.cumsum(self.sizes).tolist()
        return Schedule([rows[a:b] for a, b in zip([0, *ends], ends, strict=False)])
