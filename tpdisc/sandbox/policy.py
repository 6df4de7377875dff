"""The seccomp allow-list of a sandboxed worker, and whether this platform can enforce it.

Default action: fail with EPERM (the allow-list depends on glibc and kernel, so an
unexpected syscall must not kill a well-behaved worker). Allowed: reading and writing the
fds the worker already has, memory management, futexes, signals to itself, clocks, sleeping,
exit, and a few read-only queries. Syscalls that only an attack would use kill the
worker outright (SIGSYS). Everything else, notably open/openat, socket, connect, clone,
fork, execve, kill of other processes, fails with EPERM.

getrandom fails too: OS entropy would make the same seed give different simulations. The
worker needs none once started (hash randomisation is fixed by PYTHONHASHSEED=0, the
generators are seeded from the simulation's seed), and it serves Python-level entropy
reads from a seeded stream of its own (``worker.pin_entropy``); what bypasses that reaches
this filter and gets EPERM (/dev/urandom, the fallback, cannot be opened either).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from dataclasses import dataclass
from functools import lru_cache

ALLOW = (
    "read",
    "readv",
    "write",
    "writev",
    "close",
    "lseek",
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "futex",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "restart_syscall",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "nanosleep",
    "clock_nanosleep",
    "getpid",
    "getppid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getrusage",
    "times",
    "sched_yield",
    "sched_getaffinity",
    "uname",
    "sysinfo",
    "exit",
    "exit_group",
)

KILL = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "userfaultfd",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "add_key",
    "request_key",
    "keyctl",
    "mount",
    "umount2",
    "pivot_root",
    "setns",
    "unshare",
    "open_by_handle_at",
)

F_GETFD, F_SETFD, F_GETFL = 1, 2, 3
AT_EMPTY_PATH = 0x1000
_libc = ctypes.CDLL(None, use_errno=True)
# prctl(int option, unsigned long arg2, ...): declared, so that ctypes passes full words.
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_void_p,
    ctypes.c_ulong,
    ctypes.c_ulong,
]
_libc.prctl.restype = ctypes.c_int


# Stand-ins for the worker's pid while the filter is compiled once: above any pid Linux
# hands out (pid_max is at most 2^22), so no other constant of the program can equal them.
PID_STANDINS = (0x5EC0FFEE, 0x5EC0FFEF)
INSTRUCTION = struct.Struct("=HBBI")  # struct sock_filter (code, jt, jf, k), native order
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _build(pid: int) -> bytes:
    """The filter for a worker whose pid is ``pid``, compiled to BPF by libseccomp."""
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    for name in ALLOW:
        f.add_rule(sc.ALLOW, name)
    for name in KILL:
        f.add_rule(sc.KILL_PROCESS, name)
    # Signals only to itself: the same uid could otherwise signal the simulation.
    f.add_rule(sc.ALLOW, "kill", sc.Arg(0, sc.EQ, pid))
    f.add_rule(sc.ALLOW, "tgkill", sc.Arg(0, sc.EQ, pid))
    # Querying limits (numpy and glibc do), never setting them.
    f.add_rule(sc.ALLOW, "prlimit64", sc.Arg(0, sc.EQ, 0), sc.Arg(2, sc.EQ, 0))
    f.add_rule(sc.ALLOW, "getrlimit")
    # fstat of an open fd (glibc's fstat is newfstatat(fd, "", buf, AT_EMPTY_PATH)).
    f.add_rule(sc.ALLOW, "fstat")
    f.add_rule(sc.ALLOW, "newfstatat", sc.Arg(3, sc.MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH))
    for cmd in (F_GETFD, F_SETFD, F_GETFL):
        f.add_rule(sc.ALLOW, "fcntl", sc.Arg(1, sc.EQ, cmd))
    read_end, write_end = os.pipe()  # a few hundred instructions: well within a pipe's buffer
    try:
        with os.fdopen(write_end, "wb", closefd=True) as sink:
            f.export_bpf(sink)
        return _read_all(read_end)
    finally:
        os.close(read_end)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class CompiledFilter:
    """The filter as BPF, compiled once (by the zygote, before it forks any worker), and
    the instructions whose constant is the worker's pid."""

    program: bytes
    pid_slots: tuple[int, ...]

    def for_pid(self, pid: int) -> bytes:
        program = bytearray(self.program)
        for slot in self.pid_slots:
            code, jt, jf, _ = INSTRUCTION.unpack_from(program, slot * INSTRUCTION.size)
            INSTRUCTION.pack_into(program, slot * INSTRUCTION.size, code, jt, jf, pid)
        return bytes(program)


@lru_cache(maxsize=1)
def compiled() -> CompiledFilter:
    """Compile the filter for two stand-in pids and keep where they differ: the pid's slots.

    Anything but programs of the same length that differ exactly in those constants
    (libseccomp laid them out differently) raises, rather than patch a program it does not
    understand."""
    first, second = (_build(pid) for pid in PID_STANDINS)
    size = INSTRUCTION.size
    if len(first) != len(second) or len(first) % size:
        raise RuntimeError("the seccomp filter does not compile to one layout for every pid")
    slots = []
    for slot in range(len(first) // size):
        a = INSTRUCTION.unpack_from(first, slot * size)
        b = INSTRUCTION.unpack_from(second, slot * size)
        if a == b:
            continue
        if a[:3] != b[:3] or (a[3], b[3]) != PID_STANDINS:
            raise RuntimeError("the seccomp filter differs between pids beyond the pid")
        slots.append(slot)
    if not slots:
        raise RuntimeError("the seccomp filter holds no pid to patch")
    compiled = CompiledFilter(first, tuple(slots))
    pid = os.getpid()  # and once for a real pid, patched against compiled
    if compiled.for_pid(pid) != _build(pid):
        raise RuntimeError("the seccomp filter patched with a pid is not libseccomp's own")
    return compiled


def install(pid: int) -> None:
    """Load the filter into the calling process (whose pid is ``pid``); irreversible.

    As libseccomp's own load does (no-new-privileges first, then the filter), but from the
    program compiled once: a worker's start skips the compilation (about 1.5 ms)."""
    program = compiled().for_pid(pid)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // INSTRUCTION.size, ctypes.addressof(buffer))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        _raise_errno("prctl(PR_SET_NO_NEW_PRIVS)")
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        _raise_errno("prctl(PR_SET_SECCOMP)")


def _raise_errno(what: str) -> None:
    err = ctypes.get_errno()
    raise OSError(err, f"{what} failed: {os.strerror(err)}")


@lru_cache(maxsize=1)
def seccomp_support() -> tuple[bool, str]:
    """(True, "") if this platform can enforce the filter, else (False, why not).

    A cheap check from the parent; the zygote also proves it by loading the filter in a
    throwaway child before it accepts any work.
    """
    if not sys.platform.startswith("linux"):
        return False, f"seccomp needs Linux; this is {sys.platform}"
    try:
        with open("/proc/sys/kernel/seccomp/actions_avail", encoding="ascii") as fh:
            actions = set(fh.read().split())
    except OSError:
        return False, "the kernel has no seccomp filter support (no actions_avail)"
    missing = {"errno", "allow", "kill_process"} - actions
    if missing:
        return False, f"the kernel's seccomp lacks {', '.join(sorted(missing))}"
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, RuntimeError, OSError) as err:
        return False, f"libseccomp is unavailable ({err}); install the libseccomp2 package"
    return True, ""
