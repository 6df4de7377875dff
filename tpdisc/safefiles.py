"""Files and paths from outside: files a user points the tool at, which may be anything
(``/dev/zero``, a FIFO that no one writes to, a folder, a file of many gigabytes), and
names and paths stored in run folders, which may come from anyone.

Only regular files are read, and never more than a stated size: the check comes before
the first byte is read, and a FIFO is opened without waiting for a writer. A stored name
becomes a file name only once made plain, a stored path is followed only inside its folder.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import BinaryIO

from tpdisc.errors import TpdiscError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class FileRefused(TpdiscError):
    """The path is not a regular file, cannot be opened, or is larger than allowed."""


def open_regular(path: str | Path, limit: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary, once it is known to be a regular file of at
    most ``limit`` bytes; otherwise :class:`FileRefused` with one line naming it."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer, maybe forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise FileRefused(f"{path}: cannot read ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{path}: not a regular file ({_kind(info.st_mode)})")
        if limit is not None and info.st_size > limit:
            raise FileRefused(
                f"{path}: {info.st_size:,} bytes, more than the {limit:,} allowed here"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, refused when over ``limit`` bytes (also a
    file that grows while being read)."""
    with open_regular(path, limit) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"{Path(path)}: more than the {limit:,} bytes allowed here")
    return data


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def safe_name(text: str, limit: int = 80) -> str:
    """``text`` made a plain file name (letters, digits, ``._-``; no leading dot): names
    stored in a run folder become file names, and must not climb out of their folder."""
    name = _UNSAFE.sub("-", text).lstrip(".")[:limit]
    return name or "unnamed"


def inside(root: str | Path, relative: str | Path, what: str = "path") -> Path:
    """``root / relative``, refused unless it stays inside ``root`` (a stored path may be
    absolute, climb with ``..`` or follow a link out)."""
    root = Path(root).resolve()
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise FileRefused(f"{root}: the {what} {str(relative)!r} leads out of this folder")
    return target
