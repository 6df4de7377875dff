"""State-agnostic ablation: keep a protocol's schedule, randomise what it sends.

A protocol's run is recorded as a schedule (per step: teacher → learner, how many
memories). Replaying that schedule with the memories drawn uniformly at random (without
replacement) from the teacher's memories at that step keeps who-talks-to-whom-and-how-much
exactly, and removes everything the protocol knew about the content.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpdisc.protocols.interface import AgentStates, InProcessRunner, ProtocolRunner, ProtocolSpec
from tpdisc.protocols.schedule import Schedule
from tpdisc.random_draws import integer_below


class ScheduleReplay:
    """A protocol that follows a recorded schedule with random content."""

    def __init__(self, schedule: Schedule, seed: int | None = None) -> None:
        self.schedule = schedule
        self.rng = np.random.default_rng(seed)

    def share_memories(
        self, i_step: int, agent_states: AgentStates
    ) -> dict[int, list[tuple[int, int]]]:
        exchanges: dict[int, list[tuple[int, int]]] = {}
        for teacher, learner, count in self.schedule.at(i_step):
            n_mem = len(agent_states[teacher]["memories"])
            sent = exchanges.setdefault(learner, [])
            if count == 1 and n_mem:
                # The draw choice() makes for one memory, from the same stream, at a
                # quarter of its cost (half of a replay's draws are of one memory).
                sent.append((teacher, integer_below(self.rng, n_mem)))
                continue
            # Distinct memories, as the original most likely sent; repeats only when it sent
            # more than the teacher has.
            picks = self.rng.choice(n_mem, size=count, replace=count > n_mem)
            sent.extend((teacher, int(i)) for i in picks)
        return exchanges


@dataclass(frozen=True)
class ReplayProtocol(ProtocolSpec):
    """Opens a :class:`ScheduleReplay` of one recorded schedule (one seed's run)."""

    name: str
    schedule: Schedule

    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        # Canonical by construction: recorded (teacher, learner) ids, indices drawn below
        # each teacher's count, no empty list (a schedule records no zero counts).
        replay = ScheduleReplay(self.schedule, seed)
        return InProcessRunner(self.name, replay, snapshots=True, canonical=True)
