"""Figures people would rather look at than read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from tpdisc.analysis.stats import PairwiseComparison, stars
from tpdisc.sim.evaluate import Evaluation


def coverage_figure(evaluations: Sequence[Evaluation], path: str | Path, title: str = "") -> Path:
    """Coverage over steps, mean ± sem across simulations, one line per protocol."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for ev in sorted(evaluations, key=lambda e: -e.mean):
        mean, err = np.asarray(ev.curve_mean()), np.asarray(ev.curve_sem())
        steps = np.arange(mean.size)
        label = f"{ev.protocol} ({ev.mean:.1f} ± {ev.sem:.1f})"
        (line,) = ax.plot(steps, mean, label=label, lw=1.6)
        ax.fill_between(steps, mean - err, mean + err, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("step")
    ax.set_ylabel("coverage (distinct elements, base included)")
    ax.set_title(title or "Collective coverage (mean ± sem)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return _save(fig, path)


def pairwise_figure(comparison: PairwiseComparison, path: str | Path) -> Path:
    """Matrix of mean differences (row minus column) with stars where row beats column."""
    n = len(comparison.names)
    fig, ax = plt.subplots(figsize=(1.2 + 0.8 * n, 1.0 + 0.7 * n))
    diff = np.nan_to_num(comparison.difference)
    limit = max(1e-9, float(np.abs(diff).max()))
    image = ax.imshow(diff, cmap="RdBu", vmin=-limit, vmax=limit)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            text = f"{comparison.difference[i, j]:+.1f}\n{stars(comparison.p_adjusted[i, j])}"
            colour = "white" if abs(diff[i, j]) > 0.6 * limit else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=colour)
    ax.set_xticks(range(n), comparison.names, rotation=45, ha="right")
    ax.set_yticks(range(n), comparison.names)
    ax.set_title(
        "row − column final coverage\n(one-sided Welch, BH-adjusted: * .05 ** .01 *** .001)",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    return _save(fig, path)


def _save(fig: plt.Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
