"""The study's search stage: its K evolution and K generation-only runs, and their figure.

Offline searches run two at a time on the study's workers. A search is sequential (each
iteration's proposal reads the archive the last one wrote), so alone it leaves a core idle
whenever an iteration waits for its slowest simulation, checks a candidate or proposes the
next; a second search fills those gaps (the ``paper`` preset's slice on 2 cores: 11.4 min
for its two searches against 11.6 one after another; docs/study.md). Each run's archive
comes out as it would alone: a search's simulations depend on its seeds only. Searches
with a language model run one after another, so that a scripted or rate-limited endpoint
sees one conversation at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from tpdisc.analysis.plots import plain_figures
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.search.archive import Archive
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import Event, open_run_dir
from tpdisc.search.pick import Pick, run_pick
from tpdisc.search.run import evolve
from tpdisc.sim.evaluate import prepare_simulation
from tpdisc.study.context import SearchDisplay, StudyContext
from tpdisc.study.layout import RunRef

SEARCHES_AT_ONCE = 2  # the gaps are a few per cent of a search's time: one more fills them


class _Halted(Exception):
    """Raised in a search's thread after its iteration, once another search has failed."""


class _HaltableDisplay:
    """A search's display that ends the search after its current iteration once ``halt``
    is set (for executors that cannot interrupt a run)."""

    def __init__(self, display: SearchDisplay, halt: threading.Event) -> None:
        self.display = display
        self.halt = halt

    def event(self, event: Event) -> None:
        self.display.event(event)
        if self.halt.is_set():
            raise _Halted

    def simulation(self) -> None:
        self.display.simulation()


def search_stage(ctx: StudyContext) -> dict[str, Any]:
    """Every run's search, each resumed from its archive if a previous session began it,
    then each run's summary, in run order."""
    pending = []
    for ref in ctx.runs:
        wanted = ctx.config.run_config(ref.kind == "generation", ref.index)
        config = open_run_dir(ref.path, wanted, {"executor": ctx.config.executor})
        with Archive(ref.path / Archive.FILE_NAME) as archive:
            done = archive.last_iteration()
        if done < config.iterations:
            pending.append((ref, config, done))
    if pending:
        # The agents' prior, once in this process, before any search thread needs it.
        first = pending[0][1]
        prepare_simulation(make_domain(ctx.graph, first.sim.variant), first.sim_config())
    at_once = SEARCHES_AT_ONCE if _concurrent(ctx, [c for _, c, _ in pending]) else 1
    if at_once == 1:
        for ref, config, done in pending:
            _search(ctx, ref, config, done, threading.Event())
    else:
        _searches_at_once(ctx, pending, at_once)
    return {
        "runs": [_summary(ctx, ref) for ref in ctx.runs],
        "iterations": ctx.config.search.iterations,
    }


def _concurrent(ctx: StudyContext, configs: list[SearchConfig]) -> bool:
    return (
        len(configs) > 1
        and ctx.executor.concurrent
        and all(config.proposer == "offline" for config in configs)
    )


def _searches_at_once(
    ctx: StudyContext, pending: list[tuple[RunRef, SearchConfig, int]], at_once: int
) -> None:
    """The pending searches, ``at_once`` at a time in run order, sharing the executor. The
    first failure (or Ctrl-C) interrupts the others' simulations, and is raised once every
    search has stopped; each archive keeps its finished iterations."""
    halt = threading.Event()
    with ThreadPoolExecutor(at_once, thread_name_prefix="search") as threads:
        futures: list[Future[None]] = [
            threads.submit(_search, ctx, ref, config, done, halt) for ref, config, done in pending
        ]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
            for future in futures:
                error = future.exception() if future.done() else None
                if error is not None:
                    raise error
        except BaseException:
            halt.set()
            for future in futures:
                future.cancel()
            ctx.executor.interrupt()
            wait(futures)
            raise


def _search(
    ctx: StudyContext, ref: RunRef, config: SearchConfig, done: int, halt: threading.Event
) -> None:
    if halt.is_set():
        return
    ctx.ui.say(f"search {ref.label} ({ref.kind}): iteration {done + 1} of {config.iterations}")
    with ctx.ui.search(config.iterations, done, config.sims, ref.label) as display:
        summary = evolve(
            ref.path,
            config,
            ctx.executor,
            recipes=ctx.config.recipes,
            on_event=_HaltableDisplay(display, halt).event,
            on_simulation=display.simulation,
        )
    if summary.stopped:
        raise ConfigError(f"search {ref.label} stopped: {summary.stopped}")


def _summary(ctx: StudyContext, ref: RunRef) -> dict[str, Any]:
    with Archive(ref.path / Archive.FILE_NAME, readonly=True) as archive:
        rows = archive.summaries(valid_only=True)
        last = archive.last_iteration()
        try:  # the run's best, as everywhere (tpdisc.search.pick)
            pick: Pick | None = run_pick(archive)
        except ConfigError:  # nothing valid of its own yet
            pick = None
    valid = [c for c in rows if c.mode != "seed"]
    seeds = [c for c in rows if c.mode == "seed"]
    iterations, best = _best_so_far(valid, last)
    return {
        "label": ref.label,
        "kind": ref.kind,
        "path": str(ref.path.relative_to(ctx.folder.root)),
        "iterations": iterations,
        "best_so_far": best,
        "valid_protocols": len(valid),
        "best_baseline": max((c.fitness for c in seeds), default=None),
        "best": None
        if pick is None
        else {"id": pick.protocol_id, "name": pick.name, "fitness": pick.fitness},
    }


def _best_so_far(valid: list[Any], last: int) -> tuple[list[int], list[float | None]]:
    """The best fitness the search's own protocols reached by each iteration (the seed
    baselines are drawn apart, as a line: with them, the curve hides what the search
    found until it beats them)."""
    by_iteration: dict[int, float] = {}
    for c in valid:
        by_iteration[c.iteration] = max(by_iteration.get(c.iteration, -np.inf), c.fitness)
    best, current = [], -np.inf
    for i in range(1, last + 1):
        current = max(current, by_iteration.get(i, -np.inf))
        best.append(float(current) if np.isfinite(current) else None)
    return list(range(1, last + 1)), best


def search_figure(data: Mapping[str, Any], path: Any) -> Any:
    """Best fitness so far over iterations, one line per run, solid for evolution."""
    import matplotlib.pyplot as plt

    from tpdisc.analysis.plots import save_figure

    plain_figures()

    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    for k, run in enumerate(data["runs"]):
        style = "-" if run["kind"] == "evolution" else "--"
        ax.step(run["iterations"], run["best_so_far"], where="post", ls=style,
                color=f"C{k % 10}", label=f"{run['label']} ({run['kind']})")  # fmt: skip
    baselines = [r["best_baseline"] for r in data["runs"] if r["best_baseline"] is not None]
    if baselines:
        ax.axhline(max(baselines), color="grey", lw=1, ls=":", label="best seed baseline")
    ax.set_xlabel("iteration")
    ax.set_ylabel("best fitness so far (mean final coverage)")
    ax.set_title("Search: best fitness per iteration and run")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return save_figure(fig, path)
