"""Who sent how many memories to whom, step by step."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter

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
