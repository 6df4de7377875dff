"""Simulations spread over the processes of a pool on this machine."""

from __future__ import annotations

import ast
import functools
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

from tpdisc.errors import ConfigError, visible
from tpdisc.executors import lifeline
from tpdisc.executors.base import Executor, PayloadPacker, Task, run_in_worker
from tpdisc.executors.serial import SerialExecutor
from tpdisc.executors.worker_server import WORKER_PRELOAD, default_start_method, set_preload
from tpdisc.python_source import parse

R = TypeVar("R")


def default_workers() -> int:
    """The CPU cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def unguarded_main() -> str | None:
    """The script this process runs, if it never tests ``__name__ == "__main__"``.

    Workers started by ``spawn`` or ``forkserver`` import the main script again before
    taking a task: without the guard they re-run its work, start pools of their own and
    die, which the pool reports as "a worker process died unexpectedly". Interactive
    sessions and ``python -c`` have no script to import, so nothing to guard.
    """
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if path is None:
        return None
    try:
        tree = parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            names = [node.left, *node.comparators]
            if any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(
                isinstance(n, ast.Constant) and n.value == "__main__" for n in names
            ):
                return None
    return str(path)


@functools.cache
def _say_unguarded(script: str) -> None:
    # Once per process: a script may make an executor per evaluation.
    print(
        f"tpdisc: {visible(script, lines=False)} has no 'if __name__ == \"__main__\":' guard, "
        "and worker processes import it again: simulating in this process only; put the "
        "script's work under that guard to use every core",
        file=sys.stderr,
    )


class ProcessExecutor(Executor):
    """A pool of worker processes on this machine, all cores by default.

    The pool starts at the first run and is reused until :meth:`close`. Workers are
    ordinary (non-daemonic) processes, so a task may start child processes of its own, as
    sandboxed protocols do. With the default ``forkserver``/``spawn`` start methods, a
    script using this executor needs the usual ``if __name__ == "__main__":`` guard; a
    script without one is told so in one line and its simulations run in this process.
    """

    def __init__(self, workers: int | None = None, *, start_method: str | None = None) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        self.workers = workers or default_workers()
        self.start_method = start_method or default_start_method()
        if self.start_method not in multiprocessing.get_all_start_methods():
            raise ConfigError(
                f"start method {self.start_method!r} is not available here; choose from "
                f"{', '.join(multiprocessing.get_all_start_methods())}"
            )
        self._pool: ProcessPoolExecutor | None = None
        self._pool_lock = threading.Lock()  # runs from several threads share one pool
        # How to interrupt each run in progress (what Ctrl-C does to one in the main thread).
        self._runs: dict[int, Callable[[], None]] = {}
        self._unguarded: str | None = None
        if self.start_method != "fork":
            self._unguarded = unguarded_main()
            if self._unguarded is not None:
                _say_unguarded(self._unguarded)

    @property
    def concurrent(self) -> bool:  # type: ignore[override]
        # With one worker (or no main guard) run() simulates in the calling thread, and
        # threads would only queue for the GIL.
        return self.workers > 1 and self._unguarded is None

    def _get_pool(self) -> ProcessPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                context = multiprocessing.get_context(self.start_method)
                if self.start_method == "forkserver":
                    # Workers forked from the server start with the simulator already
                    # imported (no effect when start_worker_server has started it already).
                    set_preload([WORKER_PRELOAD])
                # Nothing outlives the pool's owner (see tpdisc.executors.lifeline).
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=context,
                    initializer=lifeline.pool_worker,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def run(
        self, tasks: Sequence[Task[R]], on_result: Callable[[R], None] | None = None
    ) -> list[R]:
        if self.workers == 1 or len(tasks) <= 1 or self._unguarded is not None:
            return SerialExecutor().run(tasks, on_result)
        packer = PayloadPacker()
        payloads = [packer.pack(t) for t in tasks]
        pool = self._get_pool()
        futures: dict[Future[Any], int] = {}
        # Finished futures arrive through a queue rather than concurrent.futures.wait, which
        # locks every pending future on each call (quadratic in the tasks).
        finished: queue.SimpleQueue[Future[Any] | None] = queue.SimpleQueue()
        # Ctrl-C must not raise inside the pool's own code (a future's lock, the manager's
        # wake-up pipe half written): either leaves the pool's manager thread blocked, and
        # the interrupted command waits for it for ever. The interrupt is noted here and
        # raised below, between two calls into the pool.
        interrupted: list[bool] = []

        def stop() -> None:
            interrupted.append(True)
            finished.put(None)  # SimpleQueue.put is safe in a signal handler

        previous = _hold_interrupts(lambda signum, frame: stop())
        complete = False
        with self._pool_lock:
            self._runs[id(finished)] = stop
        try:
            for k, p in enumerate(payloads):
                if interrupted:
                    raise KeyboardInterrupt
                submitted: Future[Any] = pool.submit(
                    run_in_worker, p, [packer.blobs[key] for key in p.keys]
                )
                futures[submitted] = k
                submitted.add_done_callback(finished.put)
            results: list[Any] = [None] * len(tasks)
            left = len(futures)
            while left:
                done = [finished.get()]
                while True:
                    try:
                        done.append(finished.get_nowait())
                    except queue.Empty:
                        break
                if interrupted:
                    raise KeyboardInterrupt
                arrived = [future for future in done if future is not None]
                left -= len(arrived)
                # Report in task order among those that finished together, for stable output.
                for future in sorted(arrived, key=futures.__getitem__):
                    result = future.result()
                    results[futures[future]] = result
                    if on_result is not None:
                        on_result(result)
            complete = True
            return results
        except BrokenProcessPool as err:
            self._pool = None
            raise RuntimeError(
                f"a worker process died unexpectedly (out of memory or killed?): {err}"
            ) from err
        finally:
            with self._pool_lock:
                del self._runs[id(finished)]
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            for future in futures:
                future.cancel()
            if interrupted and complete:  # Ctrl-C after the last result: still honoured
                raise KeyboardInterrupt

    def interrupt(self) -> None:
        with self._pool_lock:
            stops = list(self._runs.values())
        for stop in stops:
            stop()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _hold_interrupts(handler: Callable[[int, Any], None]) -> Any:
    """Install ``handler`` for SIGINT in place of Python's KeyboardInterrupt, and return
    the handler it replaced; None (nothing installed) outside the main thread or where
    SIGINT already has a handler of someone else's."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None
    return signal.signal(signal.SIGINT, handler)
