"""Candidate pairs an agent may attempt, and the social bias that narrows them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tpdisc.agents.base import AgentState


@lru_cache(maxsize=512)
def upper_triangle(m: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(m)
    i.setflags(write=False)
    j.setflags(write=False)
    return i, j


@dataclass(frozen=True)
class CandidatePairs:
    """Unordered pairs as two aligned arrays with ``lo <= hi``, plus which use a social item."""

    lo: np.ndarray
    hi: np.ndarray
    social: np.ndarray

    @property
    def size(self) -> int:
        return int(self.lo.size)

    def restricted(self, mask: np.ndarray) -> CandidatePairs:
        return CandidatePairs(self.lo[mask], self.hi[mask], self.social[mask])


def candidate_pool(
    state: AgentState,
    social: Sequence[int],
    inventory: np.ndarray | None = None,
    which_social: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The elements an agent may combine and every pair of them, by position.

    Returns ``pool`` (the inventory in discovery order, then the social items it does not
    own), ``i <= j`` (positions in ``pool`` of each pair, in upper-triangle order) and which
    pool elements are social (None without social items). This order matters: agents draw
    pair indices from it. ``inventory``: ``state.inventory`` as an int64 array, when the
    caller keeps one (it is not converted again). ``which_social=False``: the caller will
    not read which elements are social (None is returned for them, nothing computed).
    """
    pool = np.array(state.inventory, dtype=np.int64) if inventory is None else inventory
    is_social = None
    if len(social):
        received = np.array(social, dtype=np.int64)
        borrowed = received[~state.owned[received]]
        if borrowed.size:
            pool = np.concatenate((pool, borrowed))
        if which_social:
            # A membership mask over element ids: much cheaper than np.isin on small arrays.
            mask = np.zeros(state.owned.size, dtype=bool)
            mask[received] = True
            is_social = mask[pool]
    i, j = upper_triangle(pool.size)
    return pool, i, j, is_social


def candidate_pairs(state: AgentState, social: Sequence[int]) -> CandidatePairs:
    """Every pair (self-pairs included) over the inventory plus this step's social items,
    in the order of :func:`candidate_pool`."""
    pool, i, j, is_social = candidate_pool(state, social)
    a, b = pool[i], pool[j]
    uses_social = np.zeros(i.size, dtype=bool) if is_social is None else is_social[i] | is_social[j]
    return CandidatePairs(np.minimum(a, b), np.maximum(a, b), uses_social)


def choose_biased(
    pairs: CandidatePairs,
    allowed: np.ndarray,
    p_social: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Indices of the pairs to choose among, after the social bias (see :func:`biased`)."""
    return biased(pairs.social, allowed, p_social, rng)


def biased(
    uses_social: np.ndarray, allowed: np.ndarray, p_social: float, rng: np.random.Generator
) -> np.ndarray:
    """Indices of the pairs to choose among, after the social bias.

    With probability ``p_social`` (drawn only when a pair uses a social item) the agent keeps
    only allowed pairs that use a social item; when none is left it falls back to every
    allowed pair, and when nothing is allowed, to every pair.
    """
    if uses_social.any() and rng.random() < p_social:
        social_allowed = np.flatnonzero(allowed & uses_social)
        if social_allowed.size:
            return social_allowed
    keep = np.flatnonzero(allowed)
    return keep if keep.size else np.arange(allowed.size)
