"""The zygote's life: one per process, lazily started, never outliving its parent, and safe
under forked children, pool workers and threads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.sandbox.helpers import RANDOM_PROTOCOL, source_spec, toy_states, wait_for
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.sandbox import SandboxError, client
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate

ECHO = (
    "class P:\n    def __init__(self, n, t):\n        pass\n"
    "    def share_memories(self, i, s):\n        return {0: [(1, 0)]}\n"
)


def running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper has stopped running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def test_a_killed_parent_takes_its_zygote_and_busy_worker_with_it() -> None:
    script = textwrap.dedent(
        """
        import sys
        from tpdisc.sandbox import SandboxConfig, SandboxedSource, client
        source = "class P:\\n    def __init__(self, n, t):\\n        pass\\n" \\
            "    def share_memories(self, i, s):\\n        while True:\\n            pass\\n"
        spec = SandboxedSource("spin", source, "spin.py", False, SandboxConfig(time_limit=60))
        runner = spec.open(2, 5, 0)
        print(client.get_zygote().pid, runner.worker.pid, flush=True)
        empty = {"inventory": (), "memories": ()}
        runner.share(0, {0: empty, 1: empty})
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    try:
        assert parent.stdout is not None
        zygote_pid, worker_pid = (int(x) for x in parent.stdout.readline().split())
        assert running(zygote_pid) and running(worker_pid)
        parent.kill()
        parent.wait()
        assert wait_for(lambda: not running(worker_pid) and not running(zygote_pid))
    finally:
        parent.kill()
        parent.wait()


def test_a_forked_child_starts_its_own_zygote_and_leaves_the_parents_alone() -> None:
    runner = source_spec(ECHO).open(3, 5, 0)
    parent_zygote = client.get_zygote().pid
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running pytest's teardown
        message = "child failed"
        try:
            try:
                runner.share(0, toy_states())
                inherited = "usable"
            except SandboxError as err:
                inherited = err.kind
            with source_spec(ECHO).open(3, 5, 0) as own:
                answer = own.share(0, toy_states())
            child_zygote = client.get_zygote().pid
            message = f"{inherited} {answer == {0: [(1, 0)]}} {child_zygote != parent_zygote}"
            client.shutdown()
        finally:
            os.write(write_end, message.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as fh:
        message = fh.read()
    os.waitpid(pid, 0)
    assert message == "sandbox True True"
    with runner:  # the parent's runner and zygote were not disturbed
        assert runner.share(0, toy_states()) == {0: [(1, 0)]}
    assert client.get_zygote().pid == parent_zygote


@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_pool_workers_run_sandboxed_simulations_like_this_process(
    toy_graph: RecipeGraph, start_method: str
) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=4, n_steps=6)
    spec = source_spec(RANDOM_PROTOCOL)
    serial = evaluate(domain, config, spec, [0, 1, 2, 3], executor=SerialExecutor())
    with ProcessExecutor(2, start_method=start_method) as pool:
        pooled = evaluate(domain, config, spec, [0, 1, 2, 3], executor=pool)
    assert pooled.curves == serial.curves
    assert pooled.final == serial.final


def test_a_dead_zygote_is_replaced_on_next_use() -> None:
    first = client.get_zygote()
    os.kill(first.pid, signal.SIGKILL)
    first.process.wait()
    with source_spec(ECHO).open(3, 5, 0) as runner:
        assert runner.share(0, toy_states()) == {0: [(1, 0)]}
    assert client.get_zygote().pid != first.pid


def test_a_zygote_started_from_a_thread_outlives_the_thread() -> None:
    client.shutdown()
    answers: list[object] = []

    def work() -> None:
        with source_spec(ECHO).open(3, 5, 0) as runner:
            answers.append(runner.share(0, toy_states()))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    zygote = client.get_zygote()
    assert answers == [{0: [(1, 0)]}]
    assert running(zygote.pid)
    with source_spec(ECHO).open(3, 5, 0) as runner:
        assert runner.share(0, toy_states()) == {0: [(1, 0)]}
    assert client.get_zygote() is zygote


def test_stopping_the_zygote_ends_its_workers() -> None:
    runner = source_spec(ECHO).open(3, 5, 0)
    assert runner.worker is not None
    worker_pid = runner.worker.pid
    client.shutdown()
    assert wait_for(lambda: not running(worker_pid))
    with pytest.raises(SandboxError) as info, runner:
        runner.share(0, toy_states())
    assert info.value.kind == "worker-died"
    assert info.value.reason.startswith("worker died")


SKLEARN_PROTOCOL = """
import numpy as np


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        from sklearn.neighbors import KDTree

        KDTree(np.eye(3)).query(np.eye(3), k=1)
        return {}
"""


def test_optional_imports_finds_scikit_learn_wherever_the_source_imports_it() -> None:
    assert client.optional_imports("from sklearn.neighbors import KDTree\n") == ("sklearn",)
    assert client.optional_imports("def f():\n    import sklearn.metrics as m\n") == ("sklearn",)
    assert client.optional_imports("import numpy as np\nimport math\n") == ()
    assert client.optional_imports("from .sklearn import x\n") == ()
    assert client.optional_imports("def (:\n") == ()


def test_the_zygote_loads_scikit_learn_only_for_a_protocol_that_imports_it() -> None:
    def mapped() -> str:
        return Path(f"/proc/{client.get_zygote().pid}/maps").read_text()

    client.shutdown()
    with source_spec(ECHO).open(3, 5, 0) as runner:
        runner.share(0, toy_states())
    assert "/sklearn/" not in mapped()  # a fast start: no scikit-learn, no scipy
    with source_spec(SKLEARN_PROTOCOL).open(3, 5, 0) as runner:
        assert runner.share(0, toy_states()) == {}
    assert "/sklearn/" in mapped()
    with source_spec(ECHO).open(3, 5, 0) as runner:  # and the zygote still serves others
        assert runner.share(0, toy_states()) == {0: [(1, 0)]}
