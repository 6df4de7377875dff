"""The limits a sandboxed protocol runs under."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tpdisc.errors import ConfigError

DEFAULT_TIME_LIMIT = 20.0  # seconds of CPU per simulation (SPEC §3 reference)


@dataclass(frozen=True)
class SandboxConfig:
    """Limits for one sandboxed simulation; the defaults follow SPEC §3.

    ``time_limit`` is a CPU budget for the worker's whole life (loading, ``__init__`` and
    every call), so results do not depend on machine load; a wall-clock deadline of
    ``time_limit * wall_factor`` catches code that sleeps or blocks instead of computing.
    ``call_time_limit`` optionally bounds each call's wall-clock time as well.
    ``memory_mb`` is the address space the protocol may add to what the worker already maps
    (the preloaded numpy and scikit-learn).

    ``allow_without_seccomp`` is the explicit unsafe mode: where the kernel or platform lacks
    seccomp, run untrusted code with the remaining layers only instead of refusing it.
    """

    time_limit: float = DEFAULT_TIME_LIMIT
    call_time_limit: float | None = None
    wall_factor: float = 3.0
    memory_mb: int = 1024
    max_exchanges: int = 1_000_000
    max_log_bytes: int = 1_000_000
    allow_without_seccomp: bool = False

    def __post_init__(self) -> None:
        if not self.time_limit > 0:
            raise ConfigError(f"sandbox time limit must be positive, got {self.time_limit}")
        if self.call_time_limit is not None and not self.call_time_limit > 0:
            raise ConfigError(
                f"sandbox per-call time limit must be positive, got {self.call_time_limit}"
            )
        if not self.wall_factor >= 1:
            raise ConfigError(f"sandbox wall factor must be at least 1, got {self.wall_factor}")
        if self.memory_mb < 64:
            raise ConfigError(f"sandbox memory must be at least 64 MB, got {self.memory_mb}")
        if self.max_exchanges < 1:
            raise ConfigError(f"sandbox max_exchanges must be positive, got {self.max_exchanges}")
        if self.max_log_bytes < 1024:
            raise ConfigError(
                f"sandbox max_log_bytes must be at least 1024, got {self.max_log_bytes}"
            )

    @property
    def cpu_seconds(self) -> int:
        """The CPU budget as RLIMIT_CPU enforces it: whole seconds, rounded up."""
        return max(1, math.ceil(self.time_limit))

    @property
    def wall_limit(self) -> float:
        """Wall-clock seconds the parent waits on the worker over a whole simulation."""
        return self.time_limit * self.wall_factor
