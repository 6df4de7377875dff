"""An empty root for a worker: its own user and mount namespaces, holding one empty,
read-only tmpfs.

Why: the seccomp filter cannot read a path argument, and it must let ``newfstatat`` through
with ``AT_EMPTY_PATH`` (glibc's ``fstat``), a flag the kernel ignores for a non-empty path.
With the filter alone a protocol learns whether any path exists, its owner, mode and size,
and through ``/proc/<pid>/cwd`` and ``/fd`` the layout of other processes. In an empty root
there is no path left to ask about.

Entered by each forked worker (never by the zygote, which keeps the filesystem for the
next fork), after everything it needs is imported and the limits are read from
``/proc/self``, and before the filter and any untrusted code. The zygote probes once
whether the platform allows it (:func:`probe`) and every worker inherits the answer in
:data:`ACTIVE`. Linux only, through ctypes: ``os.unshare`` is Python 3.12+.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Callable

from tpdisc.sandbox.probe import in_child as probe_in_child

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
MNT_DETACH = 2
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
# glibc has no pivot_root wrapper; where the number is unknown, chroot does instead.
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
# Where to mount the new root: any existing directory will do, it is covered only inside
# the worker's own mount namespace. /proc always exists where this can work at all.
MOUNT_POINTS = ("/tmp", "/mnt", "/proc")
TMPFS_OPTIONS = b"size=4k,nr_inodes=2,mode=0555"

# Set once in the zygote from probe(); a worker forked from it inherits the value.
ACTIVE = False
REASON = "not probed"

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _map_ids(uid: int, gid: int) -> None:
    """Map the worker's own ids to themselves, the one mapping an unprivileged process may
    write. A uid change (root to nobody) left the process non-dumpable, which makes its
    /proc files root's: dumpable for the few writes only (confine turns it off for good)."""
    dumpable = _libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    finally:
        if dumpable == 0:
            _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _switch_root() -> None:
    """Make an empty read-only tmpfs the root and cwd, and drop the old tree entirely."""
    # Nothing done from here on may propagate back to the host's mounts.
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount(MS_PRIVATE)")
    point = next((p for p in MOUNT_POINTS if os.path.isdir(p)), None)
    if point is None:
        raise OSError(f"no directory to mount the empty root on ({', '.join(MOUNT_POINTS)})")
    flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    _check(_libc.mount(b"tmpfs", point.encode(), b"tmpfs", flags, TMPFS_OPTIONS), "mount")
    os.chdir(point)
    number = PIVOT_ROOT.get(platform.machine())
    if number is not None:
        # pivot_root(".", "."): the old root ends up stacked on the new one, and detaching
        # it leaves no path to any of the host's mounts in this namespace.
        _check(_libc.syscall(number, b".", b"."), "pivot_root")
        _check(_libc.umount2(b".", MNT_DETACH), "umount2(old root)")
    else:
        _check(_libc.chroot(b"."), "chroot")
    os.chdir("/")


def drop_capabilities() -> None:
    """Give up the full capability set a new user namespace grants its creator (over the
    namespace only, but nothing inside needs any)."""
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def capabilities() -> int:
    """The effective capability set, as a bit mask."""
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capget(ctypes.byref(header), data), "capget")
    return data[0].effective | (data[1].effective << 32)


def enter() -> None:
    """Move the calling (single-threaded, freshly forked) process into an empty root, with
    its current uid and gid and no capabilities. Raises OSError; irreversible."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
    _map_ids(uid, gid)
    _switch_root()
    drop_capabilities()


def check() -> str:
    """Why the calling process is not in an empty root, or "" if it is."""
    if os.listdir("/"):
        return "the root is not empty"
    if os.path.exists("/proc/self"):
        return "/proc is still visible"
    if capabilities():
        return "capabilities were kept"
    return ""


def probe(become: Callable[[], None]) -> tuple[bool, str]:
    """Enter the empty root in a throwaway child, after ``become`` (the workers' change of
    uid: ``confine.become``, passed in because confine imports this module), and check it;
    (True, "") or (False, why not)."""

    def attempt() -> str:
        become()
        enter()
        return check()

    return probe_in_child(attempt, "namespace")


def activate(become: Callable[[], None], wanted: bool = True) -> tuple[bool, str]:
    """Decide once, in the zygote, whether its workers get the empty root."""
    global ACTIVE, REASON
    if not wanted:
        ACTIVE, REASON = False, "namespaces turned off by the caller"
    elif platform.system() != "Linux":
        ACTIVE, REASON = False, f"namespaces need Linux; this is {platform.system()}"
    else:
        try:
            ACTIVE, REASON = probe(become)
        except OSError as err:  # no pipe or fork for the probe: workers go without
            ACTIVE, REASON = False, f"the namespace probe could not run: {err}"
    return ACTIVE, REASON
