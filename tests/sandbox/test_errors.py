"""The typed failure the CLI prints and the search stores."""

from __future__ import annotations

import pickle

import pytest

from tpdisc.errors import ProtocolError, TpdiscError
from tpdisc.sandbox import KINDS, SandboxError


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
