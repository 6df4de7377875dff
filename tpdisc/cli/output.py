"""Where the command line writes: stdout and stderr consoles, one-line errors, progress bars,
and the one rule of every ``--json`` option."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.segment import Segment
from rich.text import Text
from typer._click import exceptions as click_errors
from typer._click import types as click_types
from typer.core import TyperGroup

from tpdisc.errors import ConfigError, TpdiscError, visible
from tpdisc.safefiles import hold_outputs, write_file


class PlainConsole(Console):
    """A console that prints every text as it is: no markup or emoji codes are read in
    it, and its control characters are shown as escapes (:func:`tpdisc.errors.visible`),
    whatever renders it (tables, code, progress bars). Most of what tpdisc prints comes from
    outside (names, descriptions, file names, a model's replies); styles are given as
    styles, never as markup."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # Before rich drops the controls it knows (a bell, a carriage return): shown instead.
        return super().render_str(visible(text), **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable() or segment.text == "\n":
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)


# Without a terminal (a log file, CI) rich assumes 80 columns and cuts the analysis tables'
# columns to "…"; logs are read in editors, so give them room (COLUMNS still wins).
LOG_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
console = PlainConsole(width=LOG_WIDTH)
err_console = PlainConsole(stderr=True, width=LOG_WIDTH)

F = TypeVar("F", bound=Callable[..., Any])


def print_error(message: str) -> None:
    """The one form of every error: ``error: MESSAGE``, one line on stderr."""
    # One line, whatever the message quotes (a newline would forge a line of its own).
    line = Text.assemble(("error:", "bold red"), " ", visible(message, lines=False))
    err_console.print(line, highlight=False, soft_wrap=True)


def user_errors(func: F) -> F:
    """Report :class:`TpdiscError` as one line on stderr and exit 1, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TpdiscError as err:
            print_error(str(err))
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def progress_bar(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """A rich progress bar; yields ``advance(label)``. Without a terminal (a log file, CI),
    a plain line at each tenth, at most one every few seconds (see :func:`_progress_lines`)."""
    description = visible(description, lines=False)
    if not err_console.is_terminal:
        with _progress_lines(total, description) as lines:
            yield lambda label: lines(visible(label, lines=False))
        return
    columns = (
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(description, total=total)

        def advance(label: str) -> None:
            progress.update(task, advance=1, description=visible(label, lines=False))

        yield advance


# Without a terminal, at most a line per tenth of the work and per this many seconds: a
# log shows that a long run moves, in ten lines at most however many simulations it runs.
LOG_GAP_SECONDS = 5.0


@contextmanager
def _progress_lines(total: int, description: str) -> Iterator[Callable[[str], None]]:
    started = last_line = time.perf_counter()
    done = printed_tenth = 0

    def advance(label: str) -> None:
        nonlocal done, printed_tenth, last_line
        done += 1
        tenth = done * 10 // max(total, 1)
        now = time.perf_counter()
        if done == total or (tenth > printed_tenth and now - last_line >= LOG_GAP_SECONDS):
            printed_tenth, last_line = tenth, now
            err_console.print(
                f"{description}: {done}/{total} ({label}, {now - started:.0f} s)", highlight=False
            )

    yield advance


# --- --json: one rule for every command -------------------------------------------------------

JSON_RULE = (
    "--json alone prints them on stdout instead of the tables, and nothing else there "
    "(messages go to stderr); --json FILE writes them to FILE, a name ending in .json."
)
JSON_STDOUT = "-"


def json_option(what: str) -> Any:
    """The ``--json`` option of a command: ``what`` its JSON holds, then the rule."""
    return typer.Option(
        "--json", metavar="[FILE]", help=f"JSON of {what}. {JSON_RULE}", show_default=False
    )


def bare_json_to_stdout(args: list[str]) -> list[str]:
    """``args`` with a bare ``--json`` (last, or before another option) spelled
    ``--json=-``: typer options take a value or none, never an optional one."""
    out: list[str] = []
    for k, arg in enumerate(args):
        if arg == "--":  # what follows is arguments, whatever it looks like
            return out + args[k:]
        following = args[k + 1] if k + 1 < len(args) else None
        bare = following is None or (following.startswith("-") and following != JSON_STDOUT)
        out.append(f"--json={JSON_STDOUT}" if arg == "--json" and bare else arg)
    return out


class JsonRuleGroup(TyperGroup):
    """The ``tpdisc`` group: its commands' ``--json`` may come without a FILE, and a
    command line it cannot parse is one error line and exit 1, as every other error."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        return name, command, bare_json_to_stdout(rest)

    def main(  # type: ignore[override]
        self, args: Any = None, prog_name: str | None = None, standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:  # fmt: skip
        if not standalone_mode:
            return super().main(args, prog_name, standalone_mode=False, **extra)
        try:
            # Not standalone: a usage error comes here instead of click's three lines.
            code = super().main(args, prog_name, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as err:
            err.show()  # the help a command shows when given nothing: not an error
            sys.exit(err.exit_code)
        except click_errors.ClickException as err:
            print_error(usage_error_line(err))
            sys.exit(1)
        except typer.Abort:  # end of input at a prompt
            err_console.print("interrupted")
            sys.exit(130)
        # A command that ran returns None; typer.Exit(code) comes back as its code.
        sys.exit(code if isinstance(code, int) else 0)


def range_text(kind: click_types.ParamType) -> str | None:
    """The values a numeric option takes, in words ("at least 1", "between 0 and 1")."""
    if not isinstance(kind, click_types.IntRange | click_types.FloatRange):
        return None
    low, high = kind.min, kind.max
    above = f"{'above' if kind.min_open else 'at least'} {low:g}" if low is not None else None
    below = f"{'below' if kind.max_open else 'at most'} {high:g}" if high is not None else None
    if above and below and not (kind.min_open or kind.max_open):
        return f"between {low:g} and {high:g}"
    return " and ".join(text for text in (above, below) if text) or None


def parameter_name(param: Any) -> str:
    """An option by its longest flag (``--sims``), an argument by its name in capitals."""
    if param.param_type_name == "option" and param.opts:
        return str(max(param.opts, key=len))
    return str(param.name or "argument").upper()


def usage_error_line(err: click_errors.ClickException) -> str:
    """A command line's mistake in one line: an option's value with the option's range, an
    unknown option or a missing argument with where the command's options are listed."""
    message = err.format_message().strip().rstrip(".")
    context = getattr(err, "ctx", None)  # a usage error's: the command it is about
    command = context.command_path if context is not None else "tpdisc"
    if isinstance(err, click_errors.MissingParameter) and err.param is not None:
        kind = err.param.param_type_name
        return f"missing {kind} {parameter_name(err.param)} (see '{command} --help')"
    if isinstance(err, click_errors.NoSuchOption):
        close = err.possibilities or []
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return f"no such option {err.option_name}{hint} (see '{command} --help')"
    if isinstance(err, click_errors.BadParameter) and err.param is not None:
        name = parameter_name(err.param)
        param_type = err.param.type
        reason = err.message.strip().rstrip(".")
        allowed = range_text(param_type)
        outside = re.fullmatch(r"(.*) is not in the range .*", reason)
        if outside and allowed:
            return f"{name} {outside.group(1)}: out of range, must be {allowed}"
        unread = re.fullmatch(r"'?(.*?)'? is not a valid .*", reason)
        if unread and allowed:
            whole = isinstance(param_type, click_types.IntRange)
            number = "a whole number" if whole else "a number"
            return f"{name} {unread.group(1)}: not {number}, must be {allowed}"
        return f"{name}: {reason}"
    return f"{message} (see '{command} --help')"


@dataclass(frozen=True)
class JsonTarget:
    """Where a command's JSON goes: ``path``, or stdout when None."""

    path: Path | None

    @classmethod
    def parse(cls, value: str | None) -> JsonTarget | None:
        """The target of a ``--json`` value (None: the option was not given)."""
        if value is None:
            return None
        if value == JSON_STDOUT:
            return cls(None)
        if not value.lower().endswith(".json"):
            # Most often a protocol or folder that came right after --json and was read as
            # its FILE: say so rather than write a file of that name.
            raise ConfigError(
                f"--json {value}: FILE must end in .json; to print the JSON on stdout, put "
                "--json last or before another option"
            )
        return cls(Path(value))

    @property
    def on_stdout(self) -> bool:
        return self.path is None

    def write(self, data: Any, indent: int | None = 2, say: Console | None = None) -> None:
        """Write ``data``; a file is named on ``say`` (by default the stdout console)."""
        text = json.dumps(data, indent=indent) + "\n"
        if self.path is None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_file(self.path, text)  # a link in its place is replaced, never written through
        (say or console).print(f"results written to {self.path}", highlight=False, soft_wrap=True)


def json_on_stdout(*targets: JsonTarget | None) -> bool:
    """Whether stdout is the JSON's alone (then the tables, which it holds, are left out)."""
    return any(t is not None and t.on_stdout for t in targets)


def human_console(*targets: JsonTarget | None) -> Console:
    """Where a command's messages go: stderr when its JSON takes stdout."""
    return err_console if json_on_stdout(*targets) else console


# --- output folders: one command at a time -----------------------------------------------


def holding(*names: str) -> Callable[[F], F]:
    """Run the command with the output folders its options ``names`` give held for it
    alone (:func:`tpdisc.safefiles.hold_outputs`): a second command writing into one is
    refused in one line, before any work; a ``--print-config`` writes nothing."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            options = kwargs.get("options")
            if options is not None and options.values.get("print_config"):
                return func(*args, **kwargs)
            with hold_outputs(*(kwargs.get(name) for name in names)):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
