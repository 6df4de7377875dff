"""The progress display of ``tpdisc evolve``: iterations, best fitness, spend, simulations."""

from __future__ import annotations

import math
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from tpdisc.search.loop import Event

# Without a terminal, a line per tenth of the iterations at most, and at most one per this
# many seconds (the last iteration's always): a log of a long search stays short.
LOG_GAP_SECONDS = 5.0


def search_bars(console: Console) -> Progress:
    """The display :class:`SearchProgress` draws its bars in (several searches may share
    one: a console shows one live display at a time)."""
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}", markup=False),  # names from the archive
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


class SearchProgress:
    """Two bars: iterations done (with best fitness and cost) and the simulations of the
    protocol being scored. Pass :meth:`event` and :meth:`simulation` to the search loop.
    Without a terminal (a log file), a few plain lines instead.

    ``label`` names the search in its bars and lines, where several run at once; they then
    share one ``bars`` display (:func:`search_bars`), which its owner starts and stops."""

    def __init__(
        self,
        console: Console,
        total: int,
        done: int,
        sims: int,
        *,
        label: str = "",
        bars: Progress | None = None,
    ) -> None:
        self.sims = sims
        self.console = console
        self.log = not console.is_terminal
        self.total = total
        self.prefix = f"{label} " if label else ""
        self.last_line = time.perf_counter()
        self.printed_tenth = done * 10 // max(total, 1)
        self.owned = bars is None
        self.progress = search_bars(console) if bars is None else bars
        self.search: TaskID = self.progress.add_task(
            f"{self.prefix}iterations", total=total, completed=done, status="seeding the archive"
        )
        self.scoring: TaskID = self.progress.add_task(
            f"{self.prefix}simulations", total=sims, status=""
        )

    def __enter__(self) -> SearchProgress:
        if not self.log and self.owned:
            self.progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.log:
            return
        # The bar of the next protocol's simulations means nothing once the search ends:
        # left in place it would stay at 0/SIMS on the final display.
        self.progress.remove_task(self.scoring)
        if self.owned:
            self.progress.stop()

    def event(self, event: Event) -> None:
        best = f"{event.best:.2f}" if not math.isnan(event.best) else "-"
        last = f"{event.fitness:.2f}" if event.fitness is not None else event.outcome
        status = f"best {best} | last {event.name} {last}"
        if event.cost > 0:  # an offline search, or a model that costs nothing: no "$0.0000"
            status += f" | ${event.cost:.4f}"
        for note in event.notes:  # above the bars, or in the log
            self.console.print(
                f"{self.prefix}{note}", style="yellow", highlight=False, markup=False
            )
        if self.log:
            self._line(event, status)
        elif event.kind == "iteration":
            self.progress.update(self.search, completed=event.iteration, status=status)
        else:
            self.progress.update(self.search, status=f"seeded {event.name}: {last}")
        self.progress.reset(self.scoring, total=self.sims)

    def _line(self, event: Event, status: str) -> None:
        if event.kind != "iteration":
            return
        tenth = event.iteration * 10 // max(self.total, 1)
        now = time.perf_counter()
        gap = now - self.last_line >= LOG_GAP_SECONDS
        if event.iteration == self.total or (tenth > self.printed_tenth and gap):
            self.printed_tenth, self.last_line = tenth, now
            text = f"{self.prefix}iterations: {event.iteration}/{self.total} ({status})"
            self.console.print(text, highlight=False, markup=False)

    def simulation(self) -> None:
        if not self.log:
            self.progress.advance(self.scoring)
