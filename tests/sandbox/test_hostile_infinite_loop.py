"""Hostile case: infinite loops, wherever they are."""

from __future__ import annotations

from tests.sandbox.helpers import fail_calls, protocol


def test_a_loop_in_share_memories_times_out_at_its_step() -> None:
    err = fail_calls(protocol("while i_step == 2:\n    pass"), "timeout", steps=4)
    assert err.reason == "timeout after 1 s in share_memories at step 2"


def test_a_loop_in_init_times_out_in_init() -> None:
    err = fail_calls(protocol("pass", init="while True:\n    pass"), "timeout")
    assert err.reason == "timeout after 1 s in __init__"


def test_a_loop_at_module_level_times_out_while_loading() -> None:
    err = fail_calls(protocol("pass", prelude="while True:\n    pass\n"), "timeout")
    assert err.reason == "timeout after 1 s while loading"


def test_a_loop_in_get_logs_times_out_in_get_logs() -> None:
    import pytest

    from tests.sandbox.helpers import source_spec, toy_states
    from tpdisc.sandbox import SandboxError

    source = protocol("pass") + "\n    def get_logs(self):\n        while True:\n            pass\n"
    with pytest.raises(SandboxError) as info, source_spec(source).open(3, 5, 0) as runner:
        runner.share(0, toy_states())
        runner.logs()
    assert (info.value.kind, info.value.reason) == ("timeout", "timeout after 1 s in get_logs")
