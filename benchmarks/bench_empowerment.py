"""Empowerment agents: one default fitness evaluation and the cost of an agent-step.

The default fitness evaluation (SPEC §1): the paired baseline, 30 simulations × 10
empowerment agents × 150 steps, on all cores (the default executor) and serially. Then,
in one process, how much of a simulation is agent work (``choose`` and the ``observe_*``
calls, timed around each call) and the rest (game loop, protocol).

    python benchmarks/bench_empowerment.py [--record] [--repeat 3]

The prior must be built (``tpdisc prior build``); the script builds it first if needed and
reports the build separately.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchlib import full_domain, load, parser, report, timed

from tpdisc.agents.base import AgentParams
from tpdisc.agents.empowerment.agent import EmpowermentAgent
from tpdisc.agents.empowerment.compiled_agent import CompiledEmpowermentAgent
from tpdisc.agents.empowerment.model import DEFAULT_MODEL, MODELS, named_model
from tpdisc.agents.empowerment.prior.store import ensure_prior
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate
from tpdisc.sim.game import run_simulation

SIMS, AGENTS, STEPS = 30, 10, 150


class AgentClock:
    """Adds the time spent inside the agents' methods (a patch for the measurement only)."""

    METHODS = ("choose", "observe_own", "observe_received")

    def __init__(self, timer: Callable[[], float] = time.perf_counter) -> None:
        # perf_counter: wall time, as a quiet machine sees it; thread_time: this thread's
        # CPU only, which other jobs on the machine do not inflate.
        self.timer = timer
        self.seconds = {m: 0.0 for m in self.METHODS}
        self.calls = {m: 0 for m in self.METHODS}
        self.saved: dict[tuple[type, str], Callable[..., Any] | None] = {}

    # Both classes, each with the method it resolves (the compiled one overrides some):
    # an agent of either kind is timed once per call.
    CLASSES = (EmpowermentAgent, CompiledEmpowermentAgent)

    def __enter__(self) -> AgentClock:
        # Every method as each class resolves it before any is patched: a subclass's
        # inherited method must not become the timed wrapper of its parent's.
        resolved = {(c, m): getattr(c, m) for c in self.CLASSES for m in self.METHODS}
        for (cls, name), original in resolved.items():
            self.saved[cls, name] = vars(cls).get(name)  # None: inherited

            def timed_call(
                agent: EmpowermentAgent,
                *args: Any,
                _original: Callable[..., Any] = original,
                _name: str = name,
            ) -> Any:
                t0 = self.timer()
                try:
                    return _original(agent, *args)
                finally:
                    self.seconds[_name] += self.timer() - t0
                    self.calls[_name] += 1

            setattr(cls, name, timed_call)
        return self

    def __exit__(self, *exc: object) -> None:
        for (cls, name), own in self.saved.items():
            if own is None:
                delattr(cls, name)
            else:
                setattr(cls, name, own)


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--repeat", type=int, default=3, help="Repetitions of each timing.")
    p.add_argument(
        "--empowerment-model",
        default=DEFAULT_MODEL,
        choices=list(MODELS),
        help="The agents' named model (default: the default one).",
    )
    args = p.parse_args()
    domain = full_domain(args.recipes)
    t0 = time.perf_counter()
    prior, path = ensure_prior(domain.graph, "ngram")
    load_seconds = time.perf_counter() - t0
    params = AgentParams(empowerment=named_model(args.empowerment_model))
    config = SimConfig(n_agents=AGENTS, n_steps=STEPS, agent_type="empowerment", params=params)
    protocol = BaselineProtocol("paired")
    seeds = list(range(SIMS))
    agent_steps = SIMS * AGENTS * STEPS

    serial_eval = evaluate(domain, config, protocol, seeds, executor=SerialExecutor())
    serial = timed(
        lambda: evaluate(domain, config, protocol, seeds, executor=SerialExecutor()),
        args.repeat,
    )
    load_serial = load()
    with ProcessExecutor() as pool:
        evaluate(domain, config, protocol, seeds, executor=pool)  # start and warm the workers
        pooled = timed(
            lambda: evaluate(domain, config, protocol, seeds, executor=pool), args.repeat
        )
    load_pool = load()
    fresh = timed(lambda: evaluate(domain, config, protocol, seeds), 1)

    with AgentClock() as clock:
        w0 = time.perf_counter()
        for seed in seeds:
            run_simulation(domain, config, protocol, seed)
        whole = time.perf_counter() - w0
    agent_total = sum(clock.seconds.values())
    per_step_us = 1e6 * agent_total / agent_steps
    build = prior.meta["build"]
    lines = [
        f"Paired baseline, {SIMS} sims × {AGENTS} empowerment agents "
        f"({params.empowerment.label}) × {STEPS} steps "
        f"({agent_steps:,} agent-steps), n-gram prior (top {prior.top_k} results kept), "
        f"final coverage {serial_eval.mean:.1f} ± {serial_eval.sem:.1f}.",
        "",
        "| default fitness evaluation | wall time | load |",
        "|---|---|---|",
        f"| all cores, pool already started (as in a search) | **{pooled.wall_median:.2f} s** "
        f"(min {min(pooled.wall):.2f}, {args.repeat} runs) | {load_pool} |",
        f"| all cores, pool started for the call (`evaluate()` default) "
        f"| {fresh.wall_median:.2f} s | {load()} |",
        f"| serial, one process | {serial.wall_median:.2f} s (min {min(serial.wall):.2f}) "
        f"| {load_serial} |",
        "",
        f"Agent work, serial run of the same {SIMS} simulations ({whole:.2f} s in all, {load()}):",
        "",
        "| method | calls | total | per call |",
        "|---|---|---|---|",
    ]
    for name in AgentClock.METHODS:
        calls = clock.calls[name]
        per = 1e6 * clock.seconds[name] / max(calls, 1)
        lines.append(f"| `{name}` | {calls:,} | {clock.seconds[name]:.2f} s | {per:.1f} µs |")
    lines += [
        f"| **all agent work** | | {agent_total:.2f} s ({100 * agent_total / whole:.0f}% "
        f"of the run) | **{per_step_us:.1f} µs per agent-step** |",
        "",
        f"The clock's own overhead (two `perf_counter` calls per call) is included. Prior "
        f"load from the cache: {load_seconds:.2f} s. Prior build (recorded when it was built): "
        f"{build['seconds']:.0f} s wall, {build['cpu_seconds']:.0f} s CPU, one BLAS thread, "
        f"load {build['load_average_before'][0]:.1f} before and "
        f"{build['load_average_after'][0]:.1f} after.",
        "",
        "Target (issue 3): ≤ 2 s for a default evaluation on 2 cores, ≤ ~50 µs of agent work "
        "per agent-step.",
    ]
    report("bench_empowerment", "Empowerment agents", lines, args.record)
    print(f"prior: {path}")


if __name__ == "__main__":
    main()
