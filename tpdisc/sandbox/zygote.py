"""The zygote: a clean interpreter that pre-imports everything and forks one worker per
simulation (scikit-learn only once a protocol that imports it is to run).

It is started (by :mod:`tpdisc.sandbox.client`) from a fresh executable with a minimal
environment, so it holds no secret of the parent, and it never runs protocol code itself:
sources go straight from the parent to each forked worker. Requests arrive on a
SOCK_SEQPACKET control socket:

- ``spawn [EXTRA ...]`` with one fd attached (the worker's end of its socket): load the
  optional libraries named (:data:`EXTRAS`) if not loaded yet, fork a worker on it and
  answer ``ok <pid>`` with a pidfd of the worker attached, so the parent can kill it without
  any pid-reuse race;
- ``status <pid>``: how that worker ended, ``status <pid> signal|exit <n> <cpu seconds>``
  (only the zygote, its parent, can know).

Before its first answer it proves, each in a throwaway child, that the seccomp filter loads
and that a worker can get an empty root (:mod:`tpdisc.sandbox.emptyroot`); its ``ready``
message says which of these walls its workers get, and why not. The zygote itself keeps
the filesystem: each worker enters its own namespaces after the fork.

It exits, killing its workers, when the control socket closes or its parent dies.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import gc
import importlib.abc
import json
import os
import pwd
import select
import signal
import socket
import sys

from tpdisc.sandbox import confine, emptyroot, probe

MAX_STATUSES = 1024
NUMPY_LAZY = (
    "linalg",
    "fft",
    "dtypes",
    "random",
    "polynomial",
    "ma",
    "exceptions",
    "strings",
    "char",
    "rec",
    "emath",
    "lib",
)
PARENT_CHECK_SECONDS = 1.0


OPTIONAL_HEAVY = ("pandas", "pyarrow")


class _Refuse(importlib.abc.MetaPathFinder):
    """Makes ``import`` of some packages fail, as if they were not installed."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{name} is not preloaded in the sandbox", name=name)
        return None


def preload() -> None:
    """Import, and exercise once, everything protocol code may use: lazy imports open files,
    which the worker's seccomp filter forbids."""
    import abc  # noqa: F401
    import bisect  # noqa: F401
    import collections.abc  # noqa: F401
    import copy  # noqa: F401
    import dataclasses  # noqa: F401
    import enum  # noqa: F401
    import functools  # noqa: F401
    import heapq  # noqa: F401
    import itertools  # noqa: F401
    import math  # noqa: F401
    import operator  # noqa: F401
    import random
    import statistics
    import typing  # noqa: F401

    import numpy as np

    # numpy loads these on first attribute access.
    for sub in NUMPY_LAZY:
        getattr(np, sub)
    # Without libseccomp the probe below reports seccomp as unavailable.
    with contextlib.suppress(ImportError, RuntimeError, OSError):
        import pyseccomp  # noqa: F401

    import tpdisc.sandbox.worker  # noqa: F401

    rng = np.random.default_rng(0)
    x = rng.random((40, 3))
    np.random.seed(0)
    random.seed(0)
    random.Random(1).sample(range(10), 3)
    statistics.mean([1.0, 2.0])
    statistics.median([1, 2, 3])
    statistics.stdev([1.0, 2.0, 4.0])
    np.linalg.svd(x)
    np.linalg.eigh(x.T @ x)
    np.fft.fft(x[:, 0])
    np.polynomial.polynomial.polyfit(x[:, 0], x[:, 1], 2)
    # Everything imported so far stays put: no worker's garbage collection walks it, which
    # would copy every page of the zygote's heap into the worker (~0.2 s per worker).
    gc.collect()
    gc.freeze()


def preload_sklearn() -> None:
    """scikit-learn (with scipy, about 0.7 s to import): loaded when the first protocol
    that imports it is about to run, not at start, so that zygotes whose protocols do not
    use it (most) start fast."""
    # scikit-learn treats pandas as optional, and protocols cannot import it: without it (and
    # the pyarrow it pulls in) each worker maps ~200 MB less and forks faster.
    blocker = _Refuse(OPTIONAL_HEAVY)
    sys.meta_path.insert(0, blocker)
    try:
        import sklearn.metrics
        import sklearn.neighbors
    finally:
        sys.meta_path.remove(blocker)
    import numpy as np

    x = np.random.default_rng(0).random((40, 3))
    for tree in (sklearn.neighbors.KDTree(x), sklearn.neighbors.BallTree(x)):
        tree.query(x[:2], k=3)
        tree.query_radius(x[:2], r=0.3)
    for algorithm in ("brute", "kd_tree", "ball_tree"):
        nn = sklearn.neighbors.NearestNeighbors(n_neighbors=3, algorithm=algorithm).fit(x)
        nn.kneighbors(x[:2])
    labels = (x[:, 0] > 0.5).astype(int)
    sklearn.neighbors.KNeighborsClassifier(n_neighbors=3).fit(x, labels).predict(x[:3])
    sklearn.metrics.pairwise_distances(x[:5], x[:7])
    sklearn.metrics.pairwise_distances(x[:5], metric="cosine")
    sklearn.metrics.pairwise.cosine_similarity(x[:5])
    sklearn.metrics.jaccard_score(labels, labels[::-1])
    sklearn.metrics.accuracy_score(labels, labels)
    sklearn.metrics.mutual_info_score(labels, labels[::-1])
    gc.collect()
    gc.freeze()


# What a spawn request may ask the zygote to load first (see Zygote.load).
EXTRAS = {"sklearn": preload_sklearn}


def probe_seccomp() -> tuple[bool, str]:
    """Compile the filter, once for every worker this zygote forks, then load it in a
    throwaway child and check that it refuses to open a file."""
    from tpdisc.sandbox import policy

    try:
        policy.compiled()
    except Exception as err:  # libseccomp missing or laying the filter out unexpectedly
        return False, f"the seccomp filter does not compile ({err})"

    def attempt() -> str:
        policy.install(os.getpid())
        try:
            os.close(os.open("/", os.O_RDONLY))
        except PermissionError:
            return ""
        return "the filter did not stop open()"

    return probe.in_child(attempt, "seccomp")


def nobody() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


class Zygote:
    def __init__(self, control: socket.socket, parent_pid: int) -> None:
        self.control = control
        self.parent_pid = parent_pid
        self.pid = os.getpid()
        self.uid, self.gid = nobody()
        self.children: set[int] = set()
        self.loaded: set[str] = set()
        self.statuses: collections.OrderedDict[int, str] = collections.OrderedDict()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def reap(self, pid: int = -1, block: bool = False) -> None:
        while self.children:
            try:
                found, status, usage = os.wait4(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if found == 0:
                return
            self.children.discard(found)
            cpu = usage.ru_utime + usage.ru_stime
            if os.WIFSIGNALED(status):
                text = f"signal {os.WTERMSIG(status)} {cpu:.3f}"
            else:
                text = f"exit {os.waitstatus_to_exitcode(status)} {cpu:.3f}"
            self.statuses[found] = text
            while len(self.statuses) > MAX_STATUSES:
                self.statuses.popitem(last=False)
            if pid != -1:
                return

    def load(self, names: list[bytes]) -> None:
        """The optional libraries a worker's protocol imports, once per zygote."""
        for name in names:
            extra = name.decode(errors="replace")
            if extra in EXTRAS and extra not in self.loaded:
                EXTRAS[extra]()
                self.loaded.add(extra)

    def spawn(self, fd: int) -> None:
        try:
            pid = os.fork()
        except OSError as err:
            os.close(fd)
            self.control.send(f"error cannot fork a worker: {err}".encode())
            return
        if pid == 0:
            self.become_worker(fd)
        self.children.add(pid)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = -1
        try:
            socket.send_fds(self.control, [b"ok %d" % pid], [pidfd] if pidfd >= 0 else [])
        finally:
            if pidfd >= 0:
                os.close(pidfd)
            os.close(fd)

    def become_worker(self, fd: int) -> None:
        code = 70
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if fd != 3:
                os.dup2(fd, 3)
            os.closerange(4, 1 << 16)
            from tpdisc.sandbox import worker

            code = worker.run(3, self.pid, self.uid, self.gid)
        finally:
            os._exit(code)

    def status(self, pid: int) -> None:
        if pid in self.children:
            self.reap(pid, block=True)
        text = self.statuses.pop(pid, "unknown")
        self.control.send(f"status {pid} {text}".encode())

    def serve(self) -> None:
        try:
            while os.getppid() == self.parent_pid:
                ready, _, _ = select.select(
                    [self.control.fileno(), self.wake_r], [], [], PARENT_CHECK_SECONDS
                )
                if self.wake_r in ready:
                    os.read(self.wake_r, 4096)
                self.reap()
                if self.control.fileno() not in ready:
                    continue
                message, fds, _, _ = socket.recv_fds(self.control, 1024, 4)
                if not message:
                    return
                if message.split(b" ")[0] == b"spawn" and len(fds) == 1:
                    self.load(message.split()[1:])
                    self.spawn(fds[0])
                    continue
                for fd in fds:
                    os.close(fd)
                if message.startswith(b"status "):
                    self.status(int(message.split()[1]))
        finally:
            for pid in self.children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def main() -> None:
    # Heap addresses leak into a protocol through id(), hash() and repr() of objects and the
    # order of sets of them: with a fixed layout (and PYTHONHASHSEED fixed by the client)
    # they repeat from run to run. The layout is chosen at execve, hence the re-execution.
    if confine.address_randomisation_off():
        os.execv(sys.executable, sys.orig_argv)
    control_fd, parent_pid, pdeathsig = (int(a) for a in sys.argv[1:4])
    namespaces_wanted = sys.argv[4:5] != ["0"]
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if pdeathsig:
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        return
    try:
        preload()
        seccomp, reason = probe_seccomp()
        # After preload: a worker in its empty root can import nothing more.
        become_nobody = functools.partial(confine.become, *nobody())
        namespaces, namespaces_reason = emptyroot.activate(become_nobody, namespaces_wanted)
    except BaseException as err:
        control.send(f"error {type(err).__name__}: {err}".encode()[:1000])
        return
    info = {
        "seccomp": seccomp,
        "reason": reason,
        "namespaces": namespaces,
        "namespaces_reason": namespaces_reason,
    }
    control.send(b"ready " + json.dumps(info).encode())
    Zygote(control, parent_pid).serve()


if __name__ == "__main__":
    main()
