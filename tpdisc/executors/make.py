"""The executor a command's options name."""

from __future__ import annotations

from tpdisc.errors import ConfigError, unknown
from tpdisc.executors.base import Executor
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.ray import CONNECT_TIMEOUT, RayExecutor
from tpdisc.executors.serial import SerialExecutor

EXECUTORS: tuple[str, ...] = ("serial", "processes", "ray")


def make_executor(
    kind: str = "processes",
    workers: int | None = None,
    address: str | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> Executor:
    """The executor named ``kind`` (``serial``, ``processes`` or ``ray``), from CLI options.

    ``workers`` sizes the process pool (default: all cores) or caps the tasks Ray runs at
    once (default: as many as the cluster takes); ``address`` is the Ray cluster to join
    (default: start a local Ray instance), given up after ``connect_timeout`` seconds
    without an answer.
    """
    if kind not in EXECUTORS:
        raise ConfigError(unknown("executor", kind, EXECUTORS))
    if address is not None and kind != "ray":
        raise ConfigError(f"--address {address!r} only applies to --executor ray")
    if kind == "serial":
        return SerialExecutor()
    if kind == "processes":
        return ProcessExecutor(workers)
    return RayExecutor(address, max_in_flight=workers, connect_timeout=connect_timeout)
