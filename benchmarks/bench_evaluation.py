"""Benchmark 1: one default fitness evaluation of the paired baseline, by executor.

30 simulations × 10 agents × 150 steps, for each agent type this version has: serially,
on a process pool of all cores (reused, as in a search, and freshly started), on a local
Ray instance, and as the command ``tpdisc evaluate paired --sims 30`` (a fresh process:
imports, data loading, pool start and all).

    python benchmarks/bench_evaluation.py [--record] [--rounds 3] [--no-ray]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack

from benchlib import Timing, agent_types, full_domain, load, parser, report, timed, usable_cores

from tpdisc.domain.variants import Domain
from tpdisc.executors.base import Executor
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate

SIMS, AGENTS, STEPS = 30, 10, 150
AGENT_STEPS = SIMS * AGENTS * STEPS


def row(agent: str, engine: str, timing: Timing, loads: list[float], note: str = "") -> str:
    best = min(timing.wall)
    return (
        f"| {agent} | {engine} | **{best:.2f} s** (median {timing.wall_median:.2f}) "
        f"| {AGENT_STEPS / best:,.0f} | {min(loads):.1f}–{max(loads):.1f} | {note} |"
    )


def cli_command(agent: str, recipes: str | None) -> list[str]:
    exe = shutil.which("tpdisc")
    base = [exe] if exe else [sys.executable, "-m", "tpdisc.cli"]
    command = [*base, "evaluate", "paired", "--agent-type", agent, "--sims", str(SIMS)]
    return [*command, "--recipes", recipes] if recipes else command


def measure(
    agent: str, domain: Domain, rounds: int, with_ray: bool, recipes: str | None = None
) -> tuple[dict[str, Timing], dict[str, list[float]], dict[str, str]]:
    """Wall times of every executor for one agent type, in interleaved rounds."""
    cores = usable_cores()
    config = SimConfig(n_agents=AGENTS, n_steps=STEPS, agent_type=agent)
    protocol = BaselineProtocol("paired")
    seeds = list(range(SIMS))
    reference = evaluate(domain, config, protocol, seeds, executor=SerialExecutor()).final

    def run(executor: Executor) -> None:
        if evaluate(domain, config, protocol, seeds, executor=executor).final != reference:
            raise SystemExit(f"{type(executor).__name__} gave different results")

    def fresh_pool() -> None:
        with ProcessExecutor() as pool:
            run(pool)

    command = cli_command(agent, recipes)

    def cli() -> None:
        subprocess.run(command, check=True, capture_output=True, env=os.environ.copy())

    with ExitStack() as stack:
        pool = stack.enter_context(ProcessExecutor())
        run(pool)  # workers started, imports and caches warm
        engines: dict[str, Callable[[], None]] = {
            "serial": lambda: run(SerialExecutor()),
            f"processes ×{cores}, new pool": fresh_pool,
            f"processes ×{cores}, running pool": lambda: run(pool),
        }
        notes = {
            f"processes ×{cores}, new pool": "pool start included",
            f"processes ×{cores}, running pool": "as in a search",
        }
        if with_ray:
            try:
                from tpdisc.executors.ray import RayExecutor

                ray_ex = stack.enter_context(RayExecutor(init_options={"num_cpus": cores}))
                t0 = time.perf_counter()
                run(ray_ex)
                notes["ray, local instance"] = (
                    f"first run incl. Ray start {time.perf_counter() - t0:.1f} s"
                )
                engines["ray, local instance"] = lambda: run(ray_ex)
            except Exception as err:  # Ray is optional
                notes["ray, local instance"] = f"unavailable: {err}"
        engines["CLI, all cores"] = cli
        notes["CLI, all cores"] = (
            f"`tpdisc evaluate paired --agent-type {agent} --sims {SIMS}`: a new process, "
            "imports and pool start included"
        )
        timings = {name: Timing([], []) for name in engines}
        loads: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(rounds):
            for name, fn in engines.items():
                one = timed(fn, 1)
                timings[name].wall += one.wall
                timings[name].cpu += one.cpu
                loads[name].append(os.getloadavg()[0])
    return timings, loads, notes


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="Rounds; each runs every executor once, so all see the same background load.",
    )
    p.add_argument("--no-ray", action="store_true", help="Skip the Ray executor.")
    args = p.parse_args()
    domain = full_domain(args.recipes)
    lines = [
        f"Paired baseline, {SIMS} sims × {AGENTS} agents × {STEPS} steps "
        f"({AGENT_STEPS:,} agent-steps). {args.rounds} rounds, each running every executor "
        "once in turn; the best round is in bold (the least disturbed by other work on the "
        "machine), agent-steps/s from it. Load: the 1-minute load average over the "
        "measurements (2 cores: above ~1 means other work competed).",
        "",
        "| agents | executor | wall time | agent-steps/s | load | note |",
        "|---|---|---|---|---|---|",
    ]
    for agent in agent_types():
        timings, loads, notes = measure(agent, domain, args.rounds, not args.no_ray, args.recipes)
        pooled = min(timings[f"processes ×{usable_cores()}, running pool"].wall)
        for name, timing in timings.items():
            note = notes.get(name, "")
            if name == "serial":
                note = f"CPU {min(timing.cpu):.2f} s"
            elif name.startswith("ray"):
                note = f"{min(timing.wall) / pooled:.2f}× the running pool; {note}"
            lines.append(row(agent, name, timing, loads[name], note))
        if "ray, local instance" not in timings and "ray, local instance" in notes:
            lines.append(f"| {agent} | ray | – | – | {load()} | {notes['ray, local instance']} |")

    missing = [t for t in ("empowerment",) if t not in agent_types()]
    if missing:
        lines += ["", f"Not measured (agent type not available yet): {', '.join(missing)}."]
    report("bench_evaluation", "Default fitness evaluation (paired baseline)", lines, args.record)


if __name__ == "__main__":
    main()
