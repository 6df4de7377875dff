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

import errno
import sys
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


def install(pid: int) -> None:
    """Load the filter into the calling process (whose pid is ``pid``); irreversible."""
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
    f.load()


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
