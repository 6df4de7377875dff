"""The Ray executor against a small local Ray instance started for this module."""

from __future__ import annotations

import pytest

from tpdisc.domain.variants import make_domain
from tpdisc.errors import ProtocolError
from tpdisc.executors.make import make_executor
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.loader import SourceProtocol
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
