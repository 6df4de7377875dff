"""Resource limits and the dropped uid of a worker, checked in a throwaway child."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from tpdisc.sandbox import confine


def in_child(check: str) -> int:
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            scope: dict[str, object] = {"os": os, "resource": resource, "confine": confine}
            exec(check, scope)
            code = int(scope["code"])  # type: ignore[call-overload]
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_limits_are_set() -> None:
    check = """
before = confine.mapped_bytes()
confine.set_limits(3, 256 << 20)
limits = {name: resource.getrlimit(getattr(resource, name)) for name in
          ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_NPROC", "RLIMIT_NOFILE")}
cap = resource.getrlimit(resource.RLIMIT_AS)[0]
ok = limits == {"RLIMIT_CPU": (3, 4), "RLIMIT_FSIZE": (0, 0), "RLIMIT_CORE": (0, 0),
                "RLIMIT_NPROC": (0, 0), "RLIMIT_NOFILE": (16, 16)}
code = 0 if ok and before + (256 << 20) <= cap <= before + (300 << 20) else 1
"""
    assert in_child(check) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid is dropped only when running as root")
def test_root_becomes_nobody_for_good() -> None:
    check = """
confine.drop_privileges(65534, 65534, os.getppid())
try:
    os.setuid(0)
    code = 1
except PermissionError:
    ids = (os.getuid(), os.geteuid(), os.getgid(), os.getgroups())
    code = 0 if ids == (65534, 65534, 65534, []) else 2
"""
    assert in_child(check) == 0


def test_a_worker_whose_parent_already_died_exits() -> None:
    check = "confine.drop_privileges(65534, 65534, 1)\ncode = 0"  # pid 1 is not our parent
    assert in_child(check) == 1


def test_address_randomisation_is_turned_off_for_what_runs_next() -> None:
    # In a child: the flag stays with the process that sets it (and what it executes).
    code = (
        "from tpdisc.sandbox import confine\n"
        "print(confine.address_randomisation_off(), confine.address_randomisation_off())\n"
        "import subprocess\n"
        "print(subprocess.run(['cat', '/proc/self/personality'], capture_output=True,"
        " text=True).stdout.strip())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[:2] == ["True", "False"]
    assert int(out[2], 16) & confine.ADDR_NO_RANDOMIZE
