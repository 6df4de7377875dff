"""The README's Python examples run as written: saved to a file and run with ``python``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TOY

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def python_block(containing: str) -> str:
    """The README's fenced Python block that contains ``containing``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if containing in b]
    assert len(found) == 1, f"{len(found)} Python blocks of the README contain {containing!r}"
    return found[0]


def run_script(code: str, folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = folder / "example.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_long_tables_of_results_json(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from typer.testing import CliRunner

    from tpdisc.cli import app

    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    out = tmp_path / "results" / "compare"
    args = ["compare", "asocial", "paired", "--agents", "3", "--steps", "5", "--sims", "3"]
    args += ["--agent-type", "stochastic", "--executor", "serial", "--recipes", str(recipes)]
    assert CliRunner().invoke(app, [*args, "--out", str(out)]).exit_code == 0
    code = python_block("mechanism_per_simulation")
    code += "\nprint(len(curves), len(mechanism), sorted(mechanism.columns)[:3])\n"
    done = run_script(code, tmp_path)
    assert done.returncode == 0, done.stderr
    # 2 protocols × 3 seeds × 6 points; one agent type: 2 × 3 rows
    assert done.stdout.split()[:2] == ["36", "6"]
