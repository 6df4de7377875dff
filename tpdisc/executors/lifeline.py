"""Processes that end with the one they serve: a pool's workers, and the forkserver that
forks them.

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

import ctypes
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable

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
