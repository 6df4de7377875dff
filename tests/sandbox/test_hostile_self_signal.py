"""Hostile case: a protocol that sends itself the CPU-limit signals to fake a timeout.

A timeout is a verdict on the protocol's CPU use; it must be reported only when the worker
really used its budget, which the zygote reads from the worker's rusage (``os.wait4``).
"""

from __future__ import annotations

import re

from tests.sandbox.helpers import fail_calls, protocol

SIGNAL = "signal = sys.modules['signal']\n"
FAKE_XCPU = re.compile(
    r"worker died: signal 24 \(SIGXCPU\) after \d+\.\d\d s of CPU, not a timeout "
    r"\(budget 1 s\) in share_memories at step 0"
)


def test_raising_sigxcpu_is_reported_as_the_signal_not_a_timeout() -> None:
    err = fail_calls(protocol(SIGNAL + "signal.raise_signal(signal.SIGXCPU)"), "worker-died")
    assert FAKE_XCPU.fullmatch(err.reason), err.reason


def test_killing_itself_with_sigxcpu_is_reported_as_the_signal() -> None:
    share = SIGNAL + "os = sys.modules['os']\nos.kill(os.getpid(), signal.SIGXCPU)"
    err = fail_calls(protocol(share), "worker-died")
    assert FAKE_XCPU.fullmatch(err.reason), err.reason


def test_killing_itself_with_sigkill_is_not_a_timeout() -> None:
    share = SIGNAL + "os = sys.modules['os']\nos.kill(os.getpid(), signal.SIGKILL)"
    err = fail_calls(protocol(share), "worker-died")
    assert re.fullmatch(
        r"worker died: signal 9 \(SIGKILL\) after \d+\.\d\d s of CPU, not a timeout "
        r"\(budget 1 s\) in share_memories at step 0",
        err.reason,
    ), err.reason


def test_a_real_sigxcpu_after_spinning_is_still_a_timeout() -> None:
    err = fail_calls(protocol("while True:\n    pass"), "timeout")
    assert err.reason == "timeout after 1 s in share_memories at step 0"


def test_swallowing_sigxcpu_still_ends_at_the_hard_limit_as_a_timeout() -> None:
    # A handler that ignores SIGXCPU: the hard RLIMIT_CPU one second later kills with SIGKILL.
    share = SIGNAL + "signal.signal(signal.SIGXCPU, lambda *a: None)\nwhile True:\n    pass"
    err = fail_calls(protocol(share), "timeout")
    assert err.reason == "timeout after 1 s in share_memories at step 0"
