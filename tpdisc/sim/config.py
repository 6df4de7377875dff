"""The settings of a simulation: plain, frozen, serialisable."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tpdisc.agents.base import AgentParams
from tpdisc.agents.population import AGENT_TYPES, Population, parse_population, population_size
from tpdisc.domain.variants import VariantSpec
from tpdisc.errors import ConfigError

BOTTLENECK = 20


@dataclass(frozen=True)
class SimConfig:
    """Everything that, with a seed, fixes a simulation's outcome."""

    n_agents: int = 10
    n_steps: int = 150
    agent_type: str = "empowerment"
    population: Population | None = None
    params: AgentParams = field(default_factory=AgentParams)
    bottleneck: int = BOTTLENECK
    variant: VariantSpec = field(default_factory=VariantSpec)

    def __post_init__(self) -> None:
        if self.population is not None:
            object.__setattr__(self, "n_agents", population_size(self.population))
        elif self.agent_type not in AGENT_TYPES:
            raise ConfigError(
                f"unknown agent type {self.agent_type!r}; choose from {', '.join(AGENT_TYPES)}"
            )
        if self.n_agents < 1:
            raise ConfigError(f"n_agents must be at least 1, got {self.n_agents}")
        if self.n_steps < 1:
            raise ConfigError(f"n_steps must be at least 1, got {self.n_steps}")
        if self.bottleneck < 1:
            raise ConfigError(f"bottleneck must be at least 1, got {self.bottleneck}")
        if not 0.0 <= self.params.p_social <= 1.0:
            raise ConfigError(f"p_social must lie in [0, 1], got {self.params.p_social}")
        if self.params.beta <= 0:
            raise ConfigError(f"beta must be positive, got {self.params.beta}")
        if self.params.llm is None and any(kind == "llm" for kind, _ in self.agents):
            raise ConfigError(
                "agent type 'llm' needs a chat endpoint: give --llm-base-url and --llm-model"
            )

    @classmethod
    def with_population(cls, text: str, **kwargs: Any) -> SimConfig:
        return cls(population=parse_population(text), **kwargs)

    @property
    def agents(self) -> Population:
        """The population as (type, count) groups."""
        return self.population or ((self.agent_type, self.n_agents),)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["population"] = [list(g) for g in self.agents]
        if self.params.llm is not None:
            data["params"]["llm"] = self.params.llm.to_dict()
        return data
