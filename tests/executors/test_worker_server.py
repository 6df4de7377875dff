"""The worker server a command starts early: its workers start with what it preloaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tpdisc.executors.worker_server import default_start_method

ROOT = Path(__file__).resolve().parent.parent.parent

# A fresh process, since a process has a single forkserver whose preload is fixed once it
# runs. The answer of each worker's first task, then of a worker without the early start.
PROBE = """
import sys
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.worker_server import start_worker_server
from tests.worker_probe import KernelsReady

if __name__ == "__main__":
    if sys.argv[1] != "none":
        start_worker_server(kernels=sys.argv[1] == "kernels")
    with ProcessExecutor(2) as pool:
        print(pool.run([KernelsReady(), KernelsReady()]))
"""

needs_forkserver = pytest.mark.skipif(
    default_start_method() != "forkserver", reason="no forkserver start method here"
)


def probe(mode: str, tmp_path: Path) -> str:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    done = subprocess.run(
        [sys.executable, str(script), mode],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TPDISC_REFERENCE": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@needs_forkserver
def test_workers_of_a_server_started_with_kernels_start_with_numba_ready(tmp_path: Path) -> None:
    assert probe("kernels", tmp_path) == "[True, True]"


@needs_forkserver
def test_workers_start_without_numba_otherwise(tmp_path: Path) -> None:
    assert probe("plain", tmp_path) == "[False, False]"
    assert probe("none", tmp_path) == "[False, False]"


def test_the_simulators_preload_leaves_out_what_only_some_commands_need() -> None:
    """Every process that simulates imports the preload: modules for error messages, file
    names and the behavioural features' tallies load where they are used (issue 48, item 5)."""
    code = (
        "import sys\n"
        "from tpdisc.executors.worker_server import WORKER_PRELOAD\n"
        "__import__(WORKER_PRELOAD)\n"
        "late = {'difflib', 'secrets', 'sqlite3', 'tpdisc.sim.transmissions', 'yaml',"
        " 'platformdirs', 'email.utils'}\n"
        "loaded = late & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
