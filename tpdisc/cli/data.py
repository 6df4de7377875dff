"""The ``data`` commands: install the recipe file once, see where it is found."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from tpdisc.cli.output import console, err_console, user_errors

data_app = typer.Typer(
    help="The Little Alchemy 2 recipe data: install a local copy once, see which is used.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@data_app.command("install")
@user_errors
def install_cmd(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A local copy of alchemy2.json (wordcraft format), for a machine offline. "
            "Without it, the public copy is downloaded and checked.",
            show_default=False,
        ),
    ] = None,
    or_download: Annotated[
        bool,
        typer.Option(
            "--or-download",
            help="Where PATH does not exist, download the public copy instead (the README's "
            "first command: a local copy where there is one, the download elsewhere). Either "
            "way the file kept is the same, checked against its sha256.",
        ),
    ] = False,
) -> None:
    """Keep the checked recipe file in the user cache, so that no later command needs
    --recipes: a local copy (PATH), or the public copy downloaded (no PATH). A checked copy
    already there is kept, with no download."""
    from tpdisc.domain.data import URL, fetch, install

    if path is not None and (path.exists() or path.is_symlink() or not or_download):
        console.print(f"recipe data checked and installed: {install(path)}", soft_wrap=True)
        return
    if path is not None:
        err_console.print(
            f"{path}: no such file; downloading the public copy instead", soft_wrap=True
        )
    kept, downloaded = fetch()
    how = f"downloaded from {URL} and checked" if downloaded else "already installed, checked"
    console.print(f"recipe data {how}: {kept}", soft_wrap=True, highlight=False)


@data_app.command("show")
@user_errors
def show_cmd() -> None:
    """Which recipe file commands use when no --recipes is given, and why."""
    from tpdisc.domain.data import ENV_VAR, FILE_NAME, cache_dir

    cached = cache_dir() / FILE_NAME
    if os.environ.get(ENV_VAR):
        console.print(f"${ENV_VAR}: {os.environ[ENV_VAR]}")
    elif cached.is_file():
        console.print(f"installed: {cached}")
    else:
        console.print(
            f"none installed ({cached}); commands download the public copy on first use; "
            "'tpdisc data install' downloads it now, 'tpdisc data install PATH' keeps a local "
            "copy"
        )
