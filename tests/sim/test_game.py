"""The game loop of SPEC §1: inventories, memories, social inventory, bottleneck, coverage,
several results per pair, reproducibility, and the protocol call boundary."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from tests.helpers import (
    FixedRouting,
    ObjectProtocol,
    ScriptedAgent,
    SpyAgent,
    StateSpy,
    register_agent,
)
from tpdisc.agents.base import FAILED
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, VariantSpec, make_domain
from tpdisc.errors import ProtocolError
from tpdisc.protocols.baselines import BaselineProtocol, Stochastic
from tpdisc.protocols.interface import AgentStates
from tpdisc.protocols.states import Snapshot
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


@pytest.fixture
def spies(monkeypatch: pytest.MonkeyPatch) -> list[SpyAgent]:
    register_agent(monkeypatch, "spy", SpyAgent)
    monkeypatch.setattr(SpyAgent, "instances", [])
    return SpyAgent.instances


def scripted(monkeypatch: pytest.MonkeyPatch, script: dict[int, list[tuple[str, str]]]) -> None:
    register_agent(monkeypatch, "scripted", ScriptedAgent)
    monkeypatch.setattr(ScriptedAgent, "script", script)
    monkeypatch.setattr(ScriptedAgent, "instances", [])


def recorded(inner: object) -> tuple[ObjectProtocol, list[StateSpy]]:
    """A protocol spec around ``inner`` whose state spies (one per simulation) are returned."""
    spied: list[StateSpy] = []

    def factory(n_agents: int, n_steps: int, seed: int) -> StateSpy:
        spied.append(StateSpy(inner))
        return spied[-1]

    return ObjectProtocol("recorded", factory), spied


def stochastic(n_agents: int, n_steps: int, **kwargs: object) -> SimConfig:
    return SimConfig(n_agents=n_agents, n_steps=n_steps, agent_type="stochastic", **kwargs)


def all_to_all(n: int) -> FixedRouting:
    return FixedRouting({i: [j for j in range(n) if j != i] for i in range(n)})


# --- coverage -------------------------------------------------------------------------------


def test_coverage_curve_counts_distinct_elements_of_all_inventories(toy: Domain) -> None:
    n, steps = 4, 25
    protocol, spied = recorded(all_to_all(n))
    result = run_simulation(toy, stochastic(n, steps), protocol, seed=3)
    seen = spied[0].seen
    assert len(result.curve) == steps + 1 == len(seen) + 1
    # Before the first step: the four base elements, which count.
    assert result.curve[0] == 4
    for t, states in enumerate(seen):
        union = set().union(*(s["inventory"] for s in states.values()))
        assert result.curve[t + 1] == len(union)
    steps_gain = np.diff(result.curve)
    assert (steps_gain >= 0).all() and (steps_gain <= n).all()
    assert result.final == result.curve[-1] > 4


def test_coverage_starts_from_pooled_start_sets(toy_graph: RecipeGraph) -> None:
    three = make_domain(toy_graph, VariantSpec("3-item"))
    hetero = make_domain(toy_graph, VariantSpec("heterogeneous"))
    asocial = BaselineProtocol("asocial")
    assert run_simulation(three, stochastic(1, 1), asocial, 0).curve[0] == 3
    assert run_simulation(three, stochastic(4, 1), asocial, 0).curve[0] == 4
    assert run_simulation(hetero, stochastic(1, 1), asocial, 0).curve[0] == 2
    # agents 0 and 1 start with (air, earth) and (air, fire); six agents hold every pair
    assert run_simulation(hetero, stochastic(2, 1), asocial, 0).curve[0] == 3
    assert run_simulation(hetero, stochastic(6, 1), asocial, 0).curve[0] == 4


def test_start_inventories_follow_the_domain(toy_graph: RecipeGraph) -> None:
    hetero = make_domain(toy_graph, VariantSpec("heterogeneous"))
    protocol, spied = recorded(FixedRouting({}))
    run_simulation(hetero, stochastic(8, 1), protocol, 0)
    states = spied[0].seen[0]
    for i in range(8):
        start = {toy_graph.names[e] for e in hetero.start_inventory(i)}
        assert set(states[i]["inventory"][:2]) == start
    # agents 0 and 6 share a start pair (6 pairs, cycled); 0 and 1 do not
    assert states[0]["inventory"][:2] == states[6]["inventory"][:2]
    assert states[0]["inventory"][:2] != states[1]["inventory"][:2]


# --- inventories and memories ---------------------------------------------------------------


def test_only_own_successes_enter_inventories(toy: Domain) -> None:
    n, steps = 4, 30
    protocol, spied = recorded(all_to_all(n))
    run_simulation(toy, stochastic(n, steps), protocol, seed=1)
    seen = spied[0].seen
    told_but_not_owned = 0
    for t, states in enumerate(seen):
        for i, state in states.items():
            memories = state["memories"]
            assert len(memories) == t + 1  # one memory per attempt
            expected = ["air", "earth", "fire", "water"]
            for _, _, result in memories:
                if result is not None and result not in expected:
                    expected.append(result)
            assert list(state["inventory"]) == expected
            if t:
                # what others told agent i at the previous step did not make it an owner
                heard = {r for j in states if j != i for *_, r in seen[t - 1][j]["memories"]}
                told_but_not_owned += len(heard - set(state["inventory"]) - {None})
    assert told_but_not_owned > 0, "the test never put a foreign success in front of an agent"


def test_an_agent_gains_at_most_one_element_per_step(toy: Domain) -> None:
    protocol, spied = recorded(all_to_all(3))
    run_simulation(toy, stochastic(3, 30), protocol, seed=2)
    for before, after in zip(spied[0].seen, spied[0].seen[1:], strict=False):
        for i in before:
            assert 0 <= len(after[i]["inventory"]) - len(before[i]["inventory"]) <= 1


# --- social inventory -----------------------------------------------------------------------


class TwoOnOneOff:
    """Everyone hears everyone's last memory two steps out of three, then nothing."""

    def __init__(self, n: int) -> None:
        self.routing = all_to_all(n)

    def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
        return self.routing.share_memories(i_step, agent_states) if i_step % 3 != 2 else {}


def test_social_inventory_is_what_survived_last_step_and_nothing_older(
    toy: Domain, spies: list[SpyAgent]
) -> None:
    n, steps = 3, 24
    result = run_simulation(
        toy,
        SimConfig(n_agents=n, n_steps=steps, agent_type="spy"),
        ObjectProtocol("two-on-one-off", lambda n_agents, n_steps, seed: TwoOnOneOff(n_agents)),
        seed=0,
        record_log=True,
    )
    log = result.log
    assert log is not None
    for spy in spies:
        assert spy.turns[0].social == []  # nothing received before the first step
        for t in range(steps - 1):
            rows = [
                k
                for k in range(len(log))
                if log.step[k] == t and log.learner[k] == spy.agent_id and log.survived[k]
            ]
            named: set[int] = set()
            for k in rows:
                named |= {log.e1[k], log.e2[k]}
                if log.result[k] != FAILED:
                    named.add(log.result[k])
            social = spy.turns[t + 1].social
            assert len(social) == len(set(social))
            assert set(social) == named
            if t % 3 == 2:  # nothing sent at step t: the items of step t - 1 are gone
                assert social == []
            else:
                assert social


def test_borrowed_element_usable_next_step_only(
    toy: Domain, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted(
        monkeypatch,
        {
            0: [("earth", "fire")],  # makes lava, tells agent 1 at step 0
            1: [("air", "air"), ("lava", "water"), ("lava", "water")],
        },
    )

    class FirstStepOnly:
        def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
            return {1: [(0, 0)]} if i_step == 0 else {}

    protocol, spied = recorded(FirstStepOnly())
    config = SimConfig(n_agents=2, n_steps=2, agent_type="scripted")
    run_simulation(toy, config, protocol, seed=0)
    inventory = spied[0].seen[1][1]["inventory"]
    assert "lava" not in inventory  # borrowing is not owning
    assert {"stone", "obsidian"} & set(inventory)  # but the borrowed lava was usable

    # One step later lava is no longer in agent 1's social inventory.
    config = SimConfig(n_agents=2, n_steps=3, agent_type="scripted")
    protocol, _ = recorded(FirstStepOnly())
    with pytest.raises(RuntimeError, match="'lava', which it can neither own nor borrow"):
        run_simulation(toy, config, protocol, seed=0)


# --- attention bottleneck -------------------------------------------------------------------


class Flood:
    """Sends ``k`` entries to agent 0 every step, all pointing at agent 1's memories."""

    def __init__(self, k: int) -> None:
        self.k = k

    def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
        n_mem = len(agent_states[1]["memories"])
        return {0: [(1, j % n_mem) for j in range(self.k)]}


def flood(toy: Domain, k: int, steps: int, seed: int = 0) -> SimResult:
    protocol = ObjectProtocol("flood", lambda n_agents, n_steps, s: Flood(k))
    return run_simulation(toy, stochastic(2, steps), protocol, seed, record_log=True)


def survival_by_position(result: SimResult, k: int) -> np.ndarray:
    log = result.log
    assert log is not None
    survived = np.asarray(log.survived).reshape(-1, k)  # rows in the order sent, per step
    assert (np.asarray(log.step).reshape(-1, k) == np.arange(survived.shape[0])[:, None]).all()
    return survived


def test_bottleneck_keeps_exactly_twenty(toy: Domain, spies: list[SpyAgent]) -> None:
    steps, k = 40, 33
    protocol = ObjectProtocol("flood", lambda n_agents, n_steps, s: Flood(k))
    result = run_simulation(
        toy, SimConfig(n_agents=2, n_steps=steps, agent_type="spy"), protocol, 5, record_log=True
    )
    survived = survival_by_position(result, k)
    assert (survived.sum(axis=1) == 20).all()
    assert result.received == 20 * steps
    log = result.log
    assert log is not None
    for t, turn in enumerate(spies[0].turns):
        # the learner was told exactly the surviving memories, in the order sent
        rows = [j for j in range(len(log)) if log.step[j] == t and log.survived[j]]
        assert turn.received == [(log.e1[j], log.e2[j], log.result[j]) for j in rows]
    assert all(turn.received == [] for turn in spies[1].turns)


@pytest.mark.parametrize("k", [1, 19, 20])
def test_bottleneck_keeps_everything_up_to_twenty(toy: Domain, k: int) -> None:
    result = flood(toy, k, steps=10)
    assert survival_by_position(result, k).all()
    assert result.received == 10 * k


def test_bottleneck_subset_is_uniform(toy: Domain) -> None:
    """Each of 30 positions survives with probability 20/30; the seed is fixed, and the
    tolerance (6 standard deviations per position) is wide enough that any fair sampler
    passes, while keeping the first, last or any fixed 20 fails by far."""
    k, steps = 30, 600
    survived = survival_by_position(flood(toy, k, steps, seed=11), k)
    counts = survived.sum(axis=0)
    p = 20 / k
    mean, sd = steps * p, np.sqrt(steps * p * (1 - p))
    assert np.abs(counts - mean).max() < 6 * sd, counts
    # Not the same subset over and over: nearly every step keeps a different one.
    subsets = {row.tobytes() for row in survived}
    assert len(subsets) > 0.95 * steps
    # Positions are kept independently of their neighbours (no contiguous windows).
    together = (survived[:, :-1] & survived[:, 1:]).mean()
    expected_together = p * (20 - 1) / (k - 1)
    assert abs(together - expected_together) < 0.05


def test_bottleneck_limit_is_configurable(toy: Domain) -> None:
    protocol = ObjectProtocol("flood", lambda n_agents, n_steps, s: Flood(12))
    result = run_simulation(toy, stochastic(2, 5, bottleneck=5), protocol, 0, record_log=True)
    assert (survival_by_position(result, 12).sum(axis=1) == 5).all()


# --- several results ------------------------------------------------------------------------


def attempts(toy: Domain, monkeypatch: pytest.MonkeyPatch, plan: list[tuple[str, str]], seed: int):
    scripted(monkeypatch, {0: plan})
    protocol, spied = recorded(FixedRouting({}))
    run_simulation(
        toy, SimConfig(n_agents=1, n_steps=len(plan), agent_type="scripted"), protocol, seed
    )
    return spied[0].seen[-1][0]


def test_pair_with_several_results_gives_one_per_attempt(
    toy: Domain, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = [("earth", "fire"), ("lava", "water"), ("water", "lava"), ("lava", "water")]
    first_results = set()
    for seed in range(12):
        state = attempts(toy, monkeypatch, plan, seed)
        memories = state["memories"]
        assert len(memories) == len(plan)
        results = [m[2] for m in memories[1:]]
        assert set(results) <= {"stone", "obsidian"}
        # the second attempt yields the result the agent does not own yet
        assert {results[0], results[1]} == {"stone", "obsidian"}
        assert state["inventory"][-2:] == tuple(results[:2])
        first_results.add(results[0])
    assert first_results == {"stone", "obsidian"}  # the first pick is random, not fixed


def test_several_results_prefer_unowned(toy: Domain, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = [("earth", "fire"), ("air", "lava"), ("lava", "water")]  # owns stone first
    for seed in range(8):
        state = attempts(toy, monkeypatch, plan, seed)
        assert [m[2] for m in state["memories"]] == ["lava", "stone", "obsidian"]


# --- reproducibility ------------------------------------------------------------------------


def same(a: SimResult, b: SimResult) -> bool:
    assert a.log is not None and b.log is not None
    return (
        a.curve == b.curve
        and a.schedule.steps == b.schedule.steps
        and {k: v.tolist() for k, v in a.log.columns().items()}
        == {k: v.tolist() for k, v in b.log.columns().items()}
    )


@pytest.mark.parametrize("baseline", ["paired", "stochastic", "dynamic"])
def test_same_seed_same_game_different_seed_different_game(toy: Domain, baseline: str) -> None:
    config = stochastic(6, 20)
    protocol = BaselineProtocol(baseline)
    first = run_simulation(toy, config, protocol, 7, record_log=True)
    # whatever the global generators were doing does not matter
    random.seed(1)
    np.random.seed(2)
    second = run_simulation(toy, config, protocol, 7, record_log=True)
    assert same(first, second)
    others = [run_simulation(toy, config, protocol, s, record_log=True) for s in (8, 9)]
    assert not any(same(first, o) for o in others)


# --- the protocol boundary ------------------------------------------------------------------


class Vandal(FixedRouting):
    """Routes like :class:`FixedRouting` while trying to change the game through what it
    was given, and touching the global random generators."""

    def __init__(self, routes: dict[int, list[int]]) -> None:
        super().__init__(routes)
        self.kept: list[AgentStates] = []

    def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
        answer = super().share_memories(i_step, agent_states)
        for state in agent_states.values():
            for key in ("inventory", "memories"):
                with pytest.raises((TypeError, AttributeError)):
                    state[key].append("gold")  # type: ignore[attr-defined]
                with pytest.raises(TypeError):
                    state[key][0] = "gold"  # type: ignore[index]
        for old in self.kept:  # states from earlier steps are no live views either
            old.clear()
            old[0] = {"inventory": ("gold", "silver"), "memories": ()}
        agent_states[0]["inventory"] = ("philosophy",) * 50
        agent_states[1]["memories"] = ()
        agent_states.pop(2)
        self.kept.append(agent_states)
        np.random.seed(0)
        random.seed(0)
        np.random.random(1000)
        return answer


def test_protocol_cannot_alter_the_game(toy: Domain) -> None:
    routes = {0: [1, 2], 1: [2], 2: [0, 1], 3: [0]}
    config = stochastic(4, 15)
    benign = ObjectProtocol("benign", lambda n, t, s: FixedRouting(routes))
    vandal = ObjectProtocol("vandal", lambda n, t, s: Vandal(routes))
    a = run_simulation(toy, config, benign, 4, record_log=True)
    b = run_simulation(toy, config, vandal, 4, record_log=True)
    assert same(a, b)


def test_protocol_gets_fresh_states_each_step(toy: Domain) -> None:
    class Watch:
        def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
            assert set(agent_states) == {0, 1}
            for state in agent_states.values():
                assert isinstance(state["inventory"], tuple)
                assert isinstance(state["memories"], tuple)
                assert all(isinstance(m, tuple) and len(m) == 3 for m in state["memories"])
                assert all(isinstance(e, str) for e in state["inventory"])
            return {}

    keep: list[AgentStates] = []

    class Keep(Watch):
        def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
            keep.append(agent_states)
            return super().share_memories(i_step, agent_states)

    run_simulation(toy, stochastic(2, 5), ObjectProtocol("k", lambda n, t, s: Keep()), 0)
    assert len({id(s) for s in keep}) == 5
    # the first step's view was not updated afterwards: one memory each
    assert [len(keep[0][i]["memories"]) for i in (0, 1)] == [1, 1]


def test_baselines_read_the_games_snapshots(toy: Domain, monkeypatch: pytest.MonkeyPatch) -> None:
    """Baselines only count memories: they get the game's snapshots, not copies; protocol
    code written to the spec gets tuples (see test_protocol_gets_fresh_states_each_step)."""
    seen: list[AgentStates] = []
    share = Stochastic.share_memories

    def recording(self: Stochastic, i_step: int, agent_states: AgentStates) -> dict:
        seen.append(agent_states)
        return share(self, i_step, agent_states)

    monkeypatch.setattr(Stochastic, "share_memories", recording)
    run_simulation(toy, stochastic(2, 3), BaselineProtocol("stochastic"), 0)
    assert len(seen) == 3
    assert all(isinstance(s[0]["memories"], Snapshot) for s in seen)
    assert [len(s[1]["memories"]) for s in seen] == [1, 2, 3]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({5: [(0, 0)]}, "recipient 5 does not exist"),
        ({0: [(1, 3)]}, "recipient 0, entry 0: memory index 3 out of range"),
        ([], "returned list"),
    ],
)
def test_malformed_exchange_names_protocol_step_and_entry(
    toy: Domain, answer: object, message: str
) -> None:
    class Bad:
        def share_memories(self, i_step: int, agent_states: AgentStates) -> object:
            return answer if i_step == 2 else {}

    with pytest.raises(ProtocolError, match=f"^bad: invalid exchange at step 2: .*{message}"):
        run_simulation(toy, stochastic(2, 5), ObjectProtocol("bad", lambda n, t, s: Bad()), 0)


def test_crash_in_protocol_names_step(toy: Domain) -> None:
    class Crash:
        def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
            if i_step == 3:
                raise KeyError("boom")
            return {}

    with pytest.raises(ProtocolError, match=r"crash: KeyError: 'boom' in share_memories at step 3"):
        run_simulation(toy, stochastic(2, 5), ObjectProtocol("crash", lambda n, t, s: Crash()), 0)


def test_protocol_logs_are_returned(toy: Domain) -> None:
    class Logs(FixedRouting):
        def get_logs(self) -> list[dict]:
            return [{"metric_name": "m", "metric_description": "d", "metric_value": 1.5}]

    protocol = ObjectProtocol("logs", lambda n, t, s: Logs({}))
    result = run_simulation(toy, stochastic(2, 3), protocol, 0)
    assert result.protocol_logs == [
        {"metric_name": "m", "metric_description": "d", "metric_value": 1.5}
    ]


# --- transmission log and schedule ----------------------------------------------------------


def test_log_and_schedule_agree_with_what_was_sent(toy: Domain) -> None:
    n, steps = 5, 12
    protocol, spied = recorded(Stochastic(n, steps, seed=0))
    result = run_simulation(toy, stochastic(n, steps), protocol, 0, record_log=True)
    log, seen = result.log, spied[0].seen
    assert log is not None and len(result.schedule.steps) == steps
    names = toy.graph.names
    per_transfer: Counter[tuple[int, int, int]] = Counter()
    for k in range(len(log)):
        t, teacher, learner = log.step[k], log.teacher[k], log.learner[k]
        per_transfer[(t, teacher, learner)] += 1
        e1, e2, r = seen[t][teacher]["memories"][log.memory_index[k]]
        assert (names[log.e1[k]], names[log.e2[k]]) == (e1, e2)
        assert (names[log.result[k]] if log.result[k] != FAILED else None) == r
    from_schedule = Counter(
        {(t, a, b): c for t, step in enumerate(result.schedule.steps) for a, b, c in step}
    )
    assert per_transfer == from_schedule
    assert result.schedule.total_sent() == len(log) == 20 * n * steps
    assert result.received == int(np.sum(log.survived)) == 20 * n * steps
    assert 0 < result.novel_received <= result.received


def test_asocial_game_sends_nothing(toy: Domain) -> None:
    result = run_simulation(toy, stochastic(3, 10), BaselineProtocol("asocial"), 0, record_log=True)
    assert result.log is not None and len(result.log) == 0
    assert result.schedule.steps == [[]] * 10
    assert result.received == result.novel_received == 0
