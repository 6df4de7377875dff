"""Checks around every sandbox test: it cannot hang CI, and it leaves no worker behind."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
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


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A world-writable folder: only the seccomp filter can stop the worker writing here."""
    path = Path(tempfile.mkdtemp(prefix="tpdisc-sandbox-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path)
