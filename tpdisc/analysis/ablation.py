"""The state-awareness ablation study (SPEC §5–§6).

Per run, protocols are ranked by their mean fitness on seeds 0–14 only (read from the
archive's per-seed fitness values); the top and bottom N are each run on seeds 15–29
twice per seed, as written and as the schedule replay with random content. Selection and
comparison never share a seed, so the top set's drop is not inflated by regression to
the mean of a lucky ranking.

Per set: the mean original and ablated coverage, and a paired test of their difference
over protocols (each protocol's mean over the comparison seeds is one pair): Student's
paired t-test (``scipy.stats.ttest_rel``), two-sided, with the Wilcoxon signed-rank test
beside it for readers who distrust normality at n = 20.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from tpdisc.analysis.plots import plain_figures, save_figure
from tpdisc.analysis.simulate import Plan, Protocol, Run, execute, plan
from tpdisc.executors.base import Executor

RANK_SEEDS: tuple[int, ...] = tuple(range(0, 15))
COMPARE_SEEDS: tuple[int, ...] = tuple(range(15, 30))
SETS = ("top", "bottom")


@dataclass(frozen=True)
class Ranked:
    protocol: Protocol
    mean: float  # mean fitness on the ranking seeds the archive holds
    n_seeds: int  # how many of them


def rank(protocols: Sequence[Protocol], seeds: Sequence[int] = RANK_SEEDS) -> list[Ranked]:
    """Best first by mean fitness on ``seeds`` (ties: the earlier protocol); protocols
    scored on none of them are left out."""
    ranked = []
    for p in protocols:
        values = p.fitness_on(seeds)
        if values:
            ranked.append(Ranked(p, float(np.mean(values)), len(values)))
    return sorted(ranked, key=lambda r: (-r.mean, r.protocol.id))


def select(ranked: Sequence[Ranked], top: int, bottom: int) -> dict[str, list[Ranked]]:
    """The top and bottom sets, disjoint: with fewer than ``top + bottom`` protocols the
    bottom set gets what the top set leaves."""
    chosen_top = list(ranked[:top])
    rest = list(ranked[len(chosen_top) :])
    chosen_bottom = rest[max(0, len(rest) - bottom) :]
    return {"top": chosen_top, "bottom": chosen_bottom}


@dataclass(frozen=True)
class PairedRow:
    """One selected protocol's paired trajectories on the comparison seeds."""

    run: str
    set: str
    protocol_id: int
    name: str
    rank_fitness: float
    rank_seeds: int
    seeds: tuple[int, ...]
    original: tuple[int, ...]  # final coverage per seed
    ablated: tuple[int, ...]

    @property
    def original_mean(self) -> float:
        return float(np.mean(self.original))

    @property
    def ablated_mean(self) -> float:
        return float(np.mean(self.ablated))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(original_mean=self.original_mean, ablated_mean=self.ablated_mean)
        data["delta"] = self.ablated_mean - self.original_mean
        data["p"] = _finite(_paired_p(self.original, self.ablated))
        return data


@dataclass(frozen=True)
class SetResult:
    """A set's means over protocols (each protocol: its mean over the comparison seeds)."""

    n: int
    original_mean: float
    original_sem: float
    ablated_mean: float
    ablated_sem: float
    delta: float  # mean paired difference, ablated − original
    delta_sem: float
    p: float  # paired t-test over protocols, two-sided
    p_wilcoxon: float

    def to_json(self) -> dict[str, Any]:
        return {k: _finite(v) for k, v in asdict(self).items()}


def _finite(value: float | int) -> float | int | None:
    return None if isinstance(value, float) and not np.isfinite(value) else value


def _sem(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")


def _paired_p(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2:
        return float("nan")
    d = y - x
    if np.all(d == d[0]):
        # No spread in the differences: the test is undefined (scipy warns and gives nan).
        return 1.0 if d[0] == 0 else 0.0
    return float(stats.ttest_rel(x, y).pvalue)


def _wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or np.all(a == b):
        return float("nan")
    return float(stats.wilcoxon(a, b).pvalue)


def set_result(rows: Sequence[PairedRow]) -> SetResult:
    original = np.array([r.original_mean for r in rows], dtype=float)
    ablated = np.array([r.ablated_mean for r in rows], dtype=float)
    if not rows:
        nan = float("nan")
        return SetResult(0, nan, nan, nan, nan, nan, nan, nan, nan)
    delta = ablated - original
    return SetResult(
        n=len(rows),
        original_mean=float(original.mean()),
        original_sem=_sem(original),
        ablated_mean=float(ablated.mean()),
        ablated_sem=_sem(ablated),
        delta=float(delta.mean()),
        delta_sem=_sem(delta),
        p=_paired_p(original, ablated),
        p_wilcoxon=_wilcoxon_p(original, ablated),
    )


@dataclass(frozen=True)
class RunNote:
    run: str
    valid: int  # protocols ranked
    rank_seeds: tuple[int, ...]  # ranking seeds the archive holds for every ranked protocol
    note: str


@dataclass(frozen=True)
class AblationResult:
    sets: dict[str, SetResult]
    rows: tuple[PairedRow, ...]
    runs: tuple[RunNote, ...]
    failed: dict[str, str]  # "run:id" -> error, protocols left out of their set
    compare_seeds: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "sets": {name: s.to_json() for name, s in self.sets.items()},
            "test": "paired t-test over protocols (scipy.stats.ttest_rel, two-sided) on each "
            "protocol's mean final coverage over the comparison seeds; p_wilcoxon: "
            "Wilcoxon signed-rank on the same pairs; delta = ablated − original",
            "rank_seeds": list(RANK_SEEDS),
            "compare_seeds": list(self.compare_seeds),
            "runs": [asdict(n) for n in self.runs],
            "per_run": {
                note.run: {
                    name: set_result(
                        [r for r in self.rows if r.run == note.run and r.set == name]
                    ).to_json()
                    for name in SETS
                }
                for note in self.runs
            },
            "protocols": [r.to_json() for r in self.rows],
            "failed": self.failed,
        }


def _note(run: Run, ranked: Sequence[Ranked]) -> RunNote:
    common = set(RANK_SEEDS)
    for r in ranked:
        common &= set(r.protocol.seeds)
    note = ""
    if len(common) < len(RANK_SEEDS):
        note = (
            f"the run scored protocols on {len(common)} of the ranking seeds 0–14 "
            f"(sims={run.config.sims}): ranked on those"
        )
    if len(ranked) < 2:
        note = (note + "; " if note else "") + f"only {len(ranked)} protocols to rank"
    return RunNote(str(run.path), len(ranked), tuple(sorted(common)), note)


def ablation_plans(
    runs: Sequence[Run], top: int, bottom: int, compare_seeds: Sequence[int] = COMPARE_SEEDS
) -> tuple[list[Plan], list[dict[str, list[Ranked]]], list[RunNote]]:
    """Per run: the selection and the plan of its paired simulations."""
    plans, selections, notes = [], [], []
    for run in runs:
        ranked = rank(run.protocols)
        chosen = select(ranked, top, bottom)
        wanted = {r.protocol.id: tuple(compare_seeds) for group in chosen.values() for r in group}
        plans.append(plan(run, wanted, ablated=True))
        selections.append(chosen)
        notes.append(_note(run, ranked))
    return plans, selections, notes


def ablation_study(
    runs: Sequence[Run],
    executor: Executor,
    *,
    top: int = 20,
    bottom: int = 20,
    compare_seeds: Sequence[int] = COMPARE_SEEDS,
    on_start: Callable[[int], None] | None = None,
    on_simulation: Callable[[str], None] | None = None,
    on_recorded: Callable[[int], None] | None = None,
) -> AblationResult:
    """The study over ``runs`` (SPEC §6); ``on_start`` gets the number of simulation pairs
    still to run (those the runs' stores lack: of a pair the search recorded, the replay
    alone), ``on_simulation`` a label after each, ``on_recorded`` the number of original
    simulations taken from the search's records."""
    plans, selections, notes = ablation_plans(runs, top, bottom, compare_seeds)
    if on_start is not None:
        on_start(sum(p.n_missing for p in plans))
    if on_recorded is not None:
        on_recorded(sum(p.n_recorded for p in plans))
    execute(plans, executor, on_simulation)
    rows: list[PairedRow] = []
    failed: dict[str, str] = {}
    for p, chosen in zip(plans, selections, strict=True):
        for set_name in SETS:
            for r in chosen[set_name]:
                pid = r.protocol.id
                if pid in p.errors:
                    failed[f"{p.run.path}:{r.protocol.name}"] = p.errors[pid]
                    continue
                seeds = tuple(compare_seeds)
                rows.append(
                    PairedRow(
                        run=str(p.run.path),
                        set=set_name,
                        protocol_id=pid,
                        name=r.protocol.name,
                        rank_fitness=r.mean,
                        rank_seeds=r.n_seeds,
                        seeds=seeds,
                        original=tuple(p.original[pid][s].final for s in seeds),
                        ablated=tuple(p.replay[pid][s].final for s in seeds),
                    )
                )
    sets = {name: set_result([r for r in rows if r.set == name]) for name in SETS}
    return AblationResult(sets, tuple(rows), tuple(notes), failed, tuple(compare_seeds))


def ablation_figure(result: AblationResult, path: str | Path) -> Path:
    """Bars of mean final coverage (± sem over protocols), original vs ablated, per set."""
    import matplotlib.pyplot as plt

    plain_figures()

    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    x = np.arange(len(SETS))
    width = 0.38
    for k, (condition, colour) in enumerate((("original", "#3b6fb6"), ("ablated", "#c8553d"))):
        means = [getattr(result.sets[s], f"{condition}_mean") for s in SETS]
        errs = [getattr(result.sets[s], f"{condition}_sem") for s in SETS]
        errs = [0.0 if not np.isfinite(e) else e for e in errs]
        ax.bar(
            x + (k - 0.5) * width, means, width, yerr=errs, capsize=4, color=colour, label=condition
        )
    labels = []
    for s in SETS:
        r = result.sets[s]
        p = "" if not np.isfinite(r.p) else f", p={r.p:.2g}"
        labels.append(f"{s} (n={r.n}{p})")
    ax.set_xticks(x, labels)
    ax.set_xlabel("protocols, ranked on seeds 0–14")
    ax.set_ylabel("final coverage on comparison seeds (mean ± sem)")
    ax.set_title(
        "State-awareness ablation: original vs schedule replay\n"
        "(mean ± sem over protocols; paired t-test)",
        fontsize=9,
    )
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)
