"""Files the user names are opened only when regular and small enough; inside a folder
that may come from anyone, no link is followed; paths from the environment are checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tpdisc.errors import ConfigError
from tpdisc.safefiles import (
    FileRefused,
    LinkRefused,
    copy_file,
    env_path,
    hold_folder,
    inside,
    make_dirs,
    open_lock,
    open_regular,
    read_capped,
    regular_files,
    write_file,
    writing,
)


def test_regular_files_are_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    assert read_capped(path, 3) == b"abc"
    with open_regular(path) as stream:
        assert stream.read() == b"abc"


def test_anything_else_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for path, kind in [(tmp_path / "fifo", "a FIFO"), (Path("/dev/zero"), "a character device"),
                       (tmp_path, "a folder")]:  # fmt: skip
        with pytest.raises(FileRefused, match=f"not a regular file \\({kind}\\)"):
            open_regular(path)
    with pytest.raises(FileRefused, match="cannot read"):
        open_regular(tmp_path / "missing")


def test_a_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abcd")
    with pytest.raises(FileRefused, match="4 bytes, more than the 3 allowed"):
        read_capped(path, 3)


# --- inside a folder: no link followed -------------------------------------------------


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the folder that links inside it point to."""
    path = tmp_path / "outside" / "secret"
    path.parent.mkdir()
    path.write_text("API_KEY=sk-1234")
    return path


def test_a_link_inside_a_folder_is_not_read(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "run"
    (root / "exports").mkdir(parents=True)
    (root / "exports" / "table.csv").symlink_to(secret)
    (root / "figures").symlink_to(secret.parent, target_is_directory=True)
    (root / "self").symlink_to("/proc/self/environ")
    for path in (root / "exports" / "table.csv", root / "self"):
        with pytest.raises(LinkRefused, match=f"^{path}: a symbolic link"):
            read_capped(path, 1000, root=root)
    with pytest.raises(LinkRefused, match=f"^{root / 'figures'}: a symbolic link"):
        read_capped(root / "figures" / "secret", 1000, root=root)
    with pytest.raises(LinkRefused, match="figures"):
        regular_files(root / "figures", root)
    with pytest.raises(LinkRefused, match=r"table\.csv"):
        regular_files(root / "exports", root, ".csv")
    with pytest.raises(LinkRefused):
        copy_file(root / "self", tmp_path / "copy", source_root=root)
    assert not (tmp_path / "copy").exists()
    # The folder itself is the user's choice: reached through a link, it is read.
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    (root / "plain").write_text("ok")
    assert read_capped(tmp_path / "alias" / "plain", 10, root=tmp_path / "alias") == b"ok"


def test_a_write_replaces_a_link_and_never_writes_through_it(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "study"
    (root / "best").mkdir(parents=True)
    (root / "best" / "evolve-1.py").symlink_to(secret)
    write_file(root / "best" / "evolve-1.py", "print('code')\n", root)
    assert secret.read_text() == "API_KEY=sk-1234"
    assert not (root / "best" / "evolve-1.py").is_symlink()
    assert (root / "best" / "evolve-1.py").read_text() == "print('code')\n"
    assert sorted(p.name for p in (root / "best").iterdir()) == ["evolve-1.py"]  # no .part


def test_a_linked_folder_on_the_way_is_refused_for_writing(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "study", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "report").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(LinkRefused, match=f"^{root / 'report'}: a symbolic link"):
        write_file(root / "report" / "index.html", "<html>", root)
    with pytest.raises(LinkRefused):
        make_dirs(root / "report" / "runs", root)
    with pytest.raises(LinkRefused):
        open_lock(root / "report" / ".lock", root)
    assert not list(elsewhere.iterdir())


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), writing(path) as stream:
        stream.write(b"half")
        raise RuntimeError
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_lock_file_that_is_a_link_is_refused(tmp_path: Path, secret: Path) -> None:
    (tmp_path / ".lock").symlink_to(secret)
    with pytest.raises(LinkRefused, match=r"\.lock: a symbolic link"):
        hold_folder(tmp_path, "busy")
    assert secret.read_text() == "API_KEY=sk-1234"


def test_a_held_folder_is_refused_to_a_second_holder_in_one_line(tmp_path: Path) -> None:
    with hold_folder(tmp_path, "in use ({holder})"):
        script = (
            "import sys; from tpdisc.safefiles import hold_folder; "
            f"hold_folder({str(tmp_path)!r}, 'in use ({{holder}})')"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 1
    assert f"FolderBusy: {tmp_path}: in use (pid {os.getpid()})" in done.stderr
    with hold_folder(tmp_path, "in use"):  # released: free again
        pass


@pytest.mark.parametrize("stored", ["../outside", "/etc", "a/../../b"])
def test_a_stored_path_may_not_climb_out(tmp_path: Path, stored: str) -> None:
    with pytest.raises(FileRefused, match="leads out of this folder"):
        inside(tmp_path, stored)


def test_a_stored_path_may_not_pass_a_link(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "evolve-1").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(LinkRefused, match="evolve-1: a symbolic link"):
        inside(tmp_path, "runs/evolve-1")
    assert inside(tmp_path, "runs") == tmp_path / "runs"


# --- paths from the environment ---------------------------------------------------------


def test_a_folder_variable_naming_a_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    for value, shown in [(file, "(a file)"), (file / "sub", f"({file} is a file)")]:
        monkeypatch.setenv("TPDISC_TEST_DIR", str(value))
        with pytest.raises(ConfigError) as info:
            env_path("TPDISC_TEST_DIR", "folder")
        assert str(info.value) == f"$TPDISC_TEST_DIR: {value}: not a folder {shown}"
    monkeypatch.setenv("TPDISC_TEST_DIR", str(tmp_path / "new" / "folder"))
    assert env_path("TPDISC_TEST_DIR", "folder") == tmp_path / "new" / "folder"
    monkeypatch.setenv("TPDISC_TEST_DIR", "")
    assert env_path("TPDISC_TEST_DIR", "folder") is None


def test_a_file_variable_naming_a_folder_or_nothing_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TPDISC_TEST_FILE", str(tmp_path))
    with pytest.raises(
        ConfigError, match=r"^\$TPDISC_TEST_FILE: .*: not a regular file \(a folder\)"
    ):
        env_path("TPDISC_TEST_FILE", "file")
    monkeypatch.setenv("TPDISC_TEST_FILE", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"^\$TPDISC_TEST_FILE: .*missing: cannot read"):
        env_path("TPDISC_TEST_FILE", "file")
