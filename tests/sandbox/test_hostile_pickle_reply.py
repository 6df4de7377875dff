"""Hostile case: returning objects whose unpickling would run code."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from tests.sandbox.helpers import fail_calls, protocol

EVIL = """
class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (sys.modules['os'].system, (f"touch {self.marker}",))

    def __repr__(self):
        return "Evil()"
"""


def forge(payload: str) -> str:
    """Write a frame with ``payload`` (an expression of bytes) straight onto the worker's
    socket, ahead of the worker's real reply."""
    return f"""
    data = {payload}
    sys.modules['os'].write(3, len(data).to_bytes(4, "little") + data)
    """


def test_an_object_instead_of_a_dict_is_an_invalid_exchange(open_dir: Path) -> None:
    marker = open_dir / "unpickled"
    err = fail_calls(protocol(f"return Evil({str(marker)!r})", prelude=EVIL), "invalid-exchange")
    assert err.reason == (
        "invalid exchange at step 0: share_memories returned Evil; "
        "expected a dict {recipient: [(sender, memory_index), ...]}"
    )
    assert not marker.exists()


def test_an_object_inside_the_dict_is_an_invalid_exchange(open_dir: Path) -> None:
    marker = open_dir / "unpickled"
    share = f"return {{0: [Evil({str(marker)!r})]}}"
    err = fail_calls(protocol(share, prelude=EVIL), "invalid-exchange")
    assert err.reason == (
        "invalid exchange at step 0: recipient 0, entry 0: "
        "expected a (sender, memory_index) pair, got Evil()"
    )
    assert not marker.exists()


class Payload:
    """Unpickling this runs ``touch marker``: the classic forged pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("tag", [b"", b"X", b"L", b"R"])
def test_a_forged_pickle_on_the_wire_is_never_unpickled(open_dir: Path, tag: bytes) -> None:
    marker = open_dir / "unpickled"
    payload = pickle.dumps(Payload(marker))
    err = fail_calls(protocol(forge(repr(tag + payload))), "malformed-reply")
    assert err.reason == "malformed reply from the worker in share_memories at step 0"
    assert not marker.exists()
    # The payload was live: unpickling it here does run the command.
    pickle.loads(payload)
    assert marker.exists()
    marker.unlink()


@pytest.mark.parametrize("kind", [b"timeout", b"unsupported", b"worker-died", b"sandbox"])
def test_a_worker_cannot_forge_a_failure_reserved_to_the_parent(kind: bytes) -> None:
    share = forge(f"b'F' + {kind!r} + b'\\nforged'")
    err = fail_calls(protocol(share), "malformed-reply")
    assert err.reason == "malformed reply from the worker in share_memories at step 0"
