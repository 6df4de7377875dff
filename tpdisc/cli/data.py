"""The ``data`` commands: install the recipe file once, see where it is found."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from tpdisc.cli.output import console, user_errors

data_app = typer.Typer(
    help="The Little Alchemy 2 recipe data: install a local copy once, see which is used.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@data_app.command("install")
@user_errors
def install_cmd(
    path: Annotated[Path, typer.Argument(help="A copy of alchemy2.json (wordcraft format).")],
) -> None:
    """Check a local copy of the recipe file (its sha256) and keep it in the user cache, so
    that no later command needs --recipes."""
    from tpdisc.domain.data import install

    console.print(f"recipe data checked and installed: {install(path)}")


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
            f"none installed ({cached}); commands download the public copy on first use, "
            "or run: tpdisc data install PATH"
        )
