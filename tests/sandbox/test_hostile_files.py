"""Hostile case: reading and writing files."""

from __future__ import annotations

import os
from pathlib import Path

from tests.sandbox.helpers import fail_calls, protocol

PERMISSION = "PermissionError: [Errno 1] Operation not permitted"


def test_the_open_builtin_is_not_there(open_dir: Path) -> None:
    target = open_dir / "written.txt"
    err = fail_calls(protocol(f"open({str(target)!r}, 'w').write('pwned')"), "crash")
    assert err.reason.startswith("NameError: name 'open' is not defined (line ")
    assert err.reason.endswith(") in share_memories at step 0")
    assert not target.exists()


def test_writing_through_the_io_module_is_refused_by_seccomp(open_dir: Path) -> None:
    target = open_dir / "written.txt"
    err = fail_calls(protocol(f"sys.modules['io'].open({str(target)!r}, 'w').write('x')"), "crash")
    # EPERM comes from the seccomp filter: the folder is writable by anyone.
    assert err.reason.startswith(f"{PERMISSION}: {str(target)!r}")
    assert not target.exists()


def test_creating_removing_and_renaming_are_refused(open_dir: Path) -> None:
    victim = open_dir / "victim.txt"
    victim.write_text("keep me")
    victim.chmod(0o666)
    for action in (
        f"os.close(os.open({str(open_dir / 'new')!r}, os.O_CREAT | os.O_WRONLY))",
        f"os.mkdir({str(open_dir / 'folder')!r})",
        f"os.unlink({str(victim)!r})",
        f"os.rename({str(victim)!r}, {str(open_dir / 'moved')!r})",
        f"os.truncate({str(victim)!r}, 0)",
        f"os.symlink('/etc/passwd', {str(open_dir / 'link')!r})",
    ):
        err = fail_calls(protocol(f"os = sys.modules['os']\n{action}"), "crash")
        assert err.reason.startswith(PERMISSION), (action, err.reason)
    assert sorted(os.listdir(open_dir)) == ["victim.txt"]
    assert victim.read_text() == "keep me"


def test_reading_files_and_listing_folders_is_refused(open_dir: Path) -> None:
    secret = open_dir / "secret.txt"
    secret.write_text("TOPSECRET")
    secret.chmod(0o644)
    for action, shown in (
        (f"data = sys.modules['io'].open({str(secret)!r}).read()", f": {str(secret)!r}"),
        ("data = sys.modules['os'].listdir('/')", ": '/'"),
        (f"data = sys.modules['os'].stat({str(secret)!r})", f": {str(secret)!r}"),
        ("data = sys.modules['io'].open('/proc/self/environ', 'rb').read()", ""),
    ):
        err = fail_calls(protocol(f"{action}\nraise RuntimeError(str(data))"), "crash")
        assert err.reason.startswith(f"{PERMISSION}{shown}"), (action, err.reason)
        assert "TOPSECRET" not in str(err)
