"""Stochastic agents: uniform choice among the pairs whose outcome they do not know yet."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tpdisc.agents.base import Agent, AgentContext, AgentState, Memory
from tpdisc.agents.candidates import candidate_pool
from tpdisc.domain.recipes import Pair


class StochasticAgent(Agent):
    """Picks uniformly among untried pairs, with the social bias of SPEC §2."""

    kind = "stochastic"

    def __init__(self, n_elements: int, p_social: float) -> None:
        self.p_social = p_social
        self.n_elements = n_elements
        # unknown[a * n_elements + b]: the agent has neither tried nor been told the outcome of
        # the pair {a, b} (what a choice reads, so no negation per step). Flat and symmetric,
        # so that a pair's key is one multiply-add away from its elements whatever their order.
        self.unknown = np.ones(n_elements * n_elements, dtype=bool)
        # Keys of the inventory's pairs, in candidate order, and the inventory they are for:
        # they change only when it grows, and most steps have no borrowed item to add.
        self._pool = np.empty(0, dtype=np.int64)
        self._keys = np.empty(0, dtype=np.int64)

    @classmethod
    def from_context(cls, ctx: AgentContext) -> StochasticAgent:
        return cls(ctx.graph.n_elements, ctx.params.p_social)

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """The draw of :func:`~tpdisc.agents.candidates.biased` over the untried pairs, with
        only what it reads computed, each in a single pass over the pairs."""
        pool, i, j, is_social = candidate_pool(state, social)
        if len(state.inventory) == pool.size:  # no borrowed item: the inventory's pairs
            if not np.array_equal(pool, self._pool):
                self._pool, self._keys = pool, (pool * self.n_elements)[i] + pool[j]
            keys = self._keys
        else:
            keys = (pool * self.n_elements)[i] + pool[j]
        unknown = self.unknown.take(keys)
        options = None
        # With social items some pair always uses one (its self-pair at least), so the bias
        # draws whenever there are social items; which pairs use one matters only if it
        # applies.
        if is_social is not None and rng.random() < self.p_social:
            options = np.flatnonzero(unknown & (is_social[i] | is_social[j]))
        if options is None or not options.size:
            options = np.flatnonzero(unknown)
            if not options.size:
                options = np.arange(unknown.size)
        k = int(options[rng.integers(options.size)])
        a, b = int(pool[i[k]]), int(pool[j[k]])
        return (a, b) if a <= b else (b, a)

    def key(self, a: int, b: int) -> int:
        """Index of the pair {a, b} in ``unknown`` (symmetric: either order will do)."""
        return a * self.n_elements + b

    def learn(self, a: int, b: int) -> None:
        self.unknown[self.key(a, b)] = self.unknown[self.key(b, a)] = False

    def observe_own(self, a: int, b: int, result: int) -> None:
        self.learn(a, b)

    def observe_received(self, memories: Sequence[Memory]) -> None:
        for a, b, _ in memories:
            self.learn(a, b)
