"""Where simulations run: one after another here, or spread over processes or a cluster."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

T_co = TypeVar("T_co", covariant=True)
R = TypeVar("R")


class Task(Protocol[T_co]):
    """A picklable unit of work: calling it computes its result."""

    def __call__(self) -> T_co: ...


class Executor(ABC):
    """Runs tasks and returns their results in task order, whatever order they finish in."""

    @abstractmethod
    def run(
        self, tasks: Sequence[Task[R]], on_result: Callable[[R], None] | None = None
    ) -> list[R]:
        """Compute every task; ``on_result`` is called as each finishes (for progress)."""


class SerialExecutor(Executor):
    """Everything in this process, in order: simplest, and the reference for the others."""

    def run(
        self, tasks: Sequence[Task[R]], on_result: Callable[[R], None] | None = None
    ) -> list[R]:
        results = []
        for task in tasks:
            result = task()
            if on_result is not None:
                on_result(result)
            results.append(result)
        return results
