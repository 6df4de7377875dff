"""Where a protocol's elements come from (tpdisc.sim.accounting): a scripted game on the toy
graph classified by hand, the relations every game keeps, the contributions against
asocial play, and the tables of ``evaluate --details`` and ``inspect``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tests.helpers import ObjectProtocol, ScriptedAgent, register_agent
from tpdisc.agents.base import AgentParams, AgentState
from tpdisc.cli import app
from tpdisc.domain.recipes import Pair, RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import AgentStates
from tpdisc.sim import accounting
from tpdisc.sim.accounting import OUTCOMES, WAYS, asocial_rate, contributions, pooled
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate
from tpdisc.sim.game import run_simulation


class SteeredScriptedAgent(ScriptedAgent):
    """A scripted agent that says the social bias steered it at the steps in ``steered_at``."""

    kind = "steered-scripted"
    steered_at: ClassVar[set[tuple[int, int]]] = set()

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        self.steered = (self.agent_id, self.step) in self.steered_at
        return super().choose(state, social, rng)


class Routes:
    def __init__(self, routes: dict[int, dict[int, list[tuple[int, int]]]]) -> None:
        self.routes = routes

    def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
        return self.routes.get(i_step, {})


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


def test_a_scripted_game_classified_by_hand(toy: Domain, monkeypatch: pytest.MonkeyPatch) -> None:
    script = {
        0: [("earth", "fire"), ("fire", "water"), ("earth", "earth"), ("earth", "water"),
            ("fire", "fire")],  # lava, steam, a failure, mud, energy: all alone
        1: [("air", "air"),  # pressure: alone (nothing received yet), new for the group
            ("air", "lava"),  # stone: lava borrowed from agent 0's memory
            ("earth", "fire"),  # lava: the recipe it was sent at step 0, re-made
            ("earth", "water"),  # mud, made by agent 0 this very step: steered, self
            ("air", "air")],  # pressure again: anyway, nothing
    }  # fmt: skip
    routes = {0: {1: [(0, 0)]}, 1: {1: [(0, 1)]}, 2: {1: [(0, 2)]}, 3: {1: [(0, 3)]}}
    register_agent(monkeypatch, "steered-scripted", SteeredScriptedAgent)
    monkeypatch.setattr(ScriptedAgent, "script", script)
    monkeypatch.setattr(ScriptedAgent, "instances", [])
    monkeypatch.setattr(SteeredScriptedAgent, "steered_at", {(1, 3)})
    config = SimConfig.with_population("steered-scripted:2", n_steps=5)
    protocol = ObjectProtocol("scripted", lambda n, t, s: Routes(routes))
    result = run_simulation(toy, config, protocol, seed=0)
    part = result.accounting["steered-scripted"]
    zero = dict.fromkeys(OUTCOMES, 0)
    assert part["counts"] == {
        "remake": {**zero, "self": 1},
        "alone": {**zero, "group": 5, "failure": 1},
        "borrowed": {**zero, "group": 1},
        "steered": {**zero, "self": 1},
        "anyway": {**zero, "nothing": 1},
    }
    assert part["attempts_by_step"] == {
        "remake": [0, 0, 1, 0, 0],
        "alone": [2, 1, 1, 1, 1],
        "borrowed": [0, 1, 0, 0, 0],
        "steered": [0, 0, 0, 1, 0],
        "anyway": [0, 0, 0, 0, 1],
    }
    new = sum(part["counts"][way]["group"] for way in WAYS)
    assert new == result.final - 4 == 6


def test_every_game_adds_up(toy: Domain) -> None:
    """Whatever the protocol: one attempt per agent and step, the group's new elements are
    the coverage gained, asocial play is all alone, and a type's counts are JSON."""
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    for name in ("asocial", "paired", "stochastic"):
        result = run_simulation(toy, config, BaselineProtocol(name), seed=3)
        part = result.accounting["stochastic"]
        steps = part["attempts_by_step"]
        assert [sum(steps[w][t] for w in WAYS) for t in range(30)] == [4] * 30
        assert sum(sum(part["counts"][w].values()) for w in WAYS) == 4 * 30
        assert sum(part["counts"][w]["group"] for w in WAYS) == result.final - 4
        assert accounting.check(json.loads(json.dumps(result.accounting)), "x")
        if name == "asocial":
            assert sum(steps["alone"]) == 120
        else:
            assert sum(steps["alone"]) < 120


def test_stochastic_agents_say_when_the_bias_steered_them(toy: Domain) -> None:
    config = SimConfig(n_agents=4, n_steps=40, agent_type="stochastic")
    steered = run_simulation(toy, config, BaselineProtocol("stochastic"), seed=2)
    never = run_simulation(
        toy, replace(config, params=AgentParams(p_social=0.0)),
        BaselineProtocol("stochastic"), seed=2,
    )  # fmt: skip
    ways = steered.accounting["stochastic"]["attempts_by_step"]
    assert sum(ways["steered"]) > 0
    assert sum(never.accounting["stochastic"]["attempts_by_step"]["steered"]) == 0


def test_contributions_add_up_to_the_gain_over_asocial_play(toy: Domain) -> None:
    config = SimConfig(n_agents=3, n_steps=25, agent_type="stochastic")
    seeds = [0, 1, 2, 3]
    alone = evaluate(toy, config, BaselineProtocol("asocial"), seeds, executor=SerialExecutor())
    social = evaluate(toy, config, BaselineProtocol("dynamic"), seeds, executor=SerialExecutor())
    rate = asocial_rate(alone.curve_mean(), config.n_agents)
    parts = contributions(social.accounting, rate)
    assert sum(parts.values()) == pytest.approx(social.mean - alone.mean, abs=1e-9)
    assert contributions(alone.accounting, rate) == pytest.approx(dict.fromkeys(WAYS, 0.0))


def test_means_and_pooling() -> None:
    def run(group: int, steps: list[int]) -> accounting.Accounting:
        counts = {w: dict.fromkeys(OUTCOMES, 0) for w in WAYS}
        counts["alone"]["group"] = group
        by_step = {w: [0] * len(steps) for w in WAYS}
        by_step["alone"] = steps
        return {"a": {"counts": counts, "attempts_by_step": by_step}}

    mean = accounting.mean_accounting([run(2, [1, 1]), run(4, [1, 3])])
    assert mean["a"]["counts"]["alone"]["group"] == 3.0
    assert mean["a"]["attempts_by_step"]["alone"] == [1.0, 2.0]
    both = pooled({"a": run(2, [1, 1])["a"], "b": run(1, [2, 0])["a"]})
    assert both["counts"]["alone"]["group"] == 3
    assert both["attempts_by_step"]["alone"] == [3, 1]


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"a": {"counts": {}}},
        {"a": {"counts": {w: dict.fromkeys(OUTCOMES, 0) for w in WAYS}, "attempts_by_step": {}}},
        {
            "a": {
                "counts": {w: dict.fromkeys(OUTCOMES, -1) for w in WAYS},
                "attempts_by_step": {w: [] for w in WAYS},
            }
        },
    ],
)
def test_check_refuses_what_a_game_cannot_give(bad: object) -> None:
    with pytest.raises(ValueError):
        accounting.check(bad, "accounting")


def test_evaluate_details_prints_where_the_elements_come_from(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    out = tmp_path / "out.json"
    args = ["evaluate", "asocial", "dynamic", "--agents", "3", "--steps", "12", "--sims", "3",
            "--agent-type", "stochastic", "--executor", "serial", "--recipes", str(recipes),
            "--json", str(out), "--details"]  # fmt: skip
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    table = result.stdout[result.stdout.index("Where the elements come from") :]
    results = {r["protocol"]: r for r in json.loads(out.read_text())["results"]}
    for name, r in results.items():
        whole = r["accounting"]["stochastic"]
        assert accounting.check(r["accounting"], name)
        assert len(r["accounting_per_simulation"]) == 3
        row = next(line for line in table.splitlines() if line.startswith(f"│ {name} "))
        cells = [c.strip() for c in row.split("│")[1:-1]]
        assert cells[1] == f"{r['mean']:.1f}"
        assert cells[2] == f"{r['mean'] - results['asocial']['mean']:+.1f}"
        for way, cell in zip(WAYS, cells[3:], strict=True):
            attempts = sum(whole["attempts_by_step"][way])
            assert cell == f"{whole['counts'][way]['group']:.1f} / {attempts:.0f}"
    assert "contribution to the gain over asocial" in " ".join(table.split())
