"""Where a result comes from: tpdisc's version and commit, when, on what, by which command."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def version() -> str:
    """tpdisc's version, as installed (pyproject.toml is its one source)."""
    from importlib import metadata  # 10 ms to import: not in every command's start

    try:
        return metadata.version("tpdisc")
    except metadata.PackageNotFoundError:  # run from a source tree never installed
        return "unknown"


def provenance(started: datetime | None = None) -> dict[str, Any]:
    """What a result file records about the run that made it (plain JSON data)."""
    now = datetime.now(UTC)
    return {
        "tpdisc_version": version(),
        "commit": source_commit(),
        "started": (started or now).isoformat(timespec="seconds"),
        "finished": now.isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
    }


def source_commit() -> str | None:
    """The git commit of tpdisc's source, with ``+dirty`` if it has uncommitted changes;
    None for an installed copy outside a git checkout."""
    where = Path(__file__).resolve().parents[1]
    try:
        head = _git(where, "rev-parse", "HEAD")
        dirty = _git(where, "status", "--porcelain", "--untracked-files=no", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def _git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()
