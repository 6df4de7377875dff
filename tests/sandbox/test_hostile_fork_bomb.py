"""Hostile case: fork bombs."""

from __future__ import annotations

from pathlib import Path

from tests.sandbox.helpers import fail_calls, protocol, wait_for

NOBODY = 65534


def nobody_processes() -> list[int]:
    """Processes running as nobody: a forked worker's children would be among them."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == NOBODY:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_os_fork_in_a_loop_fails_at_the_first_fork() -> None:
    before = set(nobody_processes())
    err = fail_calls(protocol("while True:\n    sys.modules['os'].fork()"), "crash")
    assert err.reason.startswith("PermissionError: [Errno 1] Operation not permitted (line ")
    assert wait_for(lambda: set(nobody_processes()) <= before)


def test_fork_through_libc_returns_an_error() -> None:
    share = """
    ctypes = sys.modules['ctypes']
    libc = ctypes.CDLL(None, use_errno=True)
    pids = [libc.fork() for _ in range(50)]
    raise RuntimeError(f"fork returned {sorted(set(pids))} errno {ctypes.get_errno()}")
    """
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("RuntimeError: fork returned [-1] errno 1 (line ")
