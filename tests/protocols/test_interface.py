"""The in-process call boundary between the game and a protocol object."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tpdisc.errors import ProtocolError
from tpdisc.protocols.interface import InProcessRunner, describe_exception, seed_global_generators


class Quiet:
    def share_memories(self, i_step: int, agent_states: dict) -> dict:
        return {0: [(1, 0)]}


def test_runner_passes_answers_through() -> None:
    with InProcessRunner("q", Quiet()) as runner:
        assert runner.share(0, {}) == {0: [(1, 0)]}
        assert runner.logs() == []  # no get_logs: no logs


def test_object_without_share_memories_is_refused() -> None:
    with pytest.raises(ProtocolError, match=r"^thing: the protocol object has no share_memories"):
        InProcessRunner("thing", object())


@pytest.mark.parametrize(
    ("logs", "expected"),
    [
        ([{"metric_name": "a"}], [{"metric_name": "a"}]),
        (({"metric_name": "a"},), [{"metric_name": "a"}]),
        ("not a list", []),
        (None, []),
    ],
)
def test_logs_are_a_list_or_nothing(logs: object, expected: list) -> None:
    class WithLogs(Quiet):
        def get_logs(self) -> object:
            return logs

    assert InProcessRunner("w", WithLogs()).logs() == expected


def test_crash_is_wrapped_with_step() -> None:
    class Crash(Quiet):
        def share_memories(self, i_step: int, agent_states: dict) -> dict:
            raise ValueError("bad state")

    with pytest.raises(
        ProtocolError, match=r"^c: ValueError: bad state in share_memories at step 7$"
    ):
        InProcessRunner("c", Crash()).share(7, {})


def test_describe_exception_without_message_or_protocol_frame() -> None:
    try:
        raise StopIteration
    except StopIteration as err:
        assert describe_exception(err) == "StopIteration"
    code = compile("def f():\n    return 1 / 0\n", "<protocol x.py>", "exec")
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(ZeroDivisionError) as info:
        namespace["f"]()
    assert describe_exception(info.value) == "ZeroDivisionError: division by zero (line 2)"


def test_seed_global_generators_is_reproducible() -> None:
    seed_global_generators(2**40 + 5)  # larger than numpy's legacy seed range
    first = (random.random(), np.random.random())
    seed_global_generators(2**40 + 5)
    assert (random.random(), np.random.random()) == first
    seed_global_generators(6)
    assert (random.random(), np.random.random()) != first
