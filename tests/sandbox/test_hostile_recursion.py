"""Hostile case: deep recursion."""

from __future__ import annotations

from tests.sandbox.helpers import fail_calls, protocol


def test_plain_deep_recursion_is_a_recursion_error() -> None:
    err = fail_calls(protocol("def down(n):\n    return down(n + 1)\ndown(0)"), "crash")
    assert err.reason.startswith("RecursionError: maximum recursion depth exceeded")
    assert err.reason.endswith(" in share_memories at step 0")


def test_recursion_past_a_raised_limit_through_c_kills_only_the_worker() -> None:
    # With the limit lifted, recursion through a C function overflows the C stack.
    share = """
    sys.setrecursionlimit(10**7)
    def down(n):
        return list(map(down, [n + 1]))
    down(0)
    """
    err = fail_calls(protocol(share), "worker-died")
    assert err.reason == "worker died: signal 11 (SIGSEGV) in share_memories at step 0"
