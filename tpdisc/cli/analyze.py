"""``tpdisc analyze``: studies of the protocols of one or more runs of ``tpdisc evolve``.

Every command re-simulates what it needs through an executor, stores each protocol's
results in the run's archive as soon as they are in (a rerun, or another analysis of the
same simulations, runs nothing again; an interrupted one resumes), writes its numbers as
JSON with ``--json OUT`` and its figure into ``--plot DIR``. ``--sims`` and ``--steps``
shrink the simulations for a quick look (or a test); results under other steps are
stored apart and do not compare with the archive's fitness. ``features`` and ``volume``
also take protocol files and baseline names, simulated as ``tpdisc evaluate`` would with
the same simulation options (their results are kept for the command's duration only).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from tpdisc.cli.options import (
    EXECUTOR_OPTIONS,
    PROTOCOL_GROUPS,
    Opt,
    RecipesOpt,
)
from tpdisc.cli.output import (
    JsonTarget,
    err_console,
    holding,
    human_console,
    json_on_stdout,
    json_option,
    progress_bar,
    user_errors,
)
from tpdisc.cli.settings import Options, with_options
from tpdisc.errors import ConfigError
from tpdisc.executors.base import Executor
from tpdisc.sim.config import ExecutorConfig

analyze_app = typer.Typer(
    help="Analyse the protocols of search runs: state-awareness ablation, behavioural "
    "features, volume, generalization, code embeddings.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@dataclass(frozen=True)
class AnalyzeSettings:
    """The settings the analyses share with other commands: where simulations run."""

    executor: ExecutorConfig = field(default_factory=ExecutorConfig)


RunDirsArg = Annotated[
    list[Path],
    typer.Argument(help="Run directories of tpdisc evolve.", metavar="RUN_DIR", show_default=False),
]
PlotOpt = Annotated[
    Path | None,
    typer.Option("--plot", help="Save the figure (PNG) into this folder.", show_default=False),
]
StepsOpt = Annotated[
    int | None,
    typer.Option(
        "--steps",
        min=1,
        help="Steps per simulation instead of the run's own (quick looks, tests; stored "
        "apart, not comparable with the archive's fitness).",
        show_default=False,
    ),
]
BaselinesOpt = Annotated[
    bool,
    typer.Option(
        "--include-baselines",
        help="Count each run directory's five seeded baselines among its protocols.",
    ),
]
TargetsArg = Annotated[
    list[str],
    typer.Argument(
        help="Run directories of tpdisc evolve (all their protocols), one protocol of a run "
        "(RUN_DIR:NAME), protocol .py files or baseline names, in any mix. Files, baselines "
        "and RUN_DIR:NAME are simulated as 'tpdisc evaluate' would (files sandboxed unless "
        "--trusted), with the simulation options below; given with a run directory, those "
        "options override its own settings (results stored apart).",
        metavar="RUN_DIR|PROTOCOL...",
        show_default=False,
    ),
]
TargetSimsOpt = Annotated[
    int,
    typer.Option(
        "--sims",
        min=1,
        help="Simulations per protocol (and condition): seeds SEED..SEED+SIMS-1 for protocol "
        "files and baselines (default 30); for a run directory's protocols, the first SIMS "
        "of their evaluation seeds (default: all of them).",
        show_default=False,
    ),
]
TARGET_OPTIONS: tuple[Opt, ...] = (Opt("sims", TargetSimsOpt, "sims"),)
# What features and volume share with evaluate and generalize: every option of the
# simulation, the first seed and --trusted.
TARGET_GROUPS = (TARGET_OPTIONS, *PROTOCOL_GROUPS)


def _evaluation_defaults() -> Any:
    from tpdisc.sim.config import EvaluationConfig

    return EvaluationConfig()


def _load_runs(
    run_dirs: Sequence[Path], recipes: Path | None, steps: int | None, baselines: bool
) -> list[Any]:
    from tpdisc.analysis.simulate import load_run
    from tpdisc.domain.data import default_graph

    graph = default_graph(recipes)  # once: every run reads the same recipe file
    return [load_run(d, graph=graph, n_steps=steps, include_baselines=baselines) for d in run_dirs]


@contextmanager
def _progress(description: str) -> Iterator[tuple[Callable[[int], None], Callable[[str], None]]]:
    """``(start, advance)``: the bar opens once the number of simulations to run is known
    (what the store already holds is not run), and only if there is any."""
    with ExitStack() as stack:
        bar: list[Callable[[str], None]] = []

        def start(total: int) -> None:
            if total == 0:
                err_console.print(f"{description}: every simulation is stored already")
            else:
                bar.append(stack.enter_context(progress_bar(total, description)))

        def advance(label: str) -> None:
            if bar:
                bar[0](label)

        yield start, advance


@contextmanager
def _simulating(
    executor: ExecutorConfig, description: str
) -> Iterator[tuple[Executor, Callable[[int], None], Callable[[str], None]]]:
    """The executor and a progress bar: ``(pool, start, advance)``."""
    with executor.open() as pool, _progress(description) as (start, advance):
        yield pool, start, advance


@contextmanager
def _targets(
    targets: Sequence[str], options: Options, recipes: Path | None, baselines: bool
) -> Iterator[tuple[list[Any], int | None, ExecutorConfig]]:
    """``(runs, n_sims, executor)``: the run directories among ``targets``, with the
    simulation options given applied, and one run of the protocol files and baseline
    names, whose store lives in a temporary folder for as long as the context lasts."""
    from tpdisc.analysis.simulate import given_protocols, load_run
    from tpdisc.domain.data import default_graph
    from tpdisc.protocols.baselines import BASELINES
    from tpdisc.search.pick import split_reference
    from tpdisc.sim.config import EvaluationConfig

    directories = [t for t in targets if Path(t).is_dir()]
    given = [t for t in targets if not Path(t).is_dir()]
    for target in given:
        known = target in BASELINES or target.endswith(".py") or Path(target).exists()
        if not known and split_reference(target) is None:
            raise ConfigError(
                f"{target}: not a run directory of tpdisc evolve, a protocol of one "
                f"(RUN_DIR:NAME), a protocol .py file nor a baseline name (looked for "
                f"{Path(target).absolute()})"
            )
    config = options.config(EvaluationConfig, {"protocols": given} if given else {})
    graph = default_graph(recipes)  # once: every run reads the same recipe file
    overrides = options.overrides().get("sim")
    runs = [
        load_run(d, graph=graph, include_baselines=baselines, sim_overrides=overrides)
        for d in directories
    ]
    n_sims = options["sims"] if "sims" in options.given else None
    with tempfile.TemporaryDirectory(prefix="tpdisc-analyze-") as folder:
        if given:
            runs.append(given_protocols(config, graph, folder))
        yield runs, n_sims, config.executor


def _finish(target: JsonTarget | None, data: dict[str, Any], *tables: RenderableType) -> Console:
    """Print the tables (unless the JSON takes stdout) and write the JSON; returns the
    console for the command's last messages."""
    out = human_console(target)
    if not json_on_stdout(target):
        for table in tables:
            out.print(table)
    if target is not None:
        target.write(data, say=out)
    return out


def _number(value: float | None, spec: str = ".2f") -> str:
    return "–" if value is None else format(value, spec)


@analyze_app.command("ablation")
@user_errors
@with_options(EXECUTOR_OPTIONS, defaults=AnalyzeSettings())
@holding("plot")
def ablation_cmd(
    run_dirs: RunDirsArg,
    top: Annotated[int, typer.Option("--top", min=0, help="Best protocols per run.")] = 20,
    bottom: Annotated[int, typer.Option("--bottom", min=0, help="Worst protocols per run.")] = 20,
    sims: Annotated[
        int,
        typer.Option("--sims", min=1, max=15, help="Comparison seeds: the first SIMS of 15–29."),
    ] = 15,
    steps: StepsOpt = None,
    include_baselines: BaselinesOpt = False,
    recipes: RecipesOpt = None,
    json_out: Annotated[
        str | None, json_option("each set's original and ablated coverage, every protocol's")
    ] = None,
    plot: PlotOpt = None,
    *,
    options: Options,
) -> None:
    """State-awareness ablation (docs/analysis.md): rank each run's protocols on seeds 0–14, run
    the top and bottom ones as written and as schedule replays on seeds 15–29, and test
    the paired difference (paired t-test over protocols)."""
    from tpdisc.analysis.ablation import COMPARE_SEEDS, ablation_figure, ablation_study

    target = JsonTarget.parse(json_out)
    runs = _load_runs(run_dirs, recipes, steps, include_baselines)
    executor = options.config(AnalyzeSettings).executor
    with _simulating(executor, "ablation") as (pool, start, advance):
        result = ablation_study(
            runs,
            pool,
            top=top,
            bottom=bottom,
            compare_seeds=COMPARE_SEEDS[:sims],
            on_start=start,
            on_simulation=advance,
        )
    for note in result.runs:
        if note.note:
            err_console.print(f"{note.run}: {note.note}", highlight=False)
    for key, error in result.failed.items():
        err_console.print(f"protocol {key} failed, left out: {error}", highlight=False)
    table = Table(
        title="State-awareness ablation (final coverage, mean ± sem over protocols)",
        caption="delta = ablated − original; p: paired t-test over protocols",
    )
    for header in ("set", "n", "original", "ablated", "delta", "p"):
        table.add_column(header, justify="left" if header == "set" else "right")
    for name, s in result.to_json()["sets"].items():
        table.add_row(
            name,
            str(s["n"]),
            f"{_number(s['original_mean'])} ± {_number(s['original_sem'])}",
            f"{_number(s['ablated_mean'])} ± {_number(s['ablated_sem'])}",
            _number(s["delta"], "+.2f"),
            _number(s["p"], ".3g"),
        )
    out = _finish(target, result.to_json(), table)
    if plot is not None:
        out.print(f"figure saved to {ablation_figure(result, plot / 'ablation.png')}")


@analyze_app.command("volume")
@user_errors
@with_options(*TARGET_GROUPS, defaults=_evaluation_defaults())
@holding("plot")
def volume_cmd(
    targets: TargetsArg,
    include_baselines: BaselinesOpt = False,
    recipes: RecipesOpt = None,
    json_out: Annotated[
        str | None, json_option("the correlation and every protocol's volume and fitness")
    ] = None,
    plot: PlotOpt = None,
    *,
    options: Options,
) -> None:
    """Volume (docs/analysis.md): novel memories received per agent against fitness, Spearman ρ,
    over the protocols of run directories, protocol files and baselines."""
    from tpdisc.analysis.volume import volume_figure, volume_study

    target = JsonTarget.parse(json_out)
    with (
        _targets(targets, options, recipes, include_baselines) as (runs, sims, executor),
        _simulating(executor, "volume") as (pool, start, advance),
    ):
        result = volume_study(runs, pool, n_sims=sims, on_start=start, on_simulation=advance)
    for key, error in result.failed.items():
        err_console.print(f"protocol {key} failed, left out: {error}", highlight=False)
    data = result.to_json()
    line = Text(
        f"volume: n = {result.n} protocols, Spearman ρ(novel received per agent, fitness) = "
        f"{_number(data['rho'], '+.3f')}, p = {_number(data['p'], '.3g')}"
    )
    out = _finish(target, data, line)
    if plot is not None:
        out.print(f"figure saved to {volume_figure(result, plot / 'volume.png')}")


@analyze_app.command("features")
@user_errors
@with_options(*TARGET_GROUPS, defaults=_evaluation_defaults())
@holding("plot")
def features_cmd(
    targets: TargetsArg,
    include_baselines: BaselinesOpt = False,
    recipes: RecipesOpt = None,
    json_out: Annotated[
        str | None, json_option("every feature's statistics and every protocol's values")
    ] = None,
    plot: PlotOpt = None,
    *,
    options: Options,
) -> None:
    """Behavioural features (docs/analysis.md): the 23 features of every valid protocol of run
    directories, and of protocol files and baselines, original and schedule replay;
    Spearman ρ of their difference with fitness, BH q, Cohen's d; with a few protocols,
    each one's values too."""
    from tpdisc.analysis.feature_study import feature_figure, feature_study, missing_features

    target = JsonTarget.parse(json_out)
    with (
        _targets(targets, options, recipes, include_baselines) as (runs, sims, executor),
        _simulating(executor, "features") as (pool, start, advance),
    ):
        start(sum(len(seeds) for seeds in missing_features(runs, sims).values()))
        study = feature_study(runs, pool, n_sims=sims, on_simulation=advance)
    for key, error in study.failed.items():
        err_console.print(f"protocol {key} failed, left out: {error}", highlight=False)
    table = Table(title=f"Behavioural features, {study.n_protocols} protocols")
    for column in (
        "feature",
        "group",
        "n",
        "ρ(orig − abl, fitness)",
        "q",
        "d",
        "ρ orig",
        "ρ abl",
        "reference ρ",
    ):
        table.add_column(column, justify="left" if column in ("feature", "group") else "right")
    for row in study.rows:
        table.add_row(
            row.name,
            row.group,
            str(row.n),
            f"{_number(row.rho, '+.2f')}{row.stars}",
            _number(row.q, ".3g"),
            _number(row.cohens_d),
            _number(row.rho_original, "+.2f"),
            _number(row.rho_ablated, "+.2f"),
            _number(row.reference_rho, "+.2f"),
        )
    few = 0 < len(study.protocols) <= FEW_PROTOCOLS
    out = _finish(target, study.to_json(), table, *([_values_table(study)] if few else []))
    if plot is not None:
        out.print(f"figure saved to {feature_figure(study, plot / 'features.png')}")


# Up to this many protocols, features also prints each one's values: with so few, the
# correlations say little (none below three protocols) and the values are the result.
FEW_PROTOCOLS = 6


def _values_table(study: Any) -> Table:
    from tpdisc.analysis.features import FEATURES

    table = Table(
        title="Feature values per protocol (original / ablated)",
        caption="fitness: mean final coverage; ablated: the schedule replayed with random content",
    )
    table.add_column("feature")
    for p in study.protocols:
        table.add_column(f"{p.name} ({_number(p.fitness, '.1f')})", justify="right")
    for feature in FEATURES:
        cells = []
        for p in study.protocols:
            original = p.values.get("original", {}).get(feature.name)
            ablated = p.values.get("ablated", {}).get(feature.name)
            cells.append(f"{_number(original, '.3g')} / {_number(ablated, '.3g')}")
        table.add_row(feature.name, *cells)
    return table
