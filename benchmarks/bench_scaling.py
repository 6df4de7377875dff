"""Benchmark 3: how the cost of a simulation grows with agents and with steps.

For each agent type: 6, 10, 20, 50 and 100 agents at 150 steps, and 150, 300 and 1000
steps at 10 agents (paired baseline, one core). Reports the CPU time per agent-step
relative to the 10 × 150 reference: linear cost in agents × steps keeps it near 1 (the
target is within ±25%).

    python benchmarks/bench_scaling.py [--record] [--budget 30000] [--rounds 5]
"""

from __future__ import annotations

import time

from benchlib import agent_types, full_domain, load, parser, report

from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

REFERENCE = (10, 150)
POINTS = [(6, 150), (10, 150), (20, 150), (50, 150), (100, 150), (10, 300), (10, 1000)]
TOLERANCE = 0.25


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument(
        "--budget",
        type=int,
        default=30_000,
        help="Agent-steps simulated per point and round (at least one simulation).",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="Rounds over all points, each simulating the same seeds; each simulation keeps "
        "its fastest round, which filters out moments when other work shared the CPU.",
    )
    args = p.parse_args()
    domain = full_domain(args.recipes)
    protocol = BaselineProtocol("paired")
    lines = [
        f"One core, paired baseline, about {args.budget:,} agent-steps per point (seeds 0, "
        f"1, …), {args.rounds} interleaved rounds over the same simulations; each simulation's "
        "CPU time is its fastest round's. µs = CPU microseconds per agent-step (mean over the "
        f"point's simulations); ratio = that over the {REFERENCE[0]} agents × {REFERENCE[1]} "
        "steps reference; final = mean final coverage.",
        "",
        "| agents | agents × steps | simulations | µs per agent-step | ratio | within ±25% "
        "| final | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for agent in agent_types():
        run_simulation(domain, SimConfig(agent_type=agent), protocol, 10_000)  # warm-up
        fastest: dict[tuple[int, int, int], float] = {}
        finals: dict[tuple[int, int], list[int]] = {}
        for _ in range(args.rounds):
            for point in POINTS:
                n_agents, n_steps = point
                config = SimConfig(n_agents=n_agents, n_steps=n_steps, agent_type=agent)
                finals[point] = []
                for seed in range(simulations(point, args.budget)):
                    c0 = time.process_time()
                    finals[point].append(run_simulation(domain, config, protocol, seed).final)
                    cost = time.process_time() - c0
                    key = (*point, seed)
                    fastest[key] = min(cost, fastest.get(key, cost))
        per_step = {
            point: sum(fastest[(*point, seed)] for seed in range(len(finals[point])))
            / (len(finals[point]) * point[0] * point[1])
            for point in POINTS
        }
        reference = per_step[REFERENCE]
        for point in POINTS:
            n_agents, n_steps = point
            ratio = per_step[point] / reference
            ok = "yes" if abs(ratio - 1) <= TOLERANCE else "**no**"
            mean_final = sum(finals[point]) / len(finals[point])
            lines.append(
                f"| {agent} | {n_agents} × {n_steps} | {len(finals[point])} | "
                f"{per_step[point] * 1e6:.1f} | {ratio:.2f} | {ok} | {mean_final:.1f} | {load()} |"
            )
    report("bench_scaling", "Scaling in agents and steps", lines, args.record)


def simulations(point: tuple[int, int], budget: int) -> int:
    return max(1, round(budget / (point[0] * point[1])))


if __name__ == "__main__":
    main()
