"""The stochastic agents' parameter section (``sim.params.stochastic``).

A stochastic agent picks uniformly among the pairs it has not tried. The reference's text
("pairs not yet tried") leaves open whether a received memory makes its pair tried; this
section holds that choice, in the words the empowerment model uses for how long received
knowledge lasts (``docs/empowerment.md`` describes the three agent types on one page).
"""

from __future__ import annotations

from dataclasses import dataclass

from tpdisc.errors import ConfigError

LIFETIMES = ("always", "step", "never")


@dataclass(frozen=True)
class StochasticModel:
    """- ``received``: how long a received memory (success or failure) counts its pair as
    tried: for good (``always``), for the agent's next choice only, like the social
    inventory (``step``), or not at all (``never``: "untried" means not tried by the agent
    itself). Own attempts count for good."""

    received: str = "always"

    def __post_init__(self) -> None:
        if self.received not in LIFETIMES:
            raise ConfigError(
                f"stochastic model received={self.received!r}; choose from {', '.join(LIFETIMES)}"
            )
