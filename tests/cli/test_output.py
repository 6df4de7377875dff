"""tpdisc.cli.output: how a command's errors and interruptions reach the user."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from tpdisc.cli.output import user_errors
from tpdisc.errors import ConfigError

runner = CliRunner()


def run(exc: BaseException | None):
    """Invoke a one-command app whose command raises ``exc`` (or prints 'done')."""
    app = typer.Typer()

    @app.command()
    @user_errors
    def cmd(name: str = "x") -> None:
        if exc is not None:
            raise exc
        print(f"done {name}")

    return runner.invoke(app, ["--name", "y"])


def test_arguments_and_options_pass_through() -> None:
    result = run(None)
    assert result.exit_code == 0 and result.stdout == "done y\n"


def test_tpdisc_error_is_one_line_with_brackets_kept() -> None:
    # Brackets as in "pip install 'tpdisc[ray]'" or "x[0]" are text, not rich markup.
    result = run(ConfigError("needs Ray: pip install 'tpdisc[ray]'; x[0] [bold]y[/bold]"))
    assert result.exit_code == 1
    assert result.stderr == "error: needs Ray: pip install 'tpdisc[ray]'; x[0] [bold]y[/bold]\n"
    assert result.stdout == ""


def test_interrupt_exits_130_without_traceback() -> None:
    result = run(KeyboardInterrupt())
    assert result.exit_code == 130
    assert result.stderr == "interrupted\n"


def test_other_exceptions_are_not_swallowed() -> None:
    result = run(RuntimeError("a bug"))
    assert isinstance(result.exception, RuntimeError) and str(result.exception) == "a bug"
    assert "error:" not in result.stderr
