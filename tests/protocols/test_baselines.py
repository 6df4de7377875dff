"""The baselines of SPEC §3: who may send to whom, how many, when; all content-blind.

Routing is read off the exchanges themselves (black box): with ``p_share = 1`` and enough
steps every link of a fixed network is used, so the senders an agent ever hears from are
its neighbours.
"""

from __future__ import annotations

import itertools
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import (
    BASELINES,
    DESCRIPTIONS,
    STANDARD_BASELINES,
    Asocial,
    BaselineProtocol,
    Caveman,
    Dynamic,
    GraphSharing,
    Intermittent,
    Multilevel,
    Paired,
    Ring,
    SmallWorld,
    Stochastic,
    random_memories,
)
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

Exchange = dict[int, list[tuple[int, int]]]


def states(counts: list[int], content: int = 0) -> dict:
    """Agent states with ``counts[i]`` memories for agent i; ``content`` varies what they say
    (not how many), to show that baselines do not look."""
    elements = ("air", "earth", "fire", "water", "steam", "mud")
    return {
        i: {
            "inventory": elements[:4],
            "memories": tuple(
                (elements[(k + content) % 6], elements[(k * content) % 6], None if k % 2 else "mud")
                for k in range(c)
            ),
        }
        for i, c in enumerate(counts)
    }


def run(protocol: object, counts: list[int], steps: int, content: int = 0) -> list[Exchange]:
    agent_states = states(counts, content)
    return [protocol.share_memories(t, agent_states) for t in range(steps)]  # type: ignore[attr-defined]


def heard(exchanges: list[Exchange], n: int) -> list[set[int]]:
    """Everyone agent i ever received a memory from."""
    sources: list[set[int]] = [set() for _ in range(n)]
    for ex in exchanges:
        for learner, entries in ex.items():
            sources[learner] |= {s for s, _ in entries}
    return sources


def edges_of(sources: list[set[int]]) -> set[frozenset[int]]:
    return {frozenset((i, j)) for i, s in enumerate(sources) for j in s}


def assert_symmetric(sources: list[set[int]]) -> None:
    for i, s in enumerate(sources):
        for j in s:
            assert i in sources[j], f"{j} teaches {i} but never learns from it"


def assert_valid_entries(exchanges: list[Exchange], counts: list[int]) -> None:
    for ex in exchanges:
        for learner, entries in ex.items():
            for sender, index in entries:
                assert type(sender) is int and type(index) is int
                assert 0 <= index < counts[sender]
                assert sender != learner


# --- standard baselines ---------------------------------------------------------------------


def test_asocial_sends_nothing() -> None:
    assert run(Asocial(6, 20), [5] * 6, 20) == [{}] * 20


@pytest.mark.parametrize("n", [2, 8, 10])
def test_paired_only_partners_in_a_perfect_matching(n: int) -> None:
    counts = [12 + i for i in range(n)]
    steps = 300
    exchanges = run(Paired(n, steps, seed=1), counts, steps)
    assert_valid_entries(exchanges, counts)
    sources = heard(exchanges, n)
    assert all(len(s) == 1 for s in sources)  # one fixed partner each
    assert_symmetric(sources)
    for ex in exchanges:
        for learner, entries in ex.items():
            senders = {s for s, _ in entries}
            assert len(entries) == 10 == len(set(entries))  # 10 distinct memories
            assert senders == sources[learner]
    # each agent learns with probability 0.5 per step (6 standard deviations)
    received = Counter(learner for ex in exchanges for learner in ex)
    sd = np.sqrt(steps * 0.25)
    assert all(abs(received[i] - steps / 2) < 6 * sd for i in range(n))


def test_paired_with_an_odd_count_makes_one_triad() -> None:
    n = 7
    sources = heard(run(Paired(n, 200, seed=3, p_share=1.0), [4] * n, 200), n)
    assert_symmetric(sources)
    assert sorted(len(s) for s in sources) == [1, 1, 1, 1, 2, 2, 2]


def test_a_lone_neighbour_is_taken_without_a_draw() -> None:
    """A draw among one neighbour consumes no random numbers, so skipping it changes
    nothing later: the same exchanges as the loop that always draws, for dyads (one
    neighbour) and the triad (two) alike."""

    class AlwaysDrawing(Paired):
        def share_memories(self, i_step: int, agent_states: dict) -> Exchange:
            exchanges: Exchange = {}
            for agent, neighbours in enumerate(self.neighbours):
                if neighbours and self.rng.random() < self.p_share:
                    teacher = neighbours[int(self.rng.integers(len(neighbours)))]
                    n_mem = len(agent_states[teacher]["memories"])
                    exchanges[agent] = random_memories(self.rng, teacher, n_mem, self.n_memories)
            return exchanges

    counts = [3, 12, 30, 7, 15, 1, 20]
    for seed in range(5):
        expected = run(AlwaysDrawing(7, 60, seed=seed), counts, 60)
        assert run(Paired(7, 60, seed=seed), counts, 60) == expected


def test_paired_sends_all_memories_when_fewer_than_ten() -> None:
    for ex in run(Paired(4, 30, seed=0, p_share=1.0), [3, 3, 3, 3], 30):
        for entries in ex.values():
            assert sorted(i for _, i in entries) == [0, 1, 2]


def test_paired_dyads_depend_on_seed() -> None:
    def pairs(seed: int) -> set[frozenset[int]]:
        return edges_of(heard(run(Paired(10, 100, seed=seed, p_share=1.0), [2] * 10, 100), 10))

    assert pairs(0) == pairs(0)
    assert len({frozenset(pairs(s)) for s in range(6)}) > 1


def test_graph_only_neighbours_one_per_step() -> None:
    n, steps = 10, 300
    for seed in range(5):
        exchanges = run(GraphSharing(n, steps, seed=seed, p_share=1.0), [15] * n, steps)
        sources = heard(exchanges, n)
        assert_symmetric(sources)
        for ex in exchanges:
            for entries in ex.values():
                assert len({s for s, _ in entries}) == 1  # one random neighbour
                assert len(entries) == 10
            # with p_share = 1, exactly the agents with a neighbour learn
            assert set(ex) == {i for i in range(n) if sources[i]}


def network(tp: object) -> set[frozenset[int]]:
    """The fixed network of a network baseline (its routing is checked black-box above)."""
    return edges_of([set(s) for s in tp.neighbours])  # type: ignore[attr-defined]


def test_graph_is_erdos_renyi_with_p_02() -> None:
    n, seeds = 10, 60
    edges = [len(network(GraphSharing(n, 1, seed=s))) for s in range(seeds)]
    possible = n * (n - 1) / 2
    # 60 graphs x 45 possible edges at p = 0.2: mean 9, sd of the mean 0.35
    assert abs(np.mean(edges) - 0.2 * possible) < 6 * np.sqrt(possible * 0.16 / seeds)
    assert len(set(edges)) > 1


def test_graph_edge_probability_is_a_parameter() -> None:
    full = heard(run(GraphSharing(6, 200, seed=0, p_edge=1.0, p_share=1.0), [3] * 6, 200), 6)
    assert all(s == set(range(6)) - {i} for i, s in enumerate(full))
    assert run(GraphSharing(6, 20, seed=0, p_edge=0.0), [3] * 6, 20) == [{}] * 20


def test_stochastic_twenty_each_from_others() -> None:
    n, steps = 6, 200
    counts = [1, 2, 3, 4, 5, 6]
    exchanges = run(Stochastic(n, steps, seed=2), counts, steps)
    assert_valid_entries(exchanges, counts)
    senders: Counter[tuple[int, int]] = Counter()
    for ex in exchanges:
        assert sorted(ex) == list(range(n))
        for learner, entries in ex.items():
            assert len(entries) == 20
            senders.update((learner, s) for s, _ in entries)
    # every other agent is equally likely: 4000 draws over 5 senders per learner
    for learner in range(n):
        got = [senders[(learner, s)] for s in range(n) if s != learner]
        expected, sd = 20 * steps / (n - 1), np.sqrt(20 * steps * 0.2 * 0.8)
        assert max(abs(g - expected) for g in got) < 6 * sd


def test_stochastic_alone_gets_nothing() -> None:
    assert run(Stochastic(1, 5, seed=0), [3], 5) == [{}] * 5


# --- extended set ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [6, 10])
def test_intermittent_every_fourth_step_two_per_sender(n: int) -> None:
    counts = [5 + i for i in range(n)]
    exchanges = run(Intermittent(n, 16, seed=0), counts, 16)
    assert_valid_entries(exchanges, counts)
    for t, ex in enumerate(exchanges):
        if t % 4 != 3:  # three steps alone
            assert ex == {}
            continue
        assert sorted(ex) == list(range(n))
        broadcast: dict[int, set[int]] = {}
        for learner, entries in ex.items():
            per_sender = Counter(s for s, _ in entries)
            assert per_sender == dict.fromkeys(set(range(n)) - {learner}, 2)
            for s, i in entries:
                broadcast.setdefault(s, set()).add(i)
        # a broadcast: each sender sends the same two distinct memories to everyone
        assert all(len(b) == 2 for b in broadcast.values())


def test_ring_links_two_neighbours_each_side() -> None:
    n = 10
    ring = Ring(n, 200, seed=0, p_share=1.0)
    exchanges = run(ring, [20] * n, 200)
    sources = heard(exchanges, n)
    assert sources == [{(i + d) % n for d in (-2, -1, 1, 2)} for i in range(n)]
    assert all(len(e) == 8 for ex in exchanges for e in ex.values())  # n_memories 8


def test_default_parameters_of_the_extended_set() -> None:
    ring, small = Ring(10, 1), SmallWorld(10, 1)
    cave, multi = Caveman(10, 1), Multilevel(10, 1)
    assert (ring.k, ring.n_memories, ring.p_share) == (4, 8, 0.7)
    assert (small.k, small.rewire, small.n_memories, small.p_share) == (4, 0.3, 12, 0.6)
    assert (cave.clique_size, cave.n_memories, cave.p_share) == (5, 15, 0.4)
    assert (multi.p_levels, multi.n_memories, multi.p_share) == ((1.0, 0.3, 0.1), 6, 0.8)
    inter = Intermittent(10, 1)
    assert (inter.quiet_steps, inter.n_memories) == (3, 2)


@pytest.mark.parametrize(
    ("cls", "p_share"), [(Ring, 0.7), (SmallWorld, 0.6), (Caveman, 0.4), (Multilevel, 0.8)]
)
def test_share_probability(cls: type, p_share: float) -> None:
    n, steps = 10, 400
    exchanges = run(cls(n, steps, seed=1), [30] * n, steps)
    learners = [i for i, s in enumerate(heard(exchanges, n)) if s]
    rate = sum(len(ex) for ex in exchanges) / (steps * len(learners))
    sd = np.sqrt(p_share * (1 - p_share) / (steps * len(learners)))
    assert abs(rate - p_share) < 6 * sd


def test_small_world_rewires_a_ring() -> None:
    n = 12
    ring_edges = edges_of(heard(run(Ring(n, 300, seed=0, p_share=1.0), [2] * n, 300), n))
    assert (
        edges_of(heard(run(SmallWorld(n, 300, seed=0, rewire=0.0, p_share=1.0), [2] * n, 300), n))
        == ring_edges
    )
    rewired = [
        edges_of(heard(run(SmallWorld(n, 300, seed=s, p_share=1.0), [2] * n, 300), n))
        for s in range(4)
    ]
    assert all(len(e) == len(ring_edges) == n * 2 for e in rewired)  # rewiring keeps the count
    assert all(e != ring_edges for e in rewired)
    assert len({frozenset(e) for e in rewired}) > 1


def test_caveman_cliques_of_five_joined_in_a_ring() -> None:
    n = 15
    sources = heard(run(Caveman(n, 400, seed=0, p_share=1.0), [2] * n, 400), n)
    assert_symmetric(sources)
    edges = edges_of(sources)
    graph = nx.Graph([tuple(e) for e in edges])
    assert nx.is_connected(graph)
    cave = [i // 5 for i in range(n)]
    between = [e for e in edges if len({cave[i] for i in e}) == 2]
    within = [e for e in edges if len({cave[i] for i in e}) == 1]
    # networkx's connected caveman graph: each clique gives up one inner edge to a link
    assert len(between) == 3
    assert len(within) == 3 * (10 - 1)
    links = Counter(frozenset(cave[i] for i in e) for e in between)
    assert set(links) == {frozenset((0, 1)), frozenset((1, 2)), frozenset((0, 2))}


def test_caveman_clique_size_is_a_parameter() -> None:
    n = 8
    sources = heard(run(Caveman(n, 300, seed=0, clique_size=4, p_share=1.0), [2] * n, 300), n)
    between = [e for e in edges_of(sources) if len({i // 4 for i in e}) == 2]
    assert len(between) >= 1 and all(len(s) <= 4 for s in sources)


def modules(n: int) -> list[int]:
    return [i * 4 // n for i in range(n)]


@pytest.mark.parametrize(
    ("levels", "linked"),
    [
        ((1.0, 0.0, 0.0), lambda a, b: a == b),  # within modules only
        ((1.0, 1.0, 0.0), lambda a, b: a // 2 == b // 2),  # within super-groups only
        ((0.0, 0.0, 1.0), lambda a, b: a // 2 != b // 2),  # across super-groups only
    ],
)
def test_multilevel_structure(levels: tuple[float, float, float], linked) -> None:
    n = 10
    sources = heard(run(Multilevel(n, 300, seed=0, p_levels=levels, p_share=1.0), [2] * n, 300), n)
    module = modules(n)
    expected = {
        frozenset((i, j))
        for i, j in itertools.combinations(range(n), 2)
        if linked(module[i], module[j])
    }
    assert edges_of(sources) == expected
    assert sorted(Counter(module).values()) == [2, 2, 3, 3]  # four modules, two per group


def test_multilevel_default_probabilities() -> None:
    n, seeds = 12, 100
    module = modules(n)
    level_edges = Counter()
    level_pairs = Counter()
    for i, j in itertools.combinations(range(n), 2):
        level = 0 if module[i] == module[j] else 1 if module[i] // 2 == module[j] // 2 else 2
        level_pairs[level] += seeds
    for s in range(seeds):
        for e in network(Multilevel(n, 1, seed=s)):
            i, j = sorted(e)
            level = 0 if module[i] == module[j] else 1 if module[i] // 2 == module[j] // 2 else 2
            level_edges[level] += 1
    assert level_edges[0] == level_pairs[0]  # p = 1 within a module
    for level, p in ((1, 0.3), (2, 0.1)):
        trials = level_pairs[level]
        assert abs(level_edges[level] / trials - p) < 6 * np.sqrt(p * (1 - p) / trials)


# --- dynamic --------------------------------------------------------------------------------


def visitor_of(senders: list[set[int]], partner: dict[int, int]) -> int:
    """The agent that hears from two agents other than its partner: the visitor."""
    (visitor,) = [i for i, s in enumerate(senders) if len(s - {partner[i]}) >= 2]
    return visitor


@pytest.mark.parametrize(("n", "visit"), [(8, 5), (10, 20)])
def test_dynamic_visits(n: int, visit: int) -> None:
    """Partners learn from each other, except that one agent at a time visits another dyad
    for ``visit`` steps: it learns from both hosts, who also learn from it, and its own
    partner learns from no one."""
    steps = visit * (n + 1)
    tp = Dynamic(n, steps, seed=3, visit_length=visit, n_memories=1000, p_share=1.0)
    # With p_share = 1 and unlimited n_memories, each learner gets every memory of every
    # source, so the senders it hears from at a step are exactly its sources.
    exchanges = run(tp, [3] * n, steps)
    partner = {i: p for i, (p,) in enumerate(tp.partners)}
    assert all(partner[partner[i]] == i != partner[i] for i in range(n))
    visits = []
    for ex in exchanges:
        senders = [{s for s, _ in ex.get(i, [])} for i in range(n)]
        visitor = visitor_of(senders, partner)
        hosts = senders[visitor]
        (h1, h2) = hosts
        assert partner[h1] == h2 and visitor not in hosts and partner[visitor] not in hosts
        assert senders[partner[visitor]] == set()
        assert senders[h1] == {h2, visitor} and senders[h2] == {h1, visitor}
        for i in set(range(n)) - hosts - {visitor, partner[visitor]}:
            assert senders[i] == {partner[i]}
        visits.append((visitor, frozenset(hosts)))
    # the same visit for `visit` steps
    blocks = [set(visits[k : k + visit]) for k in range(0, steps, visit)]
    assert all(len(b) == 1 for b in blocks)


def test_dynamic_draws_each_visitor_at_random() -> None:
    """As the reference's baseline_dynamic.py: a visitor drawn uniformly at every visit (an
    agent may visit twice before another visits once), not a fixed rotation."""
    n, visit, blocks = 6, 1, 600
    tp = Dynamic(n, blocks, seed=5, visit_length=visit, n_memories=1000, p_share=1.0)
    partner = {i: p for i, (p,) in enumerate(tp.partners)}
    visitors = [
        visitor_of([{s for s, _ in ex.get(i, [])} for i in range(n)], partner)
        for ex in run(tp, [3] * n, blocks)
    ]
    counts = np.bincount(visitors, minlength=n)
    assert counts.min() > 60 and counts.max() < 140  # about 100 each
    assert any(a == b for a, b in itertools.pairwise(visitors))


def test_dynamic_default_parameters() -> None:
    tp = Dynamic(10, 150)
    assert (tp.visit_length, tp.n_memories, tp.p_share) == (20, 10, 0.5)


# --- common to all --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BASELINES))
def test_content_blind(name: str) -> None:
    """Same seed, same memory counts, different memory content: same exchanges."""
    n, counts = 10, [7 + i for i in range(10)]
    a = run(BASELINES[name](n, 12, 5), counts, 12, content=1)
    b = run(BASELINES[name](n, 12, 5), counts, 12, content=4)
    assert a == b


@pytest.mark.parametrize("name", list(BASELINES))
def test_seeded(name: str) -> None:
    n, counts = 10, [9] * 10
    a = run(BASELINES[name](n, 40, 1), counts, 40)
    assert a == run(BASELINES[name](n, 40, 1), counts, 40)
    if name != "asocial":
        assert a != run(BASELINES[name](n, 40, 2), counts, 40)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("name", list(BASELINES))
def test_every_baseline_plays_any_group_size(toy_graph: RecipeGraph, name: str, n: int) -> None:
    config = SimConfig(n_agents=n, n_steps=8, agent_type="stochastic")
    result = run_simulation(make_domain(toy_graph), config, BaselineProtocol(name), 0)
    assert len(result.curve) == 9


def test_registry() -> None:
    assert STANDARD_BASELINES == ("asocial", "paired", "dynamic", "graph", "stochastic")
    assert set(BASELINES) == {
        *STANDARD_BASELINES,
        *("ring", "small-world", "caveman", "multilevel", "intermittent"),
    }
    assert all(DESCRIPTIONS[name] for name in BASELINES)


def test_baseline_protocol_params_and_errors(toy_graph: RecipeGraph) -> None:
    with pytest.raises(
        ConfigError,
        match="unknown baseline 'pairs' \\(did you mean 'paired'\\?\\); choose from asocial, ",
    ):
        BaselineProtocol("pairs")
    bad = BaselineProtocol("ring", {"radius": 3})
    with pytest.raises(ConfigError, match=r"baseline 'ring': .*radius"):
        bad.open(4, 5, 0)
    config = SimConfig(n_agents=6, n_steps=10, agent_type="stochastic")
    domain = make_domain(toy_graph)
    never = BaselineProtocol("graph", {"p_edge": 0.0})
    assert run_simulation(domain, config, never, 0).schedule.total_sent() == 0


@pytest.mark.parametrize("n", [5, 7, 9])
def test_dynamic_with_an_odd_count_never_hosts_the_visitors_partner(n: int) -> None:
    for seed in range(6):
        tp = Dynamic(n, 40, seed=seed, visit_length=2, n_memories=1000, p_share=1.0)
        for ex in run(tp, [3] * n, 4 * n):
            heard = {i: {s for s, _ in ex.get(i, [])} for i in range(n)}
            (visitor,) = [i for i in range(n) if len(heard[i] - set(tp.partners[i])) >= 2]
            partners = set(tp.partners[visitor])
            for p in partners:
                assert p not in ex, f"the visitor's partner {p} learned while {visitor} was away"
            hosts = {s for s, _ in ex[visitor]}
            assert len(hosts) >= 2 and not hosts & (partners | {visitor})


@pytest.mark.parametrize("n", range(2, 23))
def test_caveman_leaves_no_agent_alone(n: int) -> None:
    edges = network(Caveman(n, 1, seed=0))
    graph = nx.Graph([tuple(e) for e in edges])
    assert set(graph.nodes) == set(range(n)) and nx.is_connected(graph)
