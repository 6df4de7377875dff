"""The Ray executor against a small local Ray instance started for this module; and
commands on the Ray path under faults (a raylet or a node lost, a worker that keeps
crashing, an address that does not parse or does not answer, a command killed), each
against a real local Ray instance of its own, on this machine.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tests.executors.test_lifeline import (
    Tree,
    assert_all_gone,
    cmdline,
    descendants,
    environment,
    kill_all,
    wait_for,
)
from tpdisc.cli import app
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError, ProtocolError, TpdiscError
from tpdisc.executors.make import make_executor
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.search.archive import Archive
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import SimTask, evaluate
from tpdisc.sim.game import SimResult

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'tpdisc[ray]'")

from tpdisc.executors.ray import RayExecutor  # noqa: E402

FAILING_PROTOCOL = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        pass

    def share_memories(self, i_step, agent_states):
        raise KeyError("no such agent")
"""


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    yield
    ray.shutdown()


def test_ray_matches_serial_and_processes(toy_graph) -> None:
    domain = make_domain(toy_graph)
    config = SimConfig(n_agents=5, n_steps=25)
    for name in ("paired", "stochastic"):
        protocol = BaselineProtocol(name)
        seeds = range(5)
        serial = evaluate(domain, config, protocol, seeds, executor=SerialExecutor())
        with ProcessExecutor(2) as pool:
            processes = evaluate(domain, config, protocol, seeds, executor=pool)
        arrived: list[SimResult] = []
        with RayExecutor() as executor:
            on_ray = evaluate(
                domain, config, protocol, seeds, executor=executor, on_result=arrived.append
            )
        assert on_ray.curves == serial.curves == processes.curves, name
        assert sorted(r.seed for r in arrived) == list(seeds)
    assert ray.is_initialized()  # an executor leaves a Ray instance it did not start alone


def test_ray_with_few_tasks_in_flight_keeps_order(toy_graph) -> None:
    domain = make_domain(toy_graph)
    tasks = [SimTask(domain, SimConfig(3, 15), BaselineProtocol("graph"), s) for s in range(4)]
    executor = make_executor("ray", workers=1)
    assert isinstance(executor, RayExecutor)
    results = executor.run(tasks)
    assert [r.seed for r in results] == [0, 1, 2, 3]
    assert [r.curve for r in results] == [r.curve for r in SerialExecutor().run(tasks)]


def test_ray_surfaces_the_task_error(toy_graph) -> None:
    protocol = SourceProtocol("failing", FAILING_PROTOCOL, "failing.py", trusted=True)
    tasks = [SimTask(make_domain(toy_graph), SimConfig(2, 5), protocol, s) for s in range(2)]
    with pytest.raises(ProtocolError, match="KeyError"):
        RayExecutor().run(tasks)


def test_the_sandbox_holds_on_ray_workers(toy_graph, tmp_path, monkeypatch) -> None:
    # A Ray worker runs the sandbox as a pool worker does: a hostile protocol can neither
    # write a file (the folder is anyone's: only seccomp can refuse), read the host's
    # environment nor open a socket.
    from tests.sandbox.helpers import protocol, source_spec
    from tpdisc.sandbox import SandboxError

    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    target = folder / "written.txt"
    actions = [
        f"sys.modules['io'].open({str(target)!r}, 'w').write('pwned')",
        "raise RuntimeError(repr(dict(sys.modules['os'].environ)))",
        "s = sys.modules['socket'].socket(); s.connect(('127.0.0.1', 9))",
    ]
    domain = make_domain(toy_graph)
    for action in actions:
        task = SimTask(domain, SimConfig(3, 4), source_spec(protocol(action)), 0)
        with pytest.raises(SandboxError) as info:
            RayExecutor().run([task])
        reason = info.value.reason
        assert reason.startswith(("PermissionError", "RuntimeError: {'PATH'")), reason
        assert "TPDISC" not in reason and "RAY" not in reason, reason
    assert not target.exists()


# --- round 5: the Ray path under faults (commands run as users run them) ------------------

TINY = ["--sims", "2", "--steps", "8", "--agents", "4", "--agent-type", "stochastic"]
LOST = "error: the Ray cluster was lost during the run: "


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def tpdisc(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "tpdisc.cli", *map(str, args)]


def named(tree: Tree, name: str) -> list[int]:
    """The processes of ``tree`` whose name (``comm``) is ``name``."""
    found = []
    for pid in tree:
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
                if fh.read().strip() == name:
                    found.append(pid)
        except OSError:
            continue
    return found


def ends_in_one_error(stderr: str) -> str:
    """The one ``error:`` line that ended the command: nothing of Ray's log around it, no
    traceback (a command may say what it starts and show its progress before)."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    ray_lines = [line for line in lines if line.startswith(("[20", "(raylet", "20"))]
    assert not ray_lines, stderr
    return errors[0]


def stored_iterations(run: Path) -> int:
    try:
        with Archive(run / Archive.FILE_NAME, readonly=True) as archive:
            return archive.last_iteration()
    except TpdiscError:  # not made yet
        return 0


@pytest.mark.parametrize("address", ["not an address", "host:99999", "ray://", "http://x:1"])
def test_an_address_that_does_not_parse_is_one_line(recipes: Path, address: str) -> None:
    result = CliRunner().invoke(
        app,
        ["evaluate", "paired", *TINY, "--recipes", str(recipes), "--executor", "ray",
         "--address", address],
    )  # fmt: skip
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"--address {address!r}: not the address of a Ray cluster" in result.stderr
    with pytest.raises(ConfigError, match="not the address of a Ray cluster"):
        make_executor("ray", address=address)


def test_nothing_listening_at_the_address_is_one_line_at_once(recipes: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    result = CliRunner().invoke(
        app,
        ["evaluate", "paired", *TINY, "--recipes", str(recipes), "--executor", "ray",
         "--address", f"127.0.0.1:{port}"],
    )  # fmt: skip
    assert result.exit_code == 1 and result.stderr == (
        f"error: --address 127.0.0.1:{port}: cannot reach the Ray cluster: nothing listens "
        "there (connection refused)\n"
    )


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An address on this machine where connections are taken and never answered."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    taken: list[socket.socket] = []

    def take() -> None:
        while True:
            try:
                taken.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=take, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for connection in taken:
        connection.close()


def test_a_cluster_that_does_not_answer_is_given_up_after_the_connect_timeout(
    recipes: Path, tmp_path: Path, silent_server: str
) -> None:
    command = tpdisc("evaluate", "paired", *TINY, "--recipes", recipes, "--executor", "ray",
                     "--address", silent_server, "--connect-timeout", "3")  # fmt: skip
    process = subprocess.Popen(
        command, env=environment(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    tree: Tree = {}
    try:
        wait_for(lambda: bool(descendants(process.pid)), 30, "the Ray driver")
        tree = descendants(process.pid)
        _, stderr = process.communicate(timeout=90)  # a bounded wait: never for ever
        assert process.returncode == 1
        assert ends_in_one_error(stderr) == (
            f"error: --address {silent_server}: no Ray cluster answered there within 3 s "
            "(--connect-timeout)"
        )
        assert_all_gone(tree)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)


def test_sigterm_while_waiting_for_the_cluster_ends_the_command_at_once(
    recipes: Path, tmp_path: Path, silent_server: str
) -> None:
    command = tpdisc("evaluate", "paired", *TINY, "--recipes", recipes, "--executor", "ray",
                     "--address", silent_server, "--connect-timeout", "600")  # fmt: skip
    process = subprocess.Popen(command, env=environment(tmp_path), stderr=subprocess.DEVNULL)
    tree: Tree = {}
    try:
        wait_for(lambda: bool(descendants(process.pid)), 30, "the Ray driver")
        time.sleep(1)  # the driver is inside ray.init, waiting for the cluster
        tree = descendants(process.pid)
        process.terminate()
        process.wait(15)  # not the half a minute of a wait inside Ray
        assert_all_gone(tree, 15)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)


def tiny_search(run: Path, recipes: Path) -> list[str | Path]:
    """A small search into ``run``, resumable, that a fault can meet mid-way."""
    quick = ["--no-rescore", "--warmup", "1"]
    return ["evolve", "--run-dir", run, *TINY, "--recipes", recipes, *quick]


def test_a_raylet_lost_during_a_search_is_one_line_and_the_rerun_resumes(
    recipes: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    search = tiny_search(run, recipes)
    process = subprocess.Popen(
        tpdisc(*search, "--iterations", "500", "--executor", "ray"),
        env=environment(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    tree: Tree = {}
    try:
        wait_for(lambda: stored_iterations(run) >= 2, 240, "two iterations stored")
        tree = descendants(process.pid)
        (raylet,) = named(tree, "raylet")
        os.kill(raylet, signal.SIGKILL)
        _, stderr = process.communicate(timeout=180)
        assert process.returncode == 1
        assert ends_in_one_error(stderr).startswith(LOST)
        assert_all_gone(tree)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)
    done = stored_iterations(run)
    assert done >= 2
    rerun = subprocess.run(
        tpdisc(*search, "--iterations", str(done + 1), "--executor", "serial"),
        env=environment(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert f"iteration {done + 1} of {done + 1}" in " ".join(rerun.stderr.split())
    assert stored_iterations(run) == done + 1


def test_a_raylet_lost_during_a_study_is_one_line_and_the_rerun_resumes(
    recipes: Path, tmp_path: Path
) -> None:
    from tests.study.test_runner import TINY as STUDY

    study = tmp_path / "study.yaml"
    study.write_text(
        STUDY.replace("iterations: 4", "iterations: 30").replace("kind: serial", "kind: ray")
        + f"recipes: {recipes}\n"
    )
    out = tmp_path / "out"
    process = subprocess.Popen(
        tpdisc("study", study, "--out", out), env=environment(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    tree: Tree = {}
    try:
        run = out / "runs" / "evolve-1"
        wait_for(lambda: stored_iterations(run) >= 2, 300, "two iterations of the search")
        tree = descendants(process.pid)
        (raylet,) = named(tree, "raylet")
        os.kill(raylet, signal.SIGKILL)
        _, stderr = process.communicate(timeout=180)
        assert process.returncode == 1
        assert ends_in_one_error(stderr).startswith(LOST)
        assert_all_gone(tree)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)
    done = stored_iterations(run)
    rerun = subprocess.run(
        tpdisc("study", "--out", out, "--executor", "serial"),
        env=environment(tmp_path), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "baselines: done earlier, skipped" in rerun.stderr
    assert "search: resuming" in rerun.stderr
    with Archive(run / Archive.FILE_NAME, readonly=True) as archive:
        iterations = [row["iteration"] for row in archive.iterations()]
    assert done >= 2 and iterations == list(range(1, 31))  # none redone, none lost
    assert (out / "report" / "index.html").is_file()


def test_a_node_lost_with_none_left_is_one_line_and_the_rerun_resumes(
    recipes: Path, tmp_path: Path
) -> None:
    from ray.cluster_utils import Cluster

    # A head node that runs nothing, and one node that runs the tasks: then it goes.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        worker = cluster.add_node(num_cpus=1)
        run = tmp_path / "run"
        search = tiny_search(run, recipes)
        process = subprocess.Popen(
            tpdisc(*search, "--iterations", "500", "--executor", "ray", "--address",
                   cluster.address, "--connect-timeout", "5"),
            env=environment(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: stored_iterations(run) >= 2, 240, "two iterations stored")
            cluster.remove_node(worker, allow_graceful=False)
            _, stderr = process.communicate(timeout=180)
        finally:
            process.kill()
            process.wait()
    finally:
        cluster.shutdown()
    assert process.returncode == 1
    assert ends_in_one_error(stderr).startswith(
        f"{LOST}no node is left to run simulations (1 gone, none came back within 5 s)"
    )
    done = stored_iterations(run)
    rerun = subprocess.run(
        tpdisc(*search, "--iterations", str(done + 1), "--executor", "serial"),
        env=environment(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert rerun.returncode == 0 and stored_iterations(run) == done + 1, rerun.stderr


CRASHING = """
import os
import signal


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        pass

    def share_memories(self, i_step, agent_states):
        os.kill(os.getpid(), signal.SIGKILL)  # the Ray worker running it, each time
"""


def test_a_worker_that_crashes_past_its_retries_is_one_line(recipes: Path, tmp_path: Path) -> None:
    protocol = tmp_path / "crash.py"
    protocol.write_text(CRASHING)
    done = subprocess.run(
        tpdisc("evaluate", protocol, "--trusted", *TINY, "--recipes", recipes,
               "--executor", "ray"),
        env=environment(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    assert ends_in_one_error(done.stderr).startswith(f"{LOST}WorkerCrashedError: ")


@ray.remote
class Owner:
    """An actor that puts objects in the store as their owner: when it goes, they are lost."""

    def put(self, blob: bytes) -> list[ray.ObjectRef]:
        return [ray.put(blob)]  # in a list: the reference itself, not the object, comes back


def test_an_object_lost_ends_the_run_as_the_cluster_lost_not_as_a_task_error(
    toy_graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The objects the tasks need (the recipe graph) are lost before the tasks run: their
    # owner is gone. Ray fails each task with its wrapper of OwnerDiedError, which is not
    # the task's own error and must not be shown as one (a traceback of Ray's exception).
    from multiprocessing import Pipe

    from tpdisc.executors.base import PayloadPacker
    from tpdisc.executors.ray import run_on_ray
    from tpdisc.executors.ray_driver import Driver

    def put_then_lose(blob: bytes) -> ray.ObjectRef:
        owner = Owner.remote()  # type: ignore[attr-defined]
        # As large as the real game's graph: a small object travels with its reference,
        # a large one stays in the store. (A pickle ends at its STOP: the rest is unread.)
        (ref,) = ray.get(owner.put.remote(blob + bytes(1 << 20)))
        ray.kill(owner)
        with pytest.raises(ray.exceptions.ObjectLostError):  # lost before any task runs
            for _ in range(300):
                ray.get(ref, timeout=30)
                time.sleep(0.1)
        return ref

    packer = PayloadPacker()
    tasks = [SimTask(make_domain(toy_graph), SimConfig(2, 5), BaselineProtocol("paired"), s)
             for s in range(2)]  # fmt: skip
    payloads = [packer.pack(t) for t in tasks]
    assert packer.blobs
    inbox, to_driver = Pipe(duplex=False)
    from_driver, outbox = Pipe(duplex=False)
    driver = Driver(inbox, outbox)
    driver.remote = ray.remote(run_on_ray)
    monkeypatch.setattr(ray, "put", put_then_lose)
    assert driver.run(packer.blobs, payloads, 2) is False  # the driver ends
    kind, text = from_driver.recv()
    assert (kind, text.split(":")[0]) == ("lost", "OwnerDiedError")
    assert not from_driver.poll()
    for end in (inbox, to_driver, from_driver, outbox):
        end.close()


def long_evaluation_on_ray(recipes: Path, tmp_path: Path, stderr: int) -> subprocess.Popen[str]:
    """A command that runs tasks on a local Ray instance for longer than a test waits."""
    command = tpdisc("evaluate", "paired", "asocial", "--sims", "5000", "--steps", "40",
                     "--agents", "4", "--agent-type", "stochastic", "--recipes", recipes,
                     "--executor", "ray")  # fmt: skip
    return subprocess.Popen(
        command, env=environment(tmp_path), stdout=subprocess.DEVNULL, stderr=stderr, text=True
    )


def wait_for_agents(process: subprocess.Popen[str]) -> None:
    """Until Ray's dashboard and runtime-env agents run below ``process``."""
    agents = ("ray::DashboardA", "ray::RuntimeEnv")
    wait_for(lambda: all(named(descendants(process.pid), a) for a in agents), 120, "Ray's agents")


def test_a_driver_ended_without_its_cleanup_leaves_nothing_of_its_ray_instance(
    recipes: Path, tmp_path: Path
) -> None:
    """Ray ends its driver's process from C++ when the local raylet goes (no ``finally``
    runs there, so the driver kills nothing below it): what it started is still in its
    session, and the command ends that too, at once, not when Ray's agents notice (2 s
    and more)."""
    process = long_evaluation_on_ray(recipes, tmp_path, subprocess.PIPE)
    tree: Tree = {}
    try:
        wait_for_agents(process)
        wait_for(lambda: bool(named(descendants(process.pid), "ray::run_on_ray")), 120, "a task")
        tree = descendants(process.pid)
        (driver,) = [pid for pid in tree if "tpdisc.executors.ray_driver" in cmdline(pid)]
        os.kill(driver, signal.SIGKILL)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 1
        assert ends_in_one_error(stderr).startswith(LOST)
        assert_all_gone(tree, 1.0)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)


def test_a_killed_command_leaves_nothing_of_its_ray_instance(recipes: Path, tmp_path: Path) -> None:
    process = long_evaluation_on_ray(recipes, tmp_path, subprocess.DEVNULL)
    tree: Tree = {}
    try:
        wait_for_agents(process)  # Ray's agents outlived a killed command for a minute
        tree = descendants(process.pid)
        assert named(tree, "raylet") and named(tree, "gcs_server")
        process.kill()
        process.wait(10)
        assert_all_gone(tree, 10)
    finally:
        process.kill()
        process.wait()
        kill_all(tree)
