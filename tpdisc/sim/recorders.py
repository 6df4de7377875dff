"""What is measured while a game plays, kept apart from the game's rules.

The game (:mod:`tpdisc.sim.game`) tells each of its recorders, once per step, the attempts
its agents made and then the memories it delivered; a recorder keeps what it measures and
never changes the game. A new measure is a new recorder passed to
:func:`~tpdisc.sim.game.run_simulation`: the loop stays as it is.

Every simulation has a :class:`ScheduleRecorder` and a :class:`MechanismRecorder`; one
with a log adds a :class:`LogRecorder` (in memory, or streamed to Parquet with
``log_path``), one with a tally a :class:`TallyRecorder`. The attempt history needs no
recorder: it is the agents' own memories, which the game keeps anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from typing import TYPE_CHECKING, Protocol

from tpdisc.agents.base import FAILED, Agent, Memory
from tpdisc.protocols.exchanges import Exchanges
from tpdisc.protocols.schedule import Schedule
from tpdisc.sim import accounting
from tpdisc.sim.accounting import Accounting
from tpdisc.sim.log import AttemptHistory, ParquetLogWriter, TransmissionLog
from tpdisc.sim.mechanism import Mechanism, summarise

if TYPE_CHECKING:
    from tpdisc.sim.transmissions import Tally

# The accounting's ways and outcomes as positions in an agent's counts (way · outcomes +
# outcome), bound here once: the game's recorder reads them a few times per attempt.
_OUTCOMES = len(accounting.OUTCOMES)
_REMAKE, _ALONE, _BORROWED, _STEERED, _ANYWAY = (w * _OUTCOMES for w in range(len(accounting.WAYS)))
_GROUP, _SELF, _FAILURE, _NOTHING = range(_OUTCOMES)

# What one learner was routed at one step, as a plain tuple (one is made per learner and
# step: a named tuple's constructor would cost the game a few per cent):
# (learner, entries: (teacher, memory index) as the protocol routed them, sent: the
# memories those entries name, kept: which of them passed the bottleneck or None when all
# did, memories: those that passed, in order).
Delivery = tuple[
    int, Sequence[tuple[int, int]], Sequence[Memory], Sequence[bool] | None, Sequence[Memory]
]


class Recorder(Protocol):
    """Watches a game. Within a step, :meth:`attempted` comes before :meth:`delivered`."""

    def attempted(self, step: int, memories: Sequence[Memory]) -> None:
        """Agent ``i``'s attempt at ``step`` is ``memories[i]`` (result -1: it failed)."""

    def delivered(self, step: int, exchanges: Exchanges, deliveries: Sequence[Delivery]) -> None:
        """What the protocol routed at ``step``, and what each learner was given, in order of
        learner."""


class ScheduleRecorder:
    """Who sent how many memories to whom (:class:`~tpdisc.protocols.schedule.Schedule`)."""

    def __init__(self) -> None:
        self.schedule = Schedule()

    def attempted(self, step: int, memories: Sequence[Memory]) -> None:
        pass

    def delivered(self, step: int, exchanges: Exchanges, deliveries: Sequence[Delivery]) -> None:
        self.schedule.record(exchanges)


class MechanismRecorder:
    """The counters behind the mechanism numbers (:mod:`tpdisc.sim.mechanism`), the received
    memories and the accounting of every attempt (:mod:`tpdisc.sim.accounting`), kept as the
    game goes so that the summary needs no replay. Whether the social bias steered a choice
    is the agent's own ``steered`` (``agents``; without them, never), read right after the
    step's choices."""

    def __init__(
        self,
        kinds: Sequence[str],
        starts: Sequence[Sequence[int]],
        n_elements: int,
        agents: Sequence[Agent] = (),
    ):
        n_agents = len(starts)
        self.kinds = list(kinds)
        self.n_start = [len(s) for s in starts]
        self.n = n_elements
        self.agents = list(agents)
        self.steps = 0
        self.successes = [0] * n_agents
        self.remakes = [0] * n_agents
        self.result_remakes = [0] * n_agents
        self.tried: list[set[int]] = [set() for _ in range(n_agents)]
        # What each agent was told worked, in earlier steps: pairs and results.
        self.received_pairs: list[set[int]] = [set() for _ in range(n_agents)]
        self.received_results: list[set[int]] = [set() for _ in range(n_agents)]
        self.received = 0  # memories that passed the bottleneck, all agents together
        self.novel_received = 0  # of those, memories of pairs the learner had not tried
        # The accounting: what each agent and the group own, who was given memories last
        # step (a memory names two elements at least, so its learner had elements to use),
        # and each agent's counts by way and outcome.
        self.owned = [set(s) for s in starts]
        self.discovered: set[int] = set().union(*self.owned)
        self.given = [False] * n_agents
        self.counts = [[0] * (len(accounting.WAYS) * len(accounting.OUTCOMES)) for _ in starts]
        self.ways_by_step: list[list[int]] = []

    def attempted(self, step: int, memories: Sequence[Memory]) -> None:
        n, failed, discovered, given = self.n, FAILED, self.discovered, self.given
        tried, received_pairs, owned_by, counts_of = (
            self.tried,
            self.received_pairs,
            self.owned,
            self.counts,
        )
        self.steps += 1  # one attempt per agent and step
        ways = [_ALONE] * len(memories)
        for agent, (a, b, result) in enumerate(memories):
            # Pairs as ints (lo · n + hi): cheaper to make and hash than tuples.
            key = a * n + b if a <= b else b * n + a
            tried[agent].add(key)
            owned = owned_by[agent]
            # the way, as a position in the counts (way · outcomes)
            if key in received_pairs[agent]:
                self.remakes[agent] += 1
                way = _REMAKE
            elif not given[agent]:
                way = _ALONE
            elif a not in owned or b not in owned:  # an element it lacks: a social one
                way = _BORROWED
            elif self.agents and self.agents[agent].steered:
                way = _STEERED
            else:
                way = _ANYWAY
            ways[agent] = way
            counts = counts_of[agent]
            if result == failed:
                counts[way + _FAILURE] += 1
                continue
            self.successes[agent] += 1
            if result in self.received_results[agent]:
                self.result_remakes[agent] += 1
            if result in owned:
                counts[way + _NOTHING] += 1
            elif result in discovered:
                owned.add(result)
                counts[way + _SELF] += 1
            else:
                owned.add(result)
                discovered.add(result)
                counts[way + _GROUP] += 1
        self.ways_by_step.append(ways)

    def delivered(self, step: int, exchanges: Exchanges, deliveries: Sequence[Delivery]) -> None:
        n, failed = self.n, FAILED
        given = [False] * len(self.given)
        for learner, _, _, _, memories in deliveries:
            if not memories:
                continue
            given[learner] = True
            tried = self.tried[learner]
            pairs = self.received_pairs[learner]
            results = self.received_results[learner]
            novel = 0
            for a, b, r in memories:
                key = a * n + b if a <= b else b * n + a
                if r != failed:
                    pairs.add(key)
                    results.add(r)
                if key not in tried:
                    novel += 1
            self.novel_received += novel
            self.received += len(memories)
        self.given = given

    def mechanism(self, inventories: Sequence[Sequence[int]]) -> Mechanism:
        """The numbers per agent type, given every agent's final inventory."""
        return summarise(
            self.kinds,
            inventories,
            self.n_start,
            [self.steps] * len(self.n_start),
            self.successes,
            self.remakes,
            self.result_remakes,
        )

    def accounting(self) -> Accounting:
        """Per agent type, each attempt's way and outcome (:mod:`tpdisc.sim.accounting`)."""
        return accounting.summarise(
            self.kinds, self.counts, [[w // _OUTCOMES for w in ways] for ways in self.ways_by_step]
        )


class LogRecorder:
    """The transmission log: in memory (:class:`TransmissionLog`) or streamed to a file
    (:class:`ParquetLogWriter`)."""

    def __init__(self, sink: TransmissionLog | ParquetLogWriter) -> None:
        self.sink = sink

    def attempted(self, step: int, memories: Sequence[Memory]) -> None:
        pass

    def delivered(self, step: int, exchanges: Exchanges, deliveries: Sequence[Delivery]) -> None:
        for learner, entries, sent, kept, _ in deliveries:
            self.sink.extend(step, learner, entries, sent, kept)


class TallyRecorder:
    """What the behavioural features need of a game, without its log: each step's attempts
    and, per learner, the ``(teacher, memory index)`` entries that passed the bottleneck,
    in plain lists; :meth:`tally` reduces them at the end
    (:func:`tpdisc.sim.transmissions.tally`, the same as from the whole log)."""

    def __init__(self, starts: Sequence[Sequence[int]], n_elements: int) -> None:
        self.starts = tuple(tuple(s) for s in starts)
        self.n_elements = n_elements
        self.attempts: list[Sequence[Memory]] = []
        self.rows: list[tuple[int, int, int]] = []  # (step, learner, entries delivered)
        self.entries: list[tuple[int, int]] = []

    def attempted(self, step: int, memories: Sequence[Memory]) -> None:
        self.attempts.append(memories)

    def delivered(self, step: int, exchanges: Exchanges, deliveries: Sequence[Delivery]) -> None:
        for learner, entries, _, kept, _ in deliveries:
            if kept is not None:
                entries = list(compress(entries, kept))
            if entries:
                self.rows.append((step, learner, len(entries)))
                self.entries.extend(entries)

    def history(self) -> AttemptHistory:
        return AttemptHistory(self.n_elements, self.starts, tuple(zip(*self.attempts, strict=True)))

    def tally(self) -> Tally:
        # Imported here: only a tallied game needs it, and every process that simulates
        # would pay for its import (its dataclasses: about 5 ms) at its start.
        from tpdisc.sim.transmissions import deliveries, tally

        return tally(deliveries(self.rows, self.entries), self.history())
