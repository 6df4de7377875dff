"""The figures of a protocol's portrait (:mod:`tpdisc.analysis.portrait`), drawn from its
plain data so that a report can redraw them from a stored portrait without simulating.

Each function writes one PNG and returns its path. Colours are fixed across figures: the
protocol blue, its ablation orange, asocial play grey.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from tpdisc.analysis.plots import plain_figures, save_figure, short_label
from tpdisc.analysis.portrait import THIRDS, Portrait

plain_figures()

# Metrics drawn, one panel each: a figure stays readable however many a protocol reports.
FIGURE_METRICS = 12
COLOURS = {"protocol": "C0", "ablation": "C1", "asocial": "0.45"}
LABELS = {
    "protocol": "protocol",
    "ablation": "its ablation (same schedule, random content)",
    "asocial": "asocial play",
}


def _array(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def smoothing_window(n_steps: int) -> int:
    """Steps averaged per point of the per-step curves: a 25th of the game, at least 1."""
    return max(1, n_steps // 25)


def smooth(values: Sequence[float | None], window: int) -> np.ndarray:
    """A centred moving average that skips undefined steps (NaN where all are)."""
    data = _array(values)
    if window <= 1 or data.size == 0:
        return data
    defined = ~np.isnan(data)
    kernel = np.ones(window)
    total = np.convolve(np.where(defined, data, 0.0), kernel, mode="same")
    count = np.convolve(defined.astype(float), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def _heatmap(ax: Any, matrix: np.ndarray, vmax: float, cmap: str, title: str) -> Any:
    n = matrix.shape[0]
    # Nothing delivered: a blank panel on a unit scale (the caller leaves out its bar).
    image = ax.imshow(matrix, cmap=cmap, vmin=0, vmax=vmax if vmax > 0 else 1.0)
    if n <= 12:  # numbers stay legible up to a dozen agents
        for i in range(n):
            for j in range(n):
                value = matrix[i, j]
                colour = "white" if value > 0.6 * vmax else "black"
                text = f"{value:.0f}" if value >= 10 or value == 0 else f"{value:.1f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=6, color=colour)
    ticks = range(n) if n <= 20 else range(0, n, max(1, n // 10))
    ax.set_xticks(list(ticks))
    ax.set_yticks(list(ticks))
    ax.tick_params(labelsize=7)
    ax.set_xlabel("recipient (agent)", fontsize=8)
    ax.set_ylabel("sender (agent)", fontsize=8)
    ax.set_title(title, fontsize=9)
    return image


def flow_figure(portrait: Portrait, path: str | Path) -> Path:
    """Delivered memories sender × recipient: successes, failures."""
    successes = np.array(portrait.flow["successes"], dtype=float)
    failures = np.array(portrait.flow["failures"], dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.4), layout="constrained")
    for ax, matrix, cmap, what in (
        (axes[0], successes, "Blues", "successes"),
        (axes[1], failures, "Oranges", "failures"),
    ):
        total = matrix.sum()
        title = f"{what}: {total:.0f} per game" if total > 0 else f"{what}: none delivered"
        image = _heatmap(ax, matrix, float(matrix.max()), cmap, title)
        if total > 0:  # an empty panel's scale would only show rounding
            bar = fig.colorbar(image, ax=ax, shrink=0.8)
            bar.set_label(f"memories of {what} delivered\n(mean per simulation)", fontsize=7)
            bar.ax.tick_params(labelsize=7)
    fig.suptitle(f"{short_label(portrait.name, 60)}: who sent to whom", fontsize=10)
    return save_figure(fig, path)


def flow_thirds_figure(portrait: Portrait, path: str | Path) -> Path:
    """All delivered memories sender × recipient in each third of the game, one scale."""
    thirds = [np.array(portrait.flow["thirds"][label], dtype=float) for label in THIRDS]
    vmax = max(float(m.max()) for m in thirds)
    t = portrait.n_steps
    bounds = [(w * t + 2) // 3 for w in range(4)]  # first step of each third, 0-based
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2), layout="constrained")
    images = []
    for w, (ax, matrix) in enumerate(zip(axes, thirds, strict=True)):
        span = f"steps {bounds[w] + 1}–{bounds[w + 1]}"
        title = f"{THIRDS[w]} ({span}): {matrix.sum():.0f}"
        images.append(_heatmap(ax, matrix, vmax, "Purples", title))
    if vmax > 0:  # nothing delivered in the whole game: no scale to show
        bar = fig.colorbar(images[-1], ax=list(axes), shrink=0.8)
        bar.set_label("memories delivered (mean per simulation)", fontsize=7)
        bar.ax.tick_params(labelsize=7)
    fig.suptitle("Does the routing change over the game? (one colour scale)", fontsize=10)
    return save_figure(fig, path)


def content_figure(portrait: Portrait, path: str | Path) -> Path:
    """What is delivered at each step, protocol solid and its ablation dashed."""
    per, abl = portrait.content["per_step"], portrait.content["ablation_per_step"]
    w = smoothing_window(portrait.n_steps)
    steps = np.arange(1, portrait.n_steps + 1)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), layout="constrained", sharex=True)
    ax = axes[0, 0]
    delivered = _array(per["delivered"])
    successes = delivered * np.nan_to_num(_array(per["success_share"]))
    ax.fill_between(steps, 0, successes, color="C2", alpha=0.6, lw=0, label="successes")
    ax.fill_between(steps, successes, delivered, color="C3", alpha=0.35, lw=0, label="failures")
    ax.set_ylabel("memories delivered per step\n(mean per simulation)", fontsize=8)
    ax.set_title("How much is delivered", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax = axes[0, 1]
    for key, label, colour in (
        ("success_share", "successes / delivered", "C2"),
        ("lacks_result", "result the recipient lacks / successes", "C4"),
        ("rarity", "rarity of the result (1 − share owning it)", "C5"),
    ):
        ax.plot(steps, smooth(per[key], w), color=colour, lw=1.6, label=label)
        ax.plot(steps, smooth(abl[key], w), color=colour, lw=1, ls="--")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("share", fontsize=8)
    ax.set_title("What is delivered (dashed: its ablation)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax = axes[1, 0]
    for k, colour in zip(range(3), ("C7", "C8", "C9"), strict=True):
        ax.plot(steps, smooth(per[f"has_{k}"], w), color=colour, lw=1.6,
                label=f"recipient owns {k} of the 2 ingredients")  # fmt: skip
        ax.plot(steps, smooth(abl[f"has_{k}"], w), color=colour, lw=1, ls="--")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("share of delivered memories", fontsize=8)
    ax.set_title("Can the recipient make the pair? (dashed: ablation)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax = axes[1, 1]
    ax.plot(steps, smooth(per["resend_share"], w), color="C0", lw=1.6, label="protocol")
    ax.plot(steps, smooth(abl["resend_share"], w), color="C1", lw=1, ls="--", label="ablation")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("share of delivered memories", fontsize=8)
    ax.set_title("Re-sends: a recipe the recipient had been delivered", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    for ax in axes[1]:
        ax.set_xlabel("step", fontsize=8)
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    smoothed = f"shares: moving average over {w} steps" if w > 1 else "per step"
    fig.suptitle(f"Content over the game ({smoothed}; pooled over seeds)", fontsize=10)
    return save_figure(fig, path)


def agents_figure(portrait: Portrait, path: str | Path) -> Path:
    """Inventories: each agent's, the union; competence and diversity against the
    ablation and asocial play; re-made received recipes."""
    agents = portrait.agents
    points = np.arange(portrait.n_steps + 1)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), layout="constrained", sharex=True)
    ax = axes[0, 0]
    for k, row in enumerate(agents["inventory_by_agent"]):
        ax.plot(points, row, lw=0.9, alpha=0.8, label="each agent" if k == 0 else None)
    ax.plot(points, _array(agents["union"]), color="black", lw=2, label="union (coverage)")
    ax.set_ylabel("elements owned (mean over seeds)", fontsize=8)
    ax.set_title("Each agent's inventory, and the group's union", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    w = smoothing_window(portrait.n_steps)
    panels = (
        (axes[0, 1], "mean_inventory", "elements per agent", "Competence: mean inventory"),
        (
            axes[1, 0],
            "jaccard",
            "mean pairwise Jaccard distance\n(start elements left out)",
            "Diversity: how different the inventories are",
        ),
        (axes[1, 1], "remake_share", "share of attempts", "Re-making a recipe received"),
    )
    for ax, key, ylabel, title in panels:
        for condition, colour in COLOURS.items():
            values = agents[condition][key]
            if key == "remake_share":  # per step, not per state: T points, smoothed
                x, y = points[1:], smooth(values, w)
            else:
                x, y = points, _array(values)
            style = "--" if condition == "ablation" else "-"
            width = 1.6 if condition == "protocol" else 1.1
            ax.plot(x, y, color=colour, lw=width, ls=style, label=LABELS[condition])
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="best")
    axes[1, 0].set_ylim(-0.02, 1.02)
    for ax in axes[1]:
        ax.set_xlabel("step", fontsize=8)
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    fig.suptitle("The agents over the game (means over seeds)", fontsize=10)
    return save_figure(fig, path)


def coverage_figure(portrait: Portrait, path: str | Path) -> Path:
    """Coverage of the protocol, its ablation and asocial play, mean ± sem over seeds."""
    fig, ax = plt.subplots(figsize=(8.5, 4.4), layout="constrained")
    for condition, colour in COLOURS.items():
        data = portrait.coverage[condition]
        mean, err = _array(data["mean"]), _array(data["sem"])
        points = np.arange(mean.size)
        label = f"{LABELS[condition]}: {mean[-1]:.1f} ± {err[-1]:.1f}"
        ax.plot(points, mean, color=colour, lw=1.8, label=label,
                ls="--" if condition == "ablation" else "-")  # fmt: skip
        ax.fill_between(points, mean - err, mean + err, color=colour, alpha=0.2, lw=0)
    ax.set_xlabel("step", fontsize=8)
    ax.set_ylabel("coverage (distinct elements, base included)\nline: mean, band: ± sem",
                  fontsize=8)  # fmt: skip
    ax.set_title(f"Coverage on the same {len(portrait.seeds)} seeds", fontsize=10)
    ax.grid(alpha=0.3)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="upper left", title="final coverage: mean ± sem", title_fontsize=7)
    return save_figure(fig, path)


def metrics_figure(portrait: Portrait, path: str | Path) -> Path | None:
    """The protocol's own ``get_logs()`` metrics after every step, the first
    :data:`FIGURE_METRICS` it reported with numbers (None: it has none); all of them are in
    the portrait's data."""
    numeric = {
        name: m for name, m in portrait.metrics.items()
        if any(v is not None for v in m["mean_per_step"])
    }  # fmt: skip
    if not numeric:
        return None
    shown = dict(list(numeric.items())[:FIGURE_METRICS])
    n = len(shown)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.9 * cols, 2.9 * rows), layout="constrained",
                             squeeze=False)  # fmt: skip
    steps = np.arange(1, portrait.n_steps + 1)
    for ax, (name, metric) in zip(axes.flat, shown.items(), strict=False):
        ax.plot(steps, _array(metric["mean_per_step"]), color="C0", lw=1.5)
        ax.set_title(short_label(name, 40), fontsize=8)
        ax.set_xlabel("step", fontsize=7)
        ax.set_ylabel("value after the step", fontsize=7)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    title = "The protocol's get_logs() metrics (mean over seeds)"
    if len(numeric) > n:
        title += f": the first {n} of {len(numeric)}, all in portrait.json"
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def comparison_figure(portraits: Sequence[Portrait], path: str | Path) -> Path:
    """Several protocols side by side: coverage (ablation dashed), competence, diversity."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6), layout="constrained")
    for k, portrait in enumerate(portraits):
        colour = f"C{k % 10}"
        label = short_label(portrait.name, 30)
        points = np.arange(portrait.n_steps + 1)
        axes[0].plot(points, _array(portrait.coverage["protocol"]["mean"]), color=colour,
                     lw=1.8, label=label)  # fmt: skip
        axes[0].plot(points, _array(portrait.coverage["ablation"]["mean"]), color=colour,
                     lw=1, ls="--")  # fmt: skip
        axes[1].plot(points, _array(portrait.agents["protocol"]["mean_inventory"]),
                     color=colour, lw=1.6, label=label)  # fmt: skip
        axes[2].plot(points, _array(portrait.agents["protocol"]["jaccard"]), color=colour,
                     lw=1.6, label=label)  # fmt: skip
    asocial = portraits[0]
    for ax, key in ((axes[1], "mean_inventory"), (axes[2], "jaccard")):
        ax.plot(np.arange(asocial.n_steps + 1), _array(asocial.agents["asocial"][key]),
                color="0.45", lw=1.1, label="asocial play")  # fmt: skip
    titles = (
        ("coverage (dashed: each one's ablation)", "coverage"),
        ("competence: mean inventory per agent", "elements per agent"),
        ("diversity: mean pairwise Jaccard distance", "distance (start elements left out)"),
    )
    for ax, (title, ylabel) in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path)
