"""A legal but slow protocol fails with a timeout that names the step."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import fail_calls, simulate, source_spec
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.sandbox import SandboxConfig, SandboxError

SLOW = """
import math


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        # A legal protocol that thinks hard: about 0.1-0.3 s of CPU per step.
        total = 0.0
        for k in range(1, 400_000):
            total += math.sqrt(k)
        return {0: [(1, 0)]} if agent_states[1]["memories"] else {}
"""


def test_the_simulation_stops_at_the_step_where_the_budget_runs_out(
    toy_graph: RecipeGraph,
) -> None:
    completed: list[int] = []
    spec = source_spec(SLOW, SandboxConfig(time_limit=1.0, wall_factor=5.0))
    with pytest.raises(SandboxError) as info:
        from tpdisc.domain.variants import make_domain
        from tpdisc.sim.config import SimConfig
        from tpdisc.sim.game import run_simulation

        run_simulation(
            make_domain(toy_graph),
            SimConfig(n_agents=4, n_steps=100),
            spec,
            0,
            on_step=lambda step, coverage: completed.append(step),
        )
    assert info.value.kind == "timeout"
    assert completed, "the protocol is slow, not stuck: some steps must complete"
    step = completed[-1] + 1
    assert info.value.reason == f"timeout after 1 s in share_memories at step {step}"
    assert str(info.value) == f"hostile.py: timeout after 1 s in share_memories at step {step}"


def test_the_per_call_limit_names_the_slow_step() -> None:
    source = SLOW.replace(
        "for k in range(1, 400_000)", "for k in range(1, 10**9 if i_step == 3 else 10)"
    )
    config = SandboxConfig(time_limit=20.0, call_time_limit=1.5)
    err = fail_calls(source, "timeout", config=config, steps=5)
    assert err.reason == "timeout after 1.5 s (per-call limit) in share_memories at step 3"


def test_a_fast_enough_run_of_the_same_protocol_completes(toy_graph: RecipeGraph) -> None:
    spec = source_spec(SLOW, SandboxConfig(time_limit=20.0))
    result = simulate(toy_graph, spec, 0, n_steps=3)
    assert len(result.curve) == 4
