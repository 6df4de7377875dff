"""Validation of what a protocol returns (SPEC §3): lenient on form, strict on content."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from tpdisc.errors import ProtocolError
from tpdisc.protocols.exchanges import validate_exchanges

COUNTS = [3, 1, 2]  # agent 0 has 3 memories, agent 1 one, agent 2 two


def canonical(exchanges: dict) -> bool:
    return all(
        type(k) is int
        and isinstance(v, list)
        and all(type(e) is tuple and len(e) == 2 and all(type(x) is int for x in e) for e in v)
        for k, v in exchanges.items()
    )


def test_plain_dict_is_kept() -> None:
    raw = {0: [(1, 0), (2, 1)], 2: [(0, 2)]}
    out = validate_exchanges(raw, COUNTS)
    assert out == raw and canonical(out)


def test_missing_and_empty_recipients_receive_nothing() -> None:
    assert validate_exchanges({}, COUNTS) == {}
    assert validate_exchanges({1: [], 2: ()}, COUNTS) == {}


@pytest.mark.parametrize(
    "raw",
    [
        {0: [[1, 0], [2, 1]]},  # lists instead of tuples
        {np.int64(0): [(np.int64(1), np.int32(0)), (2, np.uint8(1))]},  # numpy integers
        {0: np.array([[1, 0], [2, 1]])},  # an array of pairs
        {0: ((1, 0), (2, 1))},  # a tuple of pairs
        MappingProxyType({0: [(1, 0), (2, 1)]}),  # any mapping
        {0: [(1, idx) for idx in np.random.default_rng(0).choice(1, size=1)] + [(2, 1)]},
    ],
)
def test_lenient_forms_are_converted(raw: dict) -> None:
    out = validate_exchanges(raw, COUNTS)
    assert out == {0: [(1, 0), (2, 1)]}
    assert canonical(out)


def test_duplicates_and_self_sends_are_kept() -> None:
    out = validate_exchanges({0: [(0, 2), (0, 2), (1, 0)]}, COUNTS)
    assert out == {0: [(0, 2), (0, 2), (1, 0)]}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (None, "share_memories returned None; expected a dict"),
        ([(0, 1)], "share_memories returned list; expected a dict"),
        ({"0": [(1, 0)]}, "recipient '0': agent ids are ints, got str"),
        ({1.0: [(1, 0)]}, "recipient 1.0: agent ids are ints, got float"),
        ({True: [(1, 0)]}, "recipient True: agent ids are ints, got bool"),
        ({3: [(1, 0)]}, r"recipient 3 does not exist \(agents are 0\.\.2\)"),
        ({-1: [(1, 0)]}, "recipient -1 does not exist"),
        ({0: {(1, 0)}}, "recipient 0: expected a list of .* got set"),
        ({0: 5}, "recipient 0: expected a list of .* got int"),
        (
            {0: [(1, 0), (1, 0, 0)]},
            r"recipient 0, entry 1: expected a \(sender, memory_index\) pair",
        ),
        ({0: [(1, 0), 7]}, "recipient 0, entry 1: expected a .* pair, got 7"),
        ({0: ["ab"]}, "recipient 0, entry 0: expected a .* pair"),
        ({0: [(1.0, 0)]}, "recipient 0, entry 0: sender and memory index must be ints"),
        ({0: [(1, "0")]}, "recipient 0, entry 0: sender and memory index must be ints"),
        ({0: [(1, True)]}, "recipient 0, entry 0: sender and memory index must be ints"),
        (
            {0: [(2, 1), (5, 0)]},
            r"recipient 0, entry 1: sender 5 does not exist \(agents are 0\.\.2\)",
        ),
        ({0: [(-1, 0)]}, "recipient 0, entry 0: sender -1 does not exist"),
        (
            {2: [(0, 0), (0, 1), (1, 1)]},
            r"recipient 2, entry 2: memory index 1 out of range \(agent 1 has 1 memories\)",
        ),
        ({2: [(0, -1)]}, "recipient 2, entry 0: memory index -1 out of range"),
        ({0: np.array([[1.0, 0.0]])}, "recipient 0, entry 0: sender and memory index must be ints"),
        ({0: [np.array(1)]}, "recipient 0, entry 0: expected a .* pair, got array"),
        ({0: [np.array([[1, 0]])]}, "recipient 0, entry 0: expected a .* pair"),
    ],
)
def test_malformed_output_names_the_entry(raw: object, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        validate_exchanges(raw, COUNTS)


def test_error_message_is_one_short_line() -> None:
    with pytest.raises(ProtocolError) as err:
        validate_exchanges({0: [("x" * 500, 0)]}, COUNTS)
    assert "\n" not in str(err.value) and len(str(err.value)) < 200
