"""Simulation settings: validation, populations, serialisation."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tpdisc.agents.base import AgentParams
from tpdisc.domain.variants import VariantSpec
from tpdisc.errors import ConfigError
from tpdisc.sim.config import BOTTLENECK, SimConfig


def test_defaults_follow_the_spec() -> None:
    config = SimConfig(agent_type="stochastic")
    assert (config.n_agents, config.n_steps, config.bottleneck) == (10, 150, 20)
    assert BOTTLENECK == 20
    assert config.params == AgentParams(p_social=0.5)
    assert config.params.empowerment.name == "calibrated-text"
    assert config.variant == VariantSpec("full")
    assert config.agents == (("stochastic", 10),)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agent_type": "robot"}, "unknown agent type 'robot'; choose from"),
        ({"n_agents": 0}, "n_agents must be at least 1, got 0"),
        ({"n_steps": 0}, "n_steps must be at least 1, got 0"),
        ({"bottleneck": 0}, "bottleneck must be at least 1, got 0"),
        ({"params": AgentParams(p_social=1.5)}, r"p_social must lie in \[0, 1\], got 1.5"),
        ({"params": AgentParams(p_social=-0.1)}, r"p_social must lie in \[0, 1\], got -0.1"),
    ],
)
def test_invalid_settings(kwargs: dict, message: str) -> None:
    kwargs.setdefault("agent_type", "stochastic")
    with pytest.raises(ConfigError, match=message):
        SimConfig(**kwargs)


def test_population_sets_the_size() -> None:
    config = SimConfig.with_population("stochastic:3,stochastic:4", n_agents=99, n_steps=5)
    assert config.n_agents == 7
    assert config.agents == (("stochastic", 3), ("stochastic", 4))


def test_frozen_and_serialisable() -> None:
    config = SimConfig(agent_type="stochastic", n_agents=6, variant=VariantSpec("dropout"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.n_agents = 3  # type: ignore[misc]
    data = json.loads(json.dumps(config.to_dict()))
    assert data["n_agents"] == 6 and data["agent_type"] == "stochastic"
    assert data["population"] is None and data["variant"]["name"] == "dropout"
    assert SimConfig.from_dict(data) == config
    assert data["params"]["p_social"] == 0.5
    assert data["params"]["empowerment"]["name"] == "calibrated-text"
    assert data["variant"]["name"] == "dropout" and data["bottleneck"] == 20
    assert SimConfig(agent_type="stochastic") == SimConfig(agent_type="stochastic")
