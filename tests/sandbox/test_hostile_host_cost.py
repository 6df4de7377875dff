"""Hostile case: replies that make the *host* pay (memory, CPU) for the protocol's output.

A legal protocol returning a million exchanges per step, or protocol code that patches the
worker's encoder to send a forged maximum-size frame each step, costs the worker nothing
the game can see. The host refuses replies beyond a small multiple of what a step can
deliver from their header, and charges its CPU spent on replies to the protocol's budget.
Counted work and messages are asserted here, never time.
"""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import FAST, fail_calls, protocol, source_spec
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.sandbox import SandboxConfig, SandboxError, runner
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

LEGAL_1M = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        return {r: [((r + 1) % self.n, 0)] * (1_000_000 // self.n) for r in range(self.n)}
"""

# Protocol code replacing the worker's encoder: a valid frame of 999,000 exchanges (1, 0)
# for agent 0 at every step, at no CPU cost to the protocol.
PATCHED_ENCODER = """
codec = sys.modules["tpdisc.sandbox.codec"]
ENTRIES = 999_000
FRAME = (
    b"X" + (0).to_bytes(4, "little") + ENTRIES.to_bytes(4, "little")
    + ((1).to_bytes(4, "little") + bytes(4)) * ENTRIES
)
codec.encode_exchanges = lambda exchanges: FRAME
"""


def test_a_million_legal_exchanges_per_step_stop_the_simulation(toy_graph: RecipeGraph) -> None:
    spec = source_spec(LEGAL_1M, SandboxConfig(time_limit=10.0))
    config = SimConfig(n_agents=4, n_steps=5, agent_type="stochastic")
    with pytest.raises(SandboxError) as info:
        run_simulation(make_domain(toy_graph), config, spec, 0, record_log=True)
    assert info.value.kind == "too-large"
    assert info.value.reason == (
        "share_memories returned more than 8,000 exchanges at step 0 (limit: 100 times the 80 "
        "memories a step can deliver; a reply of 8,000,033 bytes, refused unread)"
    )


def test_a_patched_encoder_cannot_send_a_maximum_size_frame(toy_graph: RecipeGraph) -> None:
    spec = source_spec(protocol("pass", prelude=PATCHED_ENCODER))
    config = SimConfig(n_agents=4, n_steps=5, agent_type="stochastic")
    with pytest.raises(SandboxError) as info:
        run_simulation(make_domain(toy_graph), config, spec, 0, record_log=True)
    assert info.value.kind == "too-large"
    assert info.value.reason.startswith("share_memories returned more than 8,000 exchanges")
    assert info.value.reason.endswith("a reply of 7,992,009 bytes, refused unread)")


def test_a_reply_within_the_step_limit_is_delivered(toy_graph: RecipeGraph) -> None:
    # 100 × 20 × 4 = 8,000 exactly: the limit itself is allowed.
    share = "return {r: [((r + 1) % 4, 0)] * 2000 for r in range(4)}"
    spec = source_spec(protocol(share, reach_sys=False), SandboxConfig(time_limit=10.0))
    result = run_simulation(
        make_domain(toy_graph), SimConfig(n_agents=4, n_steps=3, agent_type="stochastic"), spec, 0
    )
    assert result.schedule.total_sent() == 3 * 8000


def test_host_cpu_on_replies_is_charged_to_the_protocol(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A clock that advances 0.3 s per reading: each reply "costs" the host 0.3 s, so a one
    # second budget is spent at the fourth reply, whatever the machine.
    ticks = iter(range(10**6))
    monkeypatch.setattr(runner, "host_clock", lambda: 0.3 * next(ticks))
    err = fail_calls(protocol("pass", reach_sys=False), "timeout", config=FAST, steps=10)
    assert err.reason == (
        "timeout after 1 s of the host's CPU spent on the worker's replies "
        "in share_memories at step 3"
    )
