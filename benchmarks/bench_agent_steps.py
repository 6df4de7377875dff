"""Benchmark 2: agent-steps per second for each agent type, on one core.

Runs default simulations (10 agents × 150 steps, paired baseline) in this process and
splits the time between the parts of a step: the agents' decisions, applying attempts
(with the recorders' counting of them), the protocol, exchange validation and delivery
(bottleneck, social inventories, the recorders, the agents' updates). Since 89d1a8f the
attempts part is timed once per step (``Game.attempts``), not once per agent.

    python benchmarks/bench_agent_steps.py [--record] [--sims 10]
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from benchlib import agent_types, full_domain, load, parser, report

import tpdisc.sim.game as game_module
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import InProcessRunner
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import Game, run_simulation

AGENTS, STEPS = 10, 150
# What a step is made of, in order, and where each part lives.
PARTS: dict[str, tuple[Any, str]] = {
    "agents choose": (Game, "choose"),
    "attempts": (Game, "attempts"),
    "state views": (Game, "agent_states"),
    "protocol": (InProcessRunner, "share"),
    "validation": (game_module, "validate_exchanges"),
    "delivery": (Game, "deliver"),
}


def instrument(spent: dict[str, float]) -> Callable[[], None]:
    """Wrap the parts of a step with timers; returns the function that unwraps them."""
    originals: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        originals.append((owner, name, original))

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - t0

        setattr(owner, name, timed)

    for label, (owner, name) in PARTS.items():
        wrap(owner, name, label)

    def undo() -> None:
        for owner, name, original in originals:
            setattr(owner, name, original)

    return undo


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--sims", type=int, default=10, help="Simulations per agent type.")
    args = p.parse_args()
    domain = full_domain(args.recipes)
    protocol = BaselineProtocol("paired")
    agent_steps = args.sims * AGENTS * STEPS
    lines = [
        f"One core, {args.sims} sims × {AGENTS} agents × {STEPS} steps of the paired "
        f"baseline per agent type ({agent_steps:,} agent-steps). Rate = agent-steps per CPU "
        "second of whole simulations; the split of the time comes from a second, "
        "instrumented run ('state views': building the protocol's view of the agents; "
        "'other': the step loop, set-up and timers).",
        "",
        "| agents | agent-steps/s (CPU) | wall | load | " + " | ".join(PARTS) + " | other |",
        "|---|---|---|---|" + "---|" * (len(PARTS) + 1),
    ]
    for agent in agent_types():
        config = SimConfig(n_agents=AGENTS, n_steps=STEPS, agent_type=agent)
        run_simulation(domain, config, protocol, 10_000)  # warm caches and imports
        w0, c0 = time.perf_counter(), time.process_time()
        for seed in range(args.sims):
            run_simulation(domain, config, protocol, seed)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        spent: dict[str, float] = defaultdict(float)
        undo = instrument(spent)
        try:
            t0 = time.perf_counter()
            for seed in range(args.sims):
                run_simulation(domain, config, protocol, seed)
            total = time.perf_counter() - t0
        finally:
            undo()
        shares = [spent[label] for label in PARTS]
        shares.append(total - sum(shares))
        lines.append(
            f"| {agent} | {agent_steps / cpu:,.0f} | {wall:.2f} s | {load()} | "
            + " | ".join(f"{100 * s / total:.0f}%" for s in shares)
            + " |"
        )
    report("bench_agent_steps", "Agent-steps per second by agent type", lines, args.record)


if __name__ == "__main__":
    main()
