"""Candidate pairs an agent may attempt, and the social bias that narrows them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tpdisc.agents.base import AgentState


@lru_cache(maxsize=512)
def _upper_triangle(m: int) -> tuple[np.ndarray, np.ndarray]:
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


def candidate_pairs(state: AgentState, social: Sequence[int]) -> CandidatePairs:
    """Every pair (self-pairs included) over the inventory plus this step's social items.

    The order (inventory in discovery order, then social items not owned, pairs in
    upper-triangle order) matters: agents draw pair indices from it.
    """
    pool = np.array(state.inventory, dtype=np.int64)
    if len(social):
        received = np.array(social, dtype=np.int64)
        pool = np.concatenate((pool, received[~state.owned[received]]))
    i, j = _upper_triangle(pool.size)
    a, b = pool[i], pool[j]
    if len(social):
        # A membership mask over element ids: much cheaper than np.isin on small arrays.
        is_social = np.zeros(state.owned.size, dtype=bool)
        is_social[received] = True
        uses_social = is_social[a] | is_social[b]
    else:
        uses_social = np.zeros(i.size, dtype=bool)
    return CandidatePairs(np.minimum(a, b), np.maximum(a, b), uses_social)


def choose_biased(
    pairs: CandidatePairs,
    allowed: np.ndarray,
    p_social: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Indices of the pairs to choose among, after the social bias.

    With probability ``p_social`` (drawn only when a social item is present) the agent keeps
    only allowed pairs that use a social item; when none is left it falls back to every
    allowed pair, and when nothing is allowed, to every pair.
    """
    if pairs.social.any() and rng.random() < p_social:
        social_allowed = np.flatnonzero(allowed & pairs.social)
        if social_allowed.size:
            return social_allowed
    keep = np.flatnonzero(allowed)
    return keep if keep.size else np.arange(pairs.size)
