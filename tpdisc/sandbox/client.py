"""This process's zygote: started on first use, never shared with another process.

One zygote per process that runs simulations (the main process, or each worker of a process
pool). A process forked from one that already has a zygote forgets it and starts its own;
the zygote exits when its control socket closes or its parent dies, and kills its workers.
"""

from __future__ import annotations

import ast
import atexit
import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tpdisc.python_source import parse

# Whether workers may get an empty root (user and mount namespaces) where the platform
# allows; off only to check that the seccomp filter alone still runs.
NAMESPACES = True
START_TIMEOUT = 120.0  # imports of numpy and scikit-learn on a loaded machine
REQUEST_TIMEOUT = 30.0

# The zygote's whole environment: no variable of the parent (API keys!) reaches it. One thread
# per numeric library: smaller address space, and no thread to create under seccomp.
ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding tpdisc/
_BOOT = (
    f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
    "from tpdisc.sandbox.zygote import main; main()"
)


class ZygoteError(Exception):
    """The zygote could not start or stopped answering."""


@dataclass
class WorkerHandle:
    """A forked worker: its pid, a pidfd to kill it by, and the parent's end of its socket."""

    pid: int
    pidfd: int
    sock: socket.socket

    def kill(self) -> None:
        try:
            if self.pidfd >= 0:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait_gone(self, timeout: float) -> bool:
        """Wait until the worker has exited (True), at most ``timeout`` seconds."""
        if self.pidfd < 0:
            return False
        return bool(select.select([self.pidfd], [], [], timeout)[0])

    def release(self) -> None:
        self.sock.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1


class Zygote:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.lock = threading.Lock()
        self.owner = os.getpid()
        # PDEATHSIG fires when the *thread* that forked exits: only arm it from the main thread.
        pdeathsig = int(threading.current_thread() is threading.main_thread())
        boot_args = [str(theirs.fileno()), str(os.getpid()), str(pdeathsig), str(int(NAMESPACES))]
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-s", "-B", "-P", "-c", _BOOT, *boot_args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                env=ENVIRONMENT,
                cwd="/",
                start_new_session=True,
            )
        except OSError as err:
            ours.close()
            raise ZygoteError(f"cannot start the sandbox zygote: {err}") from None
        finally:
            theirs.close()
        self.control = ours
        self.control.settimeout(START_TIMEOUT)
        try:
            hello = self.control.recv(4096)
        except OSError as err:  # socket.timeout included
            self.close()
            raise ZygoteError(f"the sandbox zygote did not start ({err})") from None
        if not hello.startswith(b"ready "):
            self.close()
            detail = hello.decode(errors="replace").removeprefix("error ") or "it exited"
            raise ZygoteError(f"the sandbox zygote failed to start: {detail}")
        info = json.loads(hello[6:])
        self.seccomp: bool = bool(info["seccomp"])
        self.seccomp_reason: str = str(info["reason"])
        self.namespaces: bool = bool(info.get("namespaces"))
        self.namespaces_reason: str = str(info.get("namespaces_reason", "not reported"))
        self.control.settimeout(REQUEST_TIMEOUT)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, extras: Sequence[str] = ()) -> WorkerHandle:
        """A new worker; ``extras``: the optional libraries its protocol imports, which the
        zygote loads first if it has not yet (see :func:`optional_imports`)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        request = b" ".join([b"spawn", *(e.encode() for e in extras)])
        try:
            with self.lock:
                socket.send_fds(self.control, [request], [theirs.fileno()])
                reply, fds, _, _ = socket.recv_fds(self.control, 1024, 1)
        except OSError as err:
            ours.close()
            raise ZygoteError(f"the sandbox zygote stopped answering ({err})") from None
        finally:
            theirs.close()
        if not reply.startswith(b"ok "):
            ours.close()
            for fd in fds:
                os.close(fd)
            detail = reply.decode(errors="replace").removeprefix("error ") or "it exited"
            raise ZygoteError(f"the sandbox zygote could not fork a worker: {detail}")
        return WorkerHandle(int(reply.split()[1]), fds[0] if fds else -1, ours)

    def exit_status(self, pid: int) -> tuple[str, int, float] | None:
        """How a (killed or dead) worker ended: ("signal"|"exit", number, CPU seconds)."""
        try:
            with self.lock:
                self.control.send(b"status %d" % pid)
                reply = self.control.recv(1024).decode().split()
        except OSError:
            return None
        if len(reply) != 5 or reply[2] not in ("signal", "exit"):
            return None
        return reply[2], int(reply[3]), float(reply[4])

    def close(self) -> None:
        self.control.close()
        try:
            self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def abandon(self) -> None:
        """In a forked child: drop the parent's zygote without touching it."""
        self.control.close()
        self.process.returncode = 0  # not ours to wait for


# Per-process cache of the zygote. Module state on purpose: it is a process resource (like an
# open file), guarded by a lock, reset in forked children, closed at exit.
_zygote: Zygote | None = None
_lock = threading.Lock()
_start_error: tuple[float, str] | None = None
RETRY_AFTER = 5.0


# Libraries the zygote loads only for protocols that import them (zygote.EXTRAS).
OPTIONAL_LIBRARIES = ("sklearn",)


@functools.lru_cache(maxsize=256)
def optional_imports(source: str) -> tuple[str, ...]:
    """The optional libraries ``source`` imports, anywhere in its code."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()  # the worker reports what is wrong with the source
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.partition(".")[0])
    return tuple(name for name in OPTIONAL_LIBRARIES if name in found)


def get_zygote() -> Zygote:
    """This process's zygote, started (or restarted, if it died) on demand."""
    global _zygote, _start_error
    with _lock:
        if _zygote is not None and _zygote.alive():
            return _zygote
        if _zygote is not None:
            _zygote.close()
            _zygote = None
        if _start_error is not None and time.monotonic() - _start_error[0] < RETRY_AFTER:
            raise ZygoteError(_start_error[1])
        try:
            _zygote = Zygote()
        except ZygoteError as err:
            _start_error = (time.monotonic(), str(err))
            raise
        _start_error = None
        return _zygote


def shutdown() -> None:
    """Stop this process's zygote (and so every worker it forked)."""
    global _zygote
    with _lock:
        if _zygote is not None:
            _zygote.close()
            _zygote = None


def _forget_in_child() -> None:
    global _zygote, _lock, _start_error
    _lock = threading.Lock()
    _start_error = None
    if _zygote is not None:
        _zygote.abandon()
        _zygote = None


atexit.register(shutdown)
os.register_at_fork(after_in_child=_forget_in_child)
