"""State-agnostic ablation (SPEC §5): the same schedule, content drawn at random."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.helpers import ObjectProtocol
from tpdisc.agents.base import FAILED
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.protocols.ablation import ReplayProtocol, ScheduleReplay
from tpdisc.protocols.exchanges import validate_exchanges
from tpdisc.protocols.interface import AgentStates
from tpdisc.protocols.schedule import Schedule
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import AblatedTask
from tpdisc.sim.game import SimResult, run_simulation


class SuccessesToNext:
    """State-aware: agent i hears every success of agent i + 1, and on even steps the
    latest success of agent i + 2."""

    def __init__(self, n_agents: int, n_steps: int, seed: int) -> None:
        self.n = n_agents

    def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
        out: dict[int, list[tuple[int, int]]] = {}
        for i in range(self.n):
            j = (i + 1) % self.n
            memories = agent_states[j]["memories"]
            out[i] = [(j, k) for k, m in enumerate(memories) if m[2] is not None]
            k2 = (i + 2) % self.n
            successes = [k for k, m in enumerate(agent_states[k2]["memories"]) if m[2] is not None]
            if i_step % 2 == 0 and successes:
                out[i].append((k2, successes[-1]))
        return out


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


def success_rate(result: SimResult) -> float:
    log = result.log
    assert log is not None
    return float(np.mean(np.asarray(log.result) != FAILED))


def test_replay_keeps_schedule_and_changes_content(toy: Domain) -> None:
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    protocol = ObjectProtocol("successes", SuccessesToNext)
    original = run_simulation(toy, config, protocol, 2, record_log=True)
    replay = ReplayProtocol("successes (ablated)", original.schedule)
    ablated = run_simulation(toy, config, replay, 2, record_log=True)
    assert original.schedule.total_sent() > 300
    assert ablated.schedule.steps == original.schedule.steps
    # the content is no longer chosen: failures now travel too
    assert success_rate(original) == 1.0
    assert success_rate(ablated) < 0.9
    assert original.log is not None and ablated.log is not None
    assert original.log.memory_index != ablated.log.memory_index


def test_replay_answers_in_the_canonical_form_the_game_trusts_unchecked(toy: Domain) -> None:
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    original = run_simulation(toy, config, ObjectProtocol("successes", SuccessesToNext), 2)
    # several teachers for one learner, and more memories asked of a teacher than it has
    schedule = Schedule([[(1, 0, 2), (2, 0, 1), (3, 2, 9)], *original.schedule.steps])
    states = {
        i: {"inventory": (), "memories": tuple(("a", "b", None) for _ in range(4))}
        for i in range(4)
    }
    with ReplayProtocol("replay", schedule).open(4, len(schedule.steps), 0) as runner:
        assert runner.canonical
        for step in range(len(schedule.steps)):
            raw = runner.share(step, states)
            assert raw == validate_exchanges(raw, [4] * 4)
            assert all(type(s) is int and type(i) is int for e in raw.values() for s, i in e)


def test_ablated_task_pairs_runs_of_one_seed(toy: Domain) -> None:
    config = SimConfig(n_agents=3, n_steps=12, agent_type="stochastic")
    protocol = ObjectProtocol("successes", SuccessesToNext)
    original, ablated = AblatedTask(toy, config, protocol, 5)()
    assert original.seed == ablated.seed == 5
    assert ablated.schedule.steps == original.schedule.steps
    # and it is reproducible
    again_original, again_ablated = AblatedTask(toy, config, protocol, 5)()
    assert again_original.curve == original.curve and again_ablated.curve == ablated.curve


def test_replay_draws_uniformly_from_the_senders_memories() -> None:
    schedule = Schedule([[(1, 0, 3000), (2, 0, 5)], [(0, 2, 4)]])
    replay = ScheduleReplay(schedule, seed=0)
    states = {
        i: {"inventory": (), "memories": tuple(("a", "b", None) for _ in range(n))}
        for i, n in enumerate([7, 10, 2])
    }
    first = replay.share_memories(0, states)
    assert set(first) == {0}
    assert Counter(s for s, _ in first[0]) == {1: 3000, 2: 5}
    picks = Counter(i for s, i in first[0] if s == 1)
    assert set(picks) == set(range(10))
    assert max(abs(c - 300) for c in picks.values()) < 6 * np.sqrt(3000 * 0.1 * 0.9)
    assert all(0 <= i < 2 for s, i in first[0] if s == 2)
    second = replay.share_memories(1, states)
    assert Counter(s for s, _ in second[2]) == {0: 4}
    assert replay.share_memories(2, states) == {}  # past the recorded run: nothing


def test_replay_is_seeded() -> None:
    schedule = Schedule([[(1, 0, 10)]])
    states = {i: {"inventory": (), "memories": (("a", "b", None),) * 50} for i in range(2)}

    def picks(seed: int) -> list[tuple[int, int]]:
        return ScheduleReplay(schedule, seed).share_memories(0, states)[0]

    assert picks(1) == picks(1)
    assert picks(1) != picks(2)


def test_one_memory_is_drawn_as_choice_draws_it_from_the_same_stream() -> None:
    # The replay draws a single memory with integers(), choice()'s own draw for one item
    # without replacement: every pick, and the stream after it, as choice() would make.
    spread = np.random.default_rng(7)
    sizes = [int(n) for n in spread.integers(1, 400, size=12)]
    states = {
        i: {"inventory": (), "memories": (("a", "b", None),) * n} for i, n in enumerate(sizes)
    }

    def transfer() -> tuple[int, int, int]:  # teacher, learner, memories sent (1 to 4)
        return int(spread.integers(12)), int(spread.integers(12)), int(spread.integers(1, 5))

    steps = [[transfer() for _ in range(20)] for _ in range(30)]
    replay = ScheduleReplay(Schedule(steps), seed=3)
    stream = np.random.default_rng(3)
    for step, transfers in enumerate(steps):
        expected: dict[int, list[tuple[int, int]]] = {}
        for teacher, learner, count in transfers:
            n = sizes[teacher]
            picks = stream.choice(n, size=count, replace=count > n)
            expected.setdefault(learner, []).extend((teacher, int(i)) for i in picks)
        assert replay.share_memories(step, states) == expected
    assert replay.rng.random() == stream.random()
    assert sum(c == 1 for step in steps for _, _, c in step) > 100  # the single draws ran
