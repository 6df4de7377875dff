"""Behavioural features against fitness (SPEC §6): which ways of routing make a protocol good.

For every valid protocol of the runs, its original simulations and their schedule replays
(same seeds, random content) are each reduced to their transmission tally (the originals
the search recorded are not run again: only their replays); the 23 features of
:mod:`tpdisc.analysis.features` are pooled in each condition and stored with the run.
Per feature, over the protocols where it is defined in both conditions: Spearman's ρ
between (original − ablated) and fitness, its p-value, Benjamini–Hochberg q across
features (statsmodels), stars (** q < 0.01, *** q < 0.001), Cohen's d between the original
and the ablated values (pooled standard deviation), and ρ(feature, fitness) in each
condition. Fitness is the archive's: mean final coverage over the protocol's evaluation
seeds, the seeds the features pool over; for protocol files and baselines, which have no
archive, the mean final coverage of the original simulations the features come from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from tpdisc.analysis.features import FEATURES, pool
from tpdisc.analysis.plots import plain_figures, save_figure
from tpdisc.analysis.simulate import Protocol, Run, tallied_pairs
from tpdisc.analysis.store import ORIGINAL, AnalysisStore
from tpdisc.executors.base import Executor
from tpdisc.sim.transmissions import Tally

# The reference study's ρ of (original − ablated) with fitness over ≈1,000 generated
# protocols, for the side-by-side column of docs/analysis.md.
REFERENCE_RHO: dict[str, float] = {
    "recency_bias": 0.64,
    "cond_recency_has_2": 0.63,
    "cond_recency_has_1": 0.58,
    "targeted_failure_rate": -0.54,
    "actionable_has_0": 0.49,
    "cond_recency_has_0": 0.48,
    "slope_recency": 0.45,
    "slope_has_1": 0.44,
    "has_2_fraction": -0.43,
    "has_1_fraction": 0.42,
    "actionable_has_1": 0.41,
    "has_0_fraction": 0.40,
    "slope_has_2": -0.39,
    "rarity_bias": 0.29,
    "personalization": -0.28,
    "exclusive_routing": -0.26,
    "slope_has_0": 0.22,
    "item_novelty": 0.22,
    "actionable_has_2": 0.17,
    "knowledge_synergy_late": 0.12,
    "knowledge_synergy_early": -0.10,
    "discovery_burst_rate": 0.09,
    "success_bias": 0.00,
}
CONDITIONS = ("original", "ablated")


@dataclass(frozen=True)
class FeatureRow:
    name: str
    group: str
    n: int  # protocols where the feature is defined in both conditions
    rho: float | None  # Spearman ρ(original − ablated, fitness)
    p: float | None
    q: float | None  # Benjamini–Hochberg across the features with a p-value
    cohens_d: float | None  # original vs ablated values, pooled standard deviation
    rho_original: float | None
    rho_ablated: float | None
    reference_rho: float | None

    @property
    def stars(self) -> str:
        if self.q is None:
            return ""
        return "***" if self.q < 0.001 else "**" if self.q < 0.01 else ""


@dataclass(frozen=True)
class ProtocolFeatures:
    """One protocol's features, pooled over its seeds, in each condition."""

    run: str
    id: int
    name: str
    fitness: float
    values: Mapping[str, Mapping[str, float | None]]  # condition -> feature -> value


@dataclass(frozen=True)
class FeatureStudy:
    n_protocols: int
    rows: tuple[FeatureRow, ...]
    failed: dict[str, str]
    protocols: tuple[ProtocolFeatures, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "n_protocols": self.n_protocols,
            "features": [{**vars(row), "stars": row.stars} for row in self.rows],
            "protocols": [
                {
                    "run": p.run,
                    "id": p.id,
                    "name": p.name,
                    "fitness": p.fitness,
                    **{condition: dict(p.values.get(condition, {})) for condition in CONDITIONS},
                }
                for p in self.protocols
            ],
            "failed": self.failed,
        }


def cohens_d(a: Sequence[float], b: Sequence[float]) -> float | None:
    """(mean a − mean b) / pooled standard deviation; None when undefined."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return None
    pooled = ((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / (x.size + y.size - 2)
    if pooled <= 0:
        return None
    return float((x.mean() - y.mean()) / np.sqrt(pooled))


def _spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, float | None]:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    rho, p = stats.spearmanr(x, y)
    return float(rho), float(p)


def feature_table(
    values: Mapping[tuple[str, int], Mapping[str, Mapping[str, float | None]]],
    fitness: Mapping[tuple[str, int], float],
) -> tuple[FeatureRow, ...]:
    """The statistics of every feature from per-protocol values by condition."""
    rows = []
    for feature in FEATURES:
        pairs, original, ablated = [], [], []
        for key, by_condition in values.items():
            o = by_condition.get("original", {}).get(feature.name)
            a = by_condition.get("ablated", {}).get(feature.name)
            if o is not None:
                original.append((o, fitness[key]))
            if a is not None:
                ablated.append((a, fitness[key]))
            if o is not None and a is not None:
                pairs.append((o - a, fitness[key]))
        rho, p = _spearman([d for d, _ in pairs], [f for _, f in pairs])
        rho_o, _ = _spearman([v for v, _ in original], [f for _, f in original])
        rho_a, _ = _spearman([v for v, _ in ablated], [f for _, f in ablated])
        d = cohens_d([v for v, _ in original], [v for v, _ in ablated])
        rows.append(
            FeatureRow(
                feature.name,
                feature.group,
                len(pairs),
                rho,
                p,
                None,
                d,
                rho_o,
                rho_a,
                REFERENCE_RHO.get(feature.name),
            )
        )
    tested = [i for i, row in enumerate(rows) if row.p is not None]
    if tested:
        _, q, _, _ = multipletests([rows[i].p for i in tested], method="fdr_bh")
        for i, value in zip(tested, q, strict=True):
            row = rows[i]
            rows[i] = FeatureRow(**{**vars(row), "q": float(value)})
    return tuple(sorted(rows, key=lambda r: -abs(r.rho) if r.rho is not None else 1.0))


def feature_study(
    runs: Sequence[Run],
    executor: Executor,
    *,
    n_sims: int | None = None,
    on_simulation: Callable[[str], None] | None = None,
    on_recorded: Callable[[int], None] | None = None,
) -> FeatureStudy:
    """Simulate what the runs' stores miss, then the statistics over all their protocols;
    ``on_recorded`` gets the number of original simulations taken from the search's
    records (a batch at a time)."""

    def finish(
        protocol: Protocol, pairs: Sequence[tuple[int, Tally, Tally]]
    ) -> Mapping[str, Mapping[str, float | None]]:
        return {
            "original": pool([o for _, o, _ in pairs]),
            "ablated": pool([a for _, _, a in pairs]),
        }

    errors = tallied_pairs(
        runs,
        finish,
        executor,
        n_sims=n_sims,
        on_simulation=on_simulation,
        on_recorded=on_recorded,
    )
    values: dict[tuple[str, int], dict[str, dict[str, float | None]]] = {}
    fitness: dict[tuple[str, int], float] = {}
    found: list[ProtocolFeatures] = []
    for run in runs:
        with run.store() as store:
            key = store.register(run.settings)
            for protocol in run.protocols:
                seeds = protocol.seeds[:n_sims] if n_sims else protocol.seeds
                stored = store.features(key, [protocol.id], seeds).get(protocol.id)
                if stored is not None:
                    score = protocol.fitness
                    if math.isnan(score):  # no archive: the simulations' own
                        score = _simulated_fitness(store, key, protocol.id, seeds, run)
                    values[(protocol.run, protocol.id)] = stored
                    fitness[(protocol.run, protocol.id)] = score
                    found.append(
                        ProtocolFeatures(protocol.run, protocol.id, protocol.name, score, stored)
                    )
    names = {(p.run, p.id): p.name for run in runs for p in run.protocols}
    failed = {f"{run}:{names.get((run, pid), pid)}": error for (run, pid), error in errors.items()}
    return FeatureStudy(len(values), feature_table(values, fitness), failed, tuple(found))


def _simulated_fitness(
    store: AnalysisStore, key: str, protocol_id: int, seeds: Sequence[int], run: Run
) -> float:
    """Mean final coverage of a protocol's stored original simulations on ``seeds``."""
    shape = (run.sim.n_agents, run.sim.n_steps)
    stored = store.summaries(ORIGINAL, key, [protocol_id], shape).get(protocol_id, {})
    finals = [stored[s].final for s in seeds if s in stored]
    return float(np.mean(finals)) if finals else float("nan")


def missing_features(
    runs: Sequence[Run], n_sims: int | None = None
) -> dict[tuple[str, int], list[int]]:
    """The seeds of every protocol whose features are not stored yet (what a study runs:
    one original and one replayed simulation per seed)."""
    missing: dict[tuple[str, int], list[int]] = {}
    for run in runs:
        with run.store() as store:
            key = store.register(run.settings)
            for protocol in run.protocols:
                seeds = list(protocol.seeds[:n_sims] if n_sims else protocol.seeds)
                if not store.features(key, [protocol.id], seeds):
                    missing[(protocol.run, protocol.id)] = seeds
    return missing


def feature_figure(study: FeatureStudy, path: Path) -> Path:
    """ρ(original − ablated, fitness) per feature, sorted by |ρ|, with stars and the
    reference's ρ beside."""
    import matplotlib.pyplot as plt

    plain_figures()

    rows = [r for r in study.rows if r.rho is not None]
    fig, ax = plt.subplots(figsize=(8, 0.32 * max(len(rows), 4) + 1.4), layout="constrained")
    ys = np.arange(len(rows))[::-1]
    rhos = [r.rho or 0.0 for r in rows]
    # Effect and significance together: a bar is solid only where q < .01 (a star);
    # elsewhere it is pale, so that a large ρ of few protocols does not read as a finding.
    solid = [r.q is not None and r.q < 0.01 for r in rows]
    colours = [
        ("C0" if rho > 0 else "C3", 1.0 if strong else 0.3)
        for rho, strong in zip(rhos, solid, strict=True)
    ]
    ax.barh(ys, rhos, color=colours, edgecolor=["C0" if rho > 0 else "C3" for rho in rhos])
    reference = [
        (y, r.reference_rho) for y, r in zip(ys, rows, strict=True) if r.reference_rho is not None
    ]
    if reference:
        ax.scatter(
            [v for _, v in reference],
            [y for y, _ in reference],
            marker="|",
            s=120,
            color="black",
            label="reference study's ρ",
            zorder=3,
        )
        ax.legend(loc="lower right", fontsize=8)
    for y, rho, row in zip(ys, rhos, rows, strict=True):  # stars outside the bar's end
        text, side = (f" {row.stars}", "left") if rho >= 0 else (f"{row.stars} ", "right")
        ax.text(rho, y, text, va="center", ha=side, fontsize=8)
    ax.set_yticks(ys, [f"{r.name} (n={r.n})" for r in rows], fontsize=8)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlim(-1, 1)
    ax.set_xlabel("Spearman ρ of (original − ablated) with fitness")
    ax.set_title(
        f"Behavioural features, {study.n_protocols} protocols\n"
        "** q < 0.01, *** q < 0.001 (BH); pale bars: not significant",
        fontsize=10,
    )
    return save_figure(fig, path)
