"""Hostile case: flooding stdout and stderr."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import FAST, fail_calls, protocol, source_spec, toy_states

FLOOD = """
line = "x" * 1023 + "\\n"
for _ in range(20_000):  # 20 MB each way
    print(line, end="")
    print(line, end="", file=sys.stderr)
    print(line, end="", file=sys.__stdout__)
os = sys.modules['os']
os.write(1, line.encode() * 1000)
os.write(2, line.encode() * 1000)
"""


def test_output_goes_nowhere_and_the_run_completes(capfd: pytest.CaptureFixture[str]) -> None:
    with source_spec(protocol(FLOOD), FAST).open(3, 5, 0) as runner:
        for step in range(2):
            assert runner.share(step, toy_states()) == {}
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_printing_forever_is_a_timeout(capfd: pytest.CaptureFixture[str]) -> None:
    err = fail_calls(protocol("while True:\n    print('x' * 1000)"), "timeout")
    assert err.reason == "timeout after 1 s in share_memories at step 0"
    assert capfd.readouterr() == ("", "")
