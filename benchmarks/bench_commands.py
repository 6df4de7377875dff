"""Whole commands as a user runs them: wall time from process start to exit, side by side
with the straightforward single-process simulator of ``../shared/bench/`` (the yardstick,
not part of the project).

Every command runs once per round, rounds interleaved (so a disturbance of the machine hits
all of them alike); the table gives each command's best and median round. The empowerment
prior is built before the first round (a user's second command finds it cached).

Also what one more protocol file costs in a command, split into a fixed part and a part
per simulation: one and ten files of a protocol that shares nothing (so its own work is
nil), with 1 and 30 simulations each, sandboxed and trusted, on one core (serial).

    python benchmarks/bench_commands.py [--record] [--recipes PATH] [--rounds 5]

With ``--against COMMIT``, instead: the two commands of issue 48 (``evaluate paired
--agent-type stochastic --sims 30`` and ``evaluate paired --sims 30``, on the process pool)
run by this tree and by that commit (its files taken with ``git archive`` into a temporary
folder, run with the same Python and packages), in ``--rounds`` interleaved pairs each,
alternating which goes first; the table gives each version's median and best wall time
and the ratio of the medians (each round runs every pair, so the rows compare). Each
version runs each command once, untimed, first (its kernels compiled, its bytecode
written). Commands run with bytecode caching on, as an installed package has it, whatever
PYTHONDONTWRITEBYTECODE says here.

With ``--same-model`` as well, two more pairs run the same agents on both sides, as the
defaults no longer do since c90d606: its stochastic agents counted a received memory as
tried for good (this tree: ``--stochastic-received always``; the default since 045288b
counts it for one choice), and its default empowerment model was ``calibrated`` (given to
both; the default since 4c74702 is ``calibrated-text``).

    python benchmarks/bench_commands.py --against c90d606 [--same-model] [--rounds 5] [--record]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from benchlib import ROOT, load, parser, report

HERE = Path(__file__).resolve().parent
YARDSTICK = HERE.parent.parent / "shared" / "bench"
QUIET = '''
class Quiet{k}:
    """Shares nothing: what running a protocol file costs beyond its own work."""

    def __init__(self, n_agents, n_steps, seed=None):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        return {{}}
'''


def tpdisc(*args: str) -> list[str]:
    # As the installed script runs it (``python -m tpdisc.cli`` before issue 48 had no main
    # guard, so it simulated in one process: an older tree's must not be run that way).
    return [sys.executable, "-c", "from tpdisc.cli import main; main()", *args]


def commands(recipes: str, quiet: list[str]) -> dict[str, list[str]]:
    data = ["--recipes", recipes]
    found = {
        "straightforward simulator, paired, 30 sims": [
            sys.executable,
            str(YARDSTICK / "straightforward_sim.py"),
            recipes,
            str(YARDSTICK / "paired.py"),
            "--sims",
            "30",
        ],
        "evaluate paired --agent-type stochastic --sims 30": tpdisc(
            "evaluate", "paired", "--agent-type", "stochastic", "--sims", "30", *data
        ),
        "  stochastic, --executor serial": tpdisc(
            "evaluate",
            "paired",
            "--agent-type",
            "stochastic",
            "--sims",
            "30",
            "--executor",
            "serial",
            *data,
        ),
        "evaluate paired --sims 30 (empowerment)": tpdisc(
            "evaluate", "paired", "--sims", "30", *data
        ),
        "  empowerment, --executor serial": tpdisc(
            "evaluate", "paired", "--sims", "30", "--executor", "serial", *data
        ),
    }
    for files in (1, 10):
        for sims in (1, 30):
            for trusted in (False, True):
                found[file_label(files, sims, trusted)] = tpdisc(
                    "evaluate", *quiet[:files], "--agent-type", "stochastic", "--sims",
                    str(sims), "--executor", "serial", *(["--trusted"] if trusted else []), *data,
                )  # fmt: skip
    if not (YARDSTICK / "straightforward_sim.py").is_file():
        del found["straightforward simulator, paired, 30 sims"]
    return found


def file_label(files: int, sims: int, trusted: bool) -> str:
    return (
        f"{files} protocol file{'s' if files > 1 else ''} (sharing nothing) × {sims} "
        f"sim{'s' if sims > 1 else ''}, serial{', --trusted' if trusted else ''}"
    )


def installed_env() -> dict[str, str]:
    """This environment with bytecode written and read, as an installed package has it:
    where PYTHONDONTWRITEBYTECODE is set, every process (each pool worker too) would compile
    every module it imports on every run, and the tree with more code would pay more."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(
    command: list[str], env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> float:
    start = time.perf_counter()
    subprocess.run(
        command,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=installed_env() if env is None else env,
        cwd=cwd,
    )
    return time.perf_counter() - start


# name: (the arguments of both versions, what only this tree is given)
AB_COMMANDS = {
    "evaluate paired --agent-type stochastic --sims 30": (
        ["evaluate", "paired", "--agent-type", "stochastic", "--sims", "30"], [],
    ),
    "evaluate paired --sims 30 (empowerment)": (["evaluate", "paired", "--sims", "30"], []),
}  # fmt: skip
SAME_MODEL_COMMANDS = {
    "the same, stochastic agents, received memories tried for good": (
        ["evaluate", "paired", "--agent-type", "stochastic", "--sims", "30"],
        ["--stochastic-received", "always"],
    ),
    "the same, empowerment model calibrated": (
        ["evaluate", "paired", "--sims", "30", "--empowerment-model", "calibrated"], [],
    ),
}  # fmt: skip


def tree_of(commit: str, folder: Path) -> Path:
    """The files of ``commit`` of this repository, unpacked in ``folder``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def against(commit: str, recipes: str, rounds: int, same_model: bool = False) -> list[str]:
    """The issue-48 pairs: this tree against ``commit``, interleaved (with ``same_model``,
    also the pairs of :data:`SAME_MODEL_COMMANDS`)."""
    pairs = {**AB_COMMANDS, **(SAME_MODEL_COMMANDS if same_model else {})}
    recipes = str(Path(recipes).resolve())  # the commands run from another folder
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    with (
        tempfile.TemporaryDirectory(prefix="tpdisc-against-") as tmp,
        tempfile.TemporaryDirectory(prefix="tpdisc-against-cwd-") as cwd,
    ):
        # Each version's tpdisc from its PYTHONPATH, run from an empty folder: ``python -c``
        # puts the working directory first on sys.path, so run from this repository's
        # root both would import this tree.
        old_root = tree_of(commit, Path(tmp))
        old_env = {**installed_env(), "PYTHONPATH": str(old_root)}
        new_env = {**installed_env(), "PYTHONPATH": str(ROOT)}
        versions = {f"this tree ({head})": new_env, commit: old_env}
        for root, env in ((ROOT, new_env), (old_root, old_env)):
            found = subprocess.run(
                [sys.executable, "-c", "import tpdisc; print(tpdisc.__file__)"],
                env=env, cwd=cwd, check=True, capture_output=True, text=True,
            ).stdout.strip()  # fmt: skip
            if not Path(found).resolve().is_relative_to(root.resolve()):
                raise SystemExit(f"tpdisc imported from {found}, not from {root}")
        run(tpdisc("prior", "build", "--recipes", recipes), new_env, cwd)
        walls: dict[tuple[str, str], list[float]] = {}
        commands: dict[tuple[str, str], list[str]] = {}
        this_tree = next(iter(versions))
        for name, (args, ours) in pairs.items():
            command = tpdisc(*args, "--recipes", recipes)
            for version, env in versions.items():
                commands[(name, version)] = command + ours if version == this_tree else command
                # kernels compiled and cached, bytecode written, files in the page cache
                run(commands[(name, version)], env, cwd)
        # Every round runs every pair, so that the rows are timed over the same minutes and
        # a drift of the machine's speed moves them alike.
        order = list(versions.items())
        for k in range(rounds):
            for name in pairs:
                for version, env in order if k % 2 == 0 else order[::-1]:
                    walls.setdefault((name, version), []).append(
                        run(commands[(name, version)], env, cwd)
                    )
    lines = [
        f"Whole commands, this tree against {commit}: {rounds} interleaved pairs each "
        f"(process pool, all cores); {load()} after.",
        "",
        f"| command | {' | '.join(versions)} | ratio of medians | pair by pair (median, range) |",
        "|---|---|---|---|---|",
    ]
    new, old = versions
    for name in pairs:
        a, b = walls[(name, new)], walls[(name, old)]
        ratios = [x / y for x, y in zip(a, b, strict=True)]
        lines.append(
            f"| {name} | {statistics.median(a):.3f} s (best {min(a):.3f}) | "
            f"{statistics.median(b):.3f} s (best {min(b):.3f}) | "
            f"{statistics.median(a) / statistics.median(b):.3f} | "
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f}) |"
        )
    return lines


def main() -> None:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument(
        "--against",
        metavar="COMMIT",
        help="Time issue 48's two commands against this commit instead (A/B, interleaved).",
    )
    p.add_argument(
        "--same-model",
        action="store_true",
        help="With --against: also both commands with c90d606's agents on both sides.",
    )
    args = p.parse_args()
    recipes = (
        args.recipes
        or os.environ.get("TPDISC_RECIPES")
        or str(HERE.parent.parent / "shared" / "data" / "alchemy2.json")
    )
    if args.against:
        lines = against(args.against, recipes, args.rounds, args.same_model)
        report("bench_commands_against", "Whole commands against a commit", lines, args.record)
        return
    folder = Path(tempfile.mkdtemp(prefix="tpdisc-bench-commands-"))
    quiet = []
    for k in range(10):
        path = folder / f"quiet{k}.py"
        path.write_text(QUIET.format(k=k))
        quiet.append(str(path))
    try:
        todo = commands(recipes, quiet)
        run(tpdisc("prior", "build", "--recipes", recipes))
        walls: dict[str, list[float]] = {name: [] for name in todo}
        for _ in range(args.rounds):
            for name, command in todo.items():
                walls[name].append(run(command))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    best = {name: min(w) for name, w in walls.items()}
    lines = [
        f"Whole commands (process start to exit), {args.rounds} interleaved rounds; {load()}.",
        "",
        "| command | best | median |",
        "|---|---|---|",
    ]
    for name, w in walls.items():
        lines.append(f"| {name} | {min(w):.2f} s | {statistics.median(w):.2f} s |")
    names = list(walls)
    yardstick = next((n for n in names if "straightforward" in n), None)
    stochastic = next(n for n in names if "--agent-type stochastic --sims 30" in n)
    if yardstick is not None:
        lines += ["", f"Straightforward simulator / tpdisc, stochastic command: "
                      f"**{best[yardstick] / best[stochastic]:.2f}×** (best rounds)."]  # fmt: skip
    # T(files, sims) = start + files * (per protocol + sims * per simulation), serially.
    for trusted in (False, True):
        d1 = best[file_label(10, 1, trusted)] - best[file_label(1, 1, trusted)]
        d30 = best[file_label(10, 30, trusted)] - best[file_label(1, 30, trusted)]
        per_sim = (d30 - d1) / (9 * 29)
        per_protocol = d1 / 9 - per_sim
        how = "trusted (in-process)" if trusted else "sandboxed"
        lines.append(
            f"{how}: each protocol file costs **{per_protocol * 1000:.0f} ms** once "
            f"and {per_sim * 1000:.1f} ms per simulation (a protocol that shares nothing, "
            "10 stochastic agents × 150 steps)."
        )
    report("bench_commands", "Whole commands", lines, args.record)


if __name__ == "__main__":
    main()
