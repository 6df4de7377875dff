"""The ``tpdisc`` command line. :func:`main` is the installed script; ``app`` (the typer
application of :mod:`tpdisc.cli.root`) is imported on first use."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

    app: typer.Typer

__all__ = ["app", "main"]

# Commands that simulate, by their words on the command line, and the options after which
# they do not (a help text, a printed config, a status report).
SIMULATING = {
    ("evaluate",),
    ("compare",),
    ("inspect",),
    ("evolve",),
    ("study",),
    ("analyze", "ablation"),
    ("analyze", "volume"),
    ("analyze", "features"),
    ("analyze", "generalize"),
}
NOT_SIMULATING = {"--help", "-h", "--print-config", "--status"}


def will_simulate_in_pool(argv: Sequence[str]) -> bool:
    """Whether this command line looks like one that runs simulations in a process pool: a
    guess made before the options are parsed, which only decides whether the pool's worker
    server starts early (results never depend on it; a wrong guess costs an idle process
    for as long as the command runs)."""
    words = tuple(a for a in argv[:2] if not a.startswith("-"))
    if words[:1] not in SIMULATING and words[:2] not in SIMULATING:
        return False
    for k, arg in enumerate(argv):
        if arg in NOT_SIMULATING:
            return False
        if arg.startswith("--executor") or arg.startswith("--workers"):
            name, _, value = arg.partition("=")
            if not value and k + 1 < len(argv):
                value = argv[k + 1]
            if (name, value) in (("--executor", "serial"), ("--executor", "ray")):
                return False
            if (name, value) == ("--workers", "1"):
                return False
    return True


def will_run_kernels(argv: Sequence[str]) -> bool:
    """A guess of whether the simulations will run compiled agents: empowerment agents (the
    default type) unless ``--agent-type`` or ``--population`` names only other types, or
    the reference path is asked for (see :mod:`tpdisc.agents.compiled`). Agent types set
    by a ``--config`` file are not read: a wrong guess costs the workers up to 0.3 s."""
    from tpdisc.agents.compiled import use_kernels

    named = []
    for k, arg in enumerate(argv):
        name, _, value = arg.partition("=")
        if name in ("--agent-type", "--population"):
            named.append(value if value else argv[k + 1] if k + 1 < len(argv) else "")
    if named and not any("empowerment" in value for value in named):
        return use_kernels(False)
    return use_kernels(True)


def replace_unencodable() -> None:
    """Let stdout show what its encoding cannot hold (ascii, latin-1, a C locale without
    UTF-8) as ``?``: a table of names and ``±`` must be printed, not end the command in a
    UnicodeEncodeError after its work is done. stderr already escapes such characters."""
    stream = sys.stdout
    # surrogateescape: Python's choice for a C locale, which fails on any non-ASCII text.
    if getattr(stream, "errors", None) in ("strict", "surrogateescape") and hasattr(
        stream, "reconfigure"
    ):
        stream.reconfigure(errors="replace")


def main(argv: Sequence[str] | None = None) -> Any:
    """Run the command line. A command that will simulate in a process pool first starts
    the pool's worker server, which boots (and loads numba, for compiled agents) while the
    commands load: about 0.2 s that no longer come before the first simulation."""
    args = list(sys.argv[1:] if argv is None else argv)
    replace_unencodable()
    if will_simulate_in_pool(args):
        from tpdisc.executors.worker_server import start_worker_server

        start_worker_server(will_run_kernels(args))
    from tpdisc.cli.root import app

    return app(args, prog_name="tpdisc")


def __getattr__(name: str) -> Any:
    if name == "app":
        from tpdisc.cli.root import app

        return app
    raise AttributeError(f"module 'tpdisc.cli' has no attribute {name!r}")
