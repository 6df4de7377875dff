"""Imported by a forkserver that tpdisc starts (one of its preloaded modules), and nowhere
else: the server ends as soon as the process that started it does, even while its workers
live on (each holds the server's "alive" pipe, which otherwise keeps it running). Its
workers, forked from its only thread, then get the kernel's SIGKILL
(:func:`tpdisc.executors.lifeline.pool_worker`).

The server knows it is one from the variable its starter set
(:func:`tpdisc.executors.worker_server.set_preload`): importing this module in any other
process does nothing.
"""

from __future__ import annotations

import os

from tpdisc.executors.lifeline import exit_with
from tpdisc.executors.worker_server import FORKSERVER_OWNER

if os.environ.get(FORKSERVER_OWNER) == str(os.getppid()):
    exit_with(os.getppid())
