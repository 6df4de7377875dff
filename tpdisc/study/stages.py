"""The stages of a study that simulate: baselines, the searches, each run's best protocol
over the long horizon, and the generalization suite.

Each stage function takes the :class:`StudyContext`, runs what the study lacks (a search
resumes from its archive, cells from ``study.sqlite``), draws its figures, and returns
its numbers as plain data, which the runner writes as ``results/STAGE.json`` last.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from tpdisc.analysis.embeddings import best_of, run_protocols
from tpdisc.analysis.generalize import (
    Generalization,
    SettingResult,
    generalization_figure,
    resolve_baselines,
    runnable,
    select_settings,
)
from tpdisc.analysis.plots import coverage_figure, pairwise_figure
from tpdisc.analysis.stats import pairwise
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import STANDARD_BASELINES, BaselineProtocol
from tpdisc.safefiles import checked, write_file
from tpdisc.sandbox import load_protocols
from tpdisc.sim.config import EvaluationConfig
from tpdisc.sim.evaluate import Evaluation, prepare_simulation, sem
from tpdisc.sim.run import prepare_evaluation
from tpdisc.study.context import StudyContext
from tpdisc.study.store import Cell, Stored

LLM_SKIPPED = (
    "LLM agents need a chat endpoint, which a study does not take: run 'tpdisc analyze "
    "generalize DIR/best/*.py --settings llm --llm-base-url URL --llm-model MODEL'"
)


def _summaries_json(name: str, kind: str, got: Mapping[int, Stored], horizon: int) -> dict:
    """One protocol's simulations over the long horizon, as the report and exports read
    them: finals at the search's horizon and at the long one, the mean curve ± sem."""
    ok = {seed: s.summary for seed, s in sorted(got.items()) if s.summary is not None}
    curves = np.array([s.curve for s in ok.values()], dtype=float)
    return {
        "name": name,
        "kind": kind,
        "seeds": list(ok),
        "final_horizon": [int(s.curve[horizon]) for s in ok.values()],
        "final_long": [int(s.final) for s in ok.values()],
        "curve_mean": curves.mean(axis=0).tolist() if len(ok) else [],
        "curve_sem": [sem(col) for col in curves.T] if len(ok) else [],
        "errors": {str(seed): s.error for seed, s in got.items() if s.error is not None},
    }


def _evaluation(entry: Mapping[str, Any], got: Mapping[int, Stored], steps: int) -> Evaluation:
    """An :class:`Evaluation` of the first ``steps`` steps, for the shared figures."""
    ok = [s.summary for _, s in sorted(got.items()) if s.summary is not None]
    return Evaluation(
        protocol=entry["name"],
        seeds=[s.seed for s in ok],
        final=[s.curve[steps] for s in ok],
        curves=[list(s.curve[: steps + 1]) for s in ok],
    )


def baselines_stage(ctx: StudyContext) -> dict[str, Any]:
    """Every baseline chosen, over the long horizon."""
    config = ctx.config
    names = resolve_baselines(config.baselines.protocols)
    sim = replace(config.search.sim, n_steps=config.horizon_long)
    domain = make_domain(ctx.graph, sim.variant)
    seeds = tuple(range(config.baselines.sims))
    cells = [Cell(name, domain, sim, BaselineProtocol(name), seeds) for name in names]
    prepare_simulation(domain, sim)
    with ctx.ui.progress(ctx.store.missing("baselines", cells), "baselines") as advance:
        got = ctx.store.simulate("baselines", cells, ctx.executor, advance)
    protocols = [
        _summaries_json(
            name,
            "standard" if name in STANDARD_BASELINES else "extended",
            got[name],
            config.horizon,
        )
        for name in names
    ]
    return {"horizon": config.horizon, "long_steps": config.horizon_long, "protocols": protocols}


def best_stage(ctx: StudyContext) -> dict[str, Any]:
    """Each run's best protocol (its pick, :mod:`tpdisc.search.pick`) over the long horizon;
    its code is kept as ``best/LABEL.py``. Also the performance figures: coverage curves of
    the baselines and the best protocols, and their pairwise comparison at the search's
    horizon."""
    config = ctx.config
    sim = replace(config.search.sim, n_steps=config.horizon_long)
    domain = make_domain(ctx.graph, sim.variant)
    seeds = tuple(range(config.best.sims))
    ctx.folder.folder(ctx.folder.best)
    found, notes = [], []
    for ref in ctx.runs:
        try:
            best = best_of(run_protocols(ref.path, ref.label))
        except ConfigError as err:
            notes.append(f"{ref.label}: {err}")
            continue
        path = write_file(ctx.folder.best / f"{ref.label}.py", best.code, ctx.folder.root)
        found.append((ref, best, path))
    specs = load_protocols([str(p) for _, _, p in found], sandbox=config.search.sandbox)
    cells = [
        Cell(ref.label, domain, sim, spec, seeds)
        for (ref, _, _), spec in zip(found, specs, strict=True)
    ]
    prepare_simulation(domain, sim)
    with ctx.ui.progress(ctx.store.missing("best", cells), "best protocols") as advance:
        got = ctx.store.simulate("best", cells, ctx.executor, advance)
    protocols = []
    for ref, best, path in found:
        entry = _summaries_json(ref.label, ref.kind, got[ref.label], config.horizon)
        entry.update(protocol=best.name, fitness=best.fitness,
                     file=str(path.relative_to(ctx.folder.root)))  # fmt: skip
        protocols.append(entry)
    return {"horizon": config.horizon, "long_steps": config.horizon_long,
            "protocols": protocols, "notes": notes}  # fmt: skip


def performance_figures(
    ctx: StudyContext, baselines: Mapping[str, Any], best: Mapping[str, Any]
) -> dict[str, Any]:
    """Coverage over the long horizon and the pairwise matrix at the search's horizon, of
    the best protocols and the standard baselines; returns the comparison's numbers."""
    entries = [*best["protocols"], *[b for b in baselines["protocols"] if b["kind"] == "standard"]]
    stored = {**ctx.store.stored("baselines"), **ctx.store.stored("best")}
    long = [_evaluation(e, stored[e["name"]], ctx.config.horizon_long) for e in entries]
    coverage_figure(long, ctx.folder.figure("coverage.png"),
                    f"Coverage over {ctx.config.horizon_long} steps (search horizon "
                    f"{ctx.config.horizon})")  # fmt: skip
    ranked = sorted(entries, key=lambda e: -float(np.mean(e["final_horizon"] or [0])))
    comparison = pairwise([e["name"] for e in ranked], [e["final_horizon"] for e in ranked])
    if len(ranked) > 1:
        pairwise_figure(comparison, ctx.folder.figure("pairwise.png"))
    return comparison.to_json()


def generalization_stage(ctx: StudyContext) -> dict[str, Any]:
    """The best protocol of each chosen run against the baselines in every setting that
    runs without an LLM endpoint; each simulation stored as it arrives."""
    config = ctx.config
    stage = config.generalization
    chosen = [ctx.folder.best / f"{r.label}.py" for r in ctx.runs_of(stage.runs)]
    # The study's own files only: a link there would be read as a protocol.
    files = [str(checked(p, ctx.folder.root)) for p in chosen if os.path.lexists(p)]
    if not files:
        raise ConfigError("generalization: no run has a best protocol (see the best stage)")
    names = resolve_baselines(stage.baselines)
    base = EvaluationConfig(
        protocols=tuple(files), sims=stage.sims, sim=config.search.sim,
        sandbox=config.search.sandbox, executor=config.executor, recipes=config.recipes,
    )  # fmt: skip
    active, skipped = runnable(select_settings(stage.settings), None, LLM_SKIPPED)
    plans = []
    for setting in active:
        evaluation = setting.apply(base, [*files, *names], None)
        domain = make_domain(ctx.graph, evaluation.sim.variant)
        prepared = prepare_evaluation(evaluation, domain)
        cells = [
            Cell(f"{setting.name}/{name}", domain, evaluation.sim, spec, tuple(evaluation.seeds))
            for spec, name in zip(prepared.specs, prepared.names, strict=True)
        ]
        plans.append((setting, prepared, cells, len(domain.reachable)))
    total = sum(ctx.store.missing("generalization", cells) for _, _, cells, _ in plans)
    results = []
    failed: dict[str, str] = {}
    with ctx.ui.progress(total, "generalization") as advance:
        for setting, prepared, cells, reachable in plans:
            got = ctx.store.simulate("generalization", cells, ctx.executor, advance)
            evaluations = []
            for cell, name in zip(cells, prepared.names, strict=True):
                errors = [s.error for s in got[cell.item].values() if s.error]
                if errors:
                    failed[cell.item] = errors[0]
                evaluations.append(_evaluation({"name": name}, got[cell.item], cell.sim.n_steps))
            k = len(files)
            results.append(
                SettingResult(setting, tuple(evaluations[:k]), tuple(evaluations[k:]), reachable)
            )
    # Files named inside the folder, so that the results stay true when the folder moves.
    inside = tuple(str(Path(f).relative_to(ctx.folder.root)) for f in files)
    recorded = {**base.to_dict(), "protocols": list(inside)}
    study = Generalization(tuple(results), tuple(skipped), inside, names, stage.sims, recorded)
    if results:
        generalization_figure(study, ctx.folder.figure("generalization.png"))
    return {**study.to_json(), "failed": failed}
