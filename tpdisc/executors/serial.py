"""Simulations one after another in this process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from tpdisc.executors.base import Executor, Task

R = TypeVar("R")


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
