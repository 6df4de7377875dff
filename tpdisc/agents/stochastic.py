"""Stochastic agents: uniform choice among the pairs whose outcome they do not know yet."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tpdisc.agents.base import Agent, AgentContext, AgentState, Memory
from tpdisc.agents.candidates import candidate_pool, upper_triangle
from tpdisc.agents.compiled import kernel, use_kernels
from tpdisc.agents.stochastic_model import StochasticModel
from tpdisc.domain.recipes import Pair
from tpdisc.random_draws import integer_below

_NO_SOCIAL = np.empty(0, dtype=np.int64)


class StochasticAgent(Agent):
    """Picks uniformly among untried pairs, with the social bias of SPEC §2."""

    kind = "stochastic"

    def __init__(
        self,
        n_elements: int,
        p_social: float,
        reference: bool | None = None,
        received: str = StochasticModel.received,
    ) -> None:
        """``reference``: run the numpy reference instead of the compiled kernels (both
        make the same choices). By default the reference runs (``TPDISC_REFERENCE=0`` asks
        for the kernels): loading numba costs a process about 0.25 s, and these kernels
        save under 1 ms per simulation of 10 agents × 150 steps (19.0 against 19.4 ms), so
        they do not pay in a one-off command. ``received``: how long a received memory
        counts its pair as tried (:class:`StochasticModel`)."""
        self.p_social = p_social
        self.n_elements = n_elements
        self.received = StochasticModel(received).received
        # received=step: the memories received for the next choice only, as delivered (a
        # reference to the game's list: nothing is copied per delivery)
        self._pending: list[Sequence[Memory]] = []
        self.compiled = use_kernels(False) if reference is None else not reference
        # unknown[a * n_elements + b]: the agent has neither tried nor been told the outcome of
        # the pair {a, b} (what a choice reads, so no negation per step). Flat and symmetric,
        # so that a pair's key is one multiply-add away from its elements whatever their order.
        # Learning writes through the bytearray (a Python-level store is several times
        # cheaper there than on the array); choices read the array, a view of its bytes.
        self._unknown = bytearray(b"\x01") * (n_elements * n_elements)
        self.unknown = np.frombuffer(self._unknown, dtype=bool)
        # Keys of the inventory's pairs, in candidate order, and the inventory they are for:
        # they change only when it grows, and most steps have no borrowed item to add.
        self._pool = np.empty(0, dtype=np.int64)
        self._keys = np.empty(0, dtype=np.int64)
        # The compiled path's copy of the inventory (it only grows): no list to convert.
        self._inventory = np.empty(n_elements, dtype=np.int64)
        self._copied = 0

    @classmethod
    def from_context(cls, ctx: AgentContext) -> StochasticAgent:
        return cls(
            ctx.graph.n_elements, ctx.params.p_social, received=ctx.params.stochastic.received
        )

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """The draw of :func:`~tpdisc.agents.candidates.biased` over the untried pairs, with
        what was received for this choice only counted as tried around it."""
        if not self._pending:
            return self._choose(state, social, rng)
        unknown, n = self._unknown, self.n_elements
        # One pass marks each untried received pair tried, in both orders, and keeps both
        # keys to unmark after the choice.
        marked: list[int] = []
        for memories in self._pending:
            for a, b, _ in memories:
                key = a * n + b
                if unknown[key]:
                    other = b * n + a
                    unknown[key] = unknown[other] = 0
                    marked += key, other
        self._pending = []
        try:
            return self._choose(state, social, rng)
        finally:
            for key in marked:
                unknown[key] = 1

    def _choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """The draw over the untried pairs, with only what it reads computed, each in a
        single pass over the pairs."""
        if self.compiled:
            return self._choose_compiled(state, social, rng)
        n = self.n_elements
        if len(state.inventory) != self._pool.size:  # an agent's inventory only grows
            self._pool = np.array(state.inventory, dtype=np.int64)
            i, j = upper_triangle(self._pool.size)
            self._keys = (self._pool * n)[i] + self._pool[j]
        keys = self._keys
        options = None
        if len(social):
            # Some pair always uses a social item (its self-pair at least), so the bias
            # draws whenever there are social items; which pairs use one matters only if it
            # applies (the pool draws nothing, so drawing first keeps the stream's order).
            biased = rng.random() < self.p_social
            pool, i, j, is_social = candidate_pool(state, social, self._pool, biased)
            if pool.size != self._pool.size:  # borrowed items: the pairs of a longer pool
                keys = (pool * n)[i] + pool[j]
            unknown = self.unknown.take(keys)
            if biased:
                assert is_social is not None
                options = (unknown & (is_social[i] | is_social[j])).nonzero()[0]
        else:
            unknown = self.unknown.take(keys)
        self.steered = options is not None and bool(options.size)
        if options is None or not options.size:
            # nonzero()[0]: np.flatnonzero of a 1-D array, without its two Python layers
            options = unknown.nonzero()[0]
            if not options.size:
                options = np.arange(unknown.size)
        a, b = divmod(int(keys[options[integer_below(rng, options.size)]]), n)
        return (a, b) if a <= b else (b, a)

    def _choose_compiled(
        self, state: AgentState, social: Sequence[int], rng: np.random.Generator
    ) -> Pair:
        """The reference's draw from :func:`untried_pairs`' lists."""
        for e in state.inventory[self._copied :]:
            self._inventory[self._copied] = e
            self._copied += 1
        soc = np.asarray(social, dtype=np.int64) if len(social) else _NO_SOCIAL
        biased = bool(soc.size) and rng.random() < self.p_social
        options, social_options = untried_pairs(
            self._inventory[: self._copied], soc, state.owned, self.unknown, biased
        )
        self.steered = bool(social_options.size)
        if social_options.size:
            options = social_options
        key = int(options[integer_below(rng, options.size)])
        a, b = divmod(key, self.n_elements)
        return a, b

    def key(self, a: int, b: int) -> int:
        """Index of the pair {a, b} in ``unknown`` (symmetric: either order will do)."""
        return a * self.n_elements + b

    def learn(self, a: int, b: int) -> None:
        n = self.n_elements
        self._unknown[a * n + b] = self._unknown[b * n + a] = 0

    def observe_own(self, a: int, b: int, result: int) -> None:
        self.learn(a, b)

    def observe_received(self, memories: Sequence[Memory]) -> None:
        if self.received == "step":
            self._pending.append(memories)
        elif self.received == "always":
            n, unknown = self.n_elements, self._unknown
            for a, b, _ in memories:  # learn(a, b), inlined: a call would cost more
                unknown[a * n + b] = unknown[b * n + a] = 0


@kernel
def untried_pairs(
    inventory: np.ndarray, social: np.ndarray, owned: np.ndarray, unknown: np.ndarray, biased: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Keys (``lo · n + hi``) of the untried candidate pairs in candidate order (see
    :func:`~tpdisc.agents.candidates.candidate_pool`), or of every candidate when all are
    tried; and, when ``biased``, of the untried ones using a social item (else empty)."""
    n = owned.size
    in_social = np.zeros(n, dtype=np.bool_)
    extra = 0
    for e in social:
        in_social[e] = True
        if not owned[e]:
            extra += 1
    m = inventory.size
    pool = np.empty(m + extra, dtype=np.int64)
    pool[:m] = inventory
    for e in social:
        if not owned[e]:
            pool[m] = e
            m += 1
    size = m * (m + 1) // 2
    options = np.empty(size, dtype=np.int64)
    near = np.empty(size if biased else 0, dtype=np.int64)
    n_options = n_near = 0
    for i in range(m):
        a = pool[i]
        for j in range(i, m):
            b = pool[j]
            if unknown[a * n + b]:
                key = a * n + b if a <= b else b * n + a
                options[n_options] = key
                n_options += 1
                if biased and (in_social[a] or in_social[b]):
                    near[n_near] = key
                    n_near += 1
    if not n_options:  # everything tried: any pair
        for i in range(m):
            for j in range(i, m):
                a, b = pool[i], pool[j]
                options[n_options] = a * n + b if a <= b else b * n + a
                n_options += 1
    return options[:n_options], near[:n_near]
