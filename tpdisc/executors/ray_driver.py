"""The Ray driver: a process of its own that joins (or starts) a Ray cluster for a command
and runs its tasks there (``python -m tpdisc.executors.ray_driver READ_FD WRITE_FD OWNER``).

A command never joins Ray itself: Ray ends its driver's process from C++ when the local
raylet or object store goes (``The connection to the plasma store is failed. Terminate the
process.``), leaving neither a line of tpdisc's nor a chance to keep what was stored. Here
that process is this one, and the command (:class:`tpdisc.executors.ray.RayExecutor`)
sees it end and says so in one line. Ray's own log lines go to this process's stderr,
which the command keeps for that line.

Messages are pickled tuples on two pipes. From the command: ``("init", address, options,
grace)``, ``("run", blobs, payloads, limit)``, ``("cancel",)``, ``("close",)``. To it:
``("ready",)`` or ``("failed", kind, text)``; per run ``("result", k, bytes)`` as each
task ends, then ``("done",)``, or ``("task-error", pickled exception)`` (a task's own
error: the run's last message), or ``("lost", text)`` (the cluster failed, an object a task
needs was lost, or every node that runs tasks has gone for ``grace`` seconds: the driver
ends).

Nothing of it outlives the command: this process ends as soon as the command does
(a pidfd), and first kills every process below it, which includes the whole local Ray
instance it started (it is their subreaper, so Ray's agents, orphaned when a raylet goes,
stay below it too).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pickle
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from tpdisc.executors import lifeline
from tpdisc.executors.base import Payload

PR_SET_CHILD_SUBREAPER = 36
# How long one wait for results lasts before the command's messages are looked at.
WAIT_SECONDS = 0.2
# How often, while no result comes, the cluster's nodes are looked at.
NODE_CHECK_SECONDS = 5.0


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before their children (from /proc)."""
    children: dict[int, list[int]] = {}
    for child, fields in lifeline.process_stats():
        children.setdefault(int(fields[1]), []).append(child)
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def kill_below(pid: int, rounds: int = 50) -> None:
    """SIGKILL every process below ``pid`` until none is left (a dying raylet may still
    start one)."""
    lifeline.kill_until_none(lambda: descendants(pid), rounds)


def _end_with(owner: int) -> None:
    """End this process, and everything below it, as soon as ``owner`` ends."""

    def gone() -> None:
        kill_below(os.getpid())
        os._exit(1)

    lifeline.when_gone(owner, gone)


def _lost_text(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{type(err).__name__}: {text}"[:400]


class NodeWatch:
    """Whether every node that can run a task has gone, and none came back for ``grace``
    seconds: Ray would keep the tasks waiting for ever. A cluster that never had such a
    node (an autoscaler about to add them) is left to wait."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.seen: set[str] = set()
        self.since: float | None = None
        self.checked = 0.0

    def lost(self) -> str | None:
        now = time.monotonic()
        if now - self.checked < NODE_CHECK_SECONDS:
            return None
        self.checked = now
        import ray

        alive = {
            str(node["NodeID"])
            for node in ray.nodes()
            if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) > 0
        }
        if alive or not self.seen:
            self.seen |= alive
            self.since = None
            return None
        self.since = self.since if self.since is not None else now
        if now - self.since < self.grace:
            return None
        return (
            f"no node is left to run simulations ({len(self.seen)} gone, none came back "
            f"within {self.grace:g} s)"
        )


class Driver:
    """The Ray side of one command: ``ray.init`` once, then runs until told to close."""

    def __init__(self, inbox: Connection, outbox: Connection) -> None:
        self.inbox = inbox
        self.outbox = outbox
        self.started = False
        self.remote: Any = None
        self.nodes = NodeWatch(60.0)

    def init(self, address: str | None, options: dict[str, Any], grace: float) -> bool:
        try:
            import ray
        except ImportError as err:
            self.outbox.send(("failed", "missing", str(err)))
            return False
        try:
            if address is None:
                ray.init(include_dashboard=False, logging_level=logging.WARNING, **options)
            else:
                ray.init(address=address, logging_level=logging.WARNING, **options)
        except ConnectionError as err:
            self.outbox.send(("failed", "unreachable", _lost_text(err)))
            return False
        except Exception as err:  # Ray's start can fail in many ways: each is one line
            self.outbox.send(("failed", "start", _lost_text(err)))
            return False
        self.started = address is None
        self.nodes = NodeWatch(grace)
        from tpdisc.executors.ray import run_on_ray

        self.remote = ray.remote(run_on_ray)
        self.outbox.send(("ready",))
        return True

    def run(self, blobs: dict[str, bytes], payloads: list[Payload], limit: int) -> bool:
        """Run one batch; False when the cluster failed (this driver must end)."""
        import ray

        index: dict[Any, int] = {}
        try:
            refs = {key: ray.put(blob) for key, blob in blobs.items()}
            queue = iter(enumerate(payloads))

            def submit_next() -> None:
                for k, payload in queue:
                    ref = self.remote.remote(payload, *(refs[key] for key in payload.keys))
                    index[ref] = k
                    return

            for _ in range(min(limit, len(payloads))):
                submit_next()
            while index:
                if self.inbox.poll() and self.inbox.recv()[0] == "cancel":
                    break
                done, _ = ray.wait(list(index), num_returns=1, timeout=WAIT_SECONDS)
                gone = None if done else self.nodes.lost()
                if gone is not None:
                    self.outbox.send(("lost", gone))
                    return False
                for ref in done:
                    k = index.pop(ref)
                    self.outbox.send(("result", k, ray.get(ref)))
                    submit_next()
        except ray.exceptions.RayTaskError as err:
            self._cancel(index)
            cause = getattr(err, "cause", None)
            if isinstance(cause, ray.exceptions.RayError):
                # Ray's, not the task's own: an argument lost (its owner or its node gone,
                # its copies freed). A task itself never calls Ray.
                self.outbox.send(("lost", _lost_text(cause)))
                return False
            self.outbox.send(("task-error", _pickled_cause(err)))
            return True
        except ray.exceptions.RayError as err:
            self.outbox.send(("lost", _lost_text(err)))
            return False
        self._cancel(index)
        self.outbox.send(("done",))
        return True

    @staticmethod
    def _cancel(index: dict[Any, int]) -> None:
        import ray

        for ref in index:
            with contextlib.suppress(Exception):  # a task already ended, or the cluster is going
                ray.cancel(ref)

    def serve(self) -> None:
        while True:
            try:
                message = self.inbox.recv()
            except EOFError:  # the command is gone
                return
            if message[0] == "run" and not self.run(*message[1:]):
                return
            if message[0] == "close":
                return

    def shutdown(self) -> None:
        if self.started:
            import ray

            with contextlib.suppress(Exception):  # a lost cluster has nothing left to shut down
                ray.shutdown()
        kill_below(os.getpid())


def _pickled_cause(err: BaseException) -> bytes:
    """The task's own exception, pickled for the command (a ProtocolError, say); one that
    does not pickle is sent as a RuntimeError with its text."""
    cause = getattr(err, "cause", None)
    if not isinstance(cause, Exception):
        cause = RuntimeError(str(err))
    try:
        return pickle.dumps(cause, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return pickle.dumps(RuntimeError(f"{type(cause).__name__}: {cause}"))


def main(argv: list[str]) -> None:
    read_fd, write_fd, owner = (int(a) for a in argv)
    # Print nothing on stdout: whatever Ray or a library prints goes to stderr.
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command decides what Ctrl-C does
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _end_with(owner)
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    driver = Driver(inbox, outbox)
    try:
        message = inbox.recv()
        if message[0] == "init" and driver.init(*message[1:]):
            driver.serve()
    except (EOFError, BrokenPipeError):  # the command is gone
        pass
    finally:
        driver.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
