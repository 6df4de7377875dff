"""Hostile case: malformed exchanges, reported as the in-process checks report them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.sandbox.helpers import fail_calls, protocol, source_spec, toy_states
from tpdisc.errors import ProtocolError
from tpdisc.protocols.exchanges import validate_exchanges

# Three agents with two memories each (toy_states).
MALFORMED = [
    "None",
    "[(0, 1)]",
    "{12: [(0, 0)]}",
    "{-1: []}",
    "{0: [(5, 0)]}",
    "{0: [(1, 99)]}",
    "{0: [(1, 2**40)]}",
    "{0: [('a', 0)]}",
    "{0: [(0.0, 1)]}",
    "{0: [(0,)]}",
    "{0: [(0, 1, 2)]}",
    "{0: 'xy'}",
    "{'a': []}",
    "{True: [(0, 0)]}",
    "{0: [(0, 0)], 1: None}",
]


def trusted_message(expression: str) -> str:
    with pytest.raises(ProtocolError) as info:
        validate_exchanges(eval(expression), [2, 2, 2])
    return str(info.value)


@pytest.mark.parametrize("expression", MALFORMED)
def test_malformed_exchanges_are_named_like_in_process(expression: str) -> None:
    err = fail_calls(protocol(f"return {expression}", reach_sys=False), "invalid-exchange")
    assert err.reason == f"invalid exchange at step 0: {trusted_message(expression)}"


def test_a_mapping_that_raises_while_read_is_an_invalid_exchange() -> None:
    prelude = """
class Trap(dict):
    def items(self):
        raise ValueError("gotcha")
"""
    share = "return Trap({0: [(1, 0)]})"
    err = fail_calls(protocol(share, prelude=prelude, reach_sys=False), "invalid-exchange")
    assert err.reason.startswith("invalid exchange at step 0: ValueError: gotcha (line ")


def test_lenient_forms_are_accepted_and_canonicalised() -> None:
    share = """
    import numpy as np
    return {np.int64(0): [(np.int64(1), np.int32(0)), [2, 1]], 2: np.array([[0, 1]]), 1: []}
    """
    with source_spec(protocol(share, reach_sys=False)).open(3, 5, 0) as runner:
        raw = runner.share(0, toy_states())
        assert runner.canonical  # the game trusts the decoded reply unchecked
    assert raw == {0: [(1, 0), (2, 1)], 2: [(0, 1)]}
    assert all(type(s) is int and type(i) is int for e in raw.values() for s, i in e)
    assert raw == validate_exchanges(
        {np.int64(0): [(np.int64(1), np.int32(0)), [2, 1]], 2: np.array([[0, 1]]), 1: []},
        [2, 2, 2],
    )
