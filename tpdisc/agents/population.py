"""Agent types by name, and populations that may mix several of them."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from tpdisc.agents.base import Agent, AgentContext, AgentParams
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import ConfigError, unknown

AgentFactory = Callable[[AgentContext], Agent]

# Imported lazily: some agent types pull in heavy models or network clients.
AGENT_TYPES: dict[str, str] = {
    "empowerment": "tpdisc.agents.empowerment.compiled_agent:CompiledEmpowermentAgent",
    "stochastic": "tpdisc.agents.stochastic:StochasticAgent",
    "llm": "tpdisc.agents.llm.agent:LLMAgent",
}

Population = tuple[tuple[str, int], ...]


def agent_class(kind: str) -> type[Agent]:
    if kind not in AGENT_TYPES:
        raise ConfigError(unknown("agent type", kind, AGENT_TYPES))
    module_name, class_name = AGENT_TYPES[kind].split(":")
    cls: type[Agent] = getattr(importlib.import_module(module_name), class_name)
    return cls


def agent_factory(kind: str) -> AgentFactory:
    factory: AgentFactory = agent_class(kind).from_context  # type: ignore[attr-defined]
    return factory


def prepare_agents(
    graph: RecipeGraph, source: RecipeGraph | None, kinds: Iterable[str], params: AgentParams
) -> None:
    """Let each agent type get ready once, in this process, before simulations start.

    One-off work (the empowerment prior's first build, with its progress bar) then happens
    here rather than in every worker process.
    """
    for kind in dict.fromkeys(kinds):
        prepare = getattr(agent_class(kind), "prepare", None)
        if callable(prepare):
            prepare(graph, source, params)


def describe_agents(
    graph: RecipeGraph, source: RecipeGraph | None, kinds: Iterable[str], params: AgentParams
) -> dict[str, dict[str, Any]]:
    """What each agent type's behaviour depends on beyond its parameters (the empowerment
    agents' prior fingerprint), by type; for results, after :func:`prepare_agents`."""
    described = {}
    for kind in dict.fromkeys(kinds):
        describe = getattr(agent_class(kind), "describe_model", None)
        if callable(describe):
            described[kind] = describe(graph, source, params)
    return described


def parse_population(text: str) -> Population:
    """Parse ``"empowerment:4,stochastic:3,llm:3"`` (a bare type name means one agent)."""
    groups: list[tuple[str, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        kind, _, count = part.partition(":")
        kind = kind.strip()
        if kind not in AGENT_TYPES:
            raise ConfigError(
                f"population {text!r}: unknown agent type {kind!r}; "
                f"choose from {', '.join(AGENT_TYPES)}"
            )
        try:
            n = int(count) if count else 1
        except ValueError:
            raise ConfigError(
                f"population {text!r}: count {count!r} is not a whole number"
            ) from None
        if n < 1:
            raise ConfigError(f"population {text!r}: count of {kind!r} must be at least 1")
        groups.append((kind, n))
    if not groups:
        raise ConfigError(f"population {text!r} names no agents")
    return tuple(groups)


def population_size(population: Population) -> int:
    return sum(n for _, n in population)


def agent_kinds(population: Population) -> list[str]:
    """The type of each agent id, in order."""
    return [kind for kind, n in population for _ in range(n)]
