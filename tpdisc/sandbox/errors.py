"""The typed, one-line failures of sandboxed protocol code."""

from __future__ import annotations

import signal

from tpdisc.errors import ProtocolError

# Every reason a sandboxed protocol can fail, as stored by the search.
KINDS = frozenset(
    {
        "syntax",  # the source does not compile
        "precheck",  # the static pre-check refused the source before anything ran
        "import",  # an import outside the allow-list (or one that cannot resolve inside)
        "no-protocol",  # no class with share_memories, or several
        "crash",  # an exception raised by the protocol's own code
        "memory",  # MemoryError: the address-space limit was reached
        "timeout",  # CPU budget, wall-clock deadline or per-call limit exceeded
        "invalid-exchange",  # a reply that breaks the SPEC §3 contract
        "too-large",  # a reply (exchanges or logs) beyond the size caps
        "malformed-reply",  # bytes from the worker that do not decode: the runtime was tampered
        "worker-died",  # the worker ended without replying (signal or exit)
        "unsupported",  # seccomp is unavailable and the unsafe mode was not requested
        "sandbox",  # the sandbox itself could not start (zygote failure)
    }
)

MAX_REASON = 300


def one_line(text: str, limit: int = MAX_REASON) -> str:
    """``text`` on one line, printable, at most ``limit`` characters."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class SandboxError(ProtocolError):
    """A sandboxed protocol failed; ``kind`` names why, ``reason`` says it in one line.

    ``str(err)`` is ``"<origin>: <reason>"``, e.g.
    ``"cand.py: timeout after 20 s in share_memories at step 37"``.
    """

    def __init__(self, kind: str, reason: str, origin: str = "<source>") -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown sandbox failure kind {kind!r}")
        self.kind = kind
        self.reason = one_line(reason)
        self.origin = origin
        super().__init__(f"{origin}: {self.reason}")

    def __reduce__(self) -> tuple[type[SandboxError], tuple[str, str, str]]:
        # Executors pickle failures back from pool workers; keep the fields.
        return (type(self), (self.kind, self.reason, self.origin))


# RLIMIT_CPU's signals: SIGXCPU at the soft limit, SIGKILL at the hard one a second later.
LIMIT_SIGNALS = frozenset({signal.SIGXCPU, signal.SIGKILL})
# A protocol can send itself either signal at any moment, so the signal alone never proves
# a timeout: the CPU time used must match. The kernel enforces the limit on tick-sampled
# CPU time, while wait4 reports the precise one, which on a loaded machine can lag by
# several percent (0.92 s seen at a 1 s limit); a quarter of the budget absorbs that.
BUDGET_SHARE = 0.75


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def worker_death(
    status: tuple[str, int, float] | None,
    cpu_seconds: int,
    time_limit: float,
    context: str,
    origin: str,
) -> SandboxError:
    """The failure of a worker that ended without replying, from its exit ``status``
    (``("signal"|"exit", number, CPU seconds)`` from the zygote's ``wait4``; None if
    unknown). A timeout only when a limit signal ended it *and* its CPU budget was used."""
    if status is None:
        return SandboxError("worker-died", f"worker died {context}", origin)
    how, number, cpu = status
    if how != "signal":
        return SandboxError("worker-died", f"worker died: exit code {number} {context}", origin)
    if number in LIMIT_SIGNALS and cpu >= cpu_seconds * BUDGET_SHARE:
        return SandboxError("timeout", f"timeout after {time_limit:g} s {context}", origin)
    reason = f"worker died: signal {number} ({signal_name(number)})"
    if number in LIMIT_SIGNALS:  # sent by the protocol to itself (or by the parent)
        reason += f" after {cpu:.2f} s of CPU, not a timeout (budget {time_limit:g} s)"
    return SandboxError("worker-died", f"{reason} {context}", origin)
