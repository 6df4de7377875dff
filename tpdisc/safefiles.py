"""Opening files a user points the tool at, which may be anything: ``/dev/zero``, a FIFO
that no one writes to, a folder, a file of many gigabytes.

Only regular files are read, and never more than a stated size: the check comes before
the first byte is read, and a FIFO is opened without waiting for a writer.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from tpdisc.errors import TpdiscError


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
