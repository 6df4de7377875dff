"""The agent interface: how a player picks the pair it attempts each step.

The game loop owns what is true of an agent (inventory, memories); an agent owns what it
believes (which pairs it knows the outcome of, how much it values them). Agents see the
recipe graph only through what their model is allowed to know.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tpdisc.agents.empowerment.model import EmpowermentModel
from tpdisc.agents.stochastic_model import StochasticModel
from tpdisc.config_tree import decode
from tpdisc.domain.recipes import Pair, RecipeGraph

if TYPE_CHECKING:  # imported for real only where LLM agents are used: it loads openai
    from tpdisc.agents.llm.config import LLMAgentConfig


def _read_llm_config(data: Any, where: str) -> LLMAgentConfig:
    from collections.abc import Mapping

    from tpdisc.agents.llm.config import LLMAgentConfig
    from tpdisc.errors import ConfigError

    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected the LLM agents' settings (client, concurrency, …)")
    return LLMAgentConfig.from_dict(data, where)


# A memory as the game stores it: (ingredient, ingredient, result id or -1 on failure).
Memory = tuple[int, int, int]
FAILED = -1


@dataclass
class AgentState:
    """What the game knows of one agent. Agents read it and never write it."""

    inventory: list[int]
    owned: np.ndarray
    memories: list[Memory] = field(default_factory=list)

    @classmethod
    def start(cls, n_elements: int, inventory: Sequence[int]) -> AgentState:
        owned = np.zeros(n_elements, dtype=bool)
        owned[list(inventory)] = True
        return cls(list(inventory), owned)


@dataclass(frozen=True)
class AgentParams:
    """Parameters shared by the agent models; each model reads the ones it uses."""

    p_social: float = 0.5
    # The empowerment agents' own section: temperature, open choices, prior.
    empowerment: EmpowermentModel = field(
        default_factory=EmpowermentModel, metadata={"from_text": EmpowermentModel.parse}
    )
    # The stochastic agents' own section: how long a received memory counts as tried.
    stochastic: StochasticModel = field(default_factory=StochasticModel)
    # The chat endpoint of LLM agents.
    llm: LLMAgentConfig | None = field(default=None, metadata={"decode": _read_llm_config})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "params") -> AgentParams:
        """The section as written, or as tpdisc wrote it before the empowerment model had a
        section of its own (``beta``, ``prior``, ``prior_seed`` beside ``p_social``, the
        choices as text): those files meant the ``previous`` model, and still do."""
        data = dict(data)
        legacy = {k: data.pop(k) for k in ("beta", "prior", "prior_seed") if k in data}
        section = data.get("empowerment")
        if legacy or isinstance(section, str):
            model: dict[str, Any] = {"name": "previous"}
            if isinstance(section, str):
                model["choices"] = section
            elif isinstance(section, Mapping):
                model.update(section)
            if "beta" in legacy:
                model["beta"] = legacy["beta"]
            prior = dict(model.get("prior") or {})
            if "prior" in legacy:
                prior["backend"] = legacy["prior"]
            if "prior_seed" in legacy:
                prior["seed"] = legacy["prior_seed"]
            if prior:
                model["prior"] = prior
            data["empowerment"] = model
        return decode(cls, data, where)


@dataclass(frozen=True)
class AgentContext:
    """Everything a factory needs to build one agent for one simulation."""

    graph: RecipeGraph
    agent_id: int
    n_agents: int
    n_steps: int
    params: AgentParams
    # The full game a variant was cut from: priors learn from its names and recipes, while
    # ground truth (EmpItem) comes from ``graph``, the game played. None: ``graph`` is full.
    source_graph: RecipeGraph | None = None


class Agent(ABC):
    """One player of Collective Little Alchemy."""

    kind: str = "agent"
    # Whether the social bias narrowed the last choice to pairs using a social element
    # (the game's accounting reads it; agents without the bias leave it False).
    steered: bool = False

    @abstractmethod
    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """Pick the pair to attempt from ``state.inventory`` plus the ``social`` elements."""

    def observe_own(self, a: int, b: int, result: int) -> None:  # noqa: B027
        """The outcome of the agent's own attempt (``result`` is -1 on failure)."""

    def observe_received(self, memories: Sequence[Memory]) -> None:  # noqa: B027
        """Memories other agents sent it this step (after the attention bottleneck)."""

    def stats(self) -> dict[str, float]:
        """Counters worth reporting (fallbacks, tokens…); empty for most agents."""
        return {}

    @classmethod
    def choose_many(
        cls,
        agents: Sequence[Agent],
        states: Sequence[AgentState],
        socials: Sequence[Sequence[int]],
        rngs: Sequence[np.random.Generator],
    ) -> list[Pair]:
        """Choices of several agents of this kind at once (LLM agents query concurrently)."""
        return [
            a.choose(s, soc, r) for a, s, soc, r in zip(agents, states, socials, rngs, strict=True)
        ]
