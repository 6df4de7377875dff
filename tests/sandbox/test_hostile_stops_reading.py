"""Hostile case: a worker that answers, then stops reading its socket while the parent
writes a large request (a blocking write would hang the simulation forever)."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import protocol, source_spec, toy_states
from tpdisc.sandbox import SandboxConfig, SandboxError

# Forge the reply to step 0 (no exchanges), then sleep instead of reading step 1.
FORGE_AND_SLEEP = """
os = sys.modules['os']
os.write(3, (1).to_bytes(4, 'little') + b'X')
sys.modules['time'].sleep(3600)
"""


def big_states(n_agents: int = 3, n_memories: int = 3000) -> dict:
    """About 1 MB of states: far more than a socket buffer holds."""
    return {
        a: {
            "inventory": ("air",),
            "memories": tuple(
                (f"element-{a}-{k:06d}" * 8, "fire", None) for k in range(n_memories)
            ),
        }
        for a in range(n_agents)
    }


def test_a_large_write_to_a_worker_that_stopped_reading_times_out() -> None:
    config = SandboxConfig(time_limit=1.0, wall_factor=3.0)
    spec = source_spec(protocol(FORGE_AND_SLEEP), config)
    with pytest.raises(SandboxError) as info, spec.open(3, 5, 0) as runner:
        assert runner.share(0, toy_states()) == {}  # the forged answer
        runner.share(1, big_states())
    assert (info.value.kind, info.value.reason) == (
        "timeout",
        "timeout after 3 s of wall-clock time in share_memories at step 1",
    )
