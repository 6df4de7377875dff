"""Fitness over seeded simulations: what an Evaluation holds and how it is summarised."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate, evaluate_ablated, sem
from tpdisc.sim.game import SimResult, run_simulation

CONFIG = SimConfig(n_agents=4, n_steps=12, agent_type="stochastic")


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


def test_sem() -> None:
    values = [3.0, 5.0, 4.0, 9.0]
    assert sem(values) == pytest.approx(stats.sem(values))
    assert sem([7.0]) == 0.0


def test_evaluate_runs_one_simulation_per_seed(toy: Domain) -> None:
    protocol = BaselineProtocol("paired")
    seen: list[SimResult] = []
    ev = evaluate(
        toy, CONFIG, protocol, [3, 4, 5], executor=SerialExecutor(), on_result=seen.append
    )
    assert ev.protocol == "paired" and ev.seeds == [3, 4, 5]
    assert [r.seed for r in seen] == [3, 4, 5]
    direct = [run_simulation(toy, CONFIG, protocol, s) for s in (3, 4, 5)]
    assert ev.final == [r.final for r in direct]
    assert ev.curves == [r.curve for r in direct]
    assert ev.received == [r.received for r in direct]
    assert ev.mean == pytest.approx(np.mean(ev.final))
    assert ev.sem == pytest.approx(stats.sem(ev.final))
    curves = np.asarray(ev.curves, dtype=float)
    assert ev.curve_mean() == pytest.approx(curves.mean(axis=0).tolist())
    assert ev.curve_sem() == pytest.approx(stats.sem(curves, axis=0).tolist())
    assert len(ev.curve_mean()) == CONFIG.n_steps + 1


def test_json_summary(toy: Domain) -> None:
    ev = evaluate(toy, CONFIG, BaselineProtocol("stochastic"), [0, 1], executor=SerialExecutor())
    data = json.loads(json.dumps(ev.to_json()))
    assert data["protocol"] == "stochastic"
    assert data["final"] == ev.final and all(type(v) is int for v in data["final"])
    assert data["mean"] == pytest.approx(ev.mean) and data["sem"] == pytest.approx(ev.sem)
    assert data["curve_mean"] == pytest.approx(ev.curve_mean())
    assert len(data["curve_sem"]) == CONFIG.n_steps + 1
    # the stochastic baseline gives every agent 20 memories per step, all under the bottleneck
    assert data["received_per_agent"] == [20.0 * CONFIG.n_steps] * 2


def test_single_simulation_has_zero_spread(toy: Domain) -> None:
    ev = evaluate(toy, CONFIG, BaselineProtocol("asocial"), [0], executor=SerialExecutor())
    assert ev.sem == 0.0 and ev.curve_sem() == [0.0] * (CONFIG.n_steps + 1)
    assert ev.to_json()["received_per_agent"] == [0.0]


def test_evaluate_ablated_pairs_seeds(toy: Domain) -> None:
    original, ablated = evaluate_ablated(
        toy, CONFIG, BaselineProtocol("graph"), [0, 1], executor=SerialExecutor()
    )
    assert original.protocol == "graph" and ablated.protocol == "graph (ablated)"
    assert original.seeds == ablated.seeds == [0, 1]
    direct = evaluate(toy, CONFIG, BaselineProtocol("graph"), [0, 1], executor=SerialExecutor())
    assert original.final == direct.final
    # a content-blind baseline sends the same volume under its ablation
    assert isinstance(ablated, Evaluation) and len(ablated.curves) == 2
