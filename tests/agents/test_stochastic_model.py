"""The stochastic agents' section: its one choice, read from configuration and checked."""

from __future__ import annotations

import pytest

from tpdisc.agents.base import AgentParams
from tpdisc.agents.stochastic_model import LIFETIMES, StochasticModel
from tpdisc.errors import ConfigError


def test_every_lifetime_is_accepted_and_kept() -> None:
    for lifetime in LIFETIMES:
        params = AgentParams.from_dict({"stochastic": {"received": lifetime}})
        assert params.stochastic == StochasticModel(received=lifetime)


def test_a_bad_lifetime_is_one_line_naming_the_field_and_the_choices() -> None:
    with pytest.raises(ConfigError) as err:
        AgentParams.from_dict({"stochastic": {"received": "forever"}})
    message = str(err.value)
    assert "\n" not in message
    assert "received='forever'" in message and "always, step, never" in message


def test_an_unknown_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown setting untried"):
        AgentParams.from_dict({"stochastic": {"untried": "own"}})
