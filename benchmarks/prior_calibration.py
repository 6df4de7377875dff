"""Reliability of the prior's P(success): predicted against observed success rates.

Every pair's P(success) is a held-out prediction (cross-validated), so binning the pairs by
it and counting the real successes in each bin shows how far the link model's numbers can
be read as probabilities. Brändle et al. oversample successes 1:1 while training, so the
model's scale is that of a balanced data set (1 in 2), not the game's (1 in 75).

    python benchmarks/prior_calibration.py --prior-seeds 0 1 2 [--out docs/prior_reliability.png]

Uses (or builds) the default ngram prior of each seed in the user cache.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from tpdisc.agents.empowerment.prior.build import PriorSettings
from tpdisc.agents.empowerment.prior.dataset import pair_data
from tpdisc.agents.empowerment.prior.store import ensure_prior
from tpdisc.domain.data import default_graph

EDGES = np.linspace(0.0, 1.0, 11)


def reliability(p: np.ndarray, success: np.ndarray) -> list[dict[str, float]]:
    """Per bin of P(success): pairs, mean prediction, observed success rate."""
    which = np.clip(np.digitize(p, EDGES) - 1, 0, EDGES.size - 2)
    rows = []
    for b in range(EDGES.size - 1):
        inside = which == b
        n = int(inside.sum())
        rows.append(
            {
                "low": float(EDGES[b]),
                "high": float(EDGES[b + 1]),
                "pairs": n,
                "predicted": float(p[inside].mean()) if n else float("nan"),
                "observed": float(success[inside].mean()) if n else float("nan"),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prior-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--recipes", default=None)
    parser.add_argument("--out", type=Path, default=Path("docs/prior_reliability.png"))
    args = parser.parse_args()
    graph = default_graph(args.recipes)
    success = pair_data(graph).success
    fig, (ax, hist) = plt.subplots(1, 2, figsize=(11, 4.5))
    diagonal = np.linspace(0.01, 1.0, 100)
    ax.plot(diagonal, diagonal, color="grey", lw=0.8, ls="--", label="calibrated")
    print("| prior seed | P(success) bin | pairs | mean predicted | observed success rate |")
    print("|---|---|---|---|---|")
    for seed in args.prior_seeds:
        prior, _ = ensure_prior(graph, "ngram", PriorSettings(seed=seed))
        p = prior.p_success.astype(np.float64)
        rows = reliability(p, success)
        for r in rows:
            print(
                f"| {seed} | {r['low']:.1f}–{r['high']:.1f} | {r['pairs']:,} "
                f"| {r['predicted']:.3f} | {r['observed']:.4f} |"
            )
        filled = [r for r in rows if r["pairs"]]
        ax.plot(
            [r["predicted"] for r in filled],
            [r["observed"] for r in filled],
            marker="o",
            label=f"prior seed {seed}",
        )
        brier = float(np.mean((p - success) ** 2))
        print(f"seed {seed}: Brier score {brier:.4f}; base rate {success.mean():.4f}")
        if seed == args.prior_seeds[0]:
            bins = np.linspace(0, 1, 41)
            hist.hist(p[~success], bins=bins, density=True, alpha=0.6, label="failing pairs")
            hist.hist(p[success], bins=bins, density=True, alpha=0.6, label="successful pairs")
            hist.set_title(f"Held-out P(success), prior seed {seed}")
            hist.set_xlabel("P(success)")
            hist.set_ylabel("density (each group sums to 1)")
            hist.legend()
    ax.set_xlabel("mean predicted P(success) in the bin")
    ax.set_ylabel("observed success rate in the bin (log scale)")
    ax.set_title("Reliability of the link model (10 bins, held-out)")
    ax.set_xlim(0, 1)
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"figure saved to {args.out}")


if __name__ == "__main__":
    main()
