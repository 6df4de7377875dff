"""The empty root (user and mount namespaces), entered in a throwaway child."""

from __future__ import annotations

import os
from functools import partial

import pytest

from tpdisc.sandbox import confine, emptyroot
from tpdisc.sandbox.zygote import nobody

SUPPORTED, WHY = emptyroot.probe(partial(confine.become, *nobody()))
needs_namespaces = pytest.mark.skipif(not SUPPORTED, reason=f"no namespaces here: {WHY}")


def in_child(check: str, active: bool = True) -> int:
    """Fork, run ``check`` (code setting ``code``) with ``emptyroot.ACTIVE`` as given."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            emptyroot.ACTIVE = active
            scope: dict[str, object] = {"os": os, "confine": confine, "emptyroot": emptyroot}
            exec(check, scope)
            code = int(scope["code"])  # type: ignore[call-overload]
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces were checked to work here as root")
def test_this_platform_allows_the_empty_root() -> None:
    assert (SUPPORTED, WHY) == (True, "")


@needs_namespaces
def test_a_worker_keeps_its_ids_and_loses_everything_else() -> None:
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    check = f"""
import ctypes
confine.drop_privileges(*{nobody()}, os.getppid())
libc = ctypes.CDLL(None, use_errno=True)
dumpable = libc.prctl(3, 0, 0, 0, 0)
ids = (os.getuid(), os.geteuid(), os.getgroups())
gone = not any(os.path.exists(p) for p in ("/etc/passwd", "/proc", "/tmp", {os.getcwd()!r}))
code = 0 if (emptyroot.check(), ids, gone, dumpable) == ("", ({uid}, {uid}, []), True, 0) else 1
"""
    assert in_child(check) == 0


@needs_namespaces
def test_already_open_fds_still_work() -> None:
    read_end, write_end = os.pipe()
    check = f"emptyroot.enter()\nos.write({write_end}, b'through')\ncode = 0"
    assert in_child(check) == 0
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        assert fh.read() == b"through"


@needs_namespaces
def test_the_empty_root_cannot_be_written_or_left() -> None:
    check = """
confine.drop_privileges(*emptyroot_ids, os.getppid())
refused = 0
for attempt in (lambda: os.mkdir("/x"), lambda: os.chroot("/"),
                lambda: os.close(os.open("/f", os.O_CREAT | os.O_WRONLY))):
    try:
        attempt()
    except OSError:
        refused += 1
code = 0 if refused == 3 and os.listdir("/") == [] else 1
"""
    assert in_child(f"emptyroot_ids = {nobody()}\n{check}") == 0


def test_without_the_flag_a_worker_keeps_the_filesystem() -> None:
    check = f"confine.drop_privileges(*{nobody()}, os.getppid())\ncode = int(not os.listdir('/'))"
    assert in_child(check, active=False) == 0


def test_the_decision_is_made_once_and_can_be_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emptyroot, "ACTIVE", False)
    monkeypatch.setattr(emptyroot, "REASON", "not probed")
    assert emptyroot.activate(partial(confine.become, *nobody()), wanted=False) == (
        False,
        "namespaces turned off by the caller",
    )
    assert (emptyroot.ACTIVE, emptyroot.REASON) == (False, "namespaces turned off by the caller")
    monkeypatch.setattr(emptyroot.platform, "system", lambda: "Darwin")
    assert emptyroot.activate(partial(confine.become, *nobody())) == (
        False,
        "namespaces need Linux; this is Darwin",
    )


def test_a_forbidden_unshare_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise PermissionError(1, "unshare: Operation not permitted")

    monkeypatch.setattr(emptyroot, "enter", refuse)
    ok, why = emptyroot.probe(partial(confine.become, *nobody()))
    assert (ok, why) == (False, "PermissionError: [Errno 1] unshare: Operation not permitted")


def test_a_probe_that_cannot_fork_leaves_the_wall_down(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(emptyroot, "ACTIVE", False)
    monkeypatch.setattr(emptyroot.os, "fork", no_fork)
    ok, why = emptyroot.activate(partial(confine.become, *nobody()))
    assert not ok and why.startswith("the namespace probe could not run: [Errno 11]")
