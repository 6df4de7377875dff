"""Hostile case: os.system and subprocess."""

from __future__ import annotations

import re
from pathlib import Path

from tests.sandbox.helpers import fail_calls, protocol

PERMISSION = "PermissionError: [Errno 1] Operation not permitted (line "


def test_os_system_cannot_start_a_shell(open_dir: Path) -> None:
    marker = open_dir / "system-ran"
    share = f"""
    status = sys.modules['os'].system('touch {marker}')
    raise RuntimeError(f'system returned {{status}}')
    """
    err = fail_calls(protocol(share), "crash")
    # glibc reports a shell that could not be spawned as exit status 127 (or -1).
    assert re.match(r"RuntimeError: system returned (32512|-1) \(line \d+\)", err.reason)
    assert not marker.exists()


def test_subprocess_cannot_start_a_process(open_dir: Path) -> None:
    marker = open_dir / "subprocess-ran"
    err = fail_calls(protocol(f"sys.modules['subprocess'].run(['touch', '{marker}'])"), "crash")
    assert err.reason.startswith(PERMISSION)
    assert not marker.exists()


def test_exec_and_spawn_are_refused(open_dir: Path) -> None:
    marker = open_dir / "exec-ran"
    touch = "'/usr/bin/touch'"
    for share, reason_start in (
        (f"sys.modules['os'].execv({touch}, ['touch', '{marker}'])", PERMISSION),
        (
            f"sys.modules['os'].posix_spawn({touch}, ['touch', '{marker}'], {{}})",
            f"{PERMISSION.removesuffix(' (line ')}: {touch} (line ",
        ),
    ):
        err = fail_calls(protocol(share), "crash")
        assert err.reason.startswith(reason_start), err.reason
    assert not marker.exists()
