"""The typed failure the CLI prints and the search stores."""

from __future__ import annotations

import pickle

import pytest

from tpdisc.errors import ProtocolError, TpdiscError
from tpdisc.sandbox import KINDS, SandboxError
from tpdisc.sandbox.errors import worker_death


def test_a_failure_is_a_one_line_protocol_error_with_a_kind() -> None:
    err = SandboxError("timeout", "timeout after 20 s\nin share_memories at step 37", "c.py")
    assert isinstance(err, ProtocolError) and isinstance(err, TpdiscError)
    assert err.kind == "timeout"
    assert err.reason == "timeout after 20 s in share_memories at step 37"
    assert str(err) == "c.py: timeout after 20 s in share_memories at step 37"


def test_failures_survive_pickling_between_processes() -> None:
    err = SandboxError("worker-died", "worker died: signal 31 (SIGSYS)", "c.py")
    back = pickle.loads(pickle.dumps(err))
    assert (back.kind, back.reason, back.origin, str(back)) == (
        err.kind,
        err.reason,
        err.origin,
        str(err),
    )


def test_unknown_kinds_are_a_programming_error() -> None:
    with pytest.raises(ValueError):
        SandboxError("weird", "x")
    assert {"syntax", "import", "timeout", "memory", "invalid-exchange", "crash"} <= KINDS
    assert "worker-died" in KINDS


def died(status: tuple[str, int, float] | None) -> tuple[str, str]:
    err = worker_death(status, 20, 19.5, "at step 3", "c.py")
    return err.kind, err.reason


def test_only_a_limit_signal_with_the_budget_used_is_a_timeout() -> None:
    assert died(("signal", 24, 20.004)) == ("timeout", "timeout after 19.5 s at step 3")
    assert died(("signal", 9, 21.01)) == ("timeout", "timeout after 19.5 s at step 3")
    # The limit is enforced on tick-sampled CPU time, which can run ahead of wait4's.
    assert died(("signal", 24, 18.4))[0] == "timeout"
    assert died(("signal", 24, 2.0)) == (
        "worker-died",
        "worker died: signal 24 (SIGXCPU) after 2.00 s of CPU, not a timeout (budget 19.5 s) "
        "at step 3",
    )
    assert died(("signal", 9, 0.1))[0] == "worker-died"


def test_other_deaths_name_the_signal_or_exit_code() -> None:
    assert died(("signal", 11, 30.0)) == (
        "worker-died",
        "worker died: signal 11 (SIGSEGV) at step 3",
    )
    assert died(("exit", 0, 25.0)) == ("worker-died", "worker died: exit code 0 at step 3")
    assert died(None) == ("worker-died", "worker died at step 3")
