"""The forkserver's lifeline: a process that imports it ends with the process that started
it, when (and only when) that process named itself its owner."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.executors.test_lifeline import Tree, descendants, environment, kill_all, still_running
from tpdisc.executors.worker_server import FORKSERVER_OWNER

# The starter: names itself the owner (or not), starts a child that imports the lifeline,
# says so (on the same pipe) and then waits, prints the child's pid, and waits too.
STARTER = """
import os, subprocess, sys, time
env = dict(os.environ)
if sys.argv[1] == "owner":
    env[{variable!r}] = str(os.getpid())
child = subprocess.Popen(
    [sys.executable, "-c", "import tpdisc.executors.server_lifeline, time; "
     "print('ready', flush=True); time.sleep(600)"],
    env=env,
)
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("named", [True, False])
def test_a_server_ends_with_its_owner_only(tmp_path: Path, named: bool) -> None:
    env = environment(tmp_path)
    env.pop(FORKSERVER_OWNER, None)
    script = STARTER.format(variable=FORKSERVER_OWNER)
    starter = subprocess.Popen(
        [sys.executable, "-c", script, "owner" if named else "other"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    tree: Tree = {}
    try:
        assert starter.stdout is not None
        lines = {starter.stdout.readline().strip() for _ in range(2)}
        assert "ready" in lines
        child = int(next(line for line in lines if line != "ready"))
        tree = descendants(starter.pid)
        assert child in tree
        starter.send_signal(signal.SIGKILL)
        starter.wait(10)
        deadline = time.monotonic() + 10
        while still_running({child: tree[child]}) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert bool(still_running({child: tree[child]})) is not named
    finally:
        starter.kill()
        starter.wait()
        kill_all(tree)
