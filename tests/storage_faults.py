"""Storage that fails for real, for the tests of failed writes and read-only folders: a
command run with a file-size limit (``RLIMIT_FSIZE``, as ``ulimit -f`` sets), on a small
tmpfs that fills up, or with a folder bind-mounted read-only. Mounts are made in a mount
namespace of the command's own (``unshare -m``), so nothing outside it sees them and
nothing is left mounted however the test ends.

Tests run as root, for whom permissions do not stop a write: only a read-only mount does.
Where mount namespaces are not available (not root, no ``unshare``, a container that
forbids them) the tests that need them are skipped, saying why.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

TPDISC = [sys.executable, "-m", "tpdisc.cli"]
UNSHARE = ["unshare", "-m", "--propagation", "private"]


@functools.cache
def mounts_unavailable() -> str | None:
    """Why this machine cannot make the mounts (None: it can)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    probe = subprocess.run(
        [*UNSHARE, "mount", "-t", "tmpfs", "none", "/mnt"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"no mount namespace here ({probe.stderr.strip() or probe.returncode})"
    return None


def need_mounts() -> None:
    reason = mounts_unavailable()
    if reason is not None:
        pytest.skip(f"needs a mount namespace to make a read-only or full folder: {reason}")


def _run(
    script: str,
    params: Sequence[str],
    argv: Sequence[str],
    env: dict[str, str] | None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    need_mounts()
    shell = f'set -e; {script}; shift {len(params)}; exec "$@"'
    return subprocess.run(
        [*UNSHARE, "sh", "-c", shell, "sh", *params, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def read_only(
    folder: Path, argv: Sequence[str], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``folder`` (and all below it) read-only, as on a read-only mount."""
    script = 'mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"'
    return _run(script, [str(folder)], argv, env, timeout)


def small_disk(
    folder: Path,
    size: str,
    argv: Sequence[str],
    keep: Path,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with an empty tmpfs of ``size`` (``400k``) mounted on ``folder``: a
    disk that fills up. What the command left there is then copied to ``keep``."""
    folder.mkdir(parents=True, exist_ok=True)
    keep.mkdir(parents=True, exist_ok=True)
    need_mounts()
    shell = (
        'mount -t tmpfs -o "size=$2" tmpfs "$1" || exit 99; folder="$1"; keep="$3"; shift 3; '
        '"$@"; code=$?; cp -a "$folder/." "$keep"; exit $code'
    )
    return subprocess.run(
        [*UNSHARE, "sh", "-c", shell, "sh", str(folder), size, str(keep), *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def size_limited(
    limit: int, argv: Sequence[str], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` unable to make any file larger than ``limit`` bytes (``ulimit -f``)."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=limited,
        timeout=timeout,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The command's one ``error:`` line, once it ended with exit 1 and no traceback."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert result.stderr.rstrip("\n").splitlines()[-1] == errors[0], result.stderr
    return errors[0]
