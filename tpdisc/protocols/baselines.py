"""The baseline protocols of the literature (SPEC §3), written from their descriptions.

Every baseline chooses content at random: none looks at what the memories say. They differ
only in who may learn from whom, and when. Each takes ``(n_agents, n_steps)`` like any
protocol, plus ``seed`` and its own parameters as keywords.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tpdisc.errors import ConfigError, unknown
from tpdisc.protocols.interface import AgentStates, InProcessRunner, ProtocolRunner, ProtocolSpec

# networkx (about 0.1 s to import) is imported where a graph is built: a command that only
# names baselines, or hands their simulations to worker processes, never needs it.
if TYPE_CHECKING:
    import networkx as nx

Exchange = dict[int, list[tuple[int, int]]]

# The baselines draw with numpy's own calls (not tpdisc.random_draws): their source is shown
# to models in warm-up prompts and must run as a protocol file, which imports no tpdisc.


def random_memories(
    rng: np.random.Generator, sender: int, n_memories: int, k: int
) -> list[tuple[int, int]]:
    """Up to ``k`` distinct memories of ``sender``, chosen uniformly at random."""
    if n_memories <= 0 or k <= 0:
        return []
    if k >= n_memories:
        return [(sender, i) for i in range(n_memories)]
    return [(sender, i) for i in rng.choice(n_memories, size=k, replace=False).tolist()]


class Asocial:
    """No sharing at all: the reference level of a group of isolated innovators."""

    def __init__(self, n_agents: int, n_steps: int, seed: int | None = None) -> None:
        self.n_agents = n_agents

    def share_memories(self, i_step: int, agent_states: AgentStates) -> Exchange:
        return {}


class NetworkSharing:
    """Each step, each agent learns with probability ``p_share`` from one random neighbour,
    receiving up to ``n_memories`` of that neighbour's memories chosen at random."""

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        graph: Links | nx.Graph | None = None,
        n_memories: int = 10,
        p_share: float = 0.5,
    ) -> None:
        self.n_agents = n_agents
        self.n_memories = n_memories
        self.p_share = p_share
        self.rng = np.random.default_rng(seed)
        graph = graph if graph is not None else self.build_graph(n_agents, self.rng)
        self.neighbours: list[list[int]] = [sorted(graph.neighbors(i)) for i in range(n_agents)]

    def build_graph(self, n_agents: int, rng: np.random.Generator) -> Links | nx.Graph:
        return Links(n_agents)

    def share_memories(self, i_step: int, agent_states: AgentStates) -> Exchange:
        exchanges: Exchange = {}
        for agent, neighbours in enumerate(self.neighbours):
            if neighbours and self.rng.random() < self.p_share:
                # integers(1) draws nothing from the stream: a lone neighbour (every dyad)
                # is taken without the call, which costs more than the rest of the step.
                if len(neighbours) == 1:
                    teacher = neighbours[0]
                else:
                    teacher = neighbours[int(self.rng.integers(len(neighbours)))]
                n_mem = len(agent_states[teacher]["memories"])
                exchanges[agent] = random_memories(self.rng, teacher, n_mem, self.n_memories)
        return exchanges


class Links:
    """Undirected links between agents, as much of a graph as the simplest networks need
    (``neighbors`` and ``adj`` as networkx names them), so that running them does not
    import networkx."""

    def __init__(self, n_agents: int) -> None:
        self.adj: dict[int, set[int]] = {i: set() for i in range(n_agents)}

    def add_edges_from(self, pairs: Iterable[tuple[int, int]]) -> None:
        for a, b in pairs:
            if a != b:
                self.adj[a].add(b)
                self.adj[b].add(a)

    def neighbors(self, agent: int) -> Iterator[int]:
        return iter(self.adj[agent])


def random_dyads(n_agents: int, rng: np.random.Generator) -> Links:
    """A random perfect matching; with an odd count the last agent joins a random dyad,
    which becomes a triad (all three linked)."""
    order = [int(i) for i in rng.permutation(n_agents)]
    graph = Links(n_agents)
    graph.add_edges_from(zip(order[0::2], order[1::2], strict=False))
    if n_agents % 2 and n_agents > 1:
        joined = order[int(rng.integers(n_agents - 1))]
        dyad = [joined, *graph.neighbors(joined)]
        graph.add_edges_from((order[-1], member) for member in dyad)
    return graph


class Paired(NetworkSharing):
    """Fixed random dyads; partners learn from each other."""

    def build_graph(self, n_agents: int, rng: np.random.Generator) -> Links:
        return random_dyads(n_agents, rng)


class GraphSharing(NetworkSharing):
    """A fixed Erdős–Rényi graph with edge probability ``p_edge``."""

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        p_edge: float = 0.2,
        n_memories: int = 10,
        p_share: float = 0.5,
    ) -> None:
        self.p_edge = p_edge
        super().__init__(n_agents, n_steps, seed, n_memories=n_memories, p_share=p_share)

    def build_graph(self, n_agents: int, rng: np.random.Generator) -> nx.Graph:
        import networkx as nx

        return nx.gnp_random_graph(n_agents, self.p_edge, seed=int(rng.integers(2**31)))


class Ring(NetworkSharing):
    """A ring lattice: each agent linked to its ``k`` nearest neighbours."""

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        k: int = 4,
        n_memories: int = 8,
        p_share: float = 0.7,
    ) -> None:
        self.k = k
        super().__init__(n_agents, n_steps, seed, n_memories=n_memories, p_share=p_share)

    def build_graph(self, n_agents: int, rng: np.random.Generator) -> nx.Graph:
        import networkx as nx

        return nx.watts_strogatz_graph(n_agents, min(self.k, n_agents - 1), 0.0)


class SmallWorld(NetworkSharing):
    """A Watts–Strogatz small world: a ring lattice with edges rewired at random."""

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        k: int = 4,
        rewire: float = 0.3,
        n_memories: int = 12,
        p_share: float = 0.6,
    ) -> None:
        self.k, self.rewire = k, rewire
        super().__init__(n_agents, n_steps, seed, n_memories=n_memories, p_share=p_share)

    def build_graph(self, n_agents: int, rng: np.random.Generator) -> nx.Graph:
        import networkx as nx

        k = min(self.k, n_agents - 1)
        return nx.watts_strogatz_graph(n_agents, k, self.rewire, seed=int(rng.integers(2**31)))


class Caveman(NetworkSharing):
    """Cliques of ``clique_size`` joined in a ring (networkx's connected caveman graph)."""

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        clique_size: int = 5,
        n_memories: int = 15,
        p_share: float = 0.4,
    ) -> None:
        self.clique_size = clique_size
        super().__init__(n_agents, n_steps, seed, n_memories=n_memories, p_share=p_share)

    def build_graph(self, n_agents: int, rng: np.random.Generator) -> nx.Graph:
        import networkx as nx

        size = max(2, min(self.clique_size, n_agents))
        caves = max(2, math.ceil(n_agents / size))
        graph = nx.Graph(nx.connected_caveman_graph(caves, size).subgraph(range(n_agents)))
        # networkx links each cave to the previous one by rewiring the edge between its
        # first two members; when the last cave is cut down to two agents, that leaves the
        # second alone. Give it back its edge to its cave-mate.
        for i in range(1, n_agents):
            if graph.degree(i) == 0:
                graph.add_edge(i, i - 1)
        return graph


class Multilevel(NetworkSharing):
    """Two super-groups of two modules each; edges within a module, between modules of a
    super-group and between super-groups appear with probabilities ``p_levels``."""

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        p_levels: Sequence[float] = (1.0, 0.3, 0.1),
        n_memories: int = 6,
        p_share: float = 0.8,
    ) -> None:
        self.p_levels = tuple(p_levels)
        super().__init__(n_agents, n_steps, seed, n_memories=n_memories, p_share=p_share)

    def build_graph(self, n_agents: int, rng: np.random.Generator) -> nx.Graph:
        import networkx as nx

        module = [i * 4 // n_agents for i in range(n_agents)]
        graph = nx.empty_graph(n_agents)
        for i in range(n_agents):
            for j in range(i + 1, n_agents):
                if module[i] == module[j]:
                    p = self.p_levels[0]
                elif module[i] // 2 == module[j] // 2:
                    p = self.p_levels[1]
                else:
                    p = self.p_levels[2]
                if rng.random() < p:
                    graph.add_edge(i, j)
        return graph


class Dynamic:
    """Paired dyads plus a continuous cycle of visits.

    Every ``visit_length`` steps a visitor, drawn uniformly among all agents (as the
    reference's ``baseline_dynamic.py`` does), visits another dyad drawn at random: the
    visitor learns from both hosts, both hosts also learn from the visitor, and the
    visitor's own partner learns from no one meanwhile. A learner with several sources
    draws its memories from their pooled memories.
    """

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        visit_length: int = 20,
        n_memories: int = 10,
        p_share: float = 0.5,
    ) -> None:
        self.n_agents = n_agents
        self.visit_length = visit_length
        self.n_memories = n_memories
        self.p_share = p_share
        self.rng = np.random.default_rng(seed)
        self.partners = [sorted(p) for _, p in sorted(random_dyads(n_agents, self.rng).adj.items())]
        self.visit: tuple[int, list[int]] | None = None

    def _start_visit(self) -> tuple[int, list[int]]:
        visitor = int(self.rng.integers(self.n_agents))
        away = {visitor, *self.partners[visitor]}
        # Disjoint from ``away``: with an odd count, the visitor's partner in the triad is
        # also the partner of a third agent, and must not host its own partner's visit.
        groups = ({i, *self.partners[i]} for i in range(self.n_agents))
        hosts = [group for group in groups if not group & away]
        if not hosts:
            return visitor, []
        host = hosts[int(self.rng.integers(len(hosts)))]
        return visitor, sorted(host)

    def sources(self, i_step: int) -> list[list[int]]:
        """Who each agent learns from at ``i_step``."""
        if i_step % self.visit_length == 0 or self.visit is None:
            self.visit = self._start_visit()
        visitor, hosts = self.visit
        sources = [list(p) for p in self.partners]
        if hosts:
            sources[visitor] = list(hosts)
            for partner in self.partners[visitor]:
                sources[partner] = []
            for host in hosts:
                sources[host] = [*sources[host], visitor]
        return sources

    def share_memories(self, i_step: int, agent_states: AgentStates) -> Exchange:
        exchanges: Exchange = {}
        for agent, teachers in enumerate(self.sources(i_step)):
            if teachers and self.rng.random() < self.p_share:
                # Draw positions in the teachers' memories laid end to end, without building
                # that list: it grows with every step.
                counts = np.array([len(agent_states[t]["memories"]) for t in teachers])
                ends = np.cumsum(counts)
                k = min(self.n_memories, int(ends[-1]))
                chosen = self.rng.choice(int(ends[-1]), size=k, replace=False)
                which = np.searchsorted(ends, chosen, side="right")
                indices = chosen - (ends - counts)[which]
                exchanges[agent] = [
                    (teachers[w], i) for w, i in zip(which.tolist(), indices.tolist(), strict=True)
                ]
        return exchanges


class Stochastic:
    """Every agent receives ``n_memories`` memories, each from a random other agent."""

    def __init__(
        self, n_agents: int, n_steps: int, seed: int | None = None, *, n_memories: int = 20
    ) -> None:
        self.n_agents = n_agents
        self.n_memories = n_memories
        self.rng = np.random.default_rng(seed)

    def share_memories(self, i_step: int, agent_states: AgentStates) -> Exchange:
        if self.n_agents < 2:
            return {}
        exchanges: Exchange = {}
        counts = np.array([len(agent_states[i]["memories"]) for i in range(self.n_agents)])
        for agent in range(self.n_agents):
            offsets = self.rng.integers(1, self.n_agents, size=self.n_memories)
            senders = (agent + offsets) % self.n_agents
            senders = senders[counts[senders] > 0]
            # One vectorised draw per sender: the same stream as drawing them one by one.
            indices = self.rng.integers(counts[senders])
            exchanges[agent] = list(zip(senders.tolist(), indices.tolist(), strict=True))
        return exchanges


class Intermittent:
    """``quiet_steps`` steps alone, then one step where everyone broadcasts to everyone,
    ``n_memories`` random memories per sender."""

    def __init__(
        self,
        n_agents: int,
        n_steps: int,
        seed: int | None = None,
        *,
        quiet_steps: int = 3,
        n_memories: int = 2,
    ) -> None:
        self.n_agents = n_agents
        self.quiet_steps = quiet_steps
        self.n_memories = n_memories
        self.rng = np.random.default_rng(seed)

    def share_memories(self, i_step: int, agent_states: AgentStates) -> Exchange:
        if (i_step + 1) % (self.quiet_steps + 1):
            return {}
        counts = [len(agent_states[i]["memories"]) for i in range(self.n_agents)]
        broadcast = {
            s: random_memories(self.rng, s, counts[s], self.n_memories)
            for s in range(self.n_agents)
        }
        return {
            r: [m for s in range(self.n_agents) if s != r for m in broadcast[s]]
            for r in range(self.n_agents)
        }


BASELINES: dict[str, type] = {
    "asocial": Asocial,
    "paired": Paired,
    "dynamic": Dynamic,
    "graph": GraphSharing,
    "stochastic": Stochastic,
    "ring": Ring,
    "small-world": SmallWorld,
    "caveman": Caveman,
    "multilevel": Multilevel,
    "intermittent": Intermittent,
}
STANDARD_BASELINES: tuple[str, ...] = ("asocial", "paired", "dynamic", "graph", "stochastic")
DESCRIPTIONS: dict[str, str] = {
    name: (cls.__doc__ or "").split("\n\n")[0].strip() for name, cls in BASELINES.items()
}


@dataclass(frozen=True)
class BaselineProtocol(ProtocolSpec):
    """A built-in baseline, run in-process (it is the project's own trusted code)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in BASELINES:
            raise ConfigError(unknown("baseline", self.name, BASELINES))

    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        cls = BASELINES[self.name]
        try:
            instance = cls(n_agents, n_steps, seed, **self.params)
        except TypeError as err:
            raise ConfigError(f"baseline {self.name!r}: {err}") from None
        # They only count memories, and answer with lists of (int, int) tuples.
        return InProcessRunner(self.name, instance, snapshots=True, canonical=True)
