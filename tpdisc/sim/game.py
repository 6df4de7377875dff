"""The game loop of Collective Little Alchemy (SPEC §1).

Each step: (1) every agent attempts one pair from its inventory plus last step's social
inventory; (2) only an agent's own success enters its inventory; (3) the protocol routes
memories; (4) each recipient keeps at most ``bottleneck`` of them (a uniform random
subset), and the elements they name form its social inventory for the next step only.

When a pair has several results, one attempt yields one of them: uniformly among those the
agent does not own yet, or among all of them when it owns every one. The memory records
that single result, so an agent still gains at most one element per step.

Coverage counts the distinct elements in the union of all inventories, *including* the
start elements (four in the full game): it is 4 before the first step.

Each result also carries mechanism numbers per agent type (inventory size, success rate,
remake fractions, Jaccard distance, union), defined in :mod:`tpdisc.sim.mechanism`, and
the accounting of every attempt by how it was chosen and what came of it
(:mod:`tpdisc.sim.accounting`). The
game only plays; what is measured is kept by recorders (:mod:`tpdisc.sim.recorders`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tpdisc.agents.base import FAILED, Agent, AgentContext, AgentState, Memory
from tpdisc.agents.population import agent_factory, agent_kinds
from tpdisc.domain.variants import Domain
from tpdisc.errors import ProtocolError
from tpdisc.protocols.exchanges import Exchanges, validate_exchanges
from tpdisc.protocols.interface import AgentStates, ProtocolSpec
from tpdisc.protocols.schedule import Schedule
from tpdisc.protocols.states import Snapshot
from tpdisc.random_draws import integer_below
from tpdisc.sim.accounting import Accounting
from tpdisc.sim.config import SimConfig
from tpdisc.sim.log import AttemptHistory, ParquetLogWriter, TransmissionLog
from tpdisc.sim.mechanism import Mechanism
from tpdisc.sim.recorders import (
    Delivery,
    LogRecorder,
    MechanismRecorder,
    Recorder,
    ScheduleRecorder,
    TallyRecorder,
)

if TYPE_CHECKING:
    from tpdisc.sim.transmissions import Tally


@dataclass
class SimResult:
    """The outcome of one simulation."""

    seed: int
    curve: list[int]  # coverage before the first step, then after each step (T + 1 values)
    schedule: Schedule
    log: TransmissionLog | None = None  # with record_log (not when streamed to a file)
    protocol_logs: list[dict[str, Any]] = field(default_factory=list)
    received: int = 0  # memories that passed the bottleneck, all agents together
    novel_received: int = 0  # of those, memories of pairs the learner had not tried itself
    agent_stats: dict[str, float] = field(default_factory=dict)
    # per agent type: inventory size, success rate, remakes… (see tpdisc.sim.mechanism)
    mechanism: Mechanism = field(default_factory=dict)
    # per agent type: each attempt's way and outcome (see tpdisc.sim.accounting)
    accounting: Accounting = field(default_factory=dict)
    # with record_log: every agent's own attempts, so that the states behind each logged
    # memory can be rebuilt (behavioural features); None in ordinary runs
    history: AttemptHistory | None = None
    # with tally: what the behavioural features need of the transmissions, without the log
    tally: Tally | None = None

    @property
    def final(self) -> int:
        return self.curve[-1]


def seed_streams(
    seed: int, n_agents: int
) -> tuple[np.random.Generator, int, list[np.random.Generator]]:
    """Independent streams for the game, the protocol and each agent, all from ``seed``."""
    root = np.random.SeedSequence(seed)
    game_seq, protocol_seq, *agent_seqs = root.spawn(2 + n_agents)
    protocol_seed = int(protocol_seq.generate_state(1)[0])
    return (
        np.random.default_rng(game_seq),
        protocol_seed,
        [np.random.default_rng(s) for s in agent_seqs],
    )


def build_agents(domain: Domain, config: SimConfig) -> list[Agent]:
    return [
        agent_factory(kind)(
            AgentContext(
                domain.graph, i, config.n_agents, config.n_steps, config.params, domain.source
            )
        )
        for i, kind in enumerate(agent_kinds(config.agents))
    ]


class Game:
    """The mutable state of one simulation and its rules; :func:`run_simulation` drives it.

    What is measured along the way is not kept here: each step, the game tells its
    ``recorders`` (:mod:`tpdisc.sim.recorders`) the attempts and then the deliveries.
    """

    def __init__(
        self,
        domain: Domain,
        config: SimConfig,
        seed: int,
        recorders: Sequence[Recorder] = (),
    ) -> None:
        self.graph = domain.graph
        self.config = config
        self.names = self.graph.names
        self.rng, self.protocol_seed, self.agent_rngs = seed_streams(seed, config.n_agents)
        self.kinds = agent_kinds(config.agents)
        self.agents = build_agents(domain, config)
        starts = [domain.start_inventory(i) for i in range(config.n_agents)]
        self.starts = tuple(tuple(int(e) for e in s) for s in starts)
        self.recorders = list(recorders)
        self.states = [AgentState.start(self.graph.n_elements, s) for s in starts]
        self.inventory_names: list[list[str]] = [[self.names[e] for e in s] for s in starts]
        self.memory_names: list[list[tuple[str, str, str | None]]] = [[] for _ in starts]
        self.social: list[list[int]] = [[] for _ in starts]
        self.discovered = np.zeros(self.graph.n_elements, dtype=bool)
        for s in starts:
            self.discovered[list(s)] = True
        self.coverage = int(self.discovered.sum())
        groups: dict[type[Agent], list[int]] = {}
        for i, agent in enumerate(self.agents):
            groups.setdefault(type(agent), []).append(i)
        # Agents, states and streams never change: only the social items are new each step.
        self.groups = [
            (
                cls,
                ids,
                [self.agents[i] for i in ids],
                [self.states[i] for i in ids],
                [self.agent_rngs[i] for i in ids],
            )
            for cls, ids in groups.items()
        ]

    def choose(self) -> list[tuple[int, int]]:
        if len(self.groups) == 1:  # one kind of agent, ids 0, 1, … in order
            cls, _, agents, states, rngs = self.groups[0]
            return cls.choose_many(agents, states, self.social, rngs)
        choices: list[tuple[int, int]] = [(0, 0)] * len(self.agents)
        for cls, ids, agents, states, rngs in self.groups:
            picked = cls.choose_many(agents, states, [self.social[i] for i in ids], rngs)
            for i, pair in zip(ids, picked, strict=True):
                choices[i] = pair
        return choices

    def attempts(self, step: int, choices: Sequence[tuple[int, int]]) -> None:
        """Every agent attempts its chosen pair; the recorders hear of them together."""
        memories = [self.attempt(agent_id, a, b) for agent_id, (a, b) in enumerate(choices)]
        for recorder in self.recorders:
            recorder.attempted(step, memories)

    def attempt(self, agent_id: int, a: int, b: int) -> Memory:
        state = self.states[agent_id]
        owned, names = state.owned, self.names
        if not (owned[a] and owned[b]):
            for e in (a, b):
                if not owned[e] and e not in self.social[agent_id]:
                    raise RuntimeError(
                        f"agent {agent_id} ({self.agents[agent_id].kind}) attempted "
                        f"{names[e]!r}, which it can neither own nor borrow"
                    )
        results = self.graph.combine(a, b)
        result = FAILED
        if len(results) == 1:
            result = results[0]
        elif results:
            new = [r for r in results if not owned[r]]
            options = new or list(results)
            result = options[integer_below(self.rng, len(options))]
        if result == FAILED:
            self.memory_names[agent_id].append((names[a], names[b], None))
        else:
            if not owned[result]:
                owned[result] = True
                state.inventory.append(result)
                self.inventory_names[agent_id].append(names[result])
                if not self.discovered[result]:
                    self.discovered[result] = True
                    self.coverage += 1
            self.memory_names[agent_id].append((names[a], names[b], names[result]))
        memory: Memory = (a, b, result)
        state.memories.append(memory)
        self.agents[agent_id].observe_own(a, b, result)
        return memory

    def agent_states(self) -> AgentStates:
        """Read-only snapshots of this step, made without copying (the same cost at step 1000
        as at step 1): the runner turns them into what its protocol reads."""
        return {
            i: {"inventory": Snapshot(inv), "memories": Snapshot(mem)}
            for i, (inv, mem) in enumerate(
                zip(self.inventory_names, self.memory_names, strict=True)
            )
        }

    def deliver(self, step: int, exchanges: Exchanges) -> None:
        limit, states = self.config.bottleneck, self.states
        new_social: list[list[int]] = [[] for _ in self.agents]
        deliveries: list[Delivery] = []
        for learner in sorted(exchanges):
            entries = exchanges[learner]
            sent = [states[teacher].memories[index] for teacher, index in entries]
            kept: list[bool] | None = None
            memories = sent
            if len(sent) > limit:
                mask = np.zeros(len(sent), dtype=bool)
                mask[self.rng.choice(len(sent), size=limit, replace=False)] = True
                kept = mask.tolist()
                memories = [m for m, keep in zip(sent, kept, strict=True) if keep]
            deliveries.append((learner, entries, sent, kept, memories))
            # Every element named, in order of first mention (a, b, then the result); a
            # failure's result, FAILED, is no element. One C-level pass, no Python loop.
            elements = dict.fromkeys(chain.from_iterable(memories))
            elements.pop(FAILED, None)
            new_social[learner] = list(elements)
        self.social = new_social
        # The recorders see the deliveries before the agents get the same lists.
        for recorder in self.recorders:
            recorder.delivered(step, exchanges, deliveries)
        for learner, _, _, _, kept_memories in deliveries:
            if kept_memories:
                self.agents[learner].observe_received(kept_memories)


def run_simulation(
    domain: Domain,
    config: SimConfig,
    protocol: ProtocolSpec,
    seed: int,
    *,
    record_log: bool = False,
    log_path: str | Path | None = None,
    on_step: Callable[[int, int], None] | None = None,
    recorders: Sequence[Recorder] = (),
    tally: bool = False,
) -> SimResult:
    """Play one game of ``config.n_steps`` steps under ``protocol``; reproducible from seed.

    ``record_log`` keeps the transmission log in ``SimResult.log`` and every agent's attempts
    in ``SimResult.history``; ``log_path`` streams the log to that Parquet file instead (with
    element names), holding none of it in memory. ``tally`` puts what the behavioural
    features need of the transmissions in ``SimResult.tally`` (a few numbers: see
    :mod:`tpdisc.sim.transmissions`). ``recorders`` watch the game beside the standard ones
    (:mod:`tpdisc.sim.recorders`); they are told of every step.
    """
    game = Game(domain, config, seed)
    schedule = ScheduleRecorder()
    counters = MechanismRecorder(game.kinds, game.starts, game.graph.n_elements, game.agents)
    game.recorders += [schedule, counters]
    log: TransmissionLog | None = None
    writer: ParquetLogWriter | None = None
    if log_path is not None:
        writer = ParquetLogWriter(log_path, domain.graph.names)
        game.recorders.append(LogRecorder(writer))
    elif record_log:
        log = TransmissionLog()
        game.recorders.append(LogRecorder(log))
    tallied = TallyRecorder(game.starts, game.graph.n_elements) if tally else None
    if tallied is not None:
        game.recorders.append(tallied)
    game.recorders += recorders
    try:
        curve, protocol_logs = _play(game, config, protocol, on_step)
        stats: dict[str, float] = {}
        for agent in game.agents:
            for key, value in agent.stats().items():
                stats[key] = stats.get(key, 0.0) + value
        result = SimResult(
            seed=seed,
            curve=curve,
            schedule=schedule.schedule,
            log=log,
            protocol_logs=protocol_logs,
            received=counters.received,
            novel_received=counters.novel_received,
            agent_stats=stats,
            mechanism=counters.mechanism([s.inventory for s in game.states]),
            accounting=counters.accounting(),
            history=attempt_history(game) if record_log else None,
            tally=tallied.tally() if tallied is not None else None,
        )
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if writer is not None:
        writer.close()
    return result


def attempt_history(game: Game) -> AttemptHistory:
    """Every agent's attempts: its own memories, one per step, which the game keeps anyway;
    so the history needs no recorder, and nothing is copied while the game plays."""
    return AttemptHistory(
        game.graph.n_elements, game.starts, tuple(tuple(s.memories) for s in game.states)
    )


def _play(
    game: Game,
    config: SimConfig,
    protocol: ProtocolSpec,
    on_step: Callable[[int, int], None] | None,
) -> tuple[list[int], list[dict[str, Any]]]:
    """The step loop: the coverage curve and the protocol's own logs."""
    curve = [game.coverage]
    with protocol.open(config.n_agents, config.n_steps, game.protocol_seed) as runner:
        # A sandboxed runner bounds the host's work per step by what delivery can use;
        # runners of trusted code have no such method and need none.
        limit_exchanges = getattr(runner, "limit_exchanges", None)
        if callable(limit_exchanges):
            limit_exchanges(config.bottleneck * config.n_agents)
        for step in range(config.n_steps):
            game.attempts(step, game.choose())
            raw = runner.share(step, game.agent_states())
            if runner.canonical:
                exchanges = cast(Exchanges, raw)
            else:
                try:
                    exchanges = validate_exchanges(raw, [len(s.memories) for s in game.states])
                except ProtocolError as err:
                    raise ProtocolError(
                        f"{protocol.label}: invalid exchange at step {step}: {err}"
                    ) from None
            game.deliver(step, exchanges)
            curve.append(game.coverage)
            if on_step is not None:
                on_step(step, game.coverage)
        return curve, runner.logs()


def final_coverages(results: Sequence[SimResult]) -> list[int]:
    return [r.final for r in results]
