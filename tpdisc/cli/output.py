"""Where the command line writes: stdout and stderr consoles, one-line errors, progress bars."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.segment import Segment
from rich.text import Text

from tpdisc.errors import TpdiscError, visible


class PlainConsole(Console):
    """A console that prints every text as it is: no markup or emoji codes are read in
    it, and its control characters are shown as escapes (:func:`tpdisc.errors.visible`),
    whatever renders it (tables, code, progress bars). Most of what tpdisc prints comes from
    outside (names, descriptions, file names, a model's replies); styles are given as
    styles, never as markup."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # Before rich drops the controls it knows (a bell, a carriage return): shown instead.
        return super().render_str(visible(text), **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable() or segment.text == "\n":
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)


# Without a terminal (a log file, CI) rich assumes 80 columns and cuts the analysis tables'
# columns to "…"; logs are read in editors, so give them room (COLUMNS still wins).
LOG_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
console = PlainConsole(width=LOG_WIDTH)
err_console = PlainConsole(stderr=True, width=LOG_WIDTH)

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Report :class:`TpdiscError` as one line on stderr and exit 1, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TpdiscError as err:
            # One line, whatever the message quotes (a newline would forge a line of its own).
            line = Text.assemble(("error:", "bold red"), " ", visible(str(err), lines=False))
            err_console.print(line, highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def progress_bar(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """A rich progress bar; yields ``advance(label)``. Without a terminal (a log file, CI),
    a plain line every 10% instead, so that long runs still show they move."""
    description = visible(description, lines=False)
    if not err_console.is_terminal:
        with _progress_lines(total, description) as lines:
            yield lambda label: lines(visible(label, lines=False))
        return
    columns = (
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(description, total=total)

        def advance(label: str) -> None:
            progress.update(task, advance=1, description=visible(label, lines=False))

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
