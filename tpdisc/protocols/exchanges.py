"""Checking what a protocol returns before the game uses it."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

import numpy as np

from tpdisc.errors import ProtocolError

# {recipient: [(sender, memory_index), ...]}, every id and index checked.
Exchanges = dict[int, list[tuple[int, int]]]

_SEQUENCE_TYPES = (list, tuple, np.ndarray)


def _as_int(value: object) -> int | None:
    """The value as a Python int if it is an integer (numpy integers included), else None."""
    if type(value) is int:
        return value
    if isinstance(value, np.integer):
        return int(value)
    return None


def _canonical_entries(
    entries: object, n_agents: int, memory_counts: Sequence[int]
) -> list[tuple[int, int]] | None:
    """``entries`` as a list if every entry is already canonical, a tuple of two in-range
    ints; else None, and the caller checks entry by entry to convert or name the fault.

    The common case, checked with C-level iteration: protocols send hundreds per step.
    """
    if not isinstance(entries, list | tuple) or not entries:
        return None
    if set(map(type, entries)) != {tuple} or set(map(len, entries)) != {2}:
        return None
    senders, indices = zip(*entries, strict=True)
    if set(map(type, senders)) != {int} or set(map(type, indices)) != {int}:
        return None
    if min(senders) < 0 or max(senders) >= n_agents or min(indices) < 0:
        return None
    if not all(map(operator.lt, indices, map(memory_counts.__getitem__, senders))):
        return None
    return list(entries)


def validate_exchanges(raw: object, memory_counts: Sequence[int]) -> Exchanges:
    """Check ``raw`` against the contract of SPEC §3 and return it in canonical form.

    ``memory_counts[i]`` is how many memories agent ``i`` has. Recipients left out receive
    nothing; lists stand for tuples and numpy integers for ints. Anything else raises a
    :class:`ProtocolError` that names the offending entry.
    """
    if raw is None:
        raise ProtocolError("share_memories returned None; expected a dict {recipient: [...]}")
    if not isinstance(raw, Mapping):
        raise ProtocolError(
            f"share_memories returned {type(raw).__name__}; "
            "expected a dict {recipient: [(sender, memory_index), ...]}"
        )
    n_agents = len(memory_counts)
    exchanges: Exchanges = {}
    for key, entries in raw.items():
        recipient = _as_int(key)
        if recipient is None:
            raise ProtocolError(f"recipient {key!r}: agent ids are ints, got {type(key).__name__}")
        if not 0 <= recipient < n_agents:
            raise ProtocolError(
                f"recipient {recipient} does not exist (agents are 0..{n_agents - 1})"
            )
        if not isinstance(entries, _SEQUENCE_TYPES):
            raise ProtocolError(
                f"recipient {recipient}: expected a list of (sender, memory_index) pairs, "
                f"got {type(entries).__name__}"
            )
        canonical = _canonical_entries(entries, n_agents, memory_counts)
        if canonical is not None:
            if canonical:
                exchanges.setdefault(recipient, []).extend(canonical)
            continue
        checked: list[tuple[int, int]] = []
        for k, entry in enumerate(entries):
            # A 0-d array is an ndarray without a length: reject it here, not with TypeError.
            if (
                not isinstance(entry, _SEQUENCE_TYPES)
                or getattr(entry, "ndim", 1) != 1
                or len(entry) != 2
            ):
                raise ProtocolError(
                    f"recipient {recipient}, entry {k}: expected a (sender, memory_index) pair, "
                    f"got {entry!r:.60}"
                )
            sender, index = _as_int(entry[0]), _as_int(entry[1])
            if sender is None or index is None:
                raise ProtocolError(
                    f"recipient {recipient}, entry {k}: sender and memory index must be ints, "
                    f"got {entry!r:.60}"
                )
            if not 0 <= sender < n_agents:
                raise ProtocolError(
                    f"recipient {recipient}, entry {k}: sender {sender} does not exist "
                    f"(agents are 0..{n_agents - 1})"
                )
            if not 0 <= index < memory_counts[sender]:
                raise ProtocolError(
                    f"recipient {recipient}, entry {k}: memory index {index} out of range "
                    f"(agent {sender} has {memory_counts[sender]} memories)"
                )
            checked.append((sender, index))
        if checked:
            exchanges.setdefault(recipient, []).extend(checked)
    return exchanges
