"""Choosing whom to build on: Thompson-sampled parents and contrast solutions (SPEC §4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np

from tpdisc.search.archive import Candidate


class Ranked(Protocol):
    """What selection reads of a protocol: an archive summary or a whole row will do."""

    @property
    def id(self) -> int | None: ...

    @property
    def fitness(self) -> float: ...

    @property
    def lineage(self) -> Sequence[int]: ...


R = TypeVar("R", bound=Ranked)


def normalised_fitness(fitness: Sequence[float]) -> np.ndarray:
    """Fitness rescaled to [0, 1] over the archive (all 0.5 when every value is equal)."""
    values = np.asarray(fitness, dtype=float)
    span = values.max() - values.min()
    if span <= 0:
        return np.full(values.shape, 0.5)
    return (values - values.min()) / span


def thompson_parent(pool: Sequence[R], rng: np.random.Generator, lam: float = 3.0) -> R:
    """Draw ``s ~ Beta(1 + f·λ, 1 + (1 − f)·λ)`` per protocol and take the highest draw.

    Fitter protocols get higher draws on average, yet every protocol keeps a chance, which
    balances refining the best against exploring the rest.
    """
    if not pool:
        raise ValueError("no valid protocol to select a parent from")
    f = normalised_fitness([c.fitness for c in pool])
    draws = rng.beta(1 + f * lam, 1 + (1 - f) * lam)
    return pool[int(np.argmax(draws))]


def rank_softmax(fitness: Sequence[float], temperature: float) -> np.ndarray:
    """Selection probabilities from fitness ranks: the best has rank 1, the worst rank 0.

    Ranks are scaled to [0, 1] so that the temperature means the same whatever the archive
    size; ties share the mean of their ranks.
    """
    values = np.asarray(fitness, dtype=float)
    if values.size == 1:
        return np.ones(1)
    order = values.argsort(kind="stable")
    ranks = np.empty(values.size)
    ranks[order] = np.arange(values.size)
    for v in np.unique(values):
        tied = values == v
        ranks[tied] = ranks[tied].mean()
    scaled = ranks / (values.size - 1)
    weights = np.exp((scaled - scaled.max()) / temperature)
    return weights / weights.sum()


def contrasts(
    pool: Sequence[R],
    parent: Ranked,
    rng: np.random.Generator,
    k: int = 2,
    temperature: float = 0.4,
) -> list[R]:
    """Up to ``k`` distinct protocols from outside the parent's lineage (neither the parent
    nor any of its ancestors), drawn without replacement by softmax over fitness ranks."""
    excluded = {parent.id, *parent.lineage}
    others = [c for c in pool if c.id not in excluded]
    chosen: list[R] = []
    while others and len(chosen) < k:
        p = rank_softmax([c.fitness for c in others], temperature)
        pick = int(rng.choice(len(others), p=p))
        chosen.append(others.pop(pick))
    return chosen


def lineage_of(parent: Candidate | None) -> list[int]:
    """The lineage of a child of ``parent``: the parent, then the parent's ancestors."""
    if parent is None or parent.id is None:
        return []
    return [parent.id, *parent.lineage]
