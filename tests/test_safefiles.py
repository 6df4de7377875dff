"""Files the user names are opened only when regular and small enough."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tpdisc.safefiles import FileRefused, open_regular, read_capped


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
