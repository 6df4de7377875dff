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
    """Every pair (self-pairs included) over the inventory plus this step's social items."""
    extra = [e for e in social if not state.owned[e]]
    pool = np.fromiter((*state.inventory, *extra), dtype=np.int64)
    i, j = _upper_triangle(pool.size)
    a, b = pool[i], pool[j]
    in_social = np.zeros(pool.size, dtype=bool)
    if len(social):
        in_social = np.isin(pool, np.asarray(social, dtype=np.int64))
    return CandidatePairs(np.minimum(a, b), np.maximum(a, b), in_social[i] | in_social[j])


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
