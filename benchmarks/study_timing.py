"""Where a study's time went, stage by stage, and what a bigger study would take.

    python benchmarks/study_timing.py STUDY_DIR [--runs 5] [--iterations 200]

Reads the study's own record (``study.sqlite``'s events: each stage's start and finish, the
simulations it ran and those it took from the searches' records instead) and prints a
markdown table: wall time, simulations (and, beside them, the originals the search's
records gave) and wall time per simulation of each stage, then the same study
extrapolated to ``--runs`` evolution and
as many generation-only runs of ``--iterations`` iterations each (default: the measured
study's own sizes). Each stage is scaled by what its work grows with:

- ``baselines``: nothing (the five baselines, once);
- ``search``, ``features``, ``volume``, ``embeddings``: the protocols found, runs ×
  iterations;
- ``ablation``: the runs times the protocols it takes of each (its ``top`` and ``bottom``,
  at most the run's protocols);
- ``best``, ``generalization``: the runs (one best protocol each).

Every other setting (simulations per protocol, agents, steps) stays the measured study's.

Only sessions that finished a stage count (a stage killed and resumed is timed by the
session that finished it, which reused what the killed one stored). The extrapolation
assumes a stage's cost per unit stays the same at the larger size; the search's grows a
little with the archive (prompts, selection), which it leaves out.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tpdisc.config_tree import read_yaml
from tpdisc.study.config import StudyConfig
from tpdisc.study.layout import StudyDir
from tpdisc.study.runner import STAGE_NAMES, stage_timings
from tpdisc.study.store import StudyStore

PER_PROTOCOL = ("search", "features", "volume", "embeddings")
PER_RUN = ("best", "generalization")


def scale(stage: str, config: StudyConfig, runs: int, iterations: int) -> float:
    """How many times the measured study's work in ``stage`` the target size does."""
    r = runs / config.runs
    if stage in PER_PROTOCOL:
        return r * iterations / config.search.iterations
    if stage in PER_RUN:
        return r
    if stage == "ablation":
        taken = config.ablation.top + config.ablation.bottom
        return r * min(taken, iterations) / min(taken, config.search.iterations)
    return 1.0


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("study", type=Path)
    p.add_argument("--runs", type=int, default=None, help="target runs of each kind")
    p.add_argument("--iterations", type=int, default=None, help="target iterations per run")
    args = p.parse_args()
    folder = StudyDir(args.study)
    if not folder.config.is_file():
        raise SystemExit(f"{args.study}: not a study folder (no study.yaml)")
    config = StudyConfig.from_dict(read_yaml(folder.config), str(folder.config))
    runs = args.runs or config.runs
    iterations = args.iterations or config.search.iterations
    with StudyStore(folder.database) as store:
        timings = stage_timings(store.events())
    print(
        f"Measured: {config.runs} + {config.runs} runs × {config.search.iterations} "
        f"iterations; extrapolated to {runs} + {runs} runs × {iterations} iterations.\n"
    )
    print("| stage | wall | simulations | from records | per simulation | × | extrapolated |")
    print("|---|---|---|---|---|---|---|")
    total = measured = 0.0
    for stage in STAGE_NAMES:
        t = timings.get(stage)
        if t is None:
            print(f"| {stage} | not finished | | | | | |")
            continue
        factor = scale(stage, config, runs, iterations)
        per = f"{1000 * t.seconds / t.simulations:.0f} ms" if t.simulations else "–"
        recorded = f"{t.recorded:,}" if t.recorded else "–"
        print(
            f"| {stage} | {minutes(t.seconds)} | {t.simulations:,} | {recorded} | {per} "
            f"| {factor:.3g} | {minutes(t.seconds * factor)} |"
        )
        measured += t.seconds
        total += t.seconds * factor
    print(f"| **all** | **{minutes(measured)}** | | | | | **{minutes(total)}** |")


if __name__ == "__main__":
    main()
