"""Agent types by name, and populations mixing several of them."""

from __future__ import annotations

import re

import pytest

from tests.helpers import FixedRouting, ObjectProtocol, ScriptedAgent, StateSpy, register_agent
from tpdisc.agents.population import (
    AGENT_TYPES,
    agent_factory,
    agent_kinds,
    parse_population,
    population_size,
)
from tpdisc.agents.stochastic import StochasticAgent
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation


def test_parse_population() -> None:
    assert parse_population("stochastic:3") == (("stochastic", 3),)
    assert parse_population(" stochastic : 2 , stochastic,") == (
        ("stochastic", 2),
        ("stochastic", 1),
    )
    population = parse_population("stochastic:2,stochastic:3")
    assert population_size(population) == 5
    assert agent_kinds(population) == ["stochastic"] * 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "names no agents"),
        (" , ", "names no agents"),
        ("robots:3", "unknown agent type 'robots'; choose from .*stochastic"),
        ("stochastic:three", "count 'three' is not a whole number"),
        ("stochastic:0", "count of 'stochastic' must be at least 1"),
        ("stochastic:-2", "count of 'stochastic' must be at least 1"),
    ],
)
def test_population_errors_name_the_part(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"population {text!r}") + f".*{message}"):
        parse_population(text)


def test_agent_factory() -> None:
    assert "stochastic" in AGENT_TYPES
    assert agent_factory("stochastic") == StochasticAgent.from_context
    with pytest.raises(ConfigError, match="unknown agent type 'oracle'"):
        agent_factory("oracle")


def test_mixed_population_plays_each_type_in_its_seat(
    toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_agent(monkeypatch, "scripted", ScriptedAgent)
    monkeypatch.setattr(ScriptedAgent, "script", {1: [("air", "air")], 3: [("fire", "fire")]})
    monkeypatch.setattr(ScriptedAgent, "instances", [])
    config = SimConfig.with_population("stochastic:1,scripted:1,stochastic:1,scripted:1", n_steps=6)
    assert config.n_agents == 4
    spied: list[StateSpy] = []

    def factory(n: int, t: int, s: int) -> StateSpy:
        spied.append(StateSpy(FixedRouting({})))
        return spied[-1]

    run_simulation(make_domain(toy_graph), config, ObjectProtocol("none", factory), 0)
    memories = spied[0].seen[-1]
    assert [a.agent_id for a in ScriptedAgent.instances] == [1, 3]
    assert set(memories[1]["memories"]) == {("air", "air", "pressure")}
    assert set(memories[3]["memories"]) == {("fire", "fire", "energy")}
    # the stochastic seats never repeat a pair they know
    for i in (0, 2):
        pairs = [frozenset(m[:2]) for m in memories[i]["memories"]]
        assert len(pairs) == len(set(pairs))
