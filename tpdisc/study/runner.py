"""Running a study stage by stage, resuming where a previous session stopped, and saying
how far a study folder has got.

A stage is done when its ``results/STAGE.json`` exists: it is written (atomically) after
the stage's last simulation and its figures, so a study killed at any moment, SIGKILL
included, reruns no finished stage; an unfinished one resumes from what its simulations
stored (the search from its archive, the analyses from the runs' analysis tables, the
other stages from ``study.sqlite``). The log in ``study.sqlite`` records, per session,
when each stage started, resumed, finished or was skipped, and how many simulations it
ran.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tpdisc.analysis.generalize import resolve_baselines
from tpdisc.config_tree import write_yaml
from tpdisc.domain.data import default_graph
from tpdisc.errors import ConfigError
from tpdisc.safefiles import hold_folder
from tpdisc.search.archive import Archive
from tpdisc.search.loop import Event
from tpdisc.study.analyses import ablation_stage, embeddings_stage, features_stage, volume_stage
from tpdisc.study.config import StudyConfig, resumed_config
from tpdisc.study.context import Advance, QuietUI, SearchDisplay, StudyContext
from tpdisc.study.layout import StudyDir, select_runs
from tpdisc.study.searches import search_figure, search_stage
from tpdisc.study.stages import (
    baselines_stage,
    best_stage,
    generalization_stage,
    performance_figures,
)
from tpdisc.study.store import StudyStore

Stage = Callable[[StudyContext], dict[str, Any]]


def _best_and_performance(ctx: StudyContext) -> dict[str, Any]:
    data = best_stage(ctx)
    baselines = ctx.folder.read_result("baselines")
    if baselines is None:  # stages run in order: cannot happen but through a hand edit
        raise ConfigError(f"{ctx.folder.result('baselines')}: missing; rerun the study")
    with ctx.folder.reading("baselines"):
        data["pairwise"] = performance_figures(ctx, baselines, data)
    return data


def _search_and_figure(ctx: StudyContext) -> dict[str, Any]:
    data = search_stage(ctx)
    search_figure(data, ctx.folder.figure("search.png"))
    return data


STAGES: tuple[tuple[str, Stage], ...] = (
    ("baselines", baselines_stage),
    ("search", _search_and_figure),
    ("best", _best_and_performance),
    # Features before the ablation: their logged pairs are stored with the same summaries,
    # so the ablation of the same runs finds those of its seeds already simulated.
    ("features", features_stage),
    ("ablation", ablation_stage),
    ("volume", volume_stage),
    ("embeddings", embeddings_stage),
    ("generalization", generalization_stage),
)
STAGE_NAMES = tuple(name for name, _ in STAGES)


@dataclass(frozen=True)
class _CountedSearch:
    display: SearchDisplay
    counter: _Counting

    def event(self, event: Event) -> None:
        self.display.event(event)

    def simulation(self) -> None:
        self.counter.count()
        self.display.simulation()


class _Counting:
    """The study's display, counting the simulations each stage runs and those it took
    from the search's records instead (for the log)."""

    def __init__(self, ui: Any) -> None:
        self.ui = ui
        self.simulations = 0
        self.recorded = 0
        self._lock = threading.Lock()  # searches running at once count from their threads

    def count(self) -> None:
        with self._lock:
            self.simulations += 1

    def reuse(self, n: int) -> None:
        with self._lock:
            self.recorded += n

    def say(self, text: str) -> None:
        self.ui.say(text)

    @contextmanager
    def progress(self, total: int, description: str) -> Iterator[Advance]:
        with self.ui.progress(total, description) as advance:

            def counted(label: str) -> None:
                self.count()
                advance(label)

            yield counted

    @contextmanager
    def search(self, total: int, done: int, sims: int, label: str = "") -> Iterator[SearchDisplay]:
        with self.ui.search(total, done, sims, label) as display:
            yield _CountedSearch(display, self)


def open_config(out: Path, requested: StudyConfig | None) -> StudyConfig:
    """The study of folder ``out``: the stored one when it exists (with what a rerun may
    change taken from ``requested``), else ``requested`` (None: the defaults)."""
    folder = StudyDir(out)
    if folder.config.is_file():
        stored = StudyConfig.from_dict(folder.settings(), str(folder.config))
        return resumed_config(stored, requested)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out}: not empty and not a study folder (no study.yaml)")
    return requested if requested is not None else StudyConfig()


def run_study(
    out: Path,
    requested: StudyConfig | None = None,
    ui: Any = None,
    after_stage: Callable[[str], None] | None = None,
) -> StudyConfig:
    """Run (or resume) the study in folder ``out``; returns its config. ``after_stage``
    is called with each stage's name once its result is written (the report is built
    after the last one by the caller: see :mod:`tpdisc.study.publish`)."""
    config = open_config(out, requested)
    folder = StudyDir(out)
    folder.root.mkdir(parents=True, exist_ok=True)
    with hold_study(folder):
        write_yaml(folder.config, config, folder.root)
        _run_stages(folder, config, ui, after_stage)
    return config


@contextmanager
def hold_study(folder: StudyDir) -> Iterator[None]:
    """The study folder to this process alone while the block runs: two sessions at once
    would run the same stages twice and race for the same files."""
    with hold_folder(
        folder.root,
        "another tpdisc study is running in this folder ({holder}); wait for it to end "
        "('tpdisc study --status' shows how far it is)",
    ):
        yield


def _run_stages(
    folder: StudyDir,
    config: StudyConfig,
    ui: Any,
    after_stage: Callable[[str], None] | None,
) -> None:
    graph = default_graph(config.recipes)
    counting = _Counting(ui if ui is not None else QuietUI())
    with StudyStore(folder.database) as store, config.executor.open() as pool:
        ctx = StudyContext(config, folder, store, graph, pool, counting)
        earlier = {e["stage"] for e in store.events() if e["event"] in ("started", "resumed")}
        for name, stage in STAGES:
            if folder.result(name).is_file():
                store.log(name, "skipped", "done in an earlier session")
                counting.say(f"{name}: done earlier, skipped")
                continue
            store.log(name, "resumed" if name in earlier else "started")
            counting.say(f"{name}: {'resuming' if name in earlier else 'starting'}")
            counting.simulations = counting.recorded = 0
            data = stage(ctx)
            folder.write_result(name, data)
            detail = f"{counting.simulations} simulations this session"
            if counting.recorded:
                detail += f", {counting.recorded} more taken from the search's records"
            store.log(name, "finished", detail)
            if after_stage is not None:
                after_stage(name)


@dataclass(frozen=True)
class StageTiming:
    """The wall time a stage took and the simulations it ran, over the sessions that
    finished it (a session killed inside a stage counts neither its time nor its
    simulations: what it stored was reused, so the finishing session ran less), and the
    simulations it took from the search's records instead of running them."""

    seconds: float
    simulations: int
    recorded: int = 0


_RECORDED = re.compile(r"(\d{1,15}) more taken from the search's records")


def stage_timings(events: list[dict[str, Any]]) -> dict[str, StageTiming]:
    """Each finished stage's timing, from a study's ``events`` (:meth:`StudyStore.events`)."""
    began: dict[tuple[int, str], datetime] = {}
    out: dict[str, StageTiming] = {}
    for event in events:
        key = (event["session"], event["stage"])
        when = datetime.fromisoformat(event["time"])
        if event["event"] in ("started", "resumed"):
            began[key] = when
        elif event["event"] == "finished" and key in began:
            counted = re.match(r"(\d{1,15}) ", event["detail"])
            sims = int(counted.group(1)) if counted else 0
            recorded = _RECORDED.search(event["detail"])
            earlier = out.get(event["stage"], StageTiming(0.0, 0))
            out[event["stage"]] = StageTiming(
                earlier.seconds + (when - began.pop(key)).total_seconds(),
                earlier.simulations + sims,
                earlier.recorded + (int(recorded.group(1)) if recorded else 0),
            )
    return out


@dataclass(frozen=True)
class StageStatus:
    name: str
    state: str  # done, running or interrupted, pending
    detail: str


def study_status(out: Path) -> list[StageStatus]:
    """How far the study in ``out`` has got, stage by stage."""
    folder = StudyDir(out)
    if not folder.config.is_file():
        raise ConfigError(f"{out}: not a study folder (no study.yaml)")
    config = StudyConfig.from_dict(folder.settings(), str(folder.config))
    with StudyStore(folder.database) as store:
        events = store.events()
        counts = {name: store.count(name) for name in ("baselines", "best", "generalization")}
    timings = stage_timings(events)
    out_list = []
    for name in STAGE_NAMES:
        mine = [e for e in events if e["stage"] == name and e["event"] != "skipped"]
        if folder.result(name).is_file():
            finished = [e for e in mine if e["event"] == "finished"]
            when = finished[-1]["time"] if finished else "?"
            timing = timings.get(name)
            took = ""
            if timing is not None:
                took = f" ({_duration(timing.seconds)}, {timing.simulations:,} simulations"
                if timing.recorded:
                    took += f", {timing.recorded:,} taken from the search's records"
                took += ")"
            out_list.append(StageStatus(name, "done", f"finished {when}{took}"))
            continue
        state = "started" if mine else "pending"
        out_list.append(StageStatus(name, state, _progress_detail(name, config, folder, counts)))
    report = folder.report / "index.html"
    out_list.append(
        StageStatus(
            "report",
            "done" if report.is_file() else "pending",
            str(report) if report.is_file() else "",
        )
    )
    return out_list


def _progress_detail(
    name: str, config: StudyConfig, folder: StudyDir, counts: dict[str, int]
) -> str:
    if name == "search":
        parts = []
        for ref in folder.runs(config.runs):
            done = 0
            if (ref.path / Archive.FILE_NAME).is_file():
                with Archive(ref.path / Archive.FILE_NAME, readonly=True) as archive:
                    done = archive.last_iteration()
            parts.append(f"{ref.label} {done}/{config.search.iterations}")
        return "iterations: " + ", ".join(parts)
    if name == "baselines":
        total = len(resolve_baselines(config.baselines.protocols)) * config.baselines.sims
        return f"{counts[name]}/{total} simulations stored"
    if name == "best":
        total = 2 * config.runs * config.best.sims
        return f"{counts[name]}/{total} simulations stored"
    if name == "generalization":
        return f"{counts[name]} simulations stored"
    detail = "results stored per protocol in the runs' archives"
    stage = getattr(config, name, None)
    runs = getattr(stage, "runs", None)
    if isinstance(runs, str):
        recorded = size = 0
        for ref in select_runs(folder.runs(config.runs), runs):
            if (ref.path / Archive.FILE_NAME).is_file():
                with Archive(ref.path / Archive.FILE_NAME, readonly=True) as archive:
                    n, nbytes = archive.record_sizes()
                recorded, size = recorded + n, size + nbytes
        if recorded:
            detail += (
                f"; the search kept records of {recorded:,} protocols "
                f"({size / 1e6:.1f} MB), whose originals are not simulated again"
            )
    return detail


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
