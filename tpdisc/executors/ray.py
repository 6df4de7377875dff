"""Running simulations on a Ray cluster (optional extra: ``pip install 'tpdisc[ray]'``).

Every node must be able to import the same version of tpdisc and its dependencies. The
recipe graph goes to the object store once per run; each Ray worker unpickles it once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tpdisc.errors import ConfigError
from tpdisc.executors.base import Executor, Payload, PayloadPacker, Task, run_in_worker


def _run_on_ray(payload: Payload, *blobs: bytes) -> object:
    # Ray resolves object references only among top-level arguments, hence *blobs.
    return run_in_worker(payload, blobs)


class RayExecutor(Executor):
    """Tasks as Ray tasks: on the cluster at ``address``, or on a local Ray instance.

    ``max_in_flight`` caps how many tasks are submitted at once (default: all of them,
    leaving the scheduling to Ray). A Ray instance this executor started is shut down by
    :meth:`close`; one that was already running is left alone.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        max_in_flight: int | None = None,
        init_options: dict[str, Any] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "the Ray executor needs Ray, tpdisc's optional 'ray' extra: pip install ray==2.60.0"
            ) from None
        if max_in_flight is not None and max_in_flight < 1:
            raise ConfigError(f"workers must be at least 1, got {max_in_flight}")
        self._ray = ray
        self.address = address
        self.max_in_flight = max_in_flight
        self.init_options = init_options or {}
        self._started = False
        self._remote: Any = None

    def _connect(self) -> None:
        ray = self._ray
        if not ray.is_initialized():
            try:
                ray.init(
                    address=self.address,
                    include_dashboard=False,
                    logging_level="warning",
                    **self.init_options,
                )
            except ConnectionError as err:
                raise ConfigError(
                    f"cannot reach the Ray cluster at {self.address!r}: {err}"
                ) from None
            self._started = True
        if self._remote is None:
            self._remote = ray.remote(_run_on_ray)

    def run(
        self, tasks: Sequence[Task[Any]], on_result: Callable[[Any], None] | None = None
    ) -> list[Any]:
        if not tasks:
            return []
        self._connect()
        ray = self._ray
        packer = PayloadPacker()
        payloads = [packer.pack(t) for t in tasks]
        refs = {key: ray.put(blob) for key, blob in packer.blobs.items()}
        limit = self.max_in_flight or len(payloads)
        index: dict[Any, int] = {}
        results: list[Any] = [None] * len(tasks)
        queue = iter(enumerate(payloads))

        def submit_next() -> None:
            for k, p in queue:
                index[self._remote.remote(p, *(refs[key] for key in p.keys))] = k
                return

        try:
            for _ in range(min(limit, len(payloads))):
                submit_next()
            while index:
                done, _ = ray.wait(list(index), num_returns=1)
                for ref in done:
                    k = index.pop(ref)
                    results[k] = ray.get(ref)
                    if on_result is not None:
                        on_result(results[k])
                    submit_next()
        except ray.exceptions.RayTaskError as err:
            # Surface the task's own error (a ProtocolError, say), not Ray's wrapper.
            cause = getattr(err, "cause", None)
            if isinstance(cause, Exception):
                raise cause from None
            raise
        finally:
            for ref in index:
                ray.cancel(ref)
        return results

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False
        self._remote = None
