"""Trying a confinement step in a throwaway child, so the caller stays as it was."""

from __future__ import annotations

import os
from collections.abc import Callable


def in_child(attempt: Callable[[], str], what: str) -> tuple[bool, str]:
    """Run ``attempt`` in a forked child: it returns "" when the step worked, or why not.
    (True, "") or (False, the reason); a child that dies says so, naming ``what``."""
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:
        os.close(read_end)
        code = 1
        try:
            message = attempt()
            code = 0 if not message else 1
        except BaseException as err:
            message = f"{type(err).__name__}: {err}"
        os.write(write_end, message.encode()[:500])
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        message = fh.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    ok = os.waitstatus_to_exitcode(status) == 0
    return ok, "" if ok else (message or f"the {what} probe died")
