"""The installed script's entry point: the guesses that start the worker server early."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TOY
from tpdisc.cli import main, will_run_kernels, will_simulate_in_pool


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "paired"],
        ["compare", "a.py", "--sims", "5"],
        ["evolve", "--iterations", "3"],
        ["study", "--preset", "smoke"],
        ["analyze", "ablation", "run/"],
        ["evaluate", "--executor", "processes", "--workers", "2"],
        ["evaluate", "--executor=processes"],
    ],
)
def test_commands_that_simulate_in_a_pool_start_the_server(argv: list[str]) -> None:
    assert will_simulate_in_pool(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["variants"],
        ["report", "run/"],
        ["prior", "build"],
        ["analyze", "embeddings", "run/"],
        ["evaluate", "--help"],
        ["evaluate", "--print-config"],
        ["study", "--status", "dir/"],
        ["evaluate", "--executor", "serial"],
        ["evaluate", "--executor=ray"],
        ["evaluate", "--workers", "1"],
        ["evaluate", "--workers=1"],
    ],
)
def test_other_command_lines_do_not(argv: list[str]) -> None:
    assert not will_simulate_in_pool(argv)


def test_kernels_are_guessed_from_the_agent_types_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TPDISC_REFERENCE", raising=False)
    assert will_run_kernels(["evaluate", "paired"])  # empowerment, the default
    assert not will_run_kernels(["evaluate", "--agent-type", "stochastic"])
    assert not will_run_kernels(["evaluate", "--agent-type=llm"])
    assert will_run_kernels(["evaluate", "--population", "stochastic:5,empowerment:5"])
    assert not will_run_kernels(["evaluate", "--population=stochastic:10"])
    assert will_run_kernels(["evolve", "--llm-model", "m", "--llm-base-url", "http://x"])
    monkeypatch.setenv("TPDISC_REFERENCE", "1")
    assert not will_run_kernels(["evaluate", "paired"])


def test_main_runs_the_app(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--help"])
    assert ended.value.code == 0
    assert "Discover transmission protocols" in capsys.readouterr().out


def test_python_m_tpdisc_cli_runs_the_same_app() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tpdisc.cli", "variants", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Reachable-element count" in done.stdout


def test_python_m_tpdisc_cli_simulates_on_the_pool(tmp_path: Path) -> None:
    # Its __main__ is guarded, so the pool's workers may import it (unguarded, every
    # command run this way said so and simulated in one process).
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    done = subprocess.run(
        [sys.executable, "-m", "tpdisc.cli", "evaluate", "paired", "--agent-type",
         "stochastic", "--sims", "2", "--steps", "3", "--workers", "2",
         "--recipes", str(recipes)],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "guard" not in done.stderr


def test_app_is_importable_from_the_package() -> None:
    from tpdisc.cli import app
    from tpdisc.cli.root import app as root_app

    assert app is root_app
    with pytest.raises(ImportError):
        from tpdisc.cli import no_such_thing  # noqa: F401


def test_the_command_lines_declarations_leave_out_what_few_commands_need() -> None:
    """Every command imports the whole CLI: PyYAML (a config file's reader), the email
    package (an LLM server's Retry-After date) and platformdirs (the user cache's place)
    load where they are used (issue 48, item 5: 0.13 G instructions of every start)."""
    code = (
        "import sys\n"
        "import tpdisc.cli.root\n"
        "loaded = {'yaml', 'email.utils', 'platformdirs'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
