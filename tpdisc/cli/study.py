"""``tpdisc study``: the whole study from one YAML file, resumable, with a browsable report."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tpdisc.cli.analyze import AnalyzeSettings
from tpdisc.cli.options import EXECUTOR_OPTIONS, RecipesOpt
from tpdisc.cli.output import console, err_console, progress_bar, user_errors
from tpdisc.cli.settings import Options, print_yaml, with_options
from tpdisc.config_tree import flatten
from tpdisc.errors import ConfigError

StudyFileArg = Annotated[
    Path | None,
    typer.Argument(
        help="The study's YAML file: the settings that differ from the preset (or from the "
        "built-in defaults, the study's own sizes). Print a complete one with "
        "--print-config.",
        metavar="STUDY.yaml",
        show_default=False,
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="The study's folder. A folder holding a study resumes it (stages done are "
        "skipped; only the executor and --recipes may change).",
        show_default=False,
    ),
]
PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="Start from a shipped preset: smoke (the whole pipeline at reduced sizes with "
        "the offline proposer, minutes on 2 cores) or paper (the study's sizes: 5 + 5 runs "
        "of 200 iterations, 30 sims, 10 agents, 150 steps).",
        show_default=False,
    ),
]
PrintConfigOpt = Annotated[
    bool,
    typer.Option("--print-config", help="Print the study's complete config as YAML and stop."),
]
StatusOpt = Annotated[
    Path | None,
    typer.Option(
        "--status",
        help="Show how far the study in this folder has got, stage by stage, and stop.",
        show_default=False,
    ),
]


class _CommandLineUI:
    """The study's progress on stderr: a line per stage, rich bars for simulations.
    Searches running at once share one display of bars (a console has one live display)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bars: Any = None
        self._searches = 0

    def say(self, text: str) -> None:
        err_console.print(text, highlight=False)

    @contextmanager
    def progress(self, total: int, description: str) -> Iterator[Any]:
        if total == 0:
            err_console.print(f"{description}: every simulation is stored already")
            yield lambda label: None
            return
        with progress_bar(total, description) as advance:
            yield advance

    @contextmanager
    def search(self, total: int, done: int, sims: int, label: str = "") -> Iterator[Any]:
        from tpdisc.search.progress import SearchProgress, search_bars

        with self._lock:
            if self._bars is None:
                self._bars = search_bars(err_console)
                if err_console.is_terminal:
                    self._bars.start()
            self._searches += 1
            bars = self._bars
        try:
            with SearchProgress(err_console, total, done, sims, label=label, bars=bars) as shown:
                yield shown
        finally:
            with self._lock:
                self._searches -= 1
                if not self._searches:
                    self._bars.stop()
                    self._bars = None


def _requested(
    study_file: Path | None, preset: str | None, out: Path | None, options: Options
) -> Any:
    from tpdisc.study.config import load_study_config
    from tpdisc.study.layout import StudyDir

    if study_file is None and not preset and out is not None and StudyDir(out).config.is_file():
        study_file = StudyDir(out).config  # a rerun: the folder's own complete settings
    return load_study_config(study_file, preset, flatten(options.overrides()))


def _plan_line(config: Any, out: Path) -> str:
    search = config.search
    sim = search.sim
    agents = ", ".join(f"{n} {kind}" for kind, n in sim.agents)
    return (
        f"study {out}: {config.runs} evolution + {config.runs} generation-only runs of "
        f"{search.iterations} iterations ({search.proposer} proposer); {agents} agents × "
        f"{sim.n_steps} steps × {search.sims} sims; curves to {config.horizon_long} steps"
    )


@user_errors
@with_options(EXECUTOR_OPTIONS, defaults=AnalyzeSettings())
def study_cmd(
    study_file: StudyFileArg = None,
    out: OutOpt = None,
    preset: PresetOpt = None,
    print_config: PrintConfigOpt = False,
    status: StatusOpt = None,
    recipes: RecipesOpt = None,
    *,
    options: Options,
) -> None:
    """Run a whole study into one folder: baselines to twice the horizon, K evolution and
    K generation-only searches, each run's best protocol at both horizons, the matched
    ablation, behavioural features, volume and code embeddings over the generation-only
    runs, the generalization suite; then long-format exports (Parquet and CSV) and a
    static HTML report (OUT/report/index.html). Every stage resumes after an interruption,
    even SIGKILL: rerun the same command."""
    if status is not None:
        _print_status(status)
        return
    config = _requested(study_file, preset, out, options)
    if recipes is not None:
        config = replace(config, recipes=str(recipes))
    if print_config:
        print_yaml(config)
        return
    if out is None:
        raise ConfigError("give the study's folder: --out DIR")
    from tpdisc.study.layout import StudyDir
    from tpdisc.study.portraits import portrait_count
    from tpdisc.study.publish import publish
    from tpdisc.study.runner import open_config, run_study

    config = open_config(out, config)
    err_console.print(_plan_line(config, out), highlight=False)
    run_study(out, config, _CommandLineUI())
    folder = StudyDir(out)
    # The report simulates a few seeds per best protocol for its portraits (once).
    total = portrait_count(folder.read_result("best"), config)
    with progress_bar(total, "portraits") as advance:
        index = publish(folder, on_simulation=advance)
    console.print(f"report: {index}")
    console.print(f"exports: {out / 'exports'}")


def _print_status(out: Path) -> None:
    from tpdisc.study.runner import study_status

    table = Table(title=f"Study {out}")
    for header in ("stage", "state", "progress"):
        table.add_column(header)
    for row in study_status(out):
        table.add_row(row.name, row.state, row.detail)
    console.print(table)
