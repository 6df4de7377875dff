"""Tasks that report on the worker process that runs them (tests of the process pool)."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class KernelsReady:
    """Whether numba was loaded and ready in this worker before the task ran: whether the
    kernel that sets it up (``tpdisc.agents.compiled.ready``) had run."""

    def __call__(self) -> bool:
        compiled = sys.modules.get("tpdisc.agents.compiled")
        if compiled is None or "numba" not in sys.modules:
            return False
        return bool(getattr(compiled.ready, "signatures", None))
