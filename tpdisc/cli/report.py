"""The ``report`` command: a static HTML browser of a search run's archive."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tpdisc.cli.options import RecipesOpt
from tpdisc.cli.output import console, err_console, progress_bar, user_errors
from tpdisc.safefiles import hold_outputs


@user_errors
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of tpdisc evolve.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Directory to write index.html, best_fitness.png and protocols/NAME.html "
            "into (default: RUN_DIR/report). Existing files there are overwritten.",
            show_default=False,
        ),
    ] = None,
    portraits: Annotated[
        int,
        typer.Option(
            "--portraits",
            min=0,
            help="Portraits (as tpdisc inspect draws them) of this many best protocols, "
            "linked from the report; a rebuild reuses the stored ones. 0: none.",
        ),
    ] = 1,
    portrait_sims: Annotated[
        int,
        typer.Option(
            "--portrait-sims",
            min=1,
            help="Seeds simulated per portrait (each: the protocol, its ablation and asocial "
            "play), the first of those the protocol was scored on.",
        ),
    ] = 3,
    recipes: RecipesOpt = None,
) -> None:
    """Write a self-contained HTML report of a search run: summary, figure, a sortable
    table of protocols, a page per protocol (code, lineage, diff against its parent) and
    the portrait of the best one (who sent what to whom, the agents over a game). Open
    index.html in a browser; it needs no network."""
    from tpdisc.executors.make import make_executor
    from tpdisc.report import build_report
    from tpdisc.report.best_portraits import run_portraits
    from tpdisc.search.listing import open_archive

    target = out or run_dir / "report"
    # Inside the run folder, which may come from anyone, no link leads the report out.
    root = None if out is not None else run_dir
    with open_archive(run_dir):
        pass  # a clear error for a folder that is not a run, before any simulation
    pages: dict[int, str] = {}
    notes: list[str] = []
    with hold_outputs(target, root=root):
        if portraits:
            with (
                make_executor() as pool,
                progress_bar(portraits * portrait_sims, "portraits") as tick,
            ):
                pages, notes = run_portraits(
                    run_dir, target, pool, top=portraits, sims=portrait_sims, recipes=recipes,
                    on_simulation=tick, root=root,
                )  # fmt: skip
        with open_archive(run_dir) as archive:
            index = build_report(archive, run_dir, target, portraits=pages, notes=notes, root=root)
    # After the report: a folder the report refuses is one line, not warnings and then it.
    for note in notes:
        err_console.print(f"warning: {note}", highlight=False, soft_wrap=True)
    console.print(f"report written to {index}")
