"""The ``evolve`` and ``archive`` commands: protocol search and its archive."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from tpdisc.agents.population import AGENT_TYPES
from tpdisc.cli.options import AddressOpt, ExecutorOpt, RecipesOpt, WorkersOpt
from tpdisc.cli.output import console, err_console, user_errors
from tpdisc.sim.config import SimConfig
from tpdisc.sim.executors import make_executor


@user_errors
def evolve_cmd(
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir",
            help="Run directory (archive.sqlite, config.yaml, best_fitness.png). An existing "
            "one is resumed. Default: a new runs/evolve-DATE-TIME.",
            show_default=False,
        ),
    ] = None,
    iterations: Annotated[
        int | None,
        typer.Option(min=1, help="Iterations in total (default: 200); a resumed run may raise it."),
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(
            min=0, help="Warm-up iterations, shown the baselines (default: a quarter of all)."
        ),
    ] = None,
    sims: Annotated[
        int | None,
        typer.Option(min=1, help="Simulations per protocol, seeds 0..SIMS-1 (default: 30)."),
    ] = None,
    steps: Annotated[
        int | None, typer.Option("--steps", "-t", min=1, help="Steps per game (default: 150).")
    ] = None,
    agents: Annotated[
        int | None, typer.Option("--agents", "-n", min=1, help="Agents per game (default: 10).")
    ] = None,
    agent_type: Annotated[
        str | None,
        typer.Option(
            "--agent-type",
            help=f"Agent model: {', '.join(AGENT_TYPES)} (default: {SimConfig.agent_type}).",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(min=0, help="Seed of the search's own choices (default: 0).")
    ] = None,
    prior_seed: Annotated[
        int | None,
        typer.Option(
            "--prior-seed",
            min=0,
            help="Seed of the empowerment agents' prior (default: 0; see 'tpdisc prior build').",
        ),
    ] = None,
    generation_only: Annotated[
        bool,
        typer.Option(
            "--generation-only",
            help="Every iteration in warm-up style: independent protocols, no evolution.",
        ),
    ] = False,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1. Without it (and "
            "--model) the offline proposer runs.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Chat model name.", show_default=False)] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Environment variable holding the API key (default: OPENAI_API_KEY); the "
            "key itself is never stored or logged.",
            show_default=False,
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            min=0.0, help="Stop when the run has spent this many US dollars.", show_default=False
        ),
    ] = None,
    price_input: Annotated[
        float | None,
        typer.Option(
            min=0.0, help="Price of --model: dollars per million prompt tokens.", show_default=False
        ),
    ] = None,
    price_output: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            help="Price of --model: dollars per million completion tokens.",
            show_default=False,
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config", help="Search settings as YAML (a new run only).", show_default=False
        ),
    ] = None,
    executor: ExecutorOpt = "processes",
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    recipes: RecipesOpt = None,
) -> None:
    """Search for protocols: LLM-guided evolution, or the offline proposer without an LLM."""
    from tpdisc.search.archive import Archive
    from tpdisc.search.progress import SearchProgress
    from tpdisc.search.report import table
    from tpdisc.search.run import FIGURE_NAME, LLMOptions, default_run_dir, evolve, resolve_config

    run_dir = run_dir or default_run_dir()
    options = {
        "iterations": iterations,
        "warmup": warmup,
        "sims": sims,
        "n_steps": steps,
        "n_agents": agents,
        "agent_type": agent_type,
        "seed": seed,
        "prior_seed": prior_seed,
        "generation_only": generation_only or None,
    }
    llm = LLMOptions(base_url, model, api_key_env, max_cost, price_input, price_output)
    config, resumed = resolve_config(run_dir, options, llm, config_file)
    with Archive(run_dir / Archive.FILE_NAME) as archive:
        done = archive.last_iteration()
    err_console.print(
        f"{'resuming' if resumed else 'starting'} {run_dir}: {config.proposer} proposer, "
        f"{config.n_agents} {config.agent_type} agents × {config.n_steps} steps × "
        f"{config.sims} sims, iteration {done + 1} of {config.iterations}"
    )
    with (
        make_executor(executor, workers, address) as pool,
        SearchProgress(err_console, config.iterations, done, config.sims) as progress,
    ):
        summary = evolve(
            run_dir,
            config,
            pool,
            recipes=recipes,
            on_event=progress.event,
            on_simulation=progress.simulation,
        )
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        console.print(table(archive, limit=10))
    console.print(f"figure saved to {run_dir / FIGURE_NAME}")
    if summary.stopped:
        err_console.print(f"[bold yellow]stopped:[/] {summary.stopped}", highlight=False)
        raise typer.Exit(1 if "endpoint" in summary.stopped else 0)


@user_errors
def archive_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of tpdisc evolve.")],
    show: Annotated[
        int | None,
        typer.Option(
            "--show",
            help="Print this protocol's code, description and history.",
            show_default=False,
        ),
    ] = None,
    export: Annotated[
        tuple[int, Path] | None,
        typer.Option(
            "--export",
            help="Write protocol ID's code to FILE, a runnable .py.",
            metavar="ID FILE",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (with --show: that protocol in full).")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Save the best-fitness-over-iterations figure here (PNG).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List a search's protocols by fitness; show, export or plot them."""
    from tpdisc.search import report
    from tpdisc.search.plots import best_fitness_figure

    with report.open_archive(run_dir) as archive:
        if export is not None:
            path = report.export(archive, export[0], export[1])
            console.print(f"protocol {export[0]} written to {path}")
        if plot is not None:
            console.print(f"figure saved to {best_fitness_figure(archive, plot)}")
        if as_json:
            sys.stdout.write(json.dumps(report.as_json(archive, show), indent=2) + "\n")
        elif show is not None:
            console.print(report.show(archive, show))
        elif export is None and plot is None:
            console.print(report.table(archive))
