"""What every executor shares: the task interface, and tasks packed for other processes.

Tasks of one evaluation all carry the same recipe graph. Rather than pickle it into every
task, the process and Ray executors pickle it once per run, send those bytes along, and
each worker unpickles it once and keeps it (see :class:`Payload`).
"""

from __future__ import annotations

import gc
import hashlib
import io
import pickle
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

import numpy as np

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import TpdiscError

T_co = TypeVar("T_co", covariant=True)
R = TypeVar("R")

# Arrays at least this large travel like the recipe graph: once per run, not per task.
SHARED_ARRAY_BYTES = 1 << 20
# Worker-side cache of shared objects; a few suffice (one graph per domain variant).
WORKER_CACHE_SIZE = 8


class ExecutorLost(TpdiscError):
    """The workers of a run were lost (a Ray cluster's node, raylet or object store): the
    run cannot go on, and what its command stored so far is kept."""


class Task(Protocol[T_co]):
    """A picklable unit of work: calling it computes its result."""

    def __call__(self) -> T_co: ...


class Executor(ABC):
    """Runs tasks and returns their results in task order, whatever order they finish in.

    Executors that hold workers keep them between runs (a search evaluates thousands of
    protocols); use them as context managers, or call :meth:`close`, to release them.
    ``concurrent``: whether several threads may call :meth:`run` at once, their tasks then
    sharing the workers (a search scoring several candidates together).
    """

    concurrent: bool = False

    @abstractmethod
    def run(
        self, tasks: Sequence[Task[R]], on_result: Callable[[R], None] | None = None
    ) -> list[R]:
        """Compute every task; ``on_result`` is called as each finishes (for progress)."""

    def interrupt(self) -> None:  # noqa: B027
        """Make every :meth:`run` in progress, in any thread, raise KeyboardInterrupt soon
        (as Ctrl-C does to one in the main thread); an executor that cannot leaves its runs
        to finish."""

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


def run_in_worker(payload: Payload, blobs: Sequence[bytes]) -> object:
    """:func:`run_payload` in a worker process. What the worker keeps from its first task
    of a kind on (the modules and kernels it loaded, the recipe graph, the agents' prior:
    some 200,000 objects) then leaves the cyclic collector's reach, which walked all of it
    at each full collection: 3.8 ms of a 75 ms simulation on average, 0.7 ms after.

    During that first task only the young generations are collected (loading the kernels
    leaves some garbage there), and after it too, before the freeze: the full collections
    a worker's first simulation triggered (or one forced after it) took 50-350 ms a
    worker, which a short command waits for: 8 % of ``tpdisc evaluate --sims 30`` (issue
    48). What reaches the oldest generation meanwhile is kept."""
    if all(key in _worker_cache for key in payload.keys):
        return run_payload(payload, blobs)
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, 1 << 30)  # no full collection meanwhile
    try:
        return run_payload(payload, blobs)
    finally:
        gc.collect(1)
        gc.freeze()
        gc.set_threshold(young, middle, old)
