"""What every stage of a study is handed: its config, folder, store, executor and display."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.executors.base import Executor
from tpdisc.search.loop import Event
from tpdisc.study.config import StudyConfig
from tpdisc.study.layout import RunRef, StudyDir, select_runs
from tpdisc.study.store import StudyStore

Advance = Callable[[str], None]


class SearchDisplay(Protocol):
    def event(self, event: Event) -> None: ...
    def simulation(self) -> None: ...


class StudyUI(Protocol):
    """How a study shows its progress (the command line passes rich bars; Python callers
    get :class:`QuietUI`)."""

    def say(self, text: str) -> None: ...

    def progress(self, total: int, description: str) -> AbstractContextManager[Advance]: ...

    def search(
        self, total: int, done: int, sims: int, label: str = ""
    ) -> AbstractContextManager[SearchDisplay]:
        """The display of one search; ``label`` names it where several run at once."""


class _NoSearchDisplay:
    def event(self, event: Event) -> None:
        pass

    def simulation(self) -> None:
        pass


class QuietUI:
    """Shows nothing."""

    def say(self, text: str) -> None:
        pass

    @contextmanager
    def progress(self, total: int, description: str) -> Iterator[Advance]:
        yield lambda label: None

    @contextmanager
    def search(self, total: int, done: int, sims: int, label: str = "") -> Iterator[SearchDisplay]:
        yield _NoSearchDisplay()


@dataclass
class StudyContext:
    config: StudyConfig
    folder: StudyDir
    store: StudyStore
    graph: RecipeGraph
    executor: Executor
    ui: Any  # a StudyUI

    @property
    def runs(self) -> list[RunRef]:
        return self.folder.runs(self.config.runs)

    def runs_of(self, which: str) -> list[RunRef]:
        return select_runs(self.runs, which)
