"""Hostile case: allocating tens of GB."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import fail_calls, protocol
from tpdisc.sandbox import SandboxConfig


@pytest.mark.parametrize(
    ("share", "reason_start"),
    [
        ("data = bytearray(30 * 2**30)", "MemoryError (line "),
        (
            "import numpy as np\ndata = np.ones(5 * 10**9)",
            "MemoryError: Unable to allocate 37.3 GiB for an array with shape (5000000000,)",
        ),
        ("data = [0] * (4 * 10**9)", "MemoryError (line "),
        # Growing little by little reaches the address-space limit just the same.
        ("data = []\nwhile True:\n    data.append(bytearray(2**24))", "MemoryError (line "),
    ],
)
def test_huge_allocations_fail_with_memory_error(share: str, reason_start: str) -> None:
    # Filling 1 GiB page by page takes CPU time: a budget that cannot run out first.
    err = fail_calls(protocol(share), "memory", config=SandboxConfig(time_limit=20.0))
    assert err.reason.startswith(reason_start)
    assert err.reason.endswith(" in share_memories at step 0")


def test_the_next_simulation_is_unaffected() -> None:
    fail_calls(protocol("data = bytearray(30 * 2**30)"), "memory")
    err = fail_calls(protocol("raise ValueError('fine')"), "crash")
    assert err.reason.startswith("ValueError: fine (line ")
