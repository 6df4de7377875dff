"""Running simulations on a Ray cluster (optional extra: ``pip install 'tpdisc[ray]'``).

Every node must be able to import the same version of tpdisc and its dependencies. The
recipe graph goes to the object store once per run; each Ray worker unpickles it once.

The command's own process never joins Ray: a driver process does, for it
(:mod:`tpdisc.executors.ray_driver`). Ray ends its driver from C++ when the local raylet
or object store goes; a lost node, a worker that crashed past its retries or an object
lost fail its tasks. Either way the command says in one line that the cluster was lost
(:class:`~tpdisc.executors.base.ExecutorLost`), keeps what it stored, and a search or a
study resumes when run again. An ``--address`` is checked for its form before anything
starts, and a cluster that does not answer there is given up after ``connect_timeout``.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import IO, Any

from tpdisc.errors import ConfigError, excerpt, visible
from tpdisc.executors.base import (
    Executor,
    ExecutorLost,
    Payload,
    PayloadPacker,
    Task,
    run_in_worker,
)
from tpdisc.executors.lifeline import kill_session

# How long to wait for a cluster named by --address to answer, by default.
CONNECT_TIMEOUT = 30.0
# How long a driver may take to shut its Ray instance down before it is killed.
CLOSE_SECONDS = 60.0
# Lines of the driver's stderr (Ray's log lines) kept to say why it ended.
TAIL_LINES = 200

_ADDRESS = re.compile(r"(?:ray://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})")
# Words of the Ray log lines that say why a driver ended, rather than what it did before.
_TELLING = re.compile(r"terminat|died|dead|lost|fail|unavailable|crash|kill", re.IGNORECASE)
# "[2026-01-02 10:11:12,345 E 123 456] connection.cc:216: The connection to ... failed."
_RAY_LOG = re.compile(r"^\[[\d-]+ [\d:,.]+ [A-Z] \d+ \d+\] [\w./-]+:\d+: (?P<text>.+)$")


def check_address(address: str | None) -> str | None:
    """``address`` once it can be a Ray cluster's: ``HOST:PORT``, ``ray://HOST:PORT`` (Ray
    Client), ``auto`` (the cluster this machine runs) or ``local`` (a new one); otherwise
    a one-line ConfigError naming ``--address``."""
    if address is None or address in ("auto", "local"):
        return address
    found = _ADDRESS.fullmatch(address.strip())
    if found is None or not 0 < int(found["port"]) < 65536:
        raise ConfigError(
            f"--address {excerpt(address)}: not the address of a Ray cluster; give HOST:PORT "
            "(its head node's, port 6379 unless started with another), ray://HOST:PORT "
            "or auto"
        )
    return address.strip()


def run_on_ray(payload: Payload, *blobs: bytes) -> bytes:
    """A task, run on a Ray worker. Ray resolves object references only among top-level
    arguments, hence ``*blobs``; the result travels pickled, passed on by the driver to
    the command without being read."""
    return pickle.dumps(run_in_worker(payload, blobs), protocol=pickle.HIGHEST_PROTOCOL)


def _running_here() -> str | None:
    """The address of a Ray instance this process has joined itself (a script or a test
    that called ``ray.init``), for the driver to join too; None when there is none."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    return str(ray.get_runtime_context().gcs_address)


def _reach(address: str, timeout: float) -> None:
    """Wait until something listens at ``address`` (at most ``timeout`` seconds), or say
    in one line why the cluster cannot be reached."""
    found = _ADDRESS.fullmatch(address)
    if found is None:  # auto, local: Ray finds the cluster itself
        return
    host, port = found["host"].strip("[]"), int(found["port"])
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            socket.create_connection((host, port), timeout=max(0.1, min(2.0, left))).close()
            return
        except ConnectionRefusedError:
            why = "nothing listens there (connection refused)"
        except socket.gaierror as err:
            why = f"no such host ({err.strerror})"
        except OSError as err:
            if time.monotonic() < deadline:
                time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                continue
            why = (
                f"no answer within {timeout:g} s ({err.strerror or 'timed out'}; --connect-timeout)"
            )
        raise ConfigError(f"--address {address}: cannot reach the Ray cluster: {why}")


class RayExecutor(Executor):
    """Tasks as Ray tasks: on the cluster at ``address``, or on a local Ray instance.

    ``max_in_flight`` caps how many tasks are submitted at once (default: all of them,
    leaving the scheduling to Ray); ``init_options`` go to ``ray.init``;
    ``connect_timeout`` bounds the wait for the cluster at ``address``, and for a node to
    run tasks on once every node that ran them is gone. A Ray instance
    this executor started is shut down by :meth:`close`; one that was already running
    (at ``address``, or one this process joined) is left alone.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        max_in_flight: int | None = None,
        init_options: dict[str, Any] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        if importlib.util.find_spec("ray") is None:
            raise ConfigError(
                "the Ray executor needs Ray, tpdisc's optional 'ray' extra: pip install ray==2.60.0"
            )
        if max_in_flight is not None and max_in_flight < 1:
            raise ConfigError(f"workers must be at least 1, got {max_in_flight}")
        self.address = check_address(address)
        self.max_in_flight = max_in_flight
        self.init_options = init_options or {}
        self.connect_timeout = connect_timeout
        self._driver: subprocess.Popen[bytes] | None = None
        self._outbox: Connection | None = None
        self._inbox: Connection | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._reader: threading.Thread | None = None
        self._unsettled = False  # a run was left early: its last messages are still due
        self._lost: ExecutorLost | None = None

    # --- the driver process ------------------------------------------------------------

    def _connect(self) -> None:
        if self._lost is not None:
            raise self._lost
        if self._driver is not None:
            return
        address = self.address or _running_here()
        started = time.monotonic()
        if address is not None:
            _reach(address, self.connect_timeout)
        self._start_driver()
        assert self._outbox is not None and self._inbox is not None
        self._outbox.send(("init", address, self.init_options, self.connect_timeout))
        if address is not None:
            left = self.connect_timeout - (time.monotonic() - started)
            if not self._inbox.poll(max(left, 0.0)):
                self._kill_driver()
                raise ConfigError(
                    f"--address {address}: no Ray cluster answered there within "
                    f"{self.connect_timeout:g} s (--connect-timeout)"
                )
        try:
            answer = self._inbox.recv()
        except (EOFError, OSError):
            answer = ("failed", "start", self._why_ended())
        if answer[0] != "ready":
            self._kill_driver()
            raise ConfigError(_not_started(address, answer[1], answer[2]))

    def _start_driver(self) -> None:
        to_driver, from_command = os.pipe()
        from_driver, to_command = os.pipe()
        try:
            self._driver = subprocess.Popen(
                [sys.executable, "-m", "tpdisc.executors.ray_driver",
                 str(to_driver), str(to_command), str(os.getpid())],
                pass_fds=(to_driver, to_command),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C is the command's to handle
            )  # fmt: skip
        except BaseException:
            for fd in (from_command, from_driver):
                os.close(fd)
            raise
        finally:
            os.close(to_driver)
            os.close(to_command)
        self._outbox = Connection(from_command, readable=False)
        self._inbox = Connection(from_driver, writable=False)
        assert self._driver.stderr is not None
        self._tail.clear()
        self._reader = threading.Thread(
            target=_keep_tail, args=(self._driver.stderr, self._tail), daemon=True
        )
        self._reader.start()

    def _why_ended(self) -> str:
        """What the driver's end says: its exit, and Ray's last line before it."""
        driver = self._driver
        code = None
        if driver is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = driver.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=5)
        lines = [line.strip() for line in self._tail if line.strip()]
        said = [m["text"] for m in map(_RAY_LOG.match, lines) if m is not None]
        said = [text for text in said if not text.startswith(":info_message:")]
        telling = [text for text in said if _TELLING.search(text)]
        last = (telling or said or lines or [""])[-1]
        if code is None:
            ended = "the Ray driver stopped answering"
        elif code < 0:
            ended = f"the Ray driver was killed by {signal.Signals(-code).name}"
        else:
            ended = f"the Ray driver ended (exit {code})"
        return ended + (f": {visible(last, lines=False)[:300]}" if last else "")

    def _kill_driver(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            if driver.poll() is None:
                driver.kill()  # its lifeline is the command, not this: it kills nothing below
                driver.wait()
            # Killed here or ended by Ray from C++, the driver cleaned up nothing: what it
            # started of a local instance is left in its session (after a clean end, nothing).
            kill_session(driver.pid)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for end in (self._outbox, self._inbox):
            if end is not None:
                end.close()
        self._outbox = self._inbox = None
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None

    def _cluster_lost(self, detail: str) -> ExecutorLost:
        lost = ExecutorLost(
            f"the Ray cluster was lost during the run: {detail}; what the command stored "
            "so far is kept (run it again to resume a search or a study)"
        )
        self._lost = lost
        self.close()
        return lost

    def _receive(self) -> Any:
        assert self._inbox is not None
        try:
            return self._inbox.recv()
        except (EOFError, OSError):
            raise self._cluster_lost(self._why_ended()) from None

    def _settle(self) -> None:
        """Read the end of a run left early (its results are no one's any more)."""
        while self._unsettled:
            kind, *rest = self._receive()
            if kind in ("done", "task-error"):
                self._unsettled = False
            elif kind == "lost":
                self._unsettled = False
                raise self._cluster_lost(rest[0])

    # --- running -------------------------------------------------------------------------

    def run(
        self, tasks: Sequence[Task[Any]], on_result: Callable[[Any], None] | None = None
    ) -> list[Any]:
        if not tasks:
            return []
        self._connect()
        self._settle()
        packer = PayloadPacker()
        payloads = [packer.pack(t) for t in tasks]
        limit = self.max_in_flight or len(payloads)
        assert self._outbox is not None
        try:
            self._outbox.send(("run", packer.blobs, payloads, limit))
        except OSError:
            raise self._cluster_lost(self._why_ended()) from None
        results: list[Any] = [None] * len(tasks)
        self._unsettled = True
        try:
            while True:
                kind, *rest = self._receive()
                if kind == "result":
                    k, data = rest
                    results[k] = pickle.loads(data)
                    if on_result is not None:
                        on_result(results[k])
                    continue
                self._unsettled = False
                if kind == "done":
                    return results
                if kind == "task-error":
                    # The task's own error (a ProtocolError, say), not Ray's wrapper.
                    raise pickle.loads(rest[0])
                raise self._cluster_lost(rest[0])
        finally:
            if self._unsettled and self._outbox is not None:
                with contextlib.suppress(OSError):
                    self._outbox.send(("cancel",))

    def close(self) -> None:
        driver = self._driver
        if driver is None:
            return
        if driver.poll() is None and self._outbox is not None:
            try:
                self._outbox.send(("close",))
                driver.wait(timeout=CLOSE_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill_driver()
        self._unsettled = False


def _keep_tail(stream: IO[bytes], tail: collections.deque[str]) -> None:
    """Read the driver's stderr to its end, keeping its last lines (Ray's log)."""
    for raw in stream:
        tail.append(raw[:2000].decode("utf-8", "replace").rstrip("\n"))
    stream.close()


def _not_started(address: str | None, kind: str, text: str) -> str:
    """The one line of a driver that could not join or start its cluster."""
    if kind == "missing":
        return f"the Ray executor needs Ray, tpdisc's optional 'ray' extra: {text}"
    if address is None:
        return f"cannot start a local Ray instance: {text}"
    return f"--address {address}: cannot reach the Ray cluster: {text}"
