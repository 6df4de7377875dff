"""Hostile case: ctypes calls straight into libc and the kernel."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.sandbox.helpers import fail_calls, protocol

LIBC = "ctypes = sys.modules['ctypes']\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def test_raw_open_through_libc_fails_with_eperm(open_dir: Path) -> None:
    marker = open_dir / "ctypes-file"
    share = LIBC + (
        f"fd = libc.open({str(marker).encode()!r}, 0o101, 0o644)\n"
        "raise RuntimeError(f'open returned {fd} errno {ctypes.get_errno()}')"
    )
    err = fail_calls(protocol(share), "crash")
    assert re.match(r"RuntimeError: open returned -1 errno 1 \(line \d+\)", err.reason)
    assert not marker.exists()


def test_ptrace_kills_the_worker_outright() -> None:
    # ptrace(PTRACE_ATTACH, <this process>): on the kill list, the worker dies of SIGSYS.
    share = f"{LIBC}libc.syscall(101, 16, {os.getpid()}, 0, 0)"
    err = fail_calls(protocol(share), "worker-died")
    assert err.reason == "worker died: signal 31 (SIGSYS) in share_memories at step 0"


def test_raw_memory_corruption_only_crashes_the_worker() -> None:
    err = fail_calls(protocol("sys.modules['ctypes'].string_at(0)"), "worker-died")
    assert err.reason == "worker died: signal 11 (SIGSEGV) in share_memories at step 0"
