"""Statistical comparisons between protocols."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests


def stars(p: float) -> str:
    """Conventional significance stars: * p<0.05, ** p<0.01, *** p<0.001."""
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def welch_greater(a: Sequence[float], b: Sequence[float]) -> float:
    """One-sided Welch t-test p-value for ``mean(a) > mean(b)`` (nan when undefined)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return float("nan")
    if x.var() == 0 and y.var() == 0:
        # Several simulations each, all alike: the means differ for sure, or not at all.
        return 0.0 if x.mean() > y.mean() else 1.0
    return float(stats.ttest_ind(x, y, equal_var=False, alternative="greater").pvalue)


@dataclass(frozen=True)
class PairwiseComparison:
    """``p[i][j]``: one-sided Welch p-value that protocol i beats protocol j, with the
    Benjamini–Hochberg adjustment over all ordered pairs in ``p_adjusted``."""

    names: tuple[str, ...]
    difference: np.ndarray  # mean(i) - mean(j)
    p: np.ndarray
    p_adjusted: np.ndarray

    def to_json(self) -> dict[str, object]:
        def clean(m: np.ndarray) -> list[list[float | None]]:
            return [[None if not np.isfinite(v) else float(v) for v in row] for row in m]

        return {
            "names": list(self.names),
            "difference": clean(self.difference),
            "p": clean(self.p),
            "p_adjusted": clean(self.p_adjusted),
            "test": "p[i][j]: one-sided Welch t-test that protocol i beats protocol j; "
            "p_adjusted: Benjamini–Hochberg over all ordered pairs; difference: mean(i) − "
            "mean(j)",
        }


def pairwise(names: Sequence[str], samples: Sequence[Sequence[float]]) -> PairwiseComparison:
    """Every ordered pair of protocols, tested with one-sided Welch t-tests."""
    n = len(names)
    diff = np.full((n, n), np.nan)
    p = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                diff[i, j] = float(np.mean(samples[i]) - np.mean(samples[j]))
                p[i, j] = welch_greater(samples[i], samples[j])
    adjusted = np.full((n, n), np.nan)
    mask = np.isfinite(p)
    if mask.any():
        adjusted[mask] = multipletests(p[mask], method="fdr_bh")[1]
    return PairwiseComparison(tuple(names), diff, p, adjusted)
