"""tpdisc.cli.output: how a command's errors and interruptions reach the user."""

from __future__ import annotations

import typer
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from tpdisc.cli.output import console, err_console, progress_bar, user_errors
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


HOSTILE = "[/]\x1b[2J\x1b]0;pwned\x07[link=https://evil.example]click[/link] :warning:\u202e"
SHOWN = "[/]\\x1b[2J\\x1b]0;pwned\\x07[link=https://evil.example]click[/link] :warning:\\u202e"


def test_an_error_quoting_outside_text_stays_one_plain_line() -> None:
    result = run(ConfigError(f"{HOSTILE}\nerror: all good"))
    assert result.exit_code == 1
    assert result.stderr == f"error: {SHOWN}\\x0aerror: all good\n"


def test_everything_the_consoles_print_shows_outside_text_as_it_is() -> None:
    table = Table("name")
    table.add_row(HOSTILE)
    code = Syntax(f"x = '{HOSTILE}'\n", "python")
    app = typer.Typer()

    @app.command()
    def show() -> None:
        console.print(HOSTILE)
        console.print(table)
        console.print(code)
        err_console.print(Text(HOSTILE, style="bold"))
        with progress_bar(1, HOSTILE) as advance:
            advance(HOSTILE)

    result = runner.invoke(app, [], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    for stream in (result.stdout, result.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    assert result.stdout.count(SHOWN) == 2  # the text and the table (code is highlighted)
    assert SHOWN in result.stderr and "evil.example" in result.stderr
