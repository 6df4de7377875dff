"""Hostile case: a process that ignores SIGALRM, SIGTERM and SIGXCPU."""

from __future__ import annotations

from tests.sandbox.helpers import fail_calls, protocol
from tpdisc.sandbox import SandboxConfig

IGNORE = """
signal = sys.modules['signal']
for number in (signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):
    signal.signal(number, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU})
"""


def test_spinning_with_signals_ignored_still_ends_at_the_cpu_budget() -> None:
    # SIGXCPU is ignored, so the hard RLIMIT_CPU (one second later) kills it with SIGKILL.
    err = fail_calls(protocol(IGNORE + "while True:\n    pass"), "timeout")
    assert err.reason == "timeout after 1 s in share_memories at step 0"


def test_sleeping_with_signals_ignored_ends_at_the_wall_deadline() -> None:
    # No CPU is used, so only the parent's wall-clock deadline (and SIGKILL) can end it.
    config = SandboxConfig(time_limit=1.0, wall_factor=3.0)
    err = fail_calls(protocol(IGNORE + "sys.modules['time'].sleep(3600)"), "timeout", config=config)
    assert err.reason == "timeout after 3 s of wall-clock time in share_memories at step 0"
