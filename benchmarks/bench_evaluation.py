"""Benchmark 1: one default fitness evaluation of the paired baseline, by executor.

30 simulations × 10 agents × 150 steps, for each agent type this version has: serially,
on a process pool of all cores (reused, as in a search, and freshly started), on a local
Ray instance, and as the command ``tpdisc evaluate paired --sims 30`` (a fresh process:
imports, data loading, pool start and all).

    python benchmarks/bench_evaluation.py [--record] [--repeat 3] [--no-ray]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

from benchlib import Timing, agent_types, full_domain, load, parser, report, timed, usable_cores

from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate
from tpdisc.sim.executors import Executor, ProcessExecutor, SerialExecutor

SIMS, AGENTS, STEPS = 30, 10, 150
AGENT_STEPS = SIMS * AGENTS * STEPS


def row(agent: str, engine: str, timing: Timing, note: str = "") -> str:
    rate = AGENT_STEPS / timing.wall_median
    return (
        f"| {agent} | {engine} | {timing.wall_median:.2f} s (min {min(timing.wall):.2f}) "
        f"| {rate:,.0f} | {load()} | {note} |"
    )


def cli_command(agent: str) -> list[str]:
    exe = shutil.which("tpdisc")
    base = [exe] if exe else [sys.executable, "-m", "tpdisc.cli"]
    return [*base, "evaluate", "paired", "--agent-type", agent, "--sims", str(SIMS)]


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--repeat", type=int, default=3, help="Repetitions of each measurement.")
    p.add_argument("--no-ray", action="store_true", help="Skip the Ray executor.")
    args = p.parse_args()
    domain = full_domain(args.recipes)
    protocol = BaselineProtocol("paired")
    seeds = list(range(SIMS))
    lines = [
        f"Paired baseline, {SIMS} sims × {AGENTS} agents × {STEPS} steps "
        f"({AGENT_STEPS:,} agent-steps); median of {args.repeat} runs. The load column is the "
        "1/5/15-minute load average when the row was measured (2 cores: above ~1 means "
        "other work competed).",
        "",
        "| agents | executor | wall time | agent-steps/s | load | note |",
        "|---|---|---|---|---|---|",
    ]

    for agent in agent_types():
        config = SimConfig(n_agents=AGENTS, n_steps=STEPS, agent_type=agent)
        reference: list[int] | None = None

        def run(executor: Executor, config: SimConfig = config) -> Evaluation:
            return evaluate(domain, config, protocol, seeds, executor=executor)

        def check(ev: Evaluation, engine: str) -> None:
            nonlocal reference
            reference = reference or ev.final
            if ev.final != reference:
                raise SystemExit(f"{engine} gave different results from serial")

        check(run(SerialExecutor()), "serial")  # also warms caches (imports, priors)
        serial = timed(lambda: run(SerialExecutor()), args.repeat)
        # CPU time shows what the wall time would be on an otherwise idle core.
        lines.append(row(agent, "serial", serial, f"CPU {serial.cpu_median:.2f} s"))

        def fresh_pool() -> None:
            with ProcessExecutor() as pool:
                check(run(pool), "processes")

        lines.append(
            row(
                agent,
                f"processes ×{usable_cores()}, new pool",
                timed(fresh_pool, args.repeat),
                "pool start included",
            )
        )
        with ProcessExecutor() as pool:
            check(run(pool), "processes")
            warm = timed(lambda: run(pool), args.repeat)
        lines.append(
            row(agent, f"processes ×{usable_cores()}, running pool", warm, "as in a search")
        )

        if not args.no_ray:
            try:
                from tpdisc.sim.ray_executor import RayExecutor

                ray_ex = RayExecutor(init_options={"num_cpus": usable_cores()})
            except Exception as err:  # Ray is optional
                lines.append(f"| {agent} | ray | – | – | {load()} | unavailable: {err} |")
            else:
                with ray_ex:
                    t0 = time.perf_counter()
                    check(run(ray_ex), "ray")
                    first = time.perf_counter() - t0
                    ray_warm = timed(lambda ex=ray_ex: run(ex), args.repeat)
                ratio = ray_warm.wall_median / warm.wall_median
                lines.append(
                    row(
                        agent,
                        "ray, local instance",
                        ray_warm,
                        f"{ratio:.2f}× the running pool; first run incl. Ray start {first:.1f} s",
                    )
                )

        command = cli_command(agent)
        cli = timed(
            lambda command=command: subprocess.run(
                command, check=True, capture_output=True, env=os.environ.copy()
            ),
            args.repeat,
        )
        lines.append(
            row(
                agent,
                "CLI, all cores",
                cli,
                f"`tpdisc evaluate paired --agent-type {agent} --sims {SIMS}`, whole command",
            )
        )

    missing = [t for t in ("empowerment",) if t not in agent_types()]
    if missing:
        lines += ["", f"Not measured (agent type not available yet): {', '.join(missing)}."]
    report("bench_evaluation", "Default fitness evaluation (paired baseline)", lines, args.record)


if __name__ == "__main__":
    main()
