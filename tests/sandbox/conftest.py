"""Checks around every sandbox test: it cannot hang CI, and it leaves no worker behind."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from tests.sandbox.helpers import WATCHDOG_SECONDS, wait_for, zygote_children


@pytest.fixture(autouse=True)
def no_worker_left_and_no_hang() -> Iterator[None]:
    """Fail a test that hangs instead of hanging CI; after it, no worker may be left."""

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"sandbox test still running after {WATCHDOG_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(WATCHDOG_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert wait_for(lambda: not zygote_children()), f"workers left: {zygote_children()}"
