"""Statistical comparisons between protocols."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tpdisc.analysis.student_t import benjamini_hochberg, t_sf


def stars(p: float) -> str:
    """Conventional significance stars: * p<0.05, ** p<0.01, *** p<0.001."""
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def mean_above(sample: Sequence[float], value: float) -> float:
    """One-sided one-sample t-test p-value for ``mean(sample) > value`` (nan when undefined:
    fewer than two values)."""
    x = np.asarray(sample, dtype=float)
    if x.size < 2:
        return float("nan")
    if x.var() == 0:
        return 0.0 if x.mean() > value else 1.0
    t = (x.mean() - value) / math.sqrt(x.var(ddof=1) / x.size)
    return t_sf(float(t), x.size - 1.0)


def welch_greater(a: Sequence[float], b: Sequence[float]) -> float:
    """One-sided Welch t-test p-value for ``mean(a) > mean(b)`` (nan when undefined)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return float("nan")
    if x.var() == 0 and y.var() == 0:
        # Several simulations each, all alike: the means differ for sure, or not at all.
        return 0.0 if x.mean() > y.mean() else 1.0
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    t = (x.mean() - y.mean()) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
    return t_sf(float(t), float(df))


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
        adjusted[mask] = benjamini_hochberg(p[mask])
    return PairwiseComparison(tuple(names), diff, p, adjusted)


@dataclass(frozen=True)
class VersusReference:
    """Each protocol against one reference: the difference of means and the one-sided p
    that it beats the reference, read from the pairwise matrix of all protocols (so the
    same Benjamini–Hochberg adjustment as ``pairwise.json``)."""

    reference: str
    difference: dict[str, float]  # mean(protocol) − mean(reference)
    p: dict[str, float]
    p_adjusted: dict[str, float]

    def to_json(self) -> dict[str, object]:
        def clean(v: float) -> float | None:
            return float(v) if np.isfinite(v) else None

        return {
            "reference": self.reference,
            "test": "one-sided Welch t-test that the protocol beats the reference; "
            "p_adjusted: Benjamini–Hochberg over all ordered pairs of the protocols (the "
            "p_adjusted of pairwise.json); difference: mean(protocol) − mean(reference)",
            "protocols": {
                name: {
                    "difference": clean(self.difference[name]),
                    "p": clean(self.p[name]),
                    "p_adjusted": clean(self.p_adjusted[name]),
                    "stars": stars(self.p_adjusted[name]),
                }
                for name in self.difference
            },
        }


def versus_reference(comparison: PairwiseComparison, reference: str) -> VersusReference:
    """The column of ``reference`` in ``comparison``, for every other protocol."""
    j = comparison.names.index(reference)
    others = [i for i, name in enumerate(comparison.names) if i != j]
    return VersusReference(
        reference,
        {comparison.names[i]: float(comparison.difference[i, j]) for i in others},
        {comparison.names[i]: float(comparison.p[i, j]) for i in others},
        {comparison.names[i]: float(comparison.p_adjusted[i, j]) for i in others},
    )
