"""Figures people would rather look at than read."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from tpdisc.analysis.stats import PairwiseComparison, stars
from tpdisc.errors import visible
from tpdisc.safefiles import writing
from tpdisc.sim.evaluate import Evaluation


def plain_figures() -> None:
    """Set matplotlib up as tpdisc draws: no display needed (Agg), and text drawn as it is
    written, never as mathtext or TeX: names in figures come from protocols and archives.
    Every module that draws calls it before drawing (a text reads the setting when made)."""
    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False
    matplotlib.rcParams["text.usetex"] = False
    # Its warning quotes the character it cannot draw: a control character from a name
    # would reach the terminal raw.
    warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")


plain_figures()

# Rough width of one character of an 8-point label, in inches: enough to size a figure to
# its labels before drawing, while constrained layout does the exact fitting.
CHAR_INCHES = 0.068


def short_label(name: str, width: int = 20, max_lines: int = 3) -> str:
    """``name`` wrapped into lines of at most ``width`` characters, broken after spaces,
    underscores and hyphens where it can (protocol names are snake_case), cut with "…"
    beyond ``max_lines``: long names stay readable instead of squeezing the plot. Names
    come from protocols and archives: control characters are drawn as their escapes."""
    name = visible(name, lines=False)
    if len(name) <= width:
        return name
    pieces = [p for p in re.split(r"(?<=[ _\-])", name) if p]
    lines: list[str] = []
    line = ""
    for piece in pieces:
        while len(piece) > width:  # one piece longer than a line: hard break
            if line:
                lines.append(line)
                line = ""
            lines.append(piece[:width])
            piece = piece[width:]
        if len(line) + len(piece.rstrip()) > width and line:
            lines.append(line)
            line = ""
        line += piece
    if line:
        lines.append(line)
    lines = [ln.rstrip() for ln in lines]
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], lines[max_lines - 1][: width - 1] + "…"]
    return "\n".join(lines)


def label_extent(labels: Sequence[str]) -> tuple[int, int]:
    """The longest line and the most lines among ``labels``."""
    split = [label.split("\n") for label in labels] or [[""]]
    return max(len(line) for lines in split for line in lines), max(len(s) for s in split)


def coverage_figure(evaluations: Sequence[Evaluation], path: str | Path, title: str = "") -> Path:
    """Coverage over steps, mean ± sem across simulations, one line per protocol."""
    ranked = sorted(evaluations, key=lambda e: -e.mean)
    labels = [f"{short_label(ev.protocol, 28)} ({ev.mean:.1f} ± {ev.sem:.1f})" for ev in ranked]
    longest, _ = label_extent(labels)
    # The legend sits beside the axes, so that it never hides a curve: the figure widens.
    fig, ax = plt.subplots(figsize=(5.5 + CHAR_INCHES * longest, 4.5), layout="constrained")
    for ev, label in zip(ranked, labels, strict=True):
        mean, err = np.asarray(ev.curve_mean()), np.asarray(ev.curve_sem())
        steps = np.arange(mean.size)
        (line,) = ax.plot(steps, mean, label=label, lw=1.6)
        ax.fill_between(steps, mean - err, mean + err, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("step")
    ax.set_ylabel("coverage (distinct elements, base included)\nline: mean, band: ± sem")
    ax.set_title(title or "Collective coverage (mean ± sem)", fontsize=10, wrap=True)
    ax.grid(alpha=0.3)
    ax.legend(
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        title="final coverage: mean ± sem",
        title_fontsize=8,
    )
    return _save(fig, path)


PAIRWISE_TITLE = (
    "row − column final coverage, one-sided Welch, BH-adjusted\n"
    "stars: the row beats the column (* .05  ** .01  *** .001)\n"
    "deep blue: the row beats the column; deep red: the column beats the row; pale: neither"
)
# How much of its colour a cell whose difference is not significant keeps: noise shows as
# a tint, never as a strong colour.
PALE = 0.22
ALPHA = 0.05


def pairwise_colours(difference: np.ndarray, p_adjusted: np.ndarray, limit: float) -> np.ndarray:
    """RGBA per cell: the signed difference on a diverging scale, full strength where the
    row beats the column or the column beats the row (BH-adjusted p < .05 either way),
    pale otherwise; the diagonal white."""
    cmap = plt.get_cmap("RdBu")
    diff = np.nan_to_num(difference)
    rgba = cmap(np.clip(0.5 + diff / (2 * limit), 0.0, 1.0))
    p = np.nan_to_num(p_adjusted, nan=1.0)
    significant = (p < ALPHA) | (p.T < ALPHA)
    weight = np.where(significant, 1.0, PALE)[..., None]
    rgba[..., :3] = 1.0 - (1.0 - rgba[..., :3]) * weight
    rgba[np.eye(len(diff), dtype=bool)] = (1.0, 1.0, 1.0, 1.0)
    return rgba


def pairwise_figure(comparison: PairwiseComparison, path: str | Path) -> Path:
    """Matrix of mean differences (row minus column) with stars where row beats column:
    effect as colour, significance as its strength (pale where it is noise)."""
    n = len(comparison.names)
    labels = [short_label(name, 22) for name in comparison.names]
    longest, lines = label_extent(labels)
    cell = 0.75
    label_inches = CHAR_INCHES * longest + 0.15 * lines
    # Sized so that the cells keep their size whatever the names: labels get their own
    # margin (x labels are turned 45°), the colour bar its own, the title its own lines.
    width = max(4.6, label_inches + n * cell + 1.9)
    height = 1.3 + n * cell + 0.75 * label_inches + 0.15 * lines
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    diff = np.nan_to_num(comparison.difference)
    limit = max(1e-9, float(np.abs(diff).max()))
    colours = pairwise_colours(comparison.difference, comparison.p_adjusted, limit)
    ax.imshow(colours)
    p = np.nan_to_num(comparison.p_adjusted, nan=1.0)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            text = f"{comparison.difference[i, j]:+.1f}\n{stars(comparison.p_adjusted[i, j])}"
            strong = (p[i, j] < ALPHA or p[j, i] < ALPHA) and abs(diff[i, j]) > 0.6 * limit
            ax.text(j, i, text.rstrip(), ha="center", va="center", fontsize=7,
                    color="white" if strong else "black")  # fmt: skip
    ax.set_xticks(range(n), labels, rotation=45, ha="right", rotation_mode="anchor", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set_title(PAIRWISE_TITLE, fontsize=8)
    scale = plt.cm.ScalarMappable(cmap="RdBu", norm=plt.Normalize(-limit, limit))
    bar = fig.colorbar(scale, ax=ax, shrink=0.8)
    bar.set_label("mean final coverage, row − column\n(elements; pale: neither beats)", fontsize=7)
    bar.ax.tick_params(labelsize=7)
    return _save(fig, path)


def save_figure(fig: plt.Figure, path: str | Path) -> Path:
    """Save ``fig`` as PNG at ``path`` (folders made) and close it."""
    return _save(fig, path)


def _save(fig: plt.Figure, path: str | Path) -> Path:
    path = Path(path)
    try:
        with writing(path) as stream:  # a link at the path is replaced, not written through
            fig.savefig(stream, format="png", dpi=130)
    finally:
        plt.close(fig)
    return path
