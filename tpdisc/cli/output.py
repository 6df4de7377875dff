"""Where the command line writes: stdout and stderr consoles, one-line errors, progress bars."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tpdisc.errors import TpdiscError

# Without a terminal (a log file, CI) rich assumes 80 columns and cuts the analysis tables'
# columns to "…"; logs are read in editors, so give them room (COLUMNS still wins).
LOG_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
console = Console(width=LOG_WIDTH)
err_console = Console(stderr=True, width=LOG_WIDTH)

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Report :class:`TpdiscError` as one line on stderr and exit 1, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TpdiscError as err:
            # Messages quote user input and code (``tpdisc[ray]``, ``x[0]``): not rich markup.
            err_console.print(
                f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True
            )
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def progress_bar(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """A rich progress bar; yields ``advance(label)``. Without a terminal (a log file, CI),
    a plain line every 10% instead, so that long runs still show they move."""
    if not err_console.is_terminal:
        with _progress_lines(total, description) as advance:
            yield advance
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(description, total=total)

        def advance(label: str) -> None:
            progress.update(task, advance=1, description=label)

        yield advance


@contextmanager
def _progress_lines(total: int, description: str) -> Iterator[Callable[[str], None]]:
    started = time.perf_counter()
    done = 0
    step = max(1, total // 10)

    def advance(label: str) -> None:
        nonlocal done
        done += 1
        if done % step == 0 or done == total:
            elapsed = time.perf_counter() - started
            err_console.print(
                f"{description}: {done}/{total} ({label}, {elapsed:.0f} s)", highlight=False
            )

    yield advance
