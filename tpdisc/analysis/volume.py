"""Volume: does receiving more novel memories make a protocol better? (SPEC §5–§6)

Per protocol, the mean number of novel memories received per agent over a simulation,
averaged over its evaluation seeds, against its fitness, with Spearman's ρ over all
protocols. "Novel" is the simulator's count (``SimResult.novel_received``): a delivered
memory (past the bottleneck) of a pair the learner had not attempted itself by the step
it receives it, its own attempt of that step included, since attempts come before
delivery. A pair received again while still untried counts again.

The archive's protocol rows do not keep that count, so it comes from the search's records
of their simulations (:mod:`tpdisc.sim.records`) or, where it kept none, the protocols are
re-simulated on their own evaluation seeds (results stored; see
:mod:`tpdisc.analysis.store`). The fitness is the
mean final coverage of those same simulations: the archive's fitness whenever the
settings are the run's own (simulations are deterministic), and still consistent with
the counts under ``n_steps``/``n_sims`` overrides; the archive's value is kept beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from tpdisc.analysis.plots import plain_figures, save_figure
from tpdisc.analysis.simulate import Run, execute, plan
from tpdisc.executors.base import Executor


@dataclass(frozen=True)
class VolumePoint:
    run: str
    protocol_id: int
    name: str
    fitness: float  # mean final coverage of the simulations below
    archive_fitness: float | None  # None for protocol files and baselines: no archive
    novel_per_agent: float  # novel memories received per agent, mean over simulations
    received_per_agent: float  # all memories received per agent (past the bottleneck)
    sims: int


@dataclass(frozen=True)
class VolumeResult:
    n: int
    rho: float  # Spearman, novel_per_agent vs fitness, over all protocols
    p: float
    points: tuple[VolumePoint, ...]
    failed: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        def clean(v: float) -> float | None:
            return v if np.isfinite(v) else None

        return {
            "n": self.n,
            "rho": clean(self.rho),
            "p": clean(self.p),
            "x": "novel memories received per agent (mean over simulations)",
            "y": "fitness (mean final coverage of the same simulations)",
            "points": [asdict(p) for p in self.points],
            "failed": self.failed,
        }


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """ρ and its two-sided p-value; nan when undefined (fewer than 3 points, or a constant)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan"), float("nan")
    result = stats.spearmanr(a, b)
    return float(result.statistic), float(result.pvalue)


def volume_study(
    runs: Sequence[Run],
    executor: Executor,
    *,
    n_sims: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_simulation: Callable[[str], None] | None = None,
    on_recorded: Callable[[int], None] | None = None,
) -> VolumeResult:
    """Every protocol of ``runs`` on its evaluation seeds (the first ``n_sims`` of them);
    those the search recorded are taken from its records (``on_recorded`` gets how many)."""
    plans = []
    for run in runs:
        wanted = {p.id: p.seeds[:n_sims] if n_sims else p.seeds for p in run.protocols}
        plans.append(plan(run, wanted, ablated=False))
    if on_start is not None:
        on_start(sum(p.n_missing for p in plans))
    if on_recorded is not None:
        on_recorded(sum(p.n_recorded for p in plans))
    execute(plans, executor, on_simulation)
    points: list[VolumePoint] = []
    failed: dict[str, str] = {}
    for p in plans:
        for protocol in p.run.protocols:
            if protocol.id in p.errors:
                failed[f"{protocol.run}:{protocol.name}"] = p.errors[protocol.id]
                continue
            sims = [p.original[protocol.id][s] for s in p.seeds[protocol.id]]
            if not sims:
                continue
            points.append(
                VolumePoint(
                    run=protocol.run,
                    protocol_id=protocol.id,
                    name=protocol.name,
                    fitness=float(np.mean([s.final for s in sims])),
                    archive_fitness=None if np.isnan(protocol.fitness) else protocol.fitness,
                    novel_per_agent=float(np.mean([s.novel_per_agent for s in sims])),
                    received_per_agent=float(np.mean([s.received_per_agent for s in sims])),
                    sims=len(sims),
                )
            )
    rho, pval = spearman([q.novel_per_agent for q in points], [q.fitness for q in points])
    return VolumeResult(len(points), rho, pval, tuple(points), failed)


def volume_figure(result: VolumeResult, path: str | Path) -> Path:
    """Fitness against novel memories received per agent, one colour per run."""
    import matplotlib.pyplot as plt

    plain_figures()

    fig, ax = plt.subplots(figsize=(6, 4.5))
    runs = sorted({q.run for q in result.points})
    for run in runs:
        mine = [q for q in result.points if q.run == run]
        ax.scatter(
            [q.novel_per_agent for q in mine],
            [q.fitness for q in mine],
            s=14,
            alpha=0.7,
            label=Path(run).name if len(runs) > 1 else None,
        )
    rho = "undefined" if not np.isfinite(result.rho) else f"{result.rho:+.2f} (p={result.p:.2g})"
    ax.set_title(f"Volume vs fitness: Spearman ρ = {rho}, n = {result.n}", fontsize=9)
    ax.set_xlabel("novel memories received per agent (mean over simulations)")
    ax.set_ylabel("fitness (mean final coverage)")
    ax.grid(alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path)
