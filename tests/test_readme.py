"""The README: its Python examples run as written (saved to a file and run with ``python``),
and its Development section matches the tree."""

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


API_EXAMPLE = "evaluate_config(config)"


def test_python_example_runs_as_a_script(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    code = python_block(API_EXAMPLE).replace("sims=10", "sims=2")  # the same, shorter
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,  # where the README says to run it: its paths are the repository's
        env={**os.environ, "TPDISC_RECIPES": str(recipes)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == [
        "asocial",
        "paired",
        "rarity_first",
    ]
    assert "guard" not in done.stderr  # it has one: the workers ran it


def test_a_script_without_the_guard_is_told_in_one_line_and_still_runs(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    code = (
        "from tpdisc import EvaluationConfig, SimConfig, evaluate_config\n"
        "config = EvaluationConfig(protocols=('asocial', 'paired'), sims=3,\n"
        "    sim=SimConfig(n_agents=3, n_steps=5, agent_type='stochastic'))\n"
        "for evaluation in evaluate_config(config):\n"
        "    print(evaluation.protocol, evaluation.final)\n"
    )
    done = run_script(code, tmp_path, TPDISC_RECIPES=str(recipes))
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "example.py has no 'if __name__" in lines[0], done.stderr


def test_the_development_section_names_every_room_and_only_what_exists() -> None:
    """Every path the Development section names exists, and it names every top-level
    subpackage and module of the package."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Development") :]
    package = ROOT / "tpdisc"
    named = set(re.findall(r"`(tpdisc/[\w/.]*)`", section))
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, f"the README names what is not there: {missing}"
    # Rooms: `tpdisc/NAME/` or `tpdisc/NAME.py`; foundations by their file names.
    rooms = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    unnamed = sorted(
        [r for r in rooms if f"`tpdisc/{r}/`" not in section]
        + [m for m in modules if f"`tpdisc/{m}`" not in section and f"`{m}`" not in section]
    )
    assert not unnamed, f"the README's Development section leaves out {unnamed}"
