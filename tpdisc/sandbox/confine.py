"""Resource limits, a dropped uid, an empty root and process flags for a freshly forked
worker."""

from __future__ import annotations

import ctypes
import os
import resource
import signal

from tpdisc.sandbox import emptyroot

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
ADDR_NO_RANDOMIZE = 0x0040000
PERSONALITY_QUERY = 0xFFFFFFFF
MAX_FDS = 16

_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")


def address_randomisation_off() -> bool | None:
    """Turn address-space randomisation off for the programs this process executes next
    (it takes effect at ``execve``): True when it was on and now is off, False when it was
    off already, None when the kernel refused (then addresses vary from run to run)."""
    current = _libc.personality(PERSONALITY_QUERY)
    if current == -1:
        return None
    if current & ADDR_NO_RANDOMIZE:
        return False
    if _libc.personality(current | ADDR_NO_RANDOMIZE) == -1:
        return None
    return bool(_libc.personality(PERSONALITY_QUERY) & ADDR_NO_RANDOMIZE) or None


def mapped_bytes() -> int:
    """The address space this process maps now (what numpy and scikit-learn already take)."""
    # A raw read: in a freshly forked worker, open()'s text layer costs ~0.9 ms of
    # first-touch page copies, a sixth of the worker's whole start.
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 256).split()[0]) * resource.getpagesize()
    finally:
        os.close(fd)


def set_limits(cpu_seconds: int, extra_memory_bytes: int) -> None:
    """CPU budget (SIGXCPU, then SIGKILL a second later), address space, no files or
    processes, no core dumps, few fds."""
    cpu = max(1, cpu_seconds)
    limits = {
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_AS: (mapped_bytes() + extra_memory_bytes,) * 2,
        resource.RLIMIT_FSIZE: (0, 0),
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_NPROC: (0, 0),
        resource.RLIMIT_NOFILE: (MAX_FDS, MAX_FDS),
        resource.RLIMIT_MEMLOCK: (0, 0),
        resource.RLIMIT_MSGQUEUE: (0, 0),
    }
    for which, value in limits.items():
        resource.setrlimit(which, value)


def become(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` for good when running as root."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)


def drop_privileges(uid: int, gid: int, parent_pid: int) -> None:
    """Become ``uid``/``gid`` when running as root, move into the empty root where the
    zygote found it possible, then die with the parent and hide from ptrace and core dumps.

    The uid goes first: an unprivileged process may map only its own ids into the new user
    namespace, and the namespace must not be root's. PDEATHSIG is set after the uid and
    namespace changes, which clear it."""
    become(uid, gid)
    if emptyroot.ACTIVE:
        emptyroot.enter()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before PDEATHSIG was armed
        os._exit(1)
    prctl(PR_SET_DUMPABLE, 0)
