"""The seccomp filter, loaded in a throwaway child process."""

from __future__ import annotations

import os
import resource  # noqa: F401  (imported before the fork: the filter forbids reading its file)

import pytest

from tpdisc.sandbox import policy, sandbox_support


def run_filtered(check: str) -> int:
    """Fork, load the filter, run ``check`` (code setting ``code``); return the exit code."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            policy.install(os.getpid())
            scope: dict[str, object] = {"os": os}
            exec(check, scope)
            code = int(scope["code"])  # type: ignore[call-overload]
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def exit_code(status: int) -> int:
    return os.waitstatus_to_exitcode(status)


pytestmark = pytest.mark.skipif(
    not sandbox_support()[0], reason=f"no seccomp here: {sandbox_support()[1]}"
)


def test_this_platform_supports_the_filter() -> None:
    assert sandbox_support() == (True, "")


def test_files_are_refused_with_eperm() -> None:
    check = (
        "try:\n    os.open('/', os.O_RDONLY)\n    code = 1\nexcept PermissionError:\n    code = 0"
    )
    assert exit_code(run_filtered(check)) == 0


def test_signals_to_itself_pass_and_to_others_are_refused() -> None:
    check = (
        f"os.kill(os.getpid(), 0)\n"
        f"try:\n    os.kill({os.getpid()}, 0)\n    code = 1\nexcept PermissionError:\n    code = 0"
    )
    assert exit_code(run_filtered(check)) == 0


def test_limits_can_be_read_but_not_raised() -> None:
    check = (
        "import resource\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "try:\n    resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))\n    code = 1\n"
        # CPython reports EPERM from setrlimit as this ValueError.
        "except ValueError as err:\n    code = 0 if 'not allowed' in str(err) else 2"
    )
    assert exit_code(run_filtered(check)) == 0


def test_os_entropy_is_refused_with_eperm() -> None:
    # Same seed, same simulation: no getrandom, and no /dev/urandom to fall back on.
    check = (
        "try:\n    os.getrandom(4)\n    code = 1\nexcept PermissionError:\n    code = 0\n"
        "try:\n    os.urandom(4)\n    code = code or 2\nexcept PermissionError:\n    pass"
    )
    assert exit_code(run_filtered(check)) == 0


def test_attack_only_syscalls_kill_with_sigsys() -> None:
    check = "import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)\ncode = 0"
    status = run_filtered(check)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 31


@pytest.mark.parametrize("pid", [1, 4242, 4_194_303])
def test_the_program_compiled_once_is_libseccomps_own_for_each_pid(pid: int) -> None:
    # Workers load the program compiled once in the zygote with their pid patched in: it
    # must be exactly what libseccomp compiles for that pid.
    assert policy.compiled().for_pid(pid) == policy._build(pid)


def test_the_compiled_program_has_its_pid_slots_and_nothing_else_to_patch() -> None:
    compiled = policy.compiled()
    assert compiled.pid_slots
    assert compiled.for_pid(policy.PID_STANDINS[0]) == compiled.program
    assert compiled.for_pid(7) != compiled.program
