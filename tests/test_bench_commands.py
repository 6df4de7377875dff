"""benchmarks/bench_commands.py times commands as an installed package runs them: with
bytecode written and read, whatever PYTHONDONTWRITEBYTECODE says where it runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # its own `from benchlib import ...`
    spec = importlib.util.spec_from_file_location(
        "bench_commands", BENCHMARKS / "bench_commands.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_timed_command_writes_bytecode_even_where_the_shell_forbids_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script(monkeypatch)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    (tmp_path / "some_module.py").write_text("VALUE = 1\n")
    seconds = script.run([sys.executable, "-c", "import some_module"], cwd=tmp_path)
    assert seconds > 0
    assert list((tmp_path / "__pycache__").glob("some_module.*.pyc"))


def test_the_environment_keeps_everything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    script = load_script(monkeypatch)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("TPDISC_RECIPES", "/some/recipes.json")
    env = script.installed_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["TPDISC_RECIPES"] == "/some/recipes.json"
