"""Where simulations run: one after another here, or spread over processes or a cluster.

Every executor returns results in task order and calls ``on_result`` as each one arrives,
so progress bars move whatever the engine. Tasks are deterministic given their own fields
(a seed among them), so every executor gives the same results for the same tasks.

Tasks of one evaluation all carry the same recipe graph. Rather than pickle it into every
task, the process and Ray executors pickle it once per run, send those bytes along, and
each worker unpickles it once and keeps it (see :class:`Payload`).
"""

from __future__ import annotations

import hashlib
import io
import multiprocessing
import os
import pickle
import select
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

import numpy as np

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import ConfigError

T_co = TypeVar("T_co", covariant=True)
R = TypeVar("R")

EXECUTORS: tuple[str, ...] = ("serial", "processes", "ray")

# Arrays at least this large travel like the recipe graph: once per run, not per task.
SHARED_ARRAY_BYTES = 1 << 20
# Worker-side cache of shared objects; a few suffice (one graph per domain variant).
WORKER_CACHE_SIZE = 8


class Task(Protocol[T_co]):
    """A picklable unit of work: calling it computes its result."""

    def __call__(self) -> T_co: ...


class Executor(ABC):
    """Runs tasks and returns their results in task order, whatever order they finish in.

    Executors that hold workers keep them between runs (a search evaluates thousands of
    protocols); use them as context managers, or call :meth:`close`, to release them.
    """

    @abstractmethod
    def run(
        self, tasks: Sequence[Task[R]], on_result: Callable[[R], None] | None = None
    ) -> list[R]:
        """Compute every task; ``on_result`` is called as each finishes (for progress)."""

    def close(self) -> None:  # noqa: B027
        """Release workers; the executor may not be used afterwards."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


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


def is_shared(obj: object) -> bool:
    """Whether ``obj`` is sent to workers once per run rather than inside every task."""
    if isinstance(obj, RecipeGraph):
        return True
    return isinstance(obj, np.ndarray) and obj.nbytes >= SHARED_ARRAY_BYTES


class _SharingPickler(pickle.Pickler):
    """Pickles a task with its shared objects replaced by keys, collecting their bytes."""

    def __init__(self, file: io.BytesIO, blobs: dict[str, bytes], keys: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.blobs = blobs  # key -> pickled object, for the whole run
        self.keys = keys  # id(obj) -> key, for the whole run
        self.used: list[str] = []

    def persistent_id(self, obj: Any) -> str | None:
        if not is_shared(obj):
            return None
        key = self.keys.get(id(obj))
        if key is None:
            blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
            key = hashlib.sha1(blob).hexdigest()
            self.keys[id(obj)] = key
            self.blobs.setdefault(key, blob)
        if key not in self.used:
            self.used.append(key)
        return key


@dataclass(frozen=True)
class Payload:
    """One task as it travels to a worker: its bytes, and the keys of the shared objects
    it refers to (whose bytes travel beside it, see :func:`run_payload`)."""

    task: bytes
    keys: tuple[str, ...]


class PayloadPacker:
    """Packs the tasks of one run; shared objects are pickled once per run."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self._keys: dict[int, str] = {}
        self._pinned: list[object] = []  # keeps ids in ``_keys`` valid during the run

    def pack(self, task: object) -> Payload:
        buffer = io.BytesIO()
        pickler = _SharingPickler(buffer, self.blobs, self._keys)
        pickler.dump(task)
        self._pinned.append(task)
        return Payload(buffer.getvalue(), tuple(pickler.used))


# Per worker process: shared objects already unpickled, most recently used last. Workers
# are separate processes, so this cache is never shared; it only saves repeated unpickling.
_worker_cache: OrderedDict[str, object] = OrderedDict()


class _SharingUnpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> object:
        return _worker_cache[pid]


def run_payload(payload: Payload, blobs: Sequence[bytes]) -> object:
    """Worker side: restore the task (unpickling each shared object once) and run it."""
    for key, blob in zip(payload.keys, blobs, strict=True):
        if key in _worker_cache:
            _worker_cache.move_to_end(key)
        else:
            _worker_cache[key] = pickle.loads(blob)
            while len(_worker_cache) > WORKER_CACHE_SIZE:
                _worker_cache.popitem(last=False)
    task = _SharingUnpickler(io.BytesIO(payload.task)).load()
    return task()


def default_workers() -> int:
    """The CPU cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_start_method() -> str:
    # A fresh worker forked from a clean server process inherits no threads (rich progress
    # bars, Ray) and no child processes of the parent (sandbox zygotes), unlike plain fork,
    # and starts much faster than spawn once the server runs.
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def die_with_parent(pool_owner: int) -> None:
    """Make a pool worker end when the process that made the pool does.

    Idle workers block on a queue whose write end they hold themselves, and a forkserver
    lives as long as any worker does, so after a SIGKILL of the pool's owner nothing would
    ever wake them: they would stay behind as orphans. A thread waiting on a pidfd of the
    owner ends the worker as soon as the owner is gone (Linux 5.3+; elsewhere nothing
    changes).
    """
    try:
        owner = os.pidfd_open(pool_owner)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):
        return

    def watch() -> None:
        select.select([owner], [], [])
        os._exit(1)

    threading.Thread(target=watch, name="tpdisc-pool-owner-watch", daemon=True).start()


class ProcessExecutor(Executor):
    """A pool of worker processes on this machine, all cores by default.

    The pool starts at the first run and is reused until :meth:`close`. Workers are
    ordinary (non-daemonic) processes, so a task may start child processes of its own, as
    sandboxed protocols do. With the default ``forkserver``/``spawn`` start methods, a
    script using this executor needs the usual ``if __name__ == "__main__":`` guard.
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

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context(self.start_method)
            if self.start_method == "forkserver":
                # Workers forked from the server start with the simulator already imported.
                context.set_forkserver_preload(["tpdisc.sim.evaluate"])
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=context,
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    def run(
        self, tasks: Sequence[Task[R]], on_result: Callable[[R], None] | None = None
    ) -> list[R]:
        if self.workers == 1 or len(tasks) <= 1:
            return SerialExecutor().run(tasks, on_result)
        packer = PayloadPacker()
        payloads = [packer.pack(t) for t in tasks]
        pool = self._get_pool()
        futures: dict[Future[Any], int] = {}
        try:
            for k, p in enumerate(payloads):
                futures[pool.submit(run_payload, p, [packer.blobs[key] for key in p.keys])] = k
            results: list[Any] = [None] * len(tasks)
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                # Report in task order among those that finished together, for stable output.
                for future in sorted(done, key=futures.__getitem__):
                    result = future.result()
                    results[futures[future]] = result
                    if on_result is not None:
                        on_result(result)
            return results
        except BrokenProcessPool as err:
            self._pool = None
            raise RuntimeError(
                f"a worker process died unexpectedly (out of memory or killed?): {err}"
            ) from err
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def make_executor(
    kind: str = "processes", workers: int | None = None, address: str | None = None
) -> Executor:
    """The executor named ``kind`` (``serial``, ``processes`` or ``ray``), from CLI options.

    ``workers`` sizes the process pool (default: all cores) or caps the tasks Ray runs at
    once (default: as many as the cluster takes); ``address`` is the Ray cluster to join
    (default: start a local Ray instance).
    """
    if kind not in EXECUTORS:
        raise ConfigError(f"unknown executor {kind!r}; choose from {', '.join(EXECUTORS)}")
    if address is not None and kind != "ray":
        raise ConfigError(f"--address {address!r} only applies to --executor ray")
    if kind == "serial":
        return SerialExecutor()
    if kind == "processes":
        return ProcessExecutor(workers)
    from tpdisc.sim.ray_executor import RayExecutor

    return RayExecutor(address, max_in_flight=workers)
