"""A protocol's portrait (tpdisc.analysis.portrait): flow, content, agents and metrics
agree with what is known by construction and with the numbers evaluate and the
behavioural features report on the same seeds."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tpdisc.analysis.features import feature_values
from tpdisc.analysis.portrait import (
    MAX_METRIC_TEXT,
    MAX_METRICS,
    MeteredProtocol,
    Portrait,
    StepLogs,
    build_portraits,
    jaccard_over_steps,
    pattern_similarity,
    protocol_source,
    step_metrics,
)
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, VariantSpec, make_domain
from tpdisc.executors.make import make_executor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sandbox import load_protocols
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate, evaluate_ablated
from tpdisc.sim.game import run_simulation
from tpdisc.sim.mechanism import jaccard_distance

SEEDS = (0, 1, 2)
CONFIG = SimConfig(n_agents=4, n_steps=12, agent_type="stochastic")
# Routing known by construction: agent 0's newest memory goes to agent 1, nothing else.
ZERO_TO_ONE = '''
"""Agent 0 tells agent 1 its latest attempt."""


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.sent = 0

    def share_memories(self, i_step, agent_states):
        self.sent += 1
        return {1: [(0, len(agent_states[0]["memories"]) - 1)]}

    def get_logs(self):
        return [{"metric_name": "sent", "metric_description": "memories sent so far",
                 "metric_value": self.sent}, {"metric_name": "word",
                 "metric_description": "not a number", "metric_value": "hello"}]
'''


@pytest.fixture
def domain(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph, VariantSpec())


def portraits(domain: Domain, *specs, config: SimConfig = CONFIG) -> list[Portrait]:
    named = [(spec.name, spec) for spec in specs]
    return build_portraits(domain, config, named, SEEDS, make_executor("serial"))


def zero_to_one() -> SourceProtocol:
    return SourceProtocol("zero_to_one", ZERO_TO_ONE, "zero_to_one.py", trusted=True)


def test_a_protocol_sending_only_from_0_to_1_shows_exactly_that(domain: Domain) -> None:
    (p,) = portraits(domain, zero_to_one())
    successes = np.array(p.flow["successes"])
    failures = np.array(p.flow["failures"])
    both = successes + failures
    expected = np.zeros((4, 4))
    expected[0, 1] = CONFIG.n_steps  # one memory per step, every step
    assert both.tolist() == expected.tolist()
    thirds = sum(np.array(p.flow["thirds"][t]) for t in ("early", "middle", "late"))
    assert thirds.tolist() == expected.tolist()
    assert [np.array(p.flow["thirds"][t])[0, 1] for t in ("early", "middle", "late")] == [4, 4, 4]
    assert p.flow["early_late_similarity"] == pytest.approx(1.0)  # one pair throughout
    assert p.content["per_step"]["delivered"] == [1.0] * CONFIG.n_steps
    assert p.content["whole_game"]["resend_share"] == 0.0  # each attempt sent once
    # its own metrics after every step, means over seeds; the text metric is no number
    assert p.metrics["sent"]["mean_per_step"] == [float(k) for k in range(1, 13)]
    assert p.metrics["word"]["mean_per_step"] == [None] * CONFIG.n_steps
    assert p.docstring == "Agent 0 tells agent 1 its latest attempt."


def test_asocial_play_delivers_nothing_and_its_jaccard_is_the_mechanism_s(domain: Domain) -> None:
    (p,) = portraits(domain, BaselineProtocol("asocial"))
    assert np.array(p.flow["successes"]).sum() == np.array(p.flow["failures"]).sum() == 0
    assert p.content["per_step"]["delivered"] == [0.0] * CONFIG.n_steps
    assert p.content["whole_game"]["success_share"] is None  # nothing to divide
    evaluation = evaluate(domain, CONFIG, BaselineProtocol("asocial"), SEEDS)
    mechanism = evaluation.mechanism["stochastic"]
    assert p.agents["protocol"]["jaccard"][-1] == pytest.approx(mechanism["jaccard_distance"])
    assert p.agents["asocial"]["jaccard"][-1] == pytest.approx(mechanism["jaccard_distance"])
    assert p.coverage["protocol"]["mean"] == p.coverage["asocial"]["mean"]
    assert p.agents["protocol"]["jaccard"][0] == 0.0  # before the first step: nothing gained


@pytest.mark.parametrize("protocol", ["stochastic", "paired"])
def test_numbers_agree_with_evaluate_details_and_the_features(
    domain: Domain, protocol: str
) -> None:
    spec = BaselineProtocol(protocol)
    (p,) = portraits(domain, spec)
    original, ablated = evaluate_ablated(domain, CONFIG, spec, SEEDS)
    m = original.mechanism["stochastic"]
    assert p.mechanism == original.mechanism
    agents = p.agents["protocol"]
    assert agents["jaccard"][-1] == pytest.approx(m["jaccard_distance"])
    assert agents["mean_inventory"][-1] == pytest.approx(m["inventory_size"])
    assert agents["remake_fraction"] == pytest.approx(m["remake_fraction"])
    assert p.agents["union"][-1] == pytest.approx(m["union_size"])
    assert p.coverage["protocol"]["final"] == [float(v) for v in original.final]
    assert p.coverage["ablation"]["final"] == [float(v) for v in ablated.final]
    assert p.agents["ablation"]["jaccard"][-1] == pytest.approx(
        ablated.mechanism["stochastic"]["jaccard_distance"]
    )
    results = []
    evaluate(domain, CONFIG, spec, SEEDS, on_result=results.append, record_log=True)
    features = feature_values(results)
    whole = p.content["whole_game"]
    assert whole["lacks_result"] == pytest.approx(features["item_novelty"])
    assert whole["rarity"] == pytest.approx(features["rarity_bias"])
    for k in range(3):
        assert whole[f"has_{k}"] == pytest.approx(features[f"has_{k}_fraction"])
    received = sum(r.received for r in results) / len(results)
    assert whole["delivered"] == pytest.approx(received)
    assert np.array(p.flow["successes"]).sum() + np.array(p.flow["failures"]).sum() == (
        pytest.approx(received)
    )


def test_pattern_similarity() -> None:
    one = np.array([[0.0, 2.0], [0.0, 0.0]])
    assert pattern_similarity(one, 5 * one) == pytest.approx(1.0)
    assert pattern_similarity(one, one.T) == 0.0
    assert pattern_similarity(one, np.zeros((2, 2))) is None


def test_jaccard_over_steps_matches_the_mechanism_definition() -> None:
    rng = np.random.default_rng(3)
    sets = rng.random((5, 4, 9)) < 0.4
    sets[0] = False  # all empty: distance 0
    got = jaccard_over_steps(sets)
    for t in range(5):
        expected = jaccard_distance([set(np.flatnonzero(row)) for row in sets[t]])
        assert got[t] == pytest.approx(expected)
    assert np.isnan(jaccard_over_steps(sets[:, :1])).all()  # one agent: undefined


def test_a_sandboxed_protocol_reports_its_metrics_after_every_step(
    domain: Domain, tmp_path: Path
) -> None:
    path = tmp_path / "zero_to_one.py"
    path.write_text(ZERO_TO_ONE)
    (spec,) = load_protocols([str(path)])
    record = StepLogs()
    result = run_simulation(domain, CONFIG, MeteredProtocol(spec, record), 0)
    plain = run_simulation(domain, CONFIG, spec, 0)
    assert result.curve == plain.curve  # asking for logs changes nothing in the game
    assert [step["sent"] for step in record.steps] == list(range(1, 13))
    assert record.described == {"sent": "memories sent so far", "word": "not a number"}
    assert {step["word"] for step in record.steps} == {None}


def test_the_source_and_docstring_of_a_baseline_and_of_a_file() -> None:
    origin, source, doc = protocol_source(BaselineProtocol("stochastic"))
    assert origin == "baseline" and "class Stochastic" in source and doc
    origin, source, doc = protocol_source(
        SourceProtocol(
            "x",
            "class P:\n    '''Says hi.'''\n    def share_memories(self, i, s):\n"
            "        return {}\n",
            "x.py",
        )
    )
    assert (origin, doc) == ("x.py", "Says hi.")


def test_a_portrait_survives_json(domain: Domain) -> None:
    (p,) = portraits(domain, zero_to_one())
    assert Portrait.from_json(p.to_json()) == p


def test_the_accounting_of_each_condition_adds_up_to_its_gain(domain: Domain) -> None:
    (p,) = portraits(domain, BaselineProtocol("dynamic"))
    assert p.accounting is not None
    asocial = p.coverage["asocial"]["mean"][-1]
    for condition in ("protocol", "ablation", "asocial"):
        ways = p.accounting[condition]
        attempts = sum(cell["attempts"] for cell in ways.values())
        assert attempts == pytest.approx(CONFIG.n_agents * CONFIG.n_steps)
        new = sum(cell["group"] for cell in ways.values())
        final = p.coverage[condition]["mean"][-1]
        assert new == pytest.approx(final - 4)
        gain = sum(cell["contribution"] for cell in ways.values())
        assert gain == pytest.approx(final - asocial, abs=1e-9)
    assert p.accounting["asocial"]["alone"]["attempts"] == CONFIG.n_agents * CONFIG.n_steps
    assert p.accounting["protocol"]["alone"]["attempts"] < CONFIG.n_agents * CONFIG.n_steps


def test_a_portrait_stored_before_the_accounting_still_reads(domain: Domain) -> None:
    (p,) = portraits(domain, zero_to_one())
    data = json.loads(json.dumps(p.to_json()))
    del data["accounting"]
    older = Portrait.from_json(data)
    assert older.accounting is None and "accounting" not in older.to_json()


# --- what the host does with get_logs() is bounded -------------------------------------


def test_thousands_of_metrics_a_step_cost_the_host_little() -> None:
    reply = [
        {"metric_name": f"m{k}", "metric_description": "d" * 10_000, "metric_value": k}
        for k in range(2_000)
    ]
    record = StepLogs()
    started = time.perf_counter()
    for _ in range(150):
        record.add(reply)
    metrics = step_metrics(record)
    took = time.perf_counter() - started
    assert len(metrics) == MAX_METRICS and record.dropped
    assert list(metrics)[:3] == ["m0", "m1", "m2"]  # the protocol's own order
    assert metrics["m7"][1] == (7.0,) * 150
    assert {len(text) for text, _ in metrics.values()} == {MAX_METRIC_TEXT}
    # Linear: 300,000 entries read in well under a second (quadratic took minutes).
    assert took < 5.0


def test_odd_log_entries_are_skipped_not_trusted() -> None:
    record = StepLogs()
    record.add([{"metric_name": "x", "metric_value": 10**400}, "junk", {"metric_value": 1}])
    record.add({"not": "a list"})
    record.add([{"metric_name": ["a", "list"], "metric_value": float("nan")}])
    assert record.steps == [{"x": None, "": 1.0}, {}, {"['a', 'list']": None}]


# --- a stored portrait is checked before a report reuses it ----------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(n_steps=3_000_000_000), "n_steps: expected the settings' own"),
        (lambda d: d["coverage"]["protocol"]["final"].__setitem__(0, 10**400), "out of range"),
        (lambda d: d["agents"]["union"].append(1.0), "agents.union: expected 13 numbers"),
        (lambda d: d["flow"]["successes"].pop(), "flow.successes: expected 4 rows"),
        (lambda d: d["content"]["per_step"].update(delivered="many"), "expected 12 numbers"),
        (lambda d: d["metrics"].update({"x": {"description": "", "mean_per_step": [1]}}),
         "mean_per_step: expected 12 numbers"),
        (lambda d: d.update(extra=1), "portrait: expected the fields"),
        (lambda d: d["mechanism"]["stochastic"].update(agents=float("inf")), "out of range"),
        (lambda d: d["accounting"]["protocol"].pop("remake"), "accounting.protocol: expected"),
        (lambda d: d["accounting"]["ablation"]["alone"].update(group="x"), "expected numbers"),
    ],
)  # fmt: skip
def test_a_stored_portrait_is_refused_unless_a_simulation_could_have_made_it(
    domain: Domain, change: Any, message: str
) -> None:
    (p,) = portraits(domain, zero_to_one())
    data = json.loads(json.dumps(p.to_json()))
    assert Portrait.from_json(data) == Portrait.from_json(json.loads(json.dumps(p.to_json())))
    change(data)
    with pytest.raises(ValueError, match=message):
        Portrait.from_json(data)
