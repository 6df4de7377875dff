"""Hostile case: sys.exit and its relatives."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import fail_calls, protocol


@pytest.mark.parametrize(
    ("share", "reason_start"),
    [
        ("sys.exit(0)", "SystemExit: 0 (line "),
        ("raise SystemExit", "SystemExit (line "),
        ("raise KeyboardInterrupt", "KeyboardInterrupt (line "),
        ("exit()", "NameError: name 'exit' is not defined (line "),
    ],
)
def test_exceptions_that_end_a_program_are_reported_as_crashes(
    share: str, reason_start: str
) -> None:
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith(reason_start)
    assert err.reason.endswith(") in share_memories at step 0")


def test_os_exit_is_a_dead_worker() -> None:
    err = fail_calls(protocol("sys.modules['os']._exit(0)"), "worker-died")
    assert err.reason == "worker died: exit code 0 in share_memories at step 0"


def test_sys_exit_in_init_is_reported_in_init() -> None:
    err = fail_calls(protocol("pass", init="sys.exit(3)"), "crash")
    assert err.reason.startswith("SystemExit: 3 (line ")
    assert err.reason.endswith(") in __init__")
