"""Processes that end with the one they serve: a pool's workers, the forkserver that forks
them, and what a Ray driver that Ray ended itself left in its session (:func:`kill_session`).

Idle workers block on a queue whose write end they hold themselves, and the forkserver
lives as long as any worker does (each holds its "alive" pipe): once the pool's owner is
gone (SIGTERM, SIGKILL, a test runner's timeout) nothing would ever wake them, and they
would stay behind, re-parented to init. So:

- the forkserver ends as soon as the process that started it does
  (:mod:`tpdisc.executors.server_lifeline`, which the server imports first:
  :func:`tpdisc.executors.worker_server.set_preload`);
- each worker ends as soon as the pool's owner does (:func:`exit_with`), and a worker
  forked by the forkserver is also killed by the kernel the moment that server ends
  (:func:`kill_with_parent`): a worker stuck in C code that holds the GIL, whose waiting
  thread could not run, goes too.

Waiting uses a pidfd (Linux 5.3+); elsewhere a thread checks twice a second.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

POLL_SECONDS = 0.5
PR_SET_PDEATHSIG = 1


def exit_with(pid: int) -> None:
    """End this process (``os._exit``) as soon as the process ``pid`` ends."""
    when_gone(pid, lambda: os._exit(1))


def when_gone(pid: int, then: Callable[[], None]) -> None:
    """Call ``then`` as soon as the process ``pid`` ends (from a thread of its own; at
    once if it has ended already)."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        then()
        return
    except (AttributeError, OSError):  # no pidfds here: poll
        fd = None

    def watch() -> None:
        if fd is not None:
            select.select([fd], [], [])
        else:
            while _alive(pid):
                time.sleep(POLL_SECONDS)
        then()

    threading.Thread(target=watch, name="tpdisc-lifeline", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def kill_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when ``parent`` (the thread of it that forked
    this process) ends (Linux; nothing elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it ended before the signal was armed
        os._exit(1)


def pool_worker(owner: int) -> None:
    """The initializer of every pool worker: end with the pool's ``owner`` and, when forked
    by the forkserver (from its only thread), with the server too."""
    parent = os.getppid()
    if parent != owner:
        kill_with_parent(parent)
    exit_with(owner)


def process_stats() -> Iterator[tuple[int, list[bytes]]]:
    """Every process's pid and the fields of its ``/proc/PID/stat`` after the name (state,
    ppid, pgrp, session, ...); the name, in parentheses, may hold spaces."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3:
            yield int(entry), fields


def session_members(sid: int) -> list[int]:
    """The live processes of session ``sid`` (zombies left out)."""
    session = str(sid).encode()
    return [pid for pid, fields in process_stats() if fields[0] != b"Z" and fields[3] == session]


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` until none is left.

    A Ray driver (:mod:`tpdisc.executors.ray_driver`) is a session of its own, and the
    local Ray instance it starts stays in it. When Ray ends the driver from C++ (no
    ``finally`` runs, so its :func:`~tpdisc.executors.ray_driver.kill_below` does not),
    those processes are re-parented away from it but not out of its session: the command
    ends them with this, at once, where Ray's agents would only notice after seconds
    (several times that on a busy machine)."""
    kill_until_none(lambda: session_members(sid))


def kill_until_none(find: Callable[[], list[int]], rounds: int = 50) -> None:
    """SIGKILL the processes ``find`` lists until it lists none (a dying process may still
    start one), reaping those that are this process's children, so that none lingers as
    a zombie."""
    for _ in range(rounds):
        found = find()
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in found:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.02)
