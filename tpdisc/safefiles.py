"""Files and paths from outside: files a user points the tool at, which may be anything
(``/dev/zero``, a FIFO that no one writes to, a folder, a file of many gigabytes), and the
folders tpdisc keeps (run folders, study folders, reports), which may come from anyone.

Only regular files are read, and never more than a stated size: the check comes before
the first byte is read, and a FIFO is opened without waiting for a writer. A stored name
becomes a file name only once made plain, a stored path is followed only inside its folder.

Inside a folder (its ``root``: a run or study folder, an output folder) no symbolic link
is followed, for reading or writing: a link can make a folder made elsewhere read
``/proc/self/environ`` into a report, or write code into ``~/.bashrc``. Paths are walked
from the root one component at a time with ``O_NOFOLLOW`` (the root itself is the user's
choice, and followed), and a link met on the way is refused in one line naming it. Files
are written to a fresh temporary name and renamed over their target, so a link in the
target's place is replaced, never written through, and a reader never sees half a file.
Libraries that open files by name (SQLite, pyarrow) get paths checked the same way first.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, BinaryIO

from tpdisc.errors import ConfigError, TpdiscError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC


class FileRefused(TpdiscError):
    """The path is not a regular file, cannot be opened, or is larger than allowed."""


class LinkRefused(FileRefused):
    """A symbolic link inside a folder tpdisc reads or writes."""


def open_regular(
    path: str | Path, limit: int | None = None, *, root: str | Path | None = None
) -> BinaryIO:
    """``path`` opened for reading in binary, once it is known to be a regular file of at
    most ``limit`` bytes; otherwise :class:`FileRefused` with one line naming it. With
    ``root`` (a folder above ``path``), no link below ``root`` is followed."""
    path = Path(path)
    # O_NONBLOCK: opening a FIFO would otherwise wait for a writer, maybe forever.
    flags = os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC
    if root is None:
        try:
            fd = os.open(path, flags)
        except OSError as err:
            raise FileRefused(f"{path}: cannot read ({err.strerror})") from None
    else:
        fd = _open_below(path, root, flags | _NOFOLLOW, "read")
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


def read_capped(path: str | Path, limit: int, *, root: str | Path | None = None) -> bytes:
    """The bytes of the regular file ``path``, refused when over ``limit`` bytes (also a
    file that grows while being read); ``root`` as for :func:`open_regular`."""
    with open_regular(path, limit, root=root) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"{Path(path)}: more than the {limit:,} bytes allowed here")
    return data


# What a failed write can mean, in the order they are told apart.
_WRITE_ERRORS = frozenset(
    {errno.EFBIG, errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
)
# Less than this free on a device after a failed write: the device is full.
_NEARLY_FULL = 16 << 20


def why_not_written(path: str | Path, err: OSError | None = None) -> str | None:
    """Why writing ``path`` failed, in words: the file-size limit of this process (which
    SQLite reports as an I/O error), a full or read-only device; ``err`` as the system
    reported it, if known. None when none of these is what happened."""
    path = Path(path)
    code = err.errno if err is not None else None
    limit = _file_size_limit()
    if code == errno.EFBIG or (code is None and limit is not None and _near(path, limit)):
        shown = f": the file-size limit of this process is {limit:,} bytes (ulimit -f)"
        return "File too large" + (shown if limit is not None else "")
    try:
        device = os.statvfs(path.parent)
    except OSError:
        return err.strerror if err is not None else None
    if code == errno.EROFS or device.f_flag & os.ST_RDONLY:
        return "Read-only file system"
    free = device.f_bavail * device.f_frsize
    if code in (errno.ENOSPC, errno.EDQUOT) or (code is None and free < _NEARLY_FULL):
        return f"No space left on device ({free:,} bytes free)"
    return err.strerror if err is not None else None


def _file_size_limit() -> int | None:
    try:
        import resource
    except ImportError:  # not on every platform
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _near(path: Path, limit: int) -> bool:
    """Whether the file ``path`` or one of SQLite's journals beside it has reached
    ``limit`` bytes, within a page or so (a write stops at the limit)."""
    for suffix in ("", "-wal", "-journal"):
        try:
            if os.stat(path.with_name(path.name + suffix)).st_size >= limit - (64 << 10):
                return True
        except OSError:
            continue
    return False


def _not_written(path: Path, err: OSError) -> FileRefused:
    return FileRefused(f"{path}: cannot write ({why_not_written(path, err) or err})")


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def env_path(name: str, kind: str) -> Path | None:
    """The path the environment variable ``name`` gives (None when unset or empty), once
    it can be one: for ``kind`` ``"folder"``, a folder or a path where one can be made;
    for ``"file"``, a regular file. Otherwise a :class:`~tpdisc.errors.ConfigError` of one
    line naming the variable."""
    value = os.environ.get(name)
    if not value:
        return None
    path = Path(value)
    if kind == "folder":
        folder_usable(path, f"${name}")
    else:
        try:
            mode = os.stat(path).st_mode
        except OSError as err:
            raise ConfigError(f"${name}: {path}: cannot read ({err.strerror})") from None
        if not stat.S_ISREG(mode):
            raise ConfigError(f"${name}: {path}: not a regular file ({_kind(mode)})")
    return path


def folder_usable(path: Path, what: str) -> Path:
    """``path``, once it is a folder or a folder can be made there (no part of it is a
    file); ``what`` names where it came from in the one-line ConfigError otherwise."""
    for part in (path, *path.parents):
        try:
            mode = os.stat(part).st_mode
        except (FileNotFoundError, NotADirectoryError):  # made later, or a file on the way
            continue
        except OSError as err:
            raise ConfigError(
                f"{what}: {path}: cannot use it as a folder ({err.strerror})"
            ) from None
        if not stat.S_ISDIR(mode):
            kind = _kind(mode) if part == path else f"{part} is {_kind(mode)}"
            raise ConfigError(f"{what}: {path}: not a folder ({kind})")
        break
    return path


def safe_name(text: str, limit: int = 80) -> str:
    """``text`` made a plain file name (letters, digits, ``._-``; no leading dot): names
    stored in a run folder become file names, and must not climb out of their folder."""
    name = _UNSAFE.sub("-", text).lstrip(".")[:limit]
    return name or "unnamed"


def inside(root: str | Path, relative: str | Path, what: str = "path") -> Path:
    """``root / relative``, refused unless it stays inside ``root`` without following a
    link (a stored path may be absolute, climb with ``..`` or lead through a link)."""
    relative = Path(relative)
    if relative.is_absolute() or ".." in relative.parts:
        raise FileRefused(f"{root}: the {what} {str(relative)!r} leads out of this folder")
    return checked(Path(root) / relative, root)


# --- inside a folder: no link followed -------------------------------------------------


def _below(path: Path, root: str | Path) -> tuple[Path, tuple[str, ...]]:
    """``root`` and the components of ``path`` below it; refused when ``path`` is not
    below ``root`` (compared as written: ``..`` cannot climb out)."""
    top = Path(os.path.abspath(root))
    try:
        parts = Path(os.path.abspath(path)).relative_to(top).parts
    except ValueError:
        raise FileRefused(f"{path}: not inside {root}") from None
    return top, parts


def _refusal(where: Path, dir_fd: int, name: str, err: OSError, doing: str) -> FileRefused:
    """What an ``os.open`` of ``name`` (in ``dir_fd``) that failed with ``err`` means."""
    try:
        link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        link = False
    if link:
        return LinkRefused(
            f"{where}: a symbolic link; tpdisc does not follow links inside a run, study "
            "or output folder (replace it with the file or folder itself)"
        )
    if err.errno == errno.ENOTDIR:
        return FileRefused(f"{where}: not a folder")
    return FileRefused(f"{where}: cannot {doing} ({err.strerror})")


def _open_dir(top: Path, parts: tuple[str, ...], create: bool) -> int:
    """A descriptor of the folder ``top/parts...``, reached without following a link below
    ``top``; the missing folders made when ``create``."""
    if create:
        try:
            top.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise FileRefused(f"{top}: cannot make the folder ({err.strerror})") from None
    try:
        fd = os.open(top, _DIRECTORY)
    except OSError as err:
        raise FileRefused(f"{top}: cannot open the folder ({err.strerror})") from None
    where = top
    try:
        for part in parts:
            where = where / part
            try:
                inner = os.open(part, _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError as err:
                if not create:
                    raise FileRefused(f"{where}: cannot open ({err.strerror})") from None
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as made:
                    raise FileRefused(
                        f"{where}: cannot make the folder ({made.strerror})"
                    ) from None
                try:
                    inner = os.open(part, _DIRECTORY | _NOFOLLOW, dir_fd=fd)
                except OSError as again:
                    raise _refusal(where, fd, part, again, "open") from None
            except OSError as err:
                raise _refusal(where, fd, part, err, "open") from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_below(path: Path, root: str | Path, flags: int, doing: str) -> int:
    top, parts = _below(path, root)
    if not parts:
        raise FileRefused(f"{path}: a folder, not a file")
    dir_fd = _open_dir(top, parts[:-1], create=False)
    try:
        return os.open(parts[-1], flags, dir_fd=dir_fd)
    except OSError as err:
        raise _refusal(path, dir_fd, parts[-1], err, doing) from None
    finally:
        os.close(dir_fd)


def checked(path: str | Path, root: str | Path) -> Path:
    """``path``, once no part of it below ``root`` is a link: for libraries that open
    files by name (SQLite, pyarrow, the protocol loader). Parts that do not exist yet are
    not links."""
    path = Path(path)
    top, parts = _below(path, root)
    where = top
    for part in parts:
        where = where / part
        try:
            mode = os.lstat(where).st_mode
        except FileNotFoundError:
            break
        except OSError as err:
            raise FileRefused(f"{where}: cannot read ({err.strerror})") from None
        if stat.S_ISLNK(mode):
            raise LinkRefused(
                f"{where}: a symbolic link; tpdisc does not follow links inside a run, "
                "study or output folder (replace it with the file or folder itself)"
            )
    return path


def make_dirs(path: str | Path, root: str | Path | None = None) -> Path:
    """The folder ``path`` (made if missing, with its parents), reached from ``root``
    without following a link; without ``root``, the user's own path, links and all."""
    path = Path(path)
    if root is None:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise FileRefused(f"{path}: cannot make the folder ({err.strerror})") from None
        return path
    top, parts = _below(path, root)
    os.close(_open_dir(top, parts, create=True))
    return path


class NewFile:
    """The file ``path`` being written: :attr:`stream` writes to a fresh temporary name
    beside it, :meth:`commit` renames it into place (whatever was there, a link included,
    is replaced, never written through), :meth:`discard` leaves no trace. The folders from
    ``root`` (default: the file's own folder) down are reached without following a link
    and made if missing."""

    def __init__(self, path: str | Path, root: str | Path | None = None) -> None:
        self.path = Path(path)
        top, parts = _below(self.path, root if root is not None else self.path.parent)
        if not parts:
            raise FileRefused(f"{self.path}: a folder, not a file")
        self._dir = _open_dir(top, parts[:-1], create=True)
        self._name = parts[-1]
        # os.urandom as secrets.token_hex reads it, without importing secrets (and hmac)
        # into every process that may write a file.
        self._temporary = f"{self._name}.{os.urandom(4).hex()}.part"
        try:
            fd = os.open(
                self._temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
                0o666,
                dir_fd=self._dir,
            )
        except OSError as err:
            os.close(self._dir)
            raise _not_written(self.path, err) from None
        self.stream: BinaryIO = os.fdopen(fd, "wb")

    def commit(self) -> Path:
        try:
            self.stream.close()
            os.replace(self._temporary, self._name, src_dir_fd=self._dir, dst_dir_fd=self._dir)
        except OSError as err:
            self.discard()
            raise _not_written(self.path, err) from None
        os.close(self._dir)
        return self.path

    def failed(self, err: OSError) -> FileRefused:
        """The one-line refusal of a write to :attr:`stream` that failed with ``err`` (a
        full disk, the file-size limit), once the temporary file is gone."""
        self.discard()
        return _not_written(self.path, err)

    def discard(self) -> None:
        with suppress(OSError):
            self.stream.close()
        with suppress(OSError):
            os.unlink(self._temporary, dir_fd=self._dir)
        os.close(self._dir)


@contextmanager
def writing(path: str | Path, root: str | Path | None = None) -> Iterator[BinaryIO]:
    """A binary stream whose bytes become the file ``path`` when the block ends without
    an error (nothing changes otherwise): a :class:`NewFile`."""
    new = NewFile(path, root)
    try:
        yield new.stream
    except OSError as err:
        if err.errno not in _WRITE_ERRORS:
            new.discard()
            raise
        raise new.failed(err) from None
    except BaseException:
        new.discard()
        raise
    new.commit()


def write_file(path: str | Path, data: bytes | str, root: str | Path | None = None) -> Path:
    """``data`` (text as UTF-8) as the file ``path``, as :func:`writing` does. Text may hold
    what no UTF-8 can: a path whose name is not UTF-8 (Python keeps its bytes as lone
    surrogates) shown in a page; those are written as their escapes (``\\udcff``), as the
    terminal shows them."""
    with writing(path, root) as stream:
        text = data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data
        stream.write(text)
    return Path(path)


def copy_file(
    source: str | Path,
    target: str | Path,
    *,
    source_root: str | Path,
    target_root: str | Path | None = None,
) -> Path:
    """The regular file ``source`` (inside ``source_root``) copied to ``target``; no link
    followed on either side."""
    with open_regular(source, root=source_root) as stream, writing(target, target_root) as out:
        shutil.copyfileobj(stream, out)
    return Path(target)


def regular_files(folder: str | Path, root: str | Path, suffix: str = "") -> list[Path]:
    """The regular files of ``folder`` (inside ``root``) whose names end with ``suffix``,
    sorted, leaving out temporary ``.part`` files and hidden ones; a link there is refused,
    and a missing folder has none."""
    folder = Path(folder)
    top, parts = _below(folder, root)
    try:
        fd = _open_dir(top, parts, create=False)
    except LinkRefused:
        raise
    except FileRefused:
        if not os.path.lexists(folder):
            return []
        raise
    try:
        with os.scandir(fd) as entries:
            found = []
            for entry in entries:
                if entry.name.endswith(suffix) and entry.is_symlink():
                    checked(folder / entry.name, root)  # refuses it, naming it
                if entry.is_file(follow_symlinks=False) and entry.name.endswith(suffix):
                    found.append(entry.name)
    finally:
        os.close(fd)
    return [
        folder / name
        for name in sorted(found)
        if not name.endswith(".part") and not name.startswith(".")
    ]


class FolderBusy(ConfigError):
    """Another process holds the folder's lock (the folder given cannot be used now)."""


def hold_folder(folder: str | Path, busy: str, name: str = ".lock") -> IO[str]:
    """An exclusive lock on ``folder`` (its file ``name``) for as long as the returned file
    stays open; the system drops it when the process ends, however it ends. Held by
    another process: :class:`FolderBusy`, ``"FOLDER: " + busy`` with the holder's pid
    (``busy`` may say ``{holder}``)."""
    import fcntl  # not on every platform; tpdisc's locks are POSIX ones

    folder = Path(folder)
    for _ in range(3):
        handle = open_lock(folder / name)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = " ".join(handle.read(100).split()) or "another process"
            handle.close()
            raise FolderBusy(f"{folder}: " + busy.format(holder=holder)) from None
        if _still_there(handle, folder / name):
            break
        handle.close()  # its holder removed it as it let go: take the new one
    else:
        raise FolderBusy(f"{folder}: " + busy.format(holder="another process"))
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
    except OSError as err:  # a full disk
        handle.close()
        raise _not_written(folder / name, err) from None
    return handle


def _still_there(handle: IO[str], path: Path) -> bool:
    try:
        return os.fstat(handle.fileno()).st_ino == os.lstat(path).st_ino
    except OSError:
        return False


OUTPUT_BUSY = (
    "another tpdisc command is writing into this folder ({holder}); wait for it to end, or "
    "give another folder"
)


@contextmanager
def hold_outputs(*folders: str | Path | None, root: str | Path | None = None) -> Iterator[None]:
    """The output folders ``folders`` (None: not asked for), made if missing, to this
    process alone while the block runs: a second command writing into one of them is
    refused in one line naming it (two would overwrite each other's files, or move them
    away), as a second search or study is refused on its folder (:func:`hold_folder`, the
    same lock). A folder that cannot be made or written is refused before any work.
    ``root``: a folder above them, below which no link is followed."""
    held: list[tuple[Path, IO[str]]] = []
    try:
        for folder in dict.fromkeys(Path(os.path.abspath(f)) for f in folders if f is not None):
            make_dirs(folder, root)
            held.append((folder, hold_folder(folder, OUTPUT_BUSY)))
        yield
    finally:
        for folder, handle in held:
            # Removed while still held, so that no one takes the lock of a file gone:
            # the folder is left as the command's own files make it.
            with suppress(OSError):
                os.unlink(folder / ".lock")
            handle.close()


def open_lock(path: str | Path, root: str | Path | None = None) -> IO[str]:
    """The lock file ``path`` opened for reading and writing (made if missing), never
    through a link: a lock file is truncated and written to."""
    path = Path(path)
    top, parts = _below(path, root if root is not None else path.parent)
    if not parts:
        raise FileRefused(f"{path}: a folder, not a file")
    dir_fd = _open_dir(top, parts[:-1], create=True)
    try:
        fd = os.open(parts[-1], os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=dir_fd)
    except OSError as err:
        raise _refusal(path, dir_fd, parts[-1], err, "lock") from None
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileRefused(f"{path}: not a regular file")
    return os.fdopen(fd, "r+", encoding="utf-8")
