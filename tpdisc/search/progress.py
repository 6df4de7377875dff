"""The progress display of ``tpdisc evolve``: iterations, best fitness, spend, simulations."""

from __future__ import annotations

import math
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


class SearchProgress:
    """Two bars: iterations done (with best fitness and cost) and the simulations of the
    protocol being scored. Pass :meth:`event` and :meth:`simulation` to the search loop."""

    def __init__(
        self, console: Console, total: int, done: int, sims: int, *, show_cost: bool = True
    ) -> None:
        self.sims = sims
        self.show_cost = show_cost  # an offline search spends nothing: no "$0.0000"
        self.progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}", markup=False),  # names from the archive
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.search: TaskID = self.progress.add_task(
            "iterations", total=total, completed=done, status="seeding the archive"
        )
        self.scoring: TaskID = self.progress.add_task("simulations", total=sims, status="")

    def __enter__(self) -> SearchProgress:
        self.progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # The bar of the next protocol's simulations means nothing once the search ends:
        # left in place it would stay at 0/SIMS on the final display.
        self.progress.remove_task(self.scoring)
        self.progress.stop()

    def event(self, event: Event) -> None:
        best = f"{event.best:.2f}" if not math.isnan(event.best) else "-"
        last = f"{event.fitness:.2f}" if event.fitness is not None else event.outcome
        status = f"best {best} | last {event.name} {last}"
        if self.show_cost:
            status += f" | ${event.cost:.4f}"
        if event.kind == "iteration":
            self.progress.update(self.search, completed=event.iteration, status=status)
        else:
            self.progress.update(self.search, status=f"seeded {event.name}: {last}")
        self.progress.reset(self.scoring, total=self.sims)

    def simulation(self) -> None:
        self.progress.advance(self.scoring)
