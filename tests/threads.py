"""One callable run in several threads at once, for tests of what must be thread-safe."""

from __future__ import annotations

import threading
from collections.abc import Callable


def failures_in_threads(work: Callable[[], object], threads: int) -> list[BaseException]:
    """Run ``work`` in ``threads`` threads started together; what each raised, if anything."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as err:  # each thread's failure is the result
            failed.append(err)

    started = [threading.Thread(target=run) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return failed
