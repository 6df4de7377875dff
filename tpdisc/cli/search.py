"""The ``evolve`` and ``archive`` commands: protocol search and its archive."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from tpdisc.cli.options import (
    CONFIG_OPTIONS,
    EXECUTOR_OPTIONS,
    SEARCH_LLM_OPTIONS,
    SIMULATION_GROUPS,
    Opt,
    RecipesOpt,
)
from tpdisc.cli.output import (
    JsonTarget,
    console,
    err_console,
    human_console,
    json_on_stdout,
    json_option,
    progress_bar,
    user_errors,
)
from tpdisc.cli.settings import Options, print_yaml, with_options
from tpdisc.errors import ConfigError
from tpdisc.executors.base import Executor
from tpdisc.search.config import SearchConfig
from tpdisc.sim.config import ExecutorConfig

if TYPE_CHECKING:
    from tpdisc.search.archive import Archive

# How many of its best protocols a search re-scores on fresh seeds when it ends.
EVOLVE_RESCORE_TOP = 3

SEARCH_OPTIONS: tuple[Opt, ...] = (
    Opt(
        "iterations",
        Annotated[
            int, typer.Option(min=1, help="Iterations in total; a resumed run may raise it.")
        ],
        "iterations",
    ),
    Opt(
        "warmup",
        Annotated[
            int | None,
            typer.Option(
                min=0,
                help="Warm-up iterations, shown the baselines (default: a quarter of all).",
                show_default=False,
            ),
        ],
        "warmup",
    ),
    Opt(
        "sims",
        Annotated[int, typer.Option(min=1, help="Simulations per protocol, seeds 0..SIMS-1.")],
        "sims",
    ),
    Opt(
        "seed",
        Annotated[int, typer.Option(min=0, help="Seed of the search's own choices.")],
        "seed",
    ),
    Opt(
        "generation_only",
        Annotated[
            bool,
            typer.Option(
                "--generation-only",
                help="Every iteration in warm-up style: independent protocols, no evolution.",
            ),
        ],
        "generation_only",
    ),
    Opt(
        "racing",
        Annotated[
            bool | None,
            typer.Option(
                "--racing/--no-racing",
                help="Score each candidate on its first --race-sims seeds and stop there when "
                "it is clearly below the --race-rank-th best protocol (mean + 2 sem under "
                "it); valid protocols keep their fitness on every seed. Default: on for "
                "offline evolution runs, off for LLM and generation-only runs (docs/search.md).",
                show_default=False,
            ),
        ],
        "racing",
    ),
    Opt(
        "race_sims",
        Annotated[int, typer.Option(min=1, help="Simulations of a race's first round.")],
        "race_sims",
    ),
    Opt(
        "race_rank",
        Annotated[
            int,
            typer.Option(min=1, help="A raced candidate must be able to reach this rank."),
        ],
        "race_rank",
    ),
    Opt(
        "surrogate_screen",
        Annotated[
            int,
            typer.Option(
                min=1,
                help="Offline proposer: children of the parent made per improve iteration, of "
                "which a model of the archive's fitness (randomised trees over the designs' "
                "genes) picks the one to score; 1: no model.",
            ),
        ],
        "surrogate_screen",
    ),
    Opt(
        "batch",
        Annotated[
            int,
            typer.Option(
                min=1,
                help="Iterations proposed from the same archive and scored together, for "
                "executors with more workers than one candidate has simulations (a Ray "
                "cluster); 1: each iteration sees all before it. A resumed run may change it.",
            ),
        ],
        "batch",
    ),
)


@dataclass(frozen=True)
class RescoreSettings:
    """Where the re-scoring of ``tpdisc archive --rescore`` runs its simulations."""

    executor: ExecutorConfig = field(default_factory=ExecutorConfig)


@contextmanager
def _bar(description: str) -> Iterator[tuple[Callable[[int], None], Callable[[str], None]]]:
    """``(start, advance)``: a progress bar that opens once the number of simulations is
    known, and only if there are any."""
    with ExitStack() as stack:
        bar: list[Callable[[str], None]] = []

        def start(total: int) -> None:
            if total:
                bar.append(stack.enter_context(progress_bar(total, description)))

        def advance(label: str) -> None:
            if bar:
                bar[0](label)

        yield start, advance


def rescore_and_report(
    run_dir: Path,
    top: int,
    pool: Executor,
    first_seed: int | None,
    recipes: Path | None,
    out: Console = console,
) -> None:
    """Re-score the run's ``top`` protocols on fresh seeds, then say on ``out`` which is
    best there."""
    from tpdisc.search.rescore import rescore

    with _bar("re-scoring on fresh seeds") as (start, advance):
        result = rescore(
            run_dir,
            top,
            pool,
            first_seed=first_seed,
            recipes=recipes,
            on_start=start,
            on_simulation=advance,
        )
    names = {c.id: c.name for c in result.top}
    for pid, error in result.failed.items():
        err_console.print(f"{names[pid]} failed on fresh seeds: {error}", highlight=False)
    verdict = result.verdict()
    if verdict is not None:
        out.print(verdict, highlight=False)


def pick_line(archive: Archive, run_dir: Path) -> str | None:
    """The run's pick, the protocol ``run_dir`` stands for wherever a protocol is taken
    (None before any protocol is valid)."""
    from tpdisc.search.pick import run_pick

    try:
        pick = run_pick(archive)
    except ConfigError:
        return None
    return (
        f"best: {pick.name}, {pick.why()}; '{run_dir}' stands for it ('tpdisc inspect "
        f"{run_dir}' shows it at work), '{run_dir}:NAME' for any other"
    )


@user_errors
@with_options(
    CONFIG_OPTIONS,
    SEARCH_OPTIONS,
    SEARCH_LLM_OPTIONS,
    *SIMULATION_GROUPS,
    defaults=SearchConfig(),
)
def evolve_cmd(
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir",
            help="Run directory (archive.sqlite, config.yaml, best_fitness.png). An existing "
            "one is resumed: only --iterations, the LLM connection and the executor may "
            "change. Default: a new runs/evolve-DATE-TIME.",
            show_default=False,
        ),
    ] = None,
    rescore: Annotated[
        bool,
        typer.Option(
            "--rescore/--no-rescore",
            help=f"When the search ends, re-score the {EVOLVE_RESCORE_TOP} best protocols it "
            "found on fresh seeds (the block after the search's), store the scores in the "
            "archive "
            "and say whether the best stays best there: the search's best fitness is biased "
            "upwards by its selection. 'tpdisc archive --rescore N' does it for more.",
        ),
    ] = True,
    recipes: RecipesOpt = None,
    *,
    options: Options,
) -> None:
    """Search for protocols: LLM-guided evolution, or the offline proposer without an LLM;
    then re-score the best protocols on fresh seeds (unless --no-rescore)."""
    from tpdisc.search.archive import Archive
    from tpdisc.search.listing import table
    from tpdisc.search.progress import SearchProgress
    from tpdisc.search.run import FIGURE_NAME, default_run_dir, evolve, resolve_config

    run_dir = run_dir or default_run_dir()
    config_file = options["config_file"]
    dry = bool(options["print_config"])
    config, resumed = resolve_config(run_dir, options, config_file, write=not dry)
    if dry:
        print_yaml(config)
        return
    with Archive(run_dir / Archive.FILE_NAME) as archive:
        done = archive.last_iteration()
    sim = config.sim
    agents = ", ".join(f"{n} {kind}" for kind, n in sim.agents)
    err_console.print(
        f"{'resuming' if resumed else 'starting'} {run_dir}: {config.proposer} proposer, "
        f"{agents} agents × {sim.n_steps} steps × {config.sims} sims, "
        f"iteration {done + 1} of {config.iterations}"
    )
    with config.executor.open() as pool:
        with SearchProgress(err_console, config.iterations, done, config.sims) as progress:
            summary = evolve(
                run_dir,
                config,
                pool,
                recipes=recipes,
                on_event=progress.event,
                on_simulation=progress.simulation,
            )
        if rescore and not summary.stopped:
            rescore_and_report(run_dir, EVOLVE_RESCORE_TOP, pool, None, recipes)
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        console.print(table(archive, limit=10))
        best = pick_line(archive, run_dir)
    console.print(f"figure saved to {run_dir / FIGURE_NAME}")
    if best is not None:
        console.print(best, highlight=False, soft_wrap=True)
    if summary.stopped:
        stopped = Text.assemble(("stopped:", "bold yellow"), f" {summary.stopped}")
        err_console.print(stopped, highlight=False)
        raise typer.Exit(1 if "endpoint" in summary.stopped else 0)


@user_errors
@with_options(EXECUTOR_OPTIONS, defaults=RescoreSettings())
def archive_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of tpdisc evolve.")],
    show: Annotated[
        str | None,
        typer.Option(
            "--show",
            help="Print this protocol's code, description and history. NAME as the table "
            "prints it: i0002 (iteration 2's proposal), i0002r1 (its first repair), paired "
            "(a seeded baseline); not the row ids of --json.",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    export: Annotated[
        tuple[str, Path] | None,
        typer.Option(
            "--export",
            help="Write the code of protocol NAME (as the table prints it, as for --show) to "
            "FILE, a runnable .py.",
            metavar="NAME FILE",
            show_default=False,
        ),
    ] = None,
    json_out: Annotated[
        str | None,
        json_option("the archive's protocols without their code (with --show: that one in full)"),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Save the best-fitness-over-iterations figure here (PNG).",
            show_default=False,
        ),
    ] = None,
    rescore: Annotated[
        int | None,
        typer.Option(
            "--rescore",
            min=1,
            help="First re-score the N best protocols the search found (by its fitness; its "
            "seeded baselines are not selected, so not re-scored) on fresh seeds, as many as "
            "the search used, under the run's own simulation, and store "
            "the scores in the archive; the table, --json ('rescored') and 'tpdisc report' "
            "show them beside the search's fitness. Protocols re-scored on the same seeds "
            "before are not simulated again.",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    rescore_seed: Annotated[
        int | None,
        typer.Option(
            "--rescore-seed",
            min=0,
            help="First fresh seed of --rescore (default: the one after the search's last "
            "seed); seeds the search used are refused.",
            show_default=False,
        ),
    ] = None,
    recipes: RecipesOpt = None,
    *,
    options: Options,
) -> None:
    """List a search's protocols by fitness; show, export or plot them; re-score the best
    on fresh seeds (--rescore N)."""
    from tpdisc.search import listing
    from tpdisc.search.plots import best_fitness_figure

    target = JsonTarget.parse(json_out)
    out = human_console(target)
    if rescore_seed is not None and rescore is None:
        raise ConfigError("--rescore-seed only applies with --rescore N")
    if rescore is not None:
        listing.open_archive(run_dir).close()  # one clear line if run_dir is not a run
        with options.config(RescoreSettings).executor.open() as pool:
            rescore_and_report(run_dir, rescore, pool, rescore_seed, recipes, out)
    with listing.open_archive(run_dir) as archive:
        shown = listing.protocol_id(archive, show) if show is not None else None
        if export is not None:
            path = listing.export(archive, listing.protocol_id(archive, export[0]), export[1])
            out.print(f"protocol {export[0]} written to {path}")
        if plot is not None:
            out.print(f"figure saved to {best_fitness_figure(archive, plot)}")
        if target is not None:
            target.write(listing.as_json(archive, shown), say=out)
        if json_on_stdout(target):
            return
        if shown is not None:
            out.print(listing.show(archive, shown))
        elif export is None and plot is None:
            out.print(listing.table(archive))
            best = pick_line(archive, run_dir)
            if best is not None:
                out.print(best, highlight=False, soft_wrap=True)
