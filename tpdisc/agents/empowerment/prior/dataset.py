"""The prior's data set: every unordered pair of elements, its outcome, and the CV folds.

Pairs (self-pairs included) are numbered in the order of ``numpy.triu_indices(n)``: pair
``(lo, hi)`` with ``lo <= hi``. :func:`pair_index_table` maps any ordered ``(a, b)`` to that
number, so agents look pairs up with one gather.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from tpdisc.domain.recipes import RecipeGraph


def n_pairs(n_elements: int) -> int:
    return n_elements * (n_elements + 1) // 2


@lru_cache(maxsize=8)
def pair_index_table(n_elements: int) -> np.ndarray:
    """``table[a, b]`` = number of the unordered pair ``{a, b}`` (symmetric, read-only)."""
    lo, hi = np.triu_indices(n_elements)
    table = np.empty((n_elements, n_elements), dtype=np.int32)
    ids = np.arange(lo.size, dtype=np.int32)
    table[lo, hi] = ids
    table[hi, lo] = ids
    table.setflags(write=False)
    return table


@dataclass(frozen=True)
class PairData:
    """All pairs of a graph with their labels.

    ``result_pair[i]``/``result_element[i]`` list every (pair, result) row: a pair with
    several results has several rows, as in Brändle et al.'s combination table.
    """

    n_elements: int
    lo: np.ndarray
    hi: np.ndarray
    success: np.ndarray
    result_pair: np.ndarray
    result_element: np.ndarray
    hidden: np.ndarray | None = None

    @property
    def n_pairs(self) -> int:
        return int(self.lo.size)

    def hiding(self, pairs: np.ndarray) -> PairData:
        """A copy in which ``pairs`` carry no label: counted as failures with no result,
        and flagged ``hidden`` so that a model can check it never trains on them."""
        success = self.success.copy()
        success[pairs] = False
        hidden = np.zeros(self.n_pairs, dtype=bool)
        hidden[pairs] = True
        keep = ~hidden[self.result_pair]
        return replace(
            self,
            success=success,
            result_pair=self.result_pair[keep],
            result_element=self.result_element[keep],
            hidden=hidden,
        )

    def check_visible(self, pairs: np.ndarray) -> None:
        if self.hidden is not None and self.hidden[pairs].any():
            raise RuntimeError("a model was asked to train on pairs whose labels are hidden")


def pair_data(graph: RecipeGraph) -> PairData:
    n = graph.n_elements
    lo, hi = np.triu_indices(n)
    table = pair_index_table(n)
    success = np.zeros(lo.size, dtype=bool)
    rows_pair: list[int] = []
    rows_result: list[int] = []
    for (a, b), results in graph.recipes.items():
        p = int(table[a, b])
        success[p] = True
        for r in results:
            rows_pair.append(p)
            rows_result.append(r)
    return PairData(
        n,
        lo.astype(np.int32),
        hi.astype(np.int32),
        success,
        np.asarray(rows_pair, dtype=np.int64),
        np.asarray(rows_result, dtype=np.int64),
    )


@dataclass(frozen=True)
class Fold:
    """One round of cross-validation: disjoint pair numbers for training, validation, test."""

    index: int
    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


def make_folds(n: int, k: int, seed: int, validation: float) -> list[Fold]:
    """Shuffled k-fold split of ``n`` pairs; within each training part, a fraction
    ``validation`` (drawn with the same seed) is held out to stop training early."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    parts = np.array_split(order, k)
    folds = []
    for i, test in enumerate(parts):
        rest = rng.permutation(np.concatenate([p for j, p in enumerate(parts) if j != i]))
        n_val = round(validation * rest.size)
        folds.append(Fold(i, np.sort(rest[n_val:]), np.sort(rest[:n_val]), np.sort(test)))
    return folds
