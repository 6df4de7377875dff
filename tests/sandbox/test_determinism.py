"""The pre-check's refusals of reads that no seed can replay: addresses and the clock."""

from __future__ import annotations

import pytest

from tpdisc.sandbox import precheck

PROTOCOL = "class TransmissionProtocol:\n    def share_memories(self, i_step, agent_states):\n"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("return {id(object()) % 2: []}", "line 4: id() is not allowed"),
        ("f = id\n        return {}", "line 4: id() is not allowed"),
        ("return {int(np.datetime64('now').astype(int)) % 2: []}", "line 4: numpy datetimes"),
        ("return np.array(['Today']).astype(s)", "the literal 'Today' is not allowed"),
        ("return np.array([s]).astype('<M8[s]')", "the datetime dtype '<M8[s]' is not allowed"),
        ("return np.array([s], dtype=b'datetime64')", "the datetime dtype b'datetime64'"),
    ],
)
def test_addresses_and_the_clock_are_refused(body: str, problem: str) -> None:
    problems = precheck("import numpy as np\n" + PROTOCOL + "        " + body + "\n")
    assert any(problem in p for p in problems), problems


def test_an_import_of_numpys_datetime_is_refused() -> None:
    problems = precheck("from numpy import datetime64 as d\n" + PROTOCOL + "        return {}\n")
    assert problems == [
        "line 1: numpy datetimes are not allowed (numpy reads the wall clock for 'now' and "
        "'today', which no seed can replay)"
    ]


@pytest.mark.parametrize(
    "body",
    [
        "return {k: [] for k in sorted(agent_states)}",
        "now = 3\n        return {}",  # a name, not the literal
        "return {'M': [], 'known': []}",
        "return {int(np.timedelta64(3, 'D').astype(int)): []}",
    ],
)
def test_ordinary_code_passes(body: str) -> None:
    assert precheck("import numpy as np\n" + PROTOCOL + "        " + body + "\n") == []
