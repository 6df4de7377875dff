"""tpdisc.cli.output: how a command's errors and interruptions reach the user, and the one
rule of every --json option, held for each command that has one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from tests.conftest import TOY
from tpdisc.cli import app, output
from tpdisc.cli.output import (
    JSON_RULE,
    JsonTarget,
    bare_json_to_stdout,
    console,
    err_console,
    progress_bar,
    user_errors,
)
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


# --- --json: one rule for every command -------------------------------------------------------


def test_a_bare_json_option_means_stdout() -> None:
    assert bare_json_to_stdout(["a", "--json"]) == ["a", "--json=-"]
    assert bare_json_to_stdout(["--json", "--sims", "2"]) == ["--json=-", "--sims", "2"]
    assert bare_json_to_stdout(["--json", "out.json", "a"]) == ["--json", "out.json", "a"]
    assert bare_json_to_stdout(["--json", "-"]) == ["--json", "-"]
    assert bare_json_to_stdout(["a", "--", "--json"]) == ["a", "--", "--json"]


def test_a_json_file_must_say_it_is_one() -> None:
    assert JsonTarget.parse(None) is None
    assert JsonTarget.parse("-") == JsonTarget(None)
    assert JsonTarget.parse("out/r.JSON") == JsonTarget(Path("out/r.JSON"))
    # a protocol right after --json would be taken for its FILE
    with pytest.raises(ConfigError, match=r"--json asocial: FILE must end in \.json"):
        JsonTarget.parse("asocial")


def json_commands() -> dict[str, str]:
    """Every command with a --json option (its words, joined) and that option's help."""
    found = {}

    def visit(command: Any, words: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            visit(sub, (*words, name))
        for param in command.params:
            if "--json" in getattr(param, "opts", ()):
                found[" ".join(words)] = param.help or ""

    visit(typer.main.get_command(app), ())
    return found


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(recipes, run_dir)``: the toy game and a two-iteration search of it."""
    folder = tmp_path_factory.mktemp("json-rule")
    recipes = folder / "toy.json"
    recipes.write_text(json.dumps(TOY))
    run_dir = folder / "run"
    args = ["evolve", "--run-dir", str(run_dir), "--iterations", "2", "--no-rescore"]
    result = runner.invoke(app, [*args, *tiny_simulation(recipes)])
    assert result.exit_code == 0, result.output
    return recipes, run_dir


def tiny_simulation(recipes: Path) -> list[str]:
    return [
        "--recipes", str(recipes), "--sims", "2", "--steps", "5", "--agents", "3",
        "--agent-type", "stochastic", "--executor", "serial",
    ]  # fmt: skip


def command_lines(recipes: Path, run_dir: Path, tmp: Path) -> dict[str, list[str]]:
    """A cheap command line of every command that has --json."""
    sim = tiny_simulation(recipes)
    run = str(run_dir)
    serial = ["--recipes", str(recipes), "--executor", "serial"]
    return {
        "evaluate": ["evaluate", "asocial", "paired", *sim],
        "compare": ["compare", "asocial", "paired", *sim, "--out", str(tmp / "compare")],
        "variants": ["variants", "--recipes", str(recipes)],
        "inspect": ["inspect", "paired", *sim, "--out", str(tmp / "inspect")],
        "archive": ["archive", run],
        "prior show": ["prior", "show"],
        "analyze ablation": [
            *("analyze", "ablation", run, "--top", "1", "--bottom", "1"),
            *("--sims", "1", "--steps", "4", *serial),
        ],
        "analyze volume": ["analyze", "volume", "paired", "asocial", *sim],
        "analyze features": ["analyze", "features", "paired", "asocial", *sim],
        "analyze generalize": [
            *("analyze", "generalize", run, "--settings", "6-agents"),
            *("--baselines", "asocial", *sim),
        ],
        "analyze embeddings": ["analyze", "embeddings", run],
    }


def test_every_json_option_states_the_one_rule(tmp_path: Path) -> None:
    options = json_commands()
    # A new command with --json joins the list below, and so the check of its behaviour.
    assert set(options) == set(command_lines(tmp_path, tmp_path, tmp_path))
    for words, help_text in options.items():
        assert JSON_RULE in help_text, words
        shown = runner.invoke(app, [*words.split(), "--help"], env={"COLUMNS": "400"})
        assert "--json" in shown.stdout and "[FILE]" in shown.stdout, words


@pytest.mark.parametrize("words", sorted(command_lines(Path(), Path(), Path())))
def test_every_json_option_follows_the_one_rule(
    words: str, tiny_run: tuple[Path, Path], tmp_path: Path
) -> None:
    args = command_lines(*tiny_run, tmp_path)[words]
    alone = runner.invoke(app, [*args, "--json"])
    assert alone.exit_code == 0, alone.output
    printed = json.loads(alone.stdout)  # stdout holds the JSON and nothing else
    file = tmp_path / "out" / "results.json"
    written = runner.invoke(app, [*args, "--json", str(file)])
    assert written.exit_code == 0, written.output
    assert f"results written to {file}" in written.stdout
    assert type(json.loads(file.read_text())) is type(printed)


# --- progress without a terminal ----------------------------------------------------------------


class Clock:
    """A perf_counter that moves ``step`` seconds per reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize(
    ("total", "seconds_per_item", "lines"),
    [
        (1000, 1.0, 10),  # a line per tenth
        (6, 10.0, 6),  # fewer items than tenths: each item is a new tenth
        (6, 0.1, 1),  # quick: the last line only, the others within a few seconds
        (1000, 0.001, 1),
    ],
)
def test_progress_in_a_log_is_a_line_per_tenth_and_per_few_seconds_at_most(
    monkeypatch: pytest.MonkeyPatch, total: int, seconds_per_item: float, lines: int
) -> None:
    printed: list[str] = []
    monkeypatch.setattr(output, "time", Clock(seconds_per_item))
    monkeypatch.setattr(output.err_console, "print", lambda text, **kw: printed.append(text))
    with output._progress_lines(total, "simulating") as advance:
        for _ in range(total):
            advance("paired")
    assert len(printed) == lines
    assert printed[-1].startswith(f"simulating: {total}/{total} (paired, ")


def test_a_command_without_a_terminal_prints_ten_progress_lines_however_many_simulations(
    tiny_run: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "LOG_GAP_SECONDS", 0.0)  # as if every simulation were slow
    args = ["evaluate", "asocial", "paired", *tiny_simulation(tiny_run[0]), "--sims", "150"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("simulating:")]
    assert len(lines) == 10 and lines[-1].startswith("simulating: 300/300")


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


def ranged_options() -> list[tuple[tuple[str, ...], str, str, str]]:
    """(command words, flag, a value outside the option's range, the range in words) of
    every option with a range, in every command."""
    found = []

    def visit(command: Any, words: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            visit(sub, (*words, name))
        for param in command.params:
            allowed = output.range_text(param.type)
            if allowed is None:
                continue
            kind = param.type
            outside = kind.min - 1 if kind.min is not None else kind.max + 1
            found.append((words, max(param.opts, key=len), f"{outside:g}", allowed))

    visit(typer.main.get_command(app), ())
    return found


RANGED = ranged_options()


def test_the_walk_finds_the_options_the_issue_named() -> None:
    flags = {(words, flag) for words, flag, _, _ in RANGED}
    assert {(("evaluate",), "--sims"), (("compare",), "--p-social")} <= flags
    assert (("evolve",), "--iterations") in flags
    assert len(RANGED) > 60  # every command's, not a sample


@pytest.mark.parametrize(
    ("words", "flag", "value", "allowed"),
    RANGED,
    ids=[f"{' '.join(words)} {flag}" for words, flag, _, _ in RANGED],
)
def test_every_option_out_of_its_range_is_one_line_naming_it_and_its_range(
    words: tuple[str, ...], flag: str, value: str, allowed: str
) -> None:
    result = runner.invoke(app, [*words, f"{flag}={value}"])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    # The value as the option read it (-1.0 for a float).
    line = rf"error: {flag} -?[\d.]+: out of range, must be {allowed}\n"
    assert re.fullmatch(line, result.stderr), result.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["evaluate", "--sims", "x"], "error: --sims x: not a whole number, must be at least 1"),
        (["evaluate", "--simz", "3"], "error: no such option --simz; did you mean --sims?"),
        (["inspect"], "error: missing argument PROTOCOLS (see 'tpdisc inspect --help')"),
        (["evaluat"], "error: No such command 'evaluat'"),
    ],
)
def test_a_command_line_that_does_not_parse_is_one_line_and_exit_1(
    args: list[str], line: str
) -> None:
    result = runner.invoke(app, args, prog_name="tpdisc")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(line) and result.stderr.count("\n") == 1, result.stderr
    assert "Usage:" not in result.output


def test_help_and_a_bare_group_still_print_help() -> None:
    assert runner.invoke(app, ["evaluate", "--help"]).exit_code == 0
    bare = runner.invoke(app, ["data"])
    assert "install" in bare.output and "error:" not in bare.output


def test_range_text_in_words() -> None:
    from typer._click import types

    assert output.range_text(types.IntRange(min=1)) == "at least 1"
    assert output.range_text(types.FloatRange(0.0, 1.0)) == "between 0 and 1"
    assert output.range_text(types.FloatRange(max=2.5)) == "at most 2.5"
    assert output.range_text(types.FloatRange(0.0, 1.0, min_open=True)) == "above 0 and at most 1"
    assert output.range_text(types.STRING) is None


# --- round 5: a stdout that cannot hold every character ----------------------------------

NOT_UTF8 = [
    pytest.param({"PYTHONIOENCODING": "ascii"}, id="ascii"),
    pytest.param({"PYTHONIOENCODING": "latin-1"}, id="latin-1"),
    pytest.param({"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}, id="C-locale"),
]


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder whose protocols have names and texts beyond latin-1."""
    from tests.search.test_archive import row
    from tpdisc.search.archive import Archive

    run = tmp_path_factory.mktemp("encodings") / "run"
    run.mkdir()
    with Archive(run / Archive.FILE_NAME) as archive:
        archive.add_seed(row("paired", 0, mode="seed", code="x = 1", fitness_mean=50.0))
        child = row("child", 1, code="# α → β\nx = 2", fitness_mean=55.0, fitness_sem=1.5,
                    description="shares “memories” — by ≥ 2 rules")  # fmt: skip
        archive.finish_iteration(1, "warm-up", [child])
        odd = row("ünï→x", 2, code="x = 3", fitness_mean=52.0, fitness_sem=0.5)
        archive.finish_iteration(2, "warm-up", [odd])
    (run.parent / "toy.json").write_text(json.dumps(TOY))
    return run


EVALUATE = ["--sims", "2", "--steps", "5", "--agents", "3", "--agent-type", "stochastic",
            "--executor", "serial", "--recipes", "TOY"]  # fmt: skip


@pytest.mark.parametrize("environment", NOT_UTF8)
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["archive", "RUN"], ["protocols by fitness", "55.00 ? 1.50", "?n?"]),
        (["archive", "RUN", "--show", "child"], ["child ? valid", "by ? 2 rules", "x = 2"]),
        (["evaluate", "paired", "asocial", *EVALUATE], ["asocial", "paired", " ? "]),
        (["variants", "--recipes", "TOY"], ["Domain variants", "reachable"]),
    ],
    ids=["archive", "show", "evaluate", "variants"],
)
def test_tables_print_with_replacement_characters_where_stdout_cannot_encode(
    odd_run: Path, environment: dict[str, str], command: list[str], expected: list[str]
) -> None:
    env = {**os.environ, **environment, "COLUMNS": "200"}
    env = {k: v for k, v in env.items() if v != ""}
    places = {"RUN": str(odd_run), "TOY": str(odd_run.parent / "toy.json")}
    done = subprocess.run(
        [sys.executable, "-m", "tpdisc.cli", *(places.get(a, a) for a in command)],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
    encoding = environment.get("PYTHONIOENCODING") or "ascii"
    shown = " ".join(done.stdout.decode(encoding).split())  # in the terminal's encoding
    for text in expected:
        if "?" in text and encoding == "latin-1":  # holds ± and ï, not ≥, → or —
            text = text.replace("55.00 ? 1.50", "55.00 ± 1.50").replace("?n?", "ün")
        assert text in shown, shown


def test_a_run_named_to_generalize_gives_its_best_code_whatever_the_locale(
    odd_run: Path,
) -> None:
    # `analyze generalize RUN` (and every command taking RUN_DIR) runs the run's pick from
    # the code its archive holds: a C locale (ASCII) must neither refuse its characters nor
    # change them on the way.
    script = (
        "import sys\n"
        "from tpdisc.search.pick import run_references\n"
        "(spec,) = run_references([sys.argv[1]]).values()\n"
        "sys.stdout.buffer.write(spec.source.encode('utf-8'))\n"
    )
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0"}
    env.pop("PYTHONIOENCODING", None)
    done = subprocess.run(
        [sys.executable, "-c", script, str(odd_run)], capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == "# α → β\nx = 2"
