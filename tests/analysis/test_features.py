"""Behavioural features (tpdisc.analysis.features): hand-built logs and attempt histories
whose every feature is worked out by hand, undefined cases, and a real game on the toy
graph."""

from __future__ import annotations

import pickle
from itertools import combinations

import pytest

from tpdisc.analysis.features import (
    FEATURE_NAMES,
    FEATURES,
    GROUPS,
    Events,
    acquisition_steps,
    events_of,
    exclusive_groups,
    extract,
    extract_result,
    feature_values,
    personalization_groups,
    pool,
)
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation
from tpdisc.sim.log import AttemptHistory, TransmissionLog

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


def values(history: AttemptHistory = HISTORY, rows: list | None = None) -> dict:
    return pool([extract(make_log(history, ROWS if rows is None else rows), history)])


EXPECTED = {
    "recency_bias": (1 + 1 + 1 + 1 / 3 + 1 + 1 + 1) / 7,
    "rarity_bias": (2 / 3 + 2 / 3 + 1 / 3 + 2 / 3 + 2 / 3) / 5,  # E1 E2 E5 E6 E7
    "item_novelty": 4 / 5,  # all successes but E5
    "actionable_has_0": 1 / 7,  # E6
    "actionable_has_1": 0.0,  # E8 is a failure
    "actionable_has_2": 3 / 7,  # E1 E2 E7
    "success_bias": (0 + 0 + 0 + 1 / 3 + 1 / 3 + 1 / 3 - 1 / 3) / 7,
    "has_0_fraction": 1 / 7,
    "has_1_fraction": 1 / 7,
    "has_2_fraction": 5 / 7,
    "cond_recency_has_0": 1.0,
    "cond_recency_has_1": 1.0,
    "cond_recency_has_2": (4 + 1 / 3) / 5,
    "targeted_failure_rate": 1 / 2,  # E4 yes, E8 no
    # (step 0, teacher 0): {0+1→2} vs {0+1→2} → 0; (step 2, teacher 0): {0+1→2, 2+2→3}
    # vs {2+2→3} → 1/2; the other (teacher, step) groups have one learner
    "personalization": 0.25,
    # step 0: 0+1→2 to 2 learners; step 1: 1+1 to 1; step 2: 0+1→2 to 1, 2+2→3 to 2,
    # 2+0 (= 0+2) to 1
    "exclusive_routing": (1 / 2 + 1 + 1 + 1 / 2 + 1) / 5,
    # after step 0: {2}, {}, {} → (1 + 1 + 0) / 3; after step 2: {2, 3}, {2}, {}
    "knowledge_synergy_early": 2 / 3,
    "knowledge_synergy_late": (1 / 2 + 1 + 1) / 3,
    # agent 0 sends on no other step than discovery ones (0/0 excluded: mean 0 elsewhere);
    # agent 1 gained at step 1 and sent 0 then, 1 on its other steps: 0 / 0.5; agent 2
    # never gained anything
    "discovery_burst_rate": 0.0,
    "slope_recency": (1 / 3 + 3) / 4 - 1.0,  # late E5 E6 E7 E8, early E1 E2
    "slope_has_0": 1 / 4 - 0.0,
    "slope_has_1": 1 / 4 - 0.0,
    "slope_has_2": 2 / 4 - 1.0,
}


def test_registry_lists_the_23_features_in_groups() -> None:
    assert len(FEATURES) == 23 == len(set(FEATURE_NAMES))
    assert set(EXPECTED) == set(FEATURE_NAMES)
    assert {f.group for f in FEATURES} == set(GROUPS)
    groups = {f.name: f.group for f in FEATURES}
    assert groups["success_bias"] == "content" and groups["personalization"] == "routing"
    assert groups["knowledge_synergy_late"] == "synergy"
    assert groups["slope_has_2"] == "temporal"
    assert all(f.description for f in FEATURES)
    assert FEATURES[0].to_json() == {
        "name": "recency_bias",
        "group": "content",
        "description": FEATURES[0].description,
    }


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


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_feature_by_hand(name: str) -> None:
    assert values()[name] == pytest.approx(EXPECTED[name])


@pytest.mark.parametrize("k", [0, 1, 2])
def test_has_k_families_for_every_k(k: int) -> None:
    # Only the event with exactly k owned ingredients: E6 (0), E8 (1), E7 (2).
    row = {0: ROWS[5], 1: ROWS[7], 2: ROWS[6]}[k]
    got = values(rows=[row])
    for j in (0, 1, 2):
        assert got[f"has_{j}_fraction"] == (1.0 if j == k else 0.0)
        assert got[f"actionable_has_{j}"] == (1.0 if j == k and k != 1 else 0.0)
        assert got[f"cond_recency_has_{j}"] == (1.0 if j == k else None)
        # one late event and no early one: no slope
        assert got[f"slope_has_{j}"] is None


def test_no_event_leaves_event_features_undefined() -> None:
    got = values(rows=[ROWS[2]])  # the only row did not survive the bottleneck
    defined_anyway = {"knowledge_synergy_early", "knowledge_synergy_late"}
    assert {n for n, v in got.items() if v is not None} == defined_anyway
    assert got["knowledge_synergy_late"] == pytest.approx(EXPECTED["knowledge_synergy_late"])


def test_no_simulation_leaves_everything_undefined() -> None:
    assert pool([]) == dict.fromkeys(FEATURE_NAMES)
    assert feature_values([]) == dict.fromkeys(FEATURE_NAMES)


def test_features_without_qualifying_events_are_undefined() -> None:
    # Only successes: no failure for the targeted failure rate; one teacher and learner
    # per step: no personalisation.
    got = values(rows=[ROWS[0], ROWS[4]])
    assert got["targeted_failure_rate"] is None
    assert got["personalization"] is None
    assert got["item_novelty"] == pytest.approx(1 / 2)
    # Only failures: no result to be rare or novel.
    got = values(rows=[ROWS[3], ROWS[7]])
    assert got["rarity_bias"] is None and got["item_novelty"] is None
    assert got["actionable_has_2"] == 0.0


def test_one_agent_has_no_synergy() -> None:
    alone = AttemptHistory(6, ((0, 1),), (((0, 1, 2), (0, 0, -1), (2, 2, 3)),))
    got = values(alone, rows=[])
    assert got["knowledge_synergy_early"] is None and got["knowledge_synergy_late"] is None


def test_discovery_burst_rate_by_hand() -> None:
    # Agent 0 gains elements at steps 0 and 2 (4 + 2 events sent: mean 3), not at steps 1
    # and 3 (1 + 0: mean 1/2): ratio 6. Agent 1 never gains: undefined.
    history = AttemptHistory(
        5,
        ((0, 1), (0, 1)),
        (
            ((0, 1, 2), (0, 0, -1), (2, 2, 3), (1, 1, -1)),
            ((0, 0, -1), (0, 0, -1), (0, 0, -1), (0, 0, -1)),
        ),
    )
    rows = [(0, 0, 1, 0, True)] * 4 + [(1, 0, 1, 1, True)] + [(2, 0, 1, 2, True)] * 2
    rows += [(3, 1, 0, 0, True), (3, 0, 1, 3, False)]  # agent 1's and a cut row: ignored
    assert values(history, rows)["discovery_burst_rate"] == pytest.approx(6.0)


def test_pooling_over_simulations_weights_events_not_simulations() -> None:
    one = extract(make_log(HISTORY, ROWS), HISTORY)  # 7 events
    other = extract(make_log(HISTORY, [ROWS[3]]), HISTORY)  # one failure, recency 1
    got = pool([one, other])
    assert got["recency_bias"] == pytest.approx((19 / 3 + 1) / 8)
    assert got["targeted_failure_rate"] == pytest.approx(2 / 3)
    assert got["knowledge_synergy_early"] == pytest.approx(2 / 3)  # mean of equal values


def test_extract_needs_the_recorded_log(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=3, n_steps=5, agent_type="stochastic")
    result = run_simulation(domain, config, BaselineProtocol("stochastic"), 0)
    assert result.history is None and result.log is None
    with pytest.raises(ValueError, match="record_log=True"):
        extract_result(result)


def test_real_games_on_the_toy_graph(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    protocol = BaselineProtocol("stochastic")
    results = [run_simulation(domain, config, protocol, s, record_log=True) for s in range(3)]
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
    got = feature_values(results)
    assert list(got) == list(FEATURE_NAMES)
    assert all(v is not None for v in got.values()), got  # every agent sends to several
    value = {name: float(v) for name, v in got.items() if v is not None}
    fractions = [n for n in FEATURE_NAMES if n.startswith(("has_", "actionable_", "cond_"))]
    fractions += ["recency_bias", "item_novelty", "targeted_failure_rate", "personalization"]
    fractions += ["exclusive_routing", "knowledge_synergy_early", "knowledge_synergy_late"]
    for name in fractions:
        assert 0.0 <= value[name] <= 1.0, name
    assert 0.0 <= value["rarity_bias"] <= 1 - 1 / 4  # its teacher owns the result
    assert value["exclusive_routing"] > 0
    assert -1.0 <= value["success_bias"] <= 1.0
    assert value["discovery_burst_rate"] >= 0.0
    for name in ("slope_recency", "slope_has_0", "slope_has_1", "slope_has_2"):
        assert -1.0 <= value[name] <= 1.0, name
    assert sum(value[f"has_{k}_fraction"] for k in (0, 1, 2)) == pytest.approx(1.0)


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
