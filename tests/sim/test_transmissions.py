"""Transmission events and their tallies (tpdisc.sim.transmissions): a hand-built log and
attempt history whose states at transmission are worked out by hand, real games replayed
the slow way, and the tally from the recorder against the tally from the whole log."""

from __future__ import annotations

import pickle
from itertools import combinations

import pytest

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation
from tpdisc.sim.log import AttemptHistory, TransmissionLog
from tpdisc.sim.transmissions import (
    Events,
    Tally,
    acquisition_steps,
    events_of,
    exclusive_groups,
    personalization_groups,
    tally_of_log,
)

# Elements 0 and 1 are everyone's start; 2 = 0 + 1, 3 = 2 + 2. Three agents, three steps:
# one step per third (window of step t is t).
HISTORY = AttemptHistory(
    n_elements=6,
    starts=((0, 1), (0, 1), (0, 1)),
    memories=(
        ((0, 1, 2), (0, 0, -1), (2, 2, 3)),  # agent 0 gains 2 at step 0, 3 at step 2
        ((1, 1, -1), (0, 1, 2), (2, 0, -1)),  # agent 1 gains 2 at step 1
        ((0, 0, -1), (1, 1, -1), (1, 1, -1)),  # agent 2 never gains anything
    ),
)
# (step, teacher, learner, memory index, survived); e1, e2, result come from HISTORY
ROWS = [
    (0, 0, 1, 0, True),  # E1: has 2, result lacked, 1/3 own it, teacher rate 1/1
    (0, 0, 2, 0, True),  # E2: the same to agent 2
    (0, 1, 0, 0, False),  # cut by the bottleneck: counts nowhere
    (1, 2, 1, 1, True),  # E4: failure of a self-pair the learner owns: has 2, targeted
    (2, 0, 1, 0, True),  # E5: recency 1/3, learner owns 2 already, 2/3 own it, rate 2/3
    (2, 0, 2, 2, True),  # E6: self-pair (2, 2) the learner lacks: has 0, actionable
    (2, 0, 1, 2, True),  # E7: has 2, result 3 lacked: actionable has 2
    (2, 1, 2, 2, True),  # E8: failure (2, 0), learner owns 0 only: has 1, teacher rate 1/3
]


def make_log(
    history: AttemptHistory, rows: list[tuple[int, int, int, int, bool]]
) -> TransmissionLog:
    log = TransmissionLog()
    for step, teacher, learner, index, survived in rows:
        log.extend(
            step, learner, [(teacher, index)], [history.memories[teacher][index]], [survived]
        )
    return log


def test_acquisition_steps_of_the_hand_built_history() -> None:
    acquired = acquisition_steps(HISTORY)
    assert acquired[:, :2].tolist() == [[-1, -1]] * 3
    assert acquired[0, 2:4].tolist() == [0, 2]
    assert acquired[1, 2:4].tolist() == [1, 3]  # 3 = never within the 3 steps
    assert acquired[2, 2:].tolist() == [3, 3, 3, 3]


def test_events_carry_the_states_at_transmission() -> None:
    ev = events_of(make_log(HISTORY, ROWS), HISTORY)
    assert len(ev) == 7  # the row cut by the bottleneck is gone
    assert ev.has.tolist() == [2, 2, 2, 2, 0, 2, 1]
    assert ev.lacks_result.tolist() == [True, True, False, False, True, True, False]
    assert ev.owner_fraction.tolist() == pytest.approx([1 / 3, 1 / 3, 0, 2 / 3, 1 / 3, 1 / 3, 0])
    assert ev.teacher_success_rate.tolist() == pytest.approx([1, 1, 0, 2 / 3, 2 / 3, 2 / 3, 1 / 3])
    assert ev.recency.tolist() == pytest.approx([1, 1, 1, 1 / 3, 1, 1, 1])
    assert ev.window.tolist() == [0, 0, 1, 2, 2, 2, 2]


def test_the_tally_of_the_hand_built_log() -> None:
    t = tally_of_log(make_log(HISTORY, ROWS), HISTORY)
    assert (t.events, t.successes, t.novel, t.targeted) == (7, 5, 4, 1)
    assert (t.has_0, t.has_1, t.has_2) == (1, 1, 5)
    assert (t.actionable_0, t.actionable_1, t.actionable_2) == (1, 0, 3)
    assert (t.early, t.late) == (2, 4)
    assert (t.early_has_2, t.late_has_0, t.late_has_1, t.late_has_2) == (2, 1, 1, 2)
    assert t.recency == pytest.approx(6 + 1 / 3) and t.late_recency == pytest.approx(3 + 1 / 3)
    assert t.rarity == pytest.approx(3)
    assert (t.personalization_groups, t.exclusive_groups) == (2, 5)
    assert t.synergy_early == pytest.approx(2 / 3)
    assert set(Tally.counts()) | set(Tally.sums()) | set(Tally.values()) == set(
        Tally.__dataclass_fields__
    )


def test_real_games_on_the_toy_graph(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    protocol = BaselineProtocol("stochastic")
    results = [
        run_simulation(domain, config, protocol, s, record_log=True, tally=True) for s in range(3)
    ]
    for result in results:
        history, log = result.history, result.log
        assert history is not None and log is not None
        assert pickle.loads(pickle.dumps(history)) == history
        assert history.n_agents == 4 and history.n_steps == 30
        # a memory index is the step its teacher made it
        cols = log.columns()
        for t, teacher, index, e1, e2, r in zip(
            *(cols[c] for c in ("step", "teacher", "memory_index", "e1", "e2", "result")),
            strict=True,
        ):
            assert index <= t
            assert history.memories[teacher][index] == (e1, e2, r)
        # ownership at transmission (after the step's attempts), replayed the slow way
        ev = events_of(log, history)
        for t, learner, e1, e2, r, has, lacks in zip(
            ev.step, ev.learner, ev.e1, ev.e2, ev.result, ev.has, ev.lacks_result, strict=True
        ):
            owned = set(history.starts[learner])
            owned |= {m[2] for m in history.memories[learner][: t + 1] if m[2] >= 0}
            assert has == (e1 in owned) + (e2 in owned)
            assert lacks == (r >= 0 and r not in owned)
    for result in results:
        assert result.tally is not None
        assert result.tally == tally_of_log(result.log, result.history)


@pytest.mark.parametrize("bottleneck", [1, 3, 20])
def test_the_recorder_tallies_what_the_whole_log_does(toy_graph: RecipeGraph, bottleneck) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=5, n_steps=24, agent_type="stochastic", bottleneck=bottleneck)
    for baseline in ("stochastic", "dynamic", "asocial"):
        result = run_simulation(
            domain, config, BaselineProtocol(baseline), 3, record_log=True, tally=True
        )
        assert result.log is not None and result.history is not None
        assert result.tally == tally_of_log(result.log, result.history)
        plain = run_simulation(domain, config, BaselineProtocol(baseline), 3)
        assert plain.tally is None and plain.curve == result.curve  # watching changes nothing


def slow_groups(events: Events) -> tuple[list[float], list[float]]:
    """Personalisation and exclusive routing the plain way, with sets."""
    sent: dict[tuple[int, int], dict[int, set[tuple[int, int, int]]]] = {}
    got: dict[tuple[int, tuple[int, int, int]], set[int]] = {}
    ev = events
    for i in range(len(ev)):
        t, teacher, learner = int(ev.step[i]), int(ev.teacher[i]), int(ev.learner[i])
        a, b, r = int(ev.e1[i]), int(ev.e2[i]), int(ev.result[i])
        recipe = (min(a, b), max(a, b), r)
        sent.setdefault((t, teacher), {}).setdefault(learner, set()).add(recipe)
        got.setdefault((t, recipe), set()).add(learner)
    personal = [
        sum(1 - len(x & y) / len(x | y) for x, y in combinations(sets.values(), 2))
        / (len(sets) * (len(sets) - 1) / 2)
        for sets in sent.values()
        if len(sets) >= 2
    ]
    return personal, [1 / len(learners) for learners in got.values()]


@pytest.mark.parametrize("baseline", ["stochastic", "graph", "dynamic"])
def test_grouped_features_match_the_plain_computation(
    toy_graph: RecipeGraph, baseline: str
) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=6, n_steps=20, agent_type="stochastic")
    result = run_simulation(domain, config, BaselineProtocol(baseline), 1, record_log=True)
    assert result.log is not None and result.history is not None
    ev = events_of(result.log, result.history)
    personal, exclusive = slow_groups(ev)
    assert personal and exclusive  # teachers with several learners at once, in each
    n_elements = result.history.n_elements
    assert sorted(personalization_groups(ev, n_elements, 6)) == pytest.approx(sorted(personal))
    assert sorted(exclusive_groups(ev, n_elements, 6)) == pytest.approx(sorted(exclusive))
