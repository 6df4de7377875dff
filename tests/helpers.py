"""Test doubles shared by the engine tests: agents that record or follow a script, and
protocols built from plain Python objects.

Agents are registered under a test-only type name with :func:`register_agent`, through the
same ``AGENT_TYPES`` table the real agent types use, so the game builds them exactly as it
builds production agents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pytest

from tpdisc.agents import population
from tpdisc.agents.base import Agent, AgentContext, AgentState, Memory
from tpdisc.agents.stochastic import StochasticAgent
from tpdisc.domain.recipes import Pair
from tpdisc.protocols.interface import AgentStates, InProcessRunner, ProtocolRunner, ProtocolSpec


def register_agent(monkeypatch: pytest.MonkeyPatch, kind: str, cls: type) -> None:
    """Make ``kind`` an agent type for the duration of one test."""
    monkeypatch.setitem(population.AGENT_TYPES, kind, f"{cls.__module__}:{cls.__qualname__}")


@dataclass
class Turn:
    """What a spy agent saw when asked to choose, and what it was told afterwards."""

    inventory: list[int]
    social: list[int]
    pair: Pair
    own_result: int | None = None
    received: list[Memory] = field(default_factory=list)


class SpyAgent(Agent):
    """A stochastic agent that records every call the game makes on it."""

    kind = "spy"
    instances: ClassVar[list[SpyAgent]] = []

    def __init__(self, ctx: AgentContext) -> None:
        self.agent_id = ctx.agent_id
        self.inner = StochasticAgent(ctx.graph.n_elements, ctx.params.p_social)
        self.turns: list[Turn] = []
        SpyAgent.instances.append(self)

    @classmethod
    def from_context(cls, ctx: AgentContext) -> SpyAgent:
        return cls(ctx)

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        pair = self.inner.choose(state, social, rng)
        self.turns.append(Turn(list(state.inventory), list(social), pair))
        return pair

    def observe_own(self, a: int, b: int, result: int) -> None:
        self.turns[-1].own_result = result
        self.inner.observe_own(a, b, result)

    def observe_received(self, memories: Sequence[Memory]) -> None:
        self.turns[-1].received.extend(memories)
        self.inner.observe_received(memories)


class ScriptedAgent(Agent):
    """Attempts the pairs of ``script[agent_id]`` in order (by element name), then keeps
    repeating the last one. Tests set ``script`` and ``graph_names`` before a run."""

    kind = "scripted"
    script: ClassVar[dict[int, list[tuple[str, str]]]] = {}
    instances: ClassVar[list[ScriptedAgent]] = []

    def __init__(self, ctx: AgentContext) -> None:
        self.agent_id = ctx.agent_id
        self.graph = ctx.graph
        self.step = 0
        self.results: list[int] = []
        ScriptedAgent.instances.append(self)

    @classmethod
    def from_context(cls, ctx: AgentContext) -> ScriptedAgent:
        return cls(ctx)

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        plan = self.script[self.agent_id]
        a, b = plan[min(self.step, len(plan) - 1)]
        self.step += 1
        return self.graph.id_of(a), self.graph.id_of(b)

    def observe_own(self, a: int, b: int, result: int) -> None:
        self.results.append(result)


@dataclass(frozen=True)
class ObjectProtocol(ProtocolSpec):
    """A protocol made by ``factory(n_agents, n_steps, seed)``, run in-process."""

    name: str
    factory: Callable[[int, int, int], object]

    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        return InProcessRunner(self.name, self.factory(n_agents, n_steps, seed))


class StateSpy:
    """Wraps a protocol object and keeps a deep copy of every ``agent_states`` it was given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[AgentStates] = []
        self.answers: list[object] = []

    def share_memories(self, i_step: int, agent_states: AgentStates) -> object:
        self.seen.append({i: dict(s) for i, s in agent_states.items()})
        answer = self.inner.share_memories(i_step, agent_states)
        self.answers.append(answer)
        return answer


class FixedRouting:
    """Every step, each learner ``l`` in ``routes`` receives the *last* memory of each
    sender in ``routes[l]`` (a deterministic, content-blind routing)."""

    def __init__(self, routes: dict[int, list[int]]) -> None:
        self.routes = routes

    def share_memories(self, i_step: int, agent_states: AgentStates) -> dict:
        return {
            learner: [(s, len(agent_states[s]["memories"]) - 1) for s in senders]
            for learner, senders in self.routes.items()
        }


# An appendix-style protocol: another class name, the global numpy generator, indices from
# np.random.choice (numpy ints), lists instead of tuples, recipients left out, logs.
APPENDIX = '''
import numpy as np
import random
from collections import defaultdict


class RecencySharing:
    """Each agent not divisible by 3 hears up to 5 successes of one random other agent."""

    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.n_steps = n_steps
        self.sent = defaultdict(int)

    def share_memories(self, i_step, agent_states):
        exchanges = {}
        for agent_id in range(self.n_agents):
            if agent_id % 3 == 0:
                continue
            others = [a for a in agent_states if a != agent_id]
            sender = np.random.choice(others)
            memories = agent_states[sender]["memories"]
            successes = [i for i, m in enumerate(memories) if m[2] is not None]
            pool = successes or list(range(len(memories)))
            k = min(5, len(pool))
            picks = np.random.choice(pool, size=k, replace=False)
            exchanges[agent_id] = [[sender, idx] for idx in picks]
            self.sent[agent_id] += k
        if random.random() < 0.5:
            exchanges[0] = []
        return exchanges

    def get_logs(self):
        return [
            {
                "metric_name": "sent",
                "metric_description": "memories sent in all",
                "metric_value": sum(self.sent.values()),
            }
        ]
'''


# How models and people write protocols with dataclasses: settings and records as
# dataclasses (a ClassVar, a default factory, Optional), type hints read back at import,
# and a ``__main__`` demo that an imported module never runs. With and without the
# postponed annotations of ``from __future__ import annotations`` (FUTURE_ANNOTATIONS).
DATACLASS_PROTOCOL = """
import random
import typing
from dataclasses import dataclass, field
from typing import ClassVar, Optional


@dataclass(frozen=True)
class Settings:
    per_step: int = 3
    horizon: int = 5
    kinds: ClassVar[tuple] = ("success", "failure")


@dataclass
class Ledger:
    sent: dict = field(default_factory=dict)
    last_teacher: Optional[int] = None

    def note(self, teacher: int, count: int) -> None:
        self.sent[teacher] = self.sent.get(teacher, 0) + count
        self.last_teacher = teacher


FIELDS = sorted(typing.get_type_hints(Ledger))
MODULE = __name__


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.settings = Settings()
        self.ledger = Ledger()

    def share_memories(self, i_step, agent_states):
        exchanges = {}
        for agent in range(self.n_agents):
            teacher = random.randrange(self.n_agents)
            memories = agent_states[teacher]["memories"]
            recent = list(range(len(memories)))[-self.settings.horizon :]
            picks = [m for m in recent if memories[m][2] is not None][: self.settings.per_step]
            if teacher != agent and picks:
                exchanges[agent] = [(teacher, m) for m in picks]
                self.ledger.note(teacher, len(picks))
        return exchanges

    def get_logs(self):
        return [
            {
                "metric_name": "teachers",
                "metric_description": f"agents that taught ({', '.join(FIELDS)} kept)",
                "metric_value": float(len(self.ledger.sent)),
            }
        ]


if __name__ == "__main__":
    print(TransmissionProtocol(3, 5).share_memories(0, {}))
"""
FUTURE_ANNOTATIONS = "from __future__ import annotations\n"
