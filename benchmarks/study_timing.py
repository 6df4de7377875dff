"""Where a study's time went, stage by stage, and what a bigger study would take.

    python benchmarks/study_timing.py STUDY_DIR [--runs 5] [--iterations 200]
        [--against OTHER_STUDY_DIR]

Reads the study's own record (``study.sqlite``'s events: each stage's start and finish, the
simulations it ran and those it took from the searches' records instead) and prints a
markdown table: wall time, simulations (and, beside them, the originals the search's
records gave) and wall time per simulation of each stage, then the same study
extrapolated to ``--runs`` evolution and as many generation-only runs of ``--iterations``
iterations each (default: the measured study's own sizes). With ``--against``, another
study of the same sizes too (an A/B: say, the same slice measured with today's main), then
both extrapolations stage by stage and how many times faster the first is (its
speed-up: the other's time over its own; the events' times are whole seconds, so a stage
of a few seconds compares poorly). Each stage is scaled by what its work grows with:

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
from tpdisc.study.runner import STAGE_NAMES, StageTiming, stage_timings
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


def speed_up(mine: float, other: float) -> str:
    """How many times faster ``mine`` is than ``other`` (below 1: slower); "–" where a
    stage took no measurable time (the events' times are whole seconds)."""
    return f"{other / mine:.2f}×" if mine > 0 and other > 0 else "–"


def timed(study: Path) -> tuple[StudyConfig, dict[str, StageTiming]]:
    folder = StudyDir(study)
    if not folder.config.is_file():
        raise SystemExit(f"{study}: not a study folder (no study.yaml)")
    config = StudyConfig.from_dict(read_yaml(folder.config), str(folder.config))
    with StudyStore(folder.database) as store:
        return config, stage_timings(store.events())


def table(
    config: StudyConfig, timings: dict[str, StageTiming], runs: int, iterations: int
) -> float:
    """Print one study's stage table; returns its extrapolated total (seconds)."""
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
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("study", type=Path)
    p.add_argument("--runs", type=int, default=None, help="target runs of each kind")
    p.add_argument("--iterations", type=int, default=None, help="target iterations per run")
    p.add_argument(
        "--against",
        type=Path,
        metavar="STUDY_DIR",
        help="another study of the same sizes (say, today's main): its table too, then the "
        "two extrapolations stage by stage and their ratio",
    )
    args = p.parse_args()
    config, timings = timed(args.study)
    runs = args.runs or config.runs
    iterations = args.iterations or config.search.iterations
    print(
        f"Measured: {config.runs} + {config.runs} runs × {config.search.iterations} "
        f"iterations; extrapolated to {runs} + {runs} runs × {iterations} iterations.\n"
    )
    print(f"{args.study}:\n")
    total = table(config, timings, runs, iterations)
    if args.against is None:
        return
    other_config, other_timings = timed(args.against)
    if (other_config.runs, other_config.search.iterations) != (
        config.runs,
        config.search.iterations,
    ):
        raise SystemExit(f"{args.against}: a study of other sizes than {args.study}")
    print(f"\n{args.against}:\n")
    other = table(other_config, other_timings, runs, iterations)
    print(f"\n| stage | {args.study} | {args.against} | speed-up |\n|---|---|---|---|")
    for stage in STAGE_NAMES:
        a, b = timings.get(stage), other_timings.get(stage)
        if a is None or b is None:
            x = (
                "not finished"
                if a is None
                else minutes(a.seconds * scale(stage, config, runs, iterations))
            )
            y = (
                "not finished"
                if b is None
                else minutes(b.seconds * scale(stage, other_config, runs, iterations))
            )
            print(f"| {stage} | {x} | {y} | – |")
            continue
        x = a.seconds * scale(stage, config, runs, iterations)
        y = b.seconds * scale(stage, other_config, runs, iterations)
        print(f"| {stage} | {minutes(x)} | {minutes(y)} | {speed_up(x, y)} |")
    print(
        f"| **all** | **{minutes(total)}** | **{minutes(other)}** | **{speed_up(total, other)}** |"
    )


if __name__ == "__main__":
    main()
