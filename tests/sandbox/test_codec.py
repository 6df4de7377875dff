"""Replies from the worker: decoded by hand, checked, never unpickled."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tpdisc.sandbox import codec
from tpdisc.sandbox.errors import SandboxError


def test_exchanges_round_trip_in_order() -> None:
    exchanges = {2: [(0, 1), (1, 0)], 0: [(2, 2)], 1: []}
    payload = codec.encode_exchanges(exchanges)
    assert codec.decode_exchanges(payload, [3, 3, 3], "p.py", "ctx") == {
        2: [(0, 1), (1, 0)],
        0: [(2, 2)],
    }


def blocks(*values: int) -> bytes:
    return codec.EXCHANGES + np.array(values, dtype=np.intc).tobytes()


@pytest.mark.parametrize(
    "payload",
    [
        codec.EXCHANGES + b"\x00\x00\x00",  # not whole int32s
        blocks(0),  # a recipient without its count
        blocks(0, 2, 1, 0),  # a count longer than the data
        blocks(0, -1),  # a negative count
        blocks(3, 1, 0, 0),  # an unknown recipient
        blocks(0, 1, 3, 0),  # an unknown sender
        blocks(0, 1, 1, 5),  # a memory the sender does not have
        blocks(0, 1, 1, -1),  # a negative index
    ],
)
def test_forged_exchanges_are_malformed(payload: bytes) -> None:
    with pytest.raises(SandboxError) as info:
        codec.decode_exchanges(payload, [2, 2, 2], "p.py", "at step 4")
    assert info.value.kind == "malformed-reply"
    assert str(info.value) == "p.py: malformed reply from the worker at step 4"


def test_failures_keep_known_worker_kinds_only() -> None:
    err = codec.decode_failure(codec.encode_failure("memory", "MemoryError\nsecond line"), "p", "c")
    assert (err.kind, err.reason) == ("memory", "MemoryError second line")
    for forged in (b"Ftimeout\nx", b"Fnonsense\nx", b"Fcrash"):
        assert codec.decode_failure(forged, "p", "c").kind == "malformed-reply"


def test_failure_reasons_are_capped_and_printable() -> None:
    err = codec.decode_failure(codec.encode_failure("crash", "\x1b[31m" + "x" * 5000), "p", "c")
    assert len(err.reason) == 300
    assert err.reason.isprintable()


def test_logs_become_plain_json() -> None:
    logs = [
        {
            "metric_name": "spread",
            "metric_value": np.float64(1.5),
            "array": np.arange(3),
            "nested": {1: (np.int32(2), float("nan"))},
            "object": object,
        }
    ]
    payload = codec.encode_logs(logs, 10_000)
    assert payload[:1] == codec.LOGS
    decoded = codec.decode_logs(payload, "p")
    assert decoded == [
        {
            "metric_name": "spread",
            "metric_value": 1.5,
            "array": [0, 1, 2],
            "nested": {"1": [2, "nan"]},
            "object": "<class 'object'>",
        }
    ]
    assert codec.encode_logs("not a list", 10_000) == codec.LOGS + b"[]"


def test_oversized_logs_become_a_failure() -> None:
    payload = codec.encode_logs([{"v": "x" * 900}] * 20, 10_000)
    err = codec.decode_failure(payload, "p", "in get_logs")
    assert (err.kind, err.reason) == (
        "too-large",
        f"get_logs returned {len(json.dumps([{'v': 'x' * 900}] * 20)):,} bytes of JSON "
        "(limit 10,000)",
    )


@pytest.mark.parametrize(
    "payload",
    [b"L{not json", b'L{"a": 1}', b"L" + b"[" * 100_000 + b"]" * 100_000, b"L\xff"],
)
def test_forged_logs_are_malformed(payload: bytes) -> None:
    with pytest.raises(SandboxError) as info:
        codec.decode_logs(payload, "p")
    assert info.value.kind == "malformed-reply"


def test_logs_keep_dicts_only() -> None:
    assert codec.decode_logs(b'L[{"a": 1}, 3, "x", [1]]', "p") == [{"a": 1}]
    assert not math.isnan(1.0)
