"""Hostile case: the ``().__class__.__base__.__subclasses__()`` walk.

The walk itself succeeds (Python-level restrictions cannot stop it): it reaches the ``os``
module's globals through ``os._wrap_close``. What it then tries is stopped by seccomp.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.sandbox.helpers import fail_calls, protocol

WALK = """
os_globals = next(
    c.__init__.__globals__
    for c in ().__class__.__base__.__subclasses__()
    if c.__name__ == "_wrap_close"
)
"""


def test_the_walk_reaches_os_but_cannot_use_it(open_dir: Path) -> None:
    marker = open_dir / "walked"
    share = f"""
    status = os_globals["system"]("touch {marker}")
    fd = os_globals["open"]("{marker}", os_globals["O_CREAT"] | os_globals["O_WRONLY"])
    """
    err = fail_calls(protocol(share, prelude=WALK, reach_sys=False), "crash")
    assert err.reason.startswith(
        f"PermissionError: [Errno 1] Operation not permitted: {str(marker)!r} (line "
    )
    assert not marker.exists()


def test_the_walk_cannot_signal_the_simulation() -> None:
    share = f'os_globals["kill"]({os.getpid()}, 15)'
    err = fail_calls(protocol(share, prelude=WALK, reach_sys=False), "crash")
    assert err.reason.startswith("PermissionError: [Errno 1] Operation not permitted (line ")
    # Still here, so the signal never arrived; and the next simulation runs as usual.
    fail_calls(protocol("raise ValueError('next')"), "crash")
