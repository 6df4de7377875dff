"""The server that process pools fork their workers from, startable before anything heavy
is imported (this module imports nothing of tpdisc's), so that it boots while a command
still loads."""

from __future__ import annotations

import multiprocessing
import os

# What the server imports before forking: every worker starts with the simulator loaded,
# and with numba ready to run the agents' kernels if asked; and, first, what ends the
# server with the process that started it.
WORKER_PRELOAD = "tpdisc.sim.evaluate"
KERNELS_PRELOAD = "tpdisc.agents.kernels_preload"
LIFELINE_PRELOAD = "tpdisc.executors.server_lifeline"
# The variable that tells a server which process started it (read by LIFELINE_PRELOAD).
FORKSERVER_OWNER = "TPDISC_FORKSERVER_OWNER"


def default_start_method() -> str:
    # A fresh worker forked from a clean server process inherits no threads (rich progress
    # bars, Ray) and no child processes of the parent (sandbox zygotes), unlike plain fork,
    # and starts much faster than spawn once the server runs.
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def start_worker_server(kernels: bool) -> None:
    """Start the forkserver of this process, preloaded with the simulator, and return at
    once: it boots in the background, in about 0.15 s, plus 0.25 s to load numba with
    ``kernels``. One server serves every pool of the process; a pool started later forks
    its workers from it, which then start ready. Without the forkserver start method (not
    on Linux) this does nothing."""
    if default_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    preload = [WORKER_PRELOAD, *([KERNELS_PRELOAD] if kernels else [])]
    set_preload(preload)
    forkserver.ensure_running()


def set_preload(modules: list[str]) -> None:
    """What a forkserver started from now on by this process imports: ``modules``, after
    the module that ends it with this process (which it is told it is the owner of)."""
    os.environ[FORKSERVER_OWNER] = str(os.getpid())
    multiprocessing.get_context("forkserver").set_forkserver_preload([LIFELINE_PRELOAD, *modules])
