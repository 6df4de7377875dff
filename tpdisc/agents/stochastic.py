"""Stochastic agents: uniform choice among the pairs whose outcome they do not know yet."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tpdisc.agents.base import Agent, AgentContext, AgentState, Memory
from tpdisc.agents.candidates import candidate_pairs, choose_biased
from tpdisc.domain.recipes import Pair


class StochasticAgent(Agent):
    """Picks uniformly among untried pairs, with the social bias of SPEC §2."""

    kind = "stochastic"

    def __init__(self, n_elements: int, p_social: float) -> None:
        self.p_social = p_social
        self.n_elements = n_elements
        # known[a * n_elements + b] with a <= b: the agent has tried or been told this
        # pair's outcome. Flat, because one gather by key is much cheaper than 2-D indexing.
        self.known = np.zeros(n_elements * n_elements, dtype=bool)

    @classmethod
    def from_context(cls, ctx: AgentContext) -> StochasticAgent:
        return cls(ctx.graph.n_elements, ctx.params.p_social)

    def key(self, a: int, b: int) -> int:
        return a * self.n_elements + b if a <= b else b * self.n_elements + a

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        pairs = candidate_pairs(state, social)
        unknown = ~self.known.take(pairs.lo * self.n_elements + pairs.hi)
        options = choose_biased(pairs, unknown, self.p_social, rng)
        k = int(options[rng.integers(options.size)])
        return int(pairs.lo[k]), int(pairs.hi[k])

    def observe_own(self, a: int, b: int, result: int) -> None:
        self.known[self.key(a, b)] = True

    def observe_received(self, memories: Sequence[Memory]) -> None:
        for a, b, _ in memories:
            self.known[self.key(a, b)] = True
