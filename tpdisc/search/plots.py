"""The figure of a search: every protocol's fitness and the best so far, per iteration."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from tpdisc.safefiles import writing
from tpdisc.search.archive import Archive

# Its only texts are fixed, and mode names the archive checked against its list: no name
# from outside is drawn here (what is goes through tpdisc.analysis.plots.plain_figures).
matplotlib.use("Agg")

MODE_COLOURS = {
    "warm-up": "tab:blue",
    "improve": "tab:green",
    "diversify": "tab:orange",
}


def best_fitness_curve(archive: Archive) -> tuple[list[int], list[float]]:
    """Iterations 0..last and the best fitness in the archive after each (0: the seeds)."""
    valid = archive.summaries(valid_only=True)
    last = archive.last_iteration()
    best: list[float] = []
    current = -np.inf
    by_iteration: dict[int, float] = {}
    for c in valid:
        by_iteration[c.iteration] = max(by_iteration.get(c.iteration, -np.inf), c.fitness)
    for i in range(last + 1):
        current = max(current, by_iteration.get(i, -np.inf))
        best.append(float(current))
    return list(range(last + 1)), best


def best_fitness_figure(archive: Archive, path: str | Path) -> Path:
    """Scatter of each valid protocol's fitness by iteration (coloured by mode, repairs
    hollow), the running best, and the best seed baseline as a dashed line."""
    path = Path(path)
    valid = archive.summaries(valid_only=True)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    # A repair belongs to the mode of its iteration.
    modes = {row["iteration"]: row["mode"] for row in archive.iterations()}
    seeds = [c for c in valid if c.mode == "seed"]
    if seeds:
        top = max(seeds, key=lambda c: c.fitness)
        ax.axhline(top.fitness, ls="--", color="grey", lw=1, label=f"best baseline ({top.name})")
    for mode, colour in MODE_COLOURS.items():
        for repaired in (False, True):
            found = [
                c
                for c in valid
                if (c.mode == "repair") == repaired and modes.get(c.iteration) == mode
            ]
            if found:
                ax.scatter(
                    [c.iteration for c in found],
                    [c.fitness for c in found],
                    s=18,
                    facecolors="none" if repaired else colour,
                    edgecolors=colour,
                    label=f"{mode}{' (repaired)' if repaired else ''}",
                )
    iterations, best = best_fitness_curve(archive)
    if iterations:
        ax.step(iterations, best, where="post", color="black", lw=1.6, label="best so far")
    ax.set_xlabel("iteration")
    ax.set_ylabel("fitness (mean final coverage)")
    ax.set_title("Protocol search: fitness over iterations")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    try:
        with writing(path) as stream:  # a link at the path is replaced, not written through
            fig.savefig(stream, format="png", dpi=120)
    finally:
        plt.close(fig)
    return path
