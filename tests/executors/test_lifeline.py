"""Nothing outlives the process it serves: a command ended by SIGTERM, SIGINT or SIGKILL,
or a test killed by its timeout, leaves no pool worker, forkserver or sandbox behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import TOY
from tpdisc.executors.lifeline import kill_session, session_members

# Every process is named by its pid and its start time (a pid may be reused).
Tree = dict[int, str]


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # state, ppid, ... (the name may hold spaces)


def descendants(root: int) -> Tree:
    """Every living process below ``root``: pid -> start time."""
    parents: dict[int, int] = {}
    started: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[0] != "Z":
                parents[int(entry)] = int(fields[1])
                started[int(entry)] = fields[19]
    tree: Tree = {}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree[child] = started[child]
                frontier.append(child)
    return tree


def still_running(tree: Tree) -> list[int]:
    """The processes of ``tree`` that are alive (the same process: same start time)."""
    left = []
    for pid, start in tree.items():
        fields = _stat(pid)
        if fields is not None and fields[0] != "Z" and fields[19] == start:
            left.append(pid)
    return left


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def assert_all_gone(tree: Tree, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while still_running(tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = still_running(tree)
    assert not left, f"left running: {[cmdline(p)[:150] for p in left]}"


def kill_all(tree: Tree) -> None:
    """After a failure: what this test started does not outlive it."""
    for pid in still_running(tree):
        os.kill(pid, signal.SIGKILL)


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid} (gone)"


def sandboxes(tree: Tree) -> list[int]:
    return [pid for pid in tree if "tpdisc.sandbox.zygote" in cmdline(pid)]


def environment(tmp_path: Path) -> dict[str, str]:
    root = str(Path(__file__).parents[2])
    return {**os.environ, "PYTHONPATH": root, "TPDISC_CACHE": str(tmp_path / "cache")}


PROTOCOL = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        return {(i + 1) % self.n: [(i, len(agent_states[i]["memories"]) - 1)]
                for i in range(self.n) if agent_states[i]["memories"]}
"""


# SIGINT at Python's default even when the suite was started in the background by a
# non-interactive shell (`pytest &`, nohup), whose children inherit SIGINT ignored: there a
# Ctrl-C reaches no one, as it should not, and this test would wait for nothing.
INTERRUPTIBLE_MAIN = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from tpdisc.cli import main; main()"
)


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_command_ended_by_a_signal_leaves_nothing_behind(
    tmp_path: Path, ending: signal.Signals
) -> None:
    recipes, protocol = tmp_path / "toy.json", tmp_path / "ring.py"
    recipes.write_text(json.dumps(TOY))
    protocol.write_text(PROTOCOL)
    command = [sys.executable, "-c", INTERRUPTIBLE_MAIN, "evaluate",
               str(protocol), "asocial", "--recipes", str(recipes), "--agent-type",
               "stochastic", "--sims", "5000", "--steps", "40", "--workers", "2"]  # fmt: skip
    process = subprocess.Popen(
        command,
        env=environment(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tree: Tree = {}
    try:
        # Pool workers simulating sandboxed protocols: each has started its zygote.
        wait_for(lambda: len(sandboxes(descendants(process.pid))) >= 2, 120, "the sandboxes")
        tree = descendants(process.pid)
        process.send_signal(ending)
        process.wait(60)
        assert_all_gone(tree)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)


GIL_HOLDER = """
import os, re
from tpdisc.executors.process import ProcessExecutor

class Stuck:
    # A regular expression that backtracks for ages, in C, holding the GIL throughout:
    # a thread of this process waiting to end it cannot run.
    def __call__(self):
        # One write of less than PIPE_BUF bytes: the two workers' lines cannot interleave
        # (print writes the number and the newline separately).
        os.write(1, b"%d\\n" % os.getpid())
        return re.match(r"(a+)+$", "a" * 40 + "b")

if __name__ == "__main__":
    ProcessExecutor(2).run([Stuck(), Stuck()])
"""


def test_workers_end_with_their_owner_even_while_holding_the_gil(tmp_path: Path) -> None:
    script = tmp_path / "owner.py"
    script.write_text(GIL_HOLDER)
    owner = subprocess.Popen(
        [sys.executable, str(script)], env=environment(tmp_path), stdout=subprocess.PIPE
    )
    tree: Tree = {}
    try:
        assert owner.stdout is not None
        workers = [int(owner.stdout.readline()) for _ in range(2)]
        tree = descendants(owner.pid)
        assert set(workers) <= set(tree)  # and the forkserver they were forked from
        owner.kill()
        owner.wait(10)
        assert_all_gone(tree)
    finally:
        owner.kill()
        owner.wait()
        kill_all(tree)


KILLED_TEST = """
import pytest
from tpdisc.study.config import StudyConfig
from tpdisc.study.runner import run_study


@pytest.mark.timeout({seconds}, method="{method}")
def test_a_study_that_runs_too_long(tmp_path):
    config = StudyConfig.from_dict({{
        "runs": 1, "long_steps": 40, "recipes": "{recipes}",
        "search": {{"iterations": 50, "sims": 40,
                    "sim": {{"n_agents": 6, "n_steps": 40, "agent_type": "stochastic"}}}},
        "baselines": {{"protocols": "standard", "sims": 3}},
        "executor": {{"kind": "processes", "workers": 2}},
    }})
    run_study(tmp_path / "study", config)
"""


@pytest.mark.parametrize("method", ["signal", "thread"])
def test_a_test_killed_by_its_timeout_leaves_no_pool_running(tmp_path: Path, method: str) -> None:
    # The search scores its protocols in the sandbox, on a pool of two workers: the
    # timeout strikes while they run.
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    inner = tmp_path / "inner" / "test_inner.py"
    inner.parent.mkdir()
    seconds = 45
    inner.write_text(
        textwrap.dedent(KILLED_TEST.format(seconds=seconds, method=method, recipes=recipes))
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(inner)],
        cwd=inner.parent,
        env=environment(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    tree: Tree = {}
    try:
        wait_for(lambda: len(sandboxes(descendants(process.pid))) >= 2, 120, "the sandboxes")
        tree = descendants(process.pid)
        output, _ = process.communicate(timeout=seconds + 120)
        assert "Timeout" in output, output[-2000:]
        assert_all_gone(tree)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)


INTERRUPTED_RUNS = """
import signal
from tests.executors.test_executors import Echo
from tpdisc.executors.process import ProcessExecutor

def ctrl_c(signum, frame):
    # SIGINT raised wherever the main thread happens to be, as a Ctrl-C arrives
    signal.raise_signal(signal.SIGINT)

if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
    signal.signal(signal.SIGALRM, ctrl_c)
    for delay in [0.1 * k for k in range(1, 13)]:
        executor = ProcessExecutor(2)
        signal.setitimer(signal.ITIMER_REAL, delay)
        try:
            executor.run([Echo(k) for k in range(20000)])
            signal.setitimer(signal.ITIMER_REAL, 0)
            print("finished before the interrupt", flush=True)
        except KeyboardInterrupt:
            pass
        executor.close()
        print("closed", flush=True)
"""


def test_a_run_interrupted_anywhere_leaves_a_pool_that_closes(tmp_path: Path) -> None:
    # Ctrl-C lands wherever the main thread is, inside the pool's own code too; the run
    # must then end and the pool shut down, not wait for ever on a lock or a pipe that an
    # exception raised there left half used.
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED_RUNS)
    owner = subprocess.Popen(
        [sys.executable, str(script)],
        env=environment(tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        out, _ = owner.communicate(timeout=60)
        assert out.split("\n").count("closed") == 12, out
    finally:
        tree = descendants(owner.pid)
        owner.kill()
        owner.wait()
        kill_all(tree)


def test_kill_session_ends_what_a_leader_that_died_left_in_its_session() -> None:
    """A session leader killed without cleaning up (as Ray ends its driver) leaves its
    child re-parented away from it, but still in its session: kill_session ends it."""
    child = "[sys.executable, '-c', 'import time; time.sleep(60)']"
    script = f"import subprocess, sys, time; subprocess.Popen({child}); time.sleep(60)"
    leader = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    tree: Tree = {}
    try:
        wait_for(lambda: bool(descendants(leader.pid)), 30, "the leader's child")
        tree = descendants(leader.pid)
        leader.kill()
        leader.wait()
        assert session_members(leader.pid) == list(tree)  # orphaned, still in the session
        kill_session(leader.pid)
        assert not still_running(tree)
        assert session_members(leader.pid) == []
    finally:
        leader.kill()
        leader.wait()
        kill_all(tree)
