"""Mechanism numbers per agent type (tpdisc.sim.mechanism): scripted games on the toy graph
whose every number is worked out by hand, their means in an Evaluation, and the
``--details`` table of ``tpdisc evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tests.helpers import ObjectProtocol, ScriptedAgent, register_agent
from tpdisc.cli import app
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, VariantSpec, make_domain
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import AgentStates
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate
from tpdisc.sim.game import SimResult, run_simulation
from tpdisc.sim.mechanism import NUMBERS, jaccard_distance, mean_mechanism

Script = dict[int, list[tuple[str, str]]]


class OtherScriptedAgent(ScriptedAgent):
    """A scripted agent of a second type, for mixed populations."""

    kind = "other"


class ScriptedRouting:
    """At step ``t``, returns ``routes[t]`` ({learner: [(teacher, memory index)]})."""

    def __init__(self, routes: dict[int, dict[int, list[tuple[int, int]]]]) -> None:
        self.routes = routes

    def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
        return self.routes.get(i_step, {})


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


def play(
    monkeypatch: pytest.MonkeyPatch,
    domain: Domain,
    script: Script,
    routes: dict[int, dict[int, list[tuple[int, int]]]],
    population: str,
) -> SimResult:
    register_agent(monkeypatch, "scripted", ScriptedAgent)
    register_agent(monkeypatch, "other", OtherScriptedAgent)
    monkeypatch.setattr(ScriptedAgent, "script", script)
    monkeypatch.setattr(ScriptedAgent, "instances", [])
    n_steps = max(len(plan) for plan in script.values())
    config = SimConfig.with_population(population, n_steps=n_steps)
    protocol = ObjectProtocol("scripted", lambda n, t, s: ScriptedRouting(routes))
    return run_simulation(domain, config, protocol, seed=0)


def made(graph: RecipeGraph) -> list[list[str | None]]:
    """What each scripted agent's attempts yielded (None: failed), by element name."""
    return [
        [graph.names[r] if r >= 0 else None for r in a.results] for a in ScriptedAgent.instances
    ]


def test_remakes_successes_and_jaccard_by_hand(
    toy: Domain, toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    script: Script = {
        0: [
            ("earth", "fire"),  # lava
            ("fire", "fire"),  # energy
            ("earth", "earth"),  # fails
            ("water", "air"),  # steam: pair and result received at step 0 -> both remakes
            ("air", "air"),  # pressure, nothing received about it
        ],
        1: [
            ("air", "water"),  # steam
            ("fire", "earth"),  # lava: the pair (either order) and result received -> both
            ("air", "fire"),  # energy: result received at step 1 by another recipe
            ("earth", "earth"),  # fails: received at step 2, but as a failure -> no remake
            ("earth", "water"),  # mud
        ],
    }
    routes = {
        0: {1: [(0, 0)], 0: [(1, 0)]},  # 1 hears (earth, fire, lava); 0 (air, water, steam)
        1: {1: [(0, 1)]},  # (fire, fire, energy)
        2: {1: [(0, 2)]},  # (earth, earth, failed)
    }
    result = play(monkeypatch, toy, script, routes, "scripted:2")
    assert made(toy_graph) == [
        ["lava", "energy", None, "steam", "pressure"],
        ["steam", "lava", "energy", None, "mud"],
    ]
    assert list(result.mechanism) == ["scripted"]
    m = result.mechanism["scripted"]
    assert set(m) == set(NUMBERS)
    # 2 agents × 5 attempts; 4 + 4 successes; pair remakes: agent 0 at step 3, agent 1 at
    # step 1; result remakes: those two and agent 1's energy at step 2.
    assert m["agents"] == 2
    assert m["success_rate"] == 8 / 10
    assert m["remake_fraction"] == 2 / 10
    assert m["remake_result_fraction"] == 3 / 10
    # each ends with the 4 base elements and 4 gains: {lava, energy, steam, pressure} and
    # {steam, lava, energy, mud}: 3 shared out of 5 (with start elements it would be 7/9)
    assert m["inventory_size"] == 8.0
    assert m["inventory_gain"] == 4.0
    assert m["jaccard_distance"] == pytest.approx(1 - 3 / 5, rel=1e-12)
    assert m["union_size"] == 9 == result.final


def test_single_agent_jaccard_undefined_and_own_recipes_are_no_remakes(
    toy: Domain, toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lava, lava again (a success that gains nothing), a failure; nothing is ever received
    script: Script = {0: [("earth", "fire"), ("fire", "earth"), ("air", "earth")]}
    result = play(monkeypatch, toy, script, {}, "scripted:1")
    assert made(toy_graph) == [["lava", "lava", None]]
    assert result.mechanism == {
        "scripted": {
            "agents": 1,
            "inventory_size": 5.0,
            "inventory_gain": 1.0,
            "success_rate": 2 / 3,
            "remake_fraction": 0.0,
            "remake_result_fraction": 0.0,
            "jaccard_distance": None,
            "union_size": 5,
        }
    }
    ev = Evaluation.from_results("scripted", [result, result])
    assert ev.mechanism["scripted"]["jaccard_distance"] is None
    assert json.loads(json.dumps(ev.to_json()))["mechanism"]["scripted"]["jaccard_distance"] is None


def test_mixed_population_is_reported_per_type(
    toy: Domain, toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    script: Script = {
        0: [("earth", "fire"), ("air", "air")],  # scripted: lava, pressure
        1: [("earth", "water"), ("earth", "fire")],  # scripted: mud, lava (not received)
        2: [("fire", "water"), ("earth", "fire")],  # other: steam, lava (received: remake)
        3: [("air", "earth"), ("air", "earth")],  # scripted: fails twice
        4: [("earth", "earth"), ("earth", "earth")],  # scripted: fails twice
    }
    routes = {0: {2: [(0, 0)]}}
    # types interleaved: agents 0, 1, 3, 4 are 'scripted', agent 2 'other'
    result = play(monkeypatch, toy, script, routes, "scripted:2,other:1,scripted:2")
    assert made(toy_graph) == [
        ["lava", "pressure"],
        ["mud", "lava"],
        ["steam", "lava"],
        [None, None],
        [None, None],
    ]
    assert list(result.mechanism) == ["scripted", "other"]
    scripted, other = result.mechanism["scripted"], result.mechanism["other"]
    assert scripted["agents"] == 4
    assert scripted["success_rate"] == 4 / 8
    assert scripted["remake_fraction"] == scripted["remake_result_fraction"] == 0.0
    assert scripted["inventory_size"] == (6 + 6 + 4 + 4) / 4
    assert scripted["inventory_gain"] == 1.0
    # gains {lava, pressure}, {mud, lava}, {}, {}: 2/3 for the first pair, 1 for each pair
    # of a non-empty and an empty set (4 pairs), 0 for the two empty sets: 14/3 over 6
    assert scripted["jaccard_distance"] == pytest.approx(7 / 9, rel=1e-12)
    assert scripted["union_size"] == 4 + 3
    assert other == {
        "agents": 1,
        "inventory_size": 6.0,
        "inventory_gain": 2.0,
        "success_rate": 1.0,
        "remake_fraction": 0.5,
        "remake_result_fraction": 0.5,
        "jaccard_distance": None,
        "union_size": 6,
    }


def test_jaccard_excludes_each_agents_own_start_elements(
    toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    hetero = make_domain(toy_graph, VariantSpec("heterogeneous"))  # (air, earth), (air, fire)
    script: Script = {0: [("air", "air")], 1: [("air", "air")]}  # both make pressure
    m = play(monkeypatch, hetero, script, {}, "scripted:2").mechanism["scripted"]
    assert m["jaccard_distance"] == 0.0  # with the start elements: 1 - 2/4
    assert (m["inventory_size"], m["inventory_gain"], m["union_size"]) == (3.0, 1.0, 4)


def test_jaccard_distance_function() -> None:
    assert jaccard_distance([]) is None and jaccard_distance([{1}]) is None
    assert jaccard_distance([set(), set()]) == 0.0
    assert jaccard_distance([{1, 2}, {2, 3}]) == pytest.approx(2 / 3, rel=1e-12)
    assert jaccard_distance([{1}, set(), set()]) == pytest.approx(2 / 3, rel=1e-12)


def test_mean_over_simulations_skips_undefined_values() -> None:
    runs = [
        {"a": {"x": 1.0, "j": None}, "b": {"x": 4.0}},
        {"a": {"x": 3.0, "j": 0.5}, "b": {"x": 6.0}},
    ]
    assert mean_mechanism(runs) == {"a": {"x": 2.0, "j": 0.5}, "b": {"x": 5.0}}
    assert mean_mechanism([{"a": {"j": None}}]) == {"a": {"j": None}}


def test_stochastic_games_are_consistent(toy: Domain) -> None:
    """Relations that hold in any game: one type's union is the coverage; a remake of either
    kind is a success; with no transmission there are no remakes."""
    config = SimConfig(n_agents=4, n_steps=30, agent_type="stochastic")
    social = run_simulation(toy, config, BaselineProtocol("stochastic"), seed=1)
    m = social.mechanism["stochastic"]
    assert m["union_size"] == social.final
    # (stochastic agents avoid pairs whose outcome they were told: pair remakes are rare)
    assert 0 <= m["remake_fraction"] <= m["success_rate"]
    assert 0 < m["remake_result_fraction"] <= m["success_rate"]
    assert m["inventory_gain"] == m["inventory_size"] - 4
    alone = run_simulation(toy, config, BaselineProtocol("asocial"), seed=1).mechanism
    assert alone["stochastic"]["remake_fraction"] == 0.0
    assert alone["stochastic"]["remake_result_fraction"] == 0.0


def test_evaluation_averages_the_simulations_and_writes_json(toy: Domain) -> None:
    config = SimConfig(n_agents=3, n_steps=10, agent_type="stochastic")
    seen: list[SimResult] = []
    ev = evaluate(
        toy,
        config,
        BaselineProtocol("paired"),
        [0, 1, 2],
        executor=SerialExecutor(),
        on_result=seen.append,
    )
    for name in NUMBERS:
        values = [r.mechanism["stochastic"][name] for r in seen]
        assert ev.mechanism["stochastic"][name] == pytest.approx(sum(values) / 3)  # type: ignore[arg-type]
    payload = json.loads(json.dumps(ev.to_json()))
    assert payload["mechanism"] == ev.mechanism


# --- the command line -----------------------------------------------------------------------


def test_evaluate_details_prints_the_table(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    out = tmp_path / "out.json"
    args = ["evaluate", "asocial", "stochastic", "--agents", "3", "--steps", "8", "--sims", "2",
            "--agent-type", "stochastic", "--executor", "serial", "--recipes", str(recipes),
            "--json", str(out)]  # fmt: skip
    runner = CliRunner()
    plain = runner.invoke(app, args)
    assert plain.exit_code == 0, plain.output
    assert "Mechanism" not in plain.stdout
    result = runner.invoke(app, [*args, "--details"])
    assert result.exit_code == 0, result.output
    table = result.stdout[result.stdout.index("Mechanism per agent type") :]
    results = json.loads(out.read_text())["results"]
    # one row per protocol (one agent type); CliRunner's 80 columns may shorten names, never
    # numbers
    rows = [line for line in table.splitlines() if line.count("│") == 10]
    assert len(rows) == 2
    for r, row in zip(sorted(results, key=lambda r: -r["mean"]), rows, strict=True):
        m = r["mechanism"]["stochastic"]
        assert set(m) == set(NUMBERS)
        cells = [c.strip() for c in row.split("│")[1:-1]]
        assert r["protocol"].startswith(cells[0].rstrip("…"))
        assert cells[2:] == [
            f"{m['inventory_size']:.1f}",
            f"{m['inventory_gain']:.1f}",
            f"{m['success_rate']:.3f}",
            f"{m['remake_fraction']:.3f}",
            f"{m['remake_result_fraction']:.3f}",
            f"{m['jaccard_distance']:.3f}",
            f"{m['union_size']:.1f}",
        ]
    assert results[0]["mechanism"] != results[1]["mechanism"]
    for command in ("evaluate", "compare"):
        assert "--details" in runner.invoke(app, [command, "--help"]).output
