"""What crosses the pipe between the simulation and a sandboxed worker.

Frames are a 4-byte little-endian length and a payload. The parent's requests are pickles
(the worker trusts its parent). The worker's replies are never unpickled: they are a tag byte
and plain bytes that the parent decodes by hand and checks against the expected shape, since
the code that produced them may have been tampered with by the protocol it hosts.
"""

from __future__ import annotations

import json
import math
import struct
from array import array
from collections.abc import Sequence
from typing import Any

from tpdisc.sandbox.errors import SandboxError

HEADER = struct.Struct("<I")

# Reply tags (worker -> parent).
SECURED = b"S1"  # confined with the seccomp filter loaded, before any untrusted code ran
UNSECURED = b"S0"  # confined without seccomp (the explicit unsafe mode)
LOADED = b"P"  # the module body ran; __init__ comes next
READY = b"R"
EXCHANGES = b"X"
LOGS = b"L"
FAILURE = b"F"

# Failure kinds a worker may report about the code it runs; the rest are the parent's to say.
WORKER_KINDS = frozenset(
    {"syntax", "import", "no-protocol", "crash", "memory", "invalid-exchange", "too-large"}
)
MAX_FAILURE_BYTES = 4096
MAX_LOG_DEPTH = 20
MAX_LOG_STRING = 1000


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def exchanges_cap(max_exchanges: int, n_agents: int) -> int:
    """Largest exchanges payload a worker can legitimately send."""
    return 1 + 4 * (2 * max_exchanges + 2 * n_agents)


# --- worker side -----------------------------------------------------------------------


def encode_exchanges(exchanges: dict[int, list[tuple[int, int]]]) -> bytes:
    """``[recipient, count, sender, index, sender, index, ...]`` blocks as int32."""
    flat = array("i")
    for recipient, entries in exchanges.items():
        flat.append(recipient)
        flat.append(len(entries))
        for sender, index in entries:
            flat.append(sender)
            flat.append(index)
    return EXCHANGES + flat.tobytes()


def encode_failure(kind: str, reason: str) -> bytes:
    data = FAILURE + kind.encode() + b"\n" + reason.encode("utf-8", "replace")
    return data[:MAX_FAILURE_BYTES]


def _json_value(value: object, depth: int) -> object:
    """``value`` as JSON-ready builtins: numpy scalars and arrays unwrapped, the rest as text."""
    if value is None or isinstance(value, bool | int | str):
        return value[:MAX_LOG_STRING] if isinstance(value, str) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= MAX_LOG_DEPTH:
        return "…"
    item = getattr(value, "item", None)
    tolist = getattr(value, "tolist", None)
    if type(value).__module__ == "numpy" and callable(tolist):
        return _json_value(tolist() if getattr(value, "ndim", 0) else item(), depth + 1)  # type: ignore[misc]
    if isinstance(value, list | tuple):
        return [_json_value(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k)[:MAX_LOG_STRING]: _json_value(v, depth + 1) for k, v in value.items()}
    return repr(value)[:MAX_LOG_STRING]


def encode_logs(logs: object, max_bytes: int) -> bytes:
    """The protocol's ``get_logs`` result as JSON, or a failure when it is too large."""
    entries = list(logs) if isinstance(logs, list | tuple) else []
    text = json.dumps([_json_value(e, 0) for e in entries], ensure_ascii=False)
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        return encode_failure(
            "too-large", f"get_logs returned {len(data):,} bytes of JSON (limit {max_bytes:,})"
        )
    return LOGS + data


# --- parent side -----------------------------------------------------------------------


def malformed(origin: str, what: str) -> SandboxError:
    return SandboxError("malformed-reply", f"malformed reply from the worker {what}", origin)


def decode_failure(payload: bytes, origin: str, context: str) -> SandboxError:
    """The worker's report of a failure, checked: a known kind and a one-line reason."""
    kind_bytes, sep, reason_bytes = payload[1:].partition(b"\n")
    kind = kind_bytes.decode("ascii", "replace")
    if not sep or kind not in WORKER_KINDS:
        return malformed(origin, context)
    return SandboxError(kind, reason_bytes.decode("utf-8", "replace"), origin)


def decode_exchanges(
    payload: bytes, memory_counts: Sequence[int], origin: str, context: str
) -> dict[int, list[tuple[int, int]]]:
    """Rebuild ``{recipient: [(sender, index), ...]}``, every id and index checked."""
    if (len(payload) - 1) % 4:
        raise malformed(origin, context)
    values = memoryview(payload)[1:].cast("i").tolist()
    n_agents = len(memory_counts)
    exchanges: dict[int, list[tuple[int, int]]] = {}
    pos, end = 0, len(values)
    while pos < end:
        if pos + 2 > end:
            raise malformed(origin, context)
        recipient, count = values[pos], values[pos + 1]
        stop = pos + 2 + 2 * count
        if count < 0 or stop > end or not 0 <= recipient < n_agents:
            raise malformed(origin, context)
        senders, indices = values[pos + 2 : stop : 2], values[pos + 3 : stop : 2]
        for sender, index in zip(senders, indices, strict=True):
            if not (0 <= sender < n_agents and 0 <= index < memory_counts[sender]):
                raise malformed(origin, context)
        if count:  # like validate_exchanges, an empty list is no entry
            exchanges.setdefault(recipient, []).extend(zip(senders, indices, strict=True))
        pos = stop
    return exchanges


def decode_logs(payload: bytes, origin: str) -> list[dict[str, Any]]:
    """The protocol's logs: a list of dicts with JSON values; anything else is refused.

    The worker's encoder bounds depth and string sizes, but protocol code can replace it:
    every decoded value is checked again against the same limits (:func:`log_value_fault`)
    before it is kept, so nothing stored can break a later ``json.dumps`` or report.
    """
    try:
        logs = json.loads(payload[1:].decode("utf-8"))
    except (ValueError, RecursionError):
        raise malformed(origin, "to get_logs") from None
    if not isinstance(logs, list):
        raise malformed(origin, "to get_logs")
    entries = [entry for entry in logs if isinstance(entry, dict)]
    for entry in entries:
        fault = log_value_fault(entry)
        if fault is not None:
            raise malformed(origin, f"to get_logs ({fault})")
    return entries


def _bad_text(text: str) -> bool:
    if len(text) > MAX_LOG_STRING:
        return True
    try:  # JSON escapes can decode to lone surrogates, which no UTF-8 file can hold
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def log_value_fault(value: object) -> str | None:
    """Why ``value`` (a log entry, depth 0) is not something the worker's encoder can
    produce, or None: only JSON types, finite floats, strings and keys of at most
    ``MAX_LOG_STRING`` characters, containers only above ``MAX_LOG_DEPTH``.

    Iterative, with an explicit stack: a forged value nested deeper than the interpreter's
    recursion limit is refused like any other, not with a RecursionError.
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if item is None or type(item) in (bool, int):
            continue
        if type(item) is float:
            if not math.isfinite(item):
                return "a non-finite number"
        elif type(item) is str:
            if _bad_text(item):
                return "an overlong or unencodable string"
        elif type(item) in (list, dict):
            if depth >= MAX_LOG_DEPTH:
                return f"values nested deeper than {MAX_LOG_DEPTH} levels"
            if type(item) is dict:
                for key, child in item.items():
                    if type(key) is not str or _bad_text(key):
                        return "an overlong or unencodable key"
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)  # type: ignore[attr-defined]
        else:
            return f"a value of type {type(item).__name__}"
    return None
