"""Hostile case: threads that spin forever."""

from __future__ import annotations

from tests.sandbox.helpers import fail_calls, protocol


def test_threads_cannot_be_started() -> None:
    share = """
    def spin():
        while True:
            pass
    sys.modules['threading'].Thread(target=spin, daemon=True).start()
    """
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("RuntimeError: can't start new thread (line ")


def test_low_level_threads_cannot_be_started_either() -> None:
    share = "sys.modules['_thread'].start_new_thread(lambda: None, ())"
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("RuntimeError: can't start new thread (line ")


def test_a_protocol_that_swallows_the_error_and_spins_times_out() -> None:
    share = """
    try:
        sys.modules['threading'].Thread(target=lambda: None).start()
    except RuntimeError:
        while True:
            pass
    """
    err = fail_calls(protocol(share), "timeout")
    assert err.reason == "timeout after 1 s in share_memories at step 0"
