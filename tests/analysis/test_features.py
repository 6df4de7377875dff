"""Behavioural features (tpdisc.analysis.features): the hand-built log and attempt history
of tests/sim/test_transmissions.py, whose every feature is worked out by hand, undefined
cases, pooling over simulations, and real games on the toy graph."""

from __future__ import annotations

import pytest

from tests.sim.test_transmissions import HISTORY, ROWS, make_log
from tpdisc.analysis.features import (
    FEATURE_NAMES,
    FEATURES,
    GROUPS,
    extract_result,
    feature_values,
    pool,
)
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation
from tpdisc.sim.log import AttemptHistory
from tpdisc.sim.transmissions import tally_of_log


def values(history: AttemptHistory = HISTORY, rows: list | None = None) -> dict:
    return pool([tally_of_log(make_log(history, ROWS if rows is None else rows), history)])


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
    one = tally_of_log(make_log(HISTORY, ROWS), HISTORY)  # 7 events
    other = tally_of_log(make_log(HISTORY, [ROWS[3]]), HISTORY)  # one failure, recency 1
    got = pool([one, other])
    assert got["recency_bias"] == pytest.approx((19 / 3 + 1) / 8)
    assert got["targeted_failure_rate"] == pytest.approx(2 / 3)
    assert got["knowledge_synergy_early"] == pytest.approx(2 / 3)  # mean of equal values


def test_pooling_does_not_depend_on_the_order_of_the_simulations(toy_graph) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    tallies = [
        run_simulation(domain, config, BaselineProtocol("dynamic"), s, tally=True).tally
        for s in range(6)
    ]
    assert all(t is not None for t in tallies)
    assert pool(tallies) == pool(tallies[::-1]) == pool(tallies[3:] + tallies[:3])  # type: ignore[arg-type]


def test_extract_needs_a_tally_or_the_recorded_log(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=3, n_steps=5, agent_type="stochastic")
    result = run_simulation(domain, config, BaselineProtocol("stochastic"), 0)
    assert result.history is None and result.log is None
    with pytest.raises(ValueError, match="tally=True or record_log=True"):
        extract_result(result)
    logged = run_simulation(domain, config, BaselineProtocol("stochastic"), 0, record_log=True)
    tallied = run_simulation(domain, config, BaselineProtocol("stochastic"), 0, tally=True)
    assert extract_result(logged) == extract_result(tallied)


def test_real_games_on_the_toy_graph(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    protocol = BaselineProtocol("stochastic")
    results = [run_simulation(domain, config, protocol, s, tally=True) for s in range(3)]
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
