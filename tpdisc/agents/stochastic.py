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
        # known[a, b] with a <= b: the agent has tried or been told this pair's outcome.
        self.known = np.zeros((n_elements, n_elements), dtype=bool)

    @classmethod
    def from_context(cls, ctx: AgentContext) -> StochasticAgent:
        return cls(ctx.graph.n_elements, ctx.params.p_social)

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        pairs = candidate_pairs(state, social)
        options = choose_biased(pairs, ~self.known[pairs.lo, pairs.hi], self.p_social, rng)
        k = int(options[rng.integers(options.size)])
        return int(pairs.lo[k]), int(pairs.hi[k])

    def observe_own(self, a: int, b: int, result: int) -> None:
        self.known[(a, b) if a <= b else (b, a)] = True

    def observe_received(self, memories: Sequence[Memory]) -> None:
        for a, b, _ in memories:
            self.known[(a, b) if a <= b else (b, a)] = True
