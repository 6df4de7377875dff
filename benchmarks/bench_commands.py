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
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import load, parser, report

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
    return [sys.executable, "-m", "tpdisc.cli", *args]


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


def run(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    recipes = args.recipes or str(HERE.parent.parent / "shared" / "data" / "alchemy2.json")
    folder = Path(tempfile.mkdtemp(prefix="tpdisc-bench-commands-"))
    quiet = []
    for k in range(10):
        path = folder / f"quiet{k}.py"
        path.write_text(QUIET.format(k=k))
        quiet.append(str(path))
    try:
        todo = commands(recipes, quiet)
        subprocess.run(tpdisc("prior", "build", "--recipes", recipes), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
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
