"""The ``report`` command: a static HTML browser of a search run's archive."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tpdisc.cli.output import console, user_errors


@user_errors
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of tpdisc evolve.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Directory to write index.html, best_fitness.png and protocols/ID.html "
            "into (default: RUN_DIR/report). Existing files there are overwritten.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report of a search run: summary, figure, a sortable
    table of protocols and a page per protocol (code, lineage, diff against its parent).
    Open index.html in a browser; it needs no network."""
    from tpdisc.report import build_report
    from tpdisc.search.report import open_archive

    with open_archive(run_dir) as archive:
        index = build_report(archive, run_dir, out or run_dir / "report")
    console.print(f"report written to {index}")
