"""What an empowerment agent-step costs under one named model against another.

A model's rules change what an agent computes at each choice (issue 45: the default reads a
received success as a certain success worth its result, and lets the social bias keep only
pairs using an element the agent does not own), so its cost is measured against the model
it replaced, on the same simulations, in one process, rounds interleaved:

    python benchmarks/bench_model_cost.py [--models calibrated-text calibrated-step]
        [--sims 30] [--rounds 5] [--protocols paired evolved_seed2.py ...] [--record]

For each protocol and model: CPU µs of agent work (``choose`` and the ``observe_*`` calls,
timed around each call as ``bench_empowerment.py`` does, in this thread's CPU time so that
other jobs on the machine do not inflate it) per agent-step, and CPU µs of the whole simulation
per agent-step, each the best of the rounds; then each model's ratio to the first. A
protocol is a baseline's name or a protocol file (run trusted, in this process: the
reference's published files).
"""

from __future__ import annotations

import time
from dataclasses import replace

from bench_empowerment import AgentClock
from benchlib import full_domain, load, parser, report

from tpdisc.agents.base import AgentParams
from tpdisc.agents.empowerment.model import named_model
from tpdisc.agents.empowerment.prior.store import ensure_prior
from tpdisc.protocols.resolve import resolve_protocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation

AGENTS, STEPS = 10, 150
REFERENCE = "../shared/reference_protocols"


def inventory(result: SimResult) -> float:
    """The agents' mean number of elements at the end: a choice weighs the pairs of what
    its agent owns, so an agent-step costs more the more it owns."""
    return result.mechanism["empowerment"]["inventory_size"]


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--models", nargs="+", default=["calibrated-step", "calibrated-text"])
    p.add_argument("--sims", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument(
        "--protocols",
        nargs="+",
        default=["paired", f"{REFERENCE}/evolved_seed2.py"],
        help="baselines' names or protocol files (default: paired and evolved_seed2)",
    )
    args = p.parse_args()
    domain = full_domain(args.recipes)
    ensure_prior(domain.graph, "ngram")
    seeds = list(range(args.sims))
    agent_steps = args.sims * AGENTS * STEPS
    base = SimConfig(n_agents=AGENTS, n_steps=STEPS, agent_type="empowerment")
    configs = {
        m: replace(base, params=AgentParams(empowerment=named_model(m))) for m in args.models
    }
    protocols = {name: resolve_protocol(name, trusted=True) for name in args.protocols}
    best_agent: dict[tuple[str, str], float] = {}
    best_whole: dict[tuple[str, str], float] = {}
    coverage: dict[tuple[str, str], float] = {}
    owned: dict[tuple[str, str], float] = {}
    for _ in range(args.rounds):
        for pname, spec in protocols.items():
            for model, config in configs.items():
                with AgentClock(time.thread_time) as clock:
                    c0 = time.process_time()
                    results = [run_simulation(domain, config, spec, s) for s in seeds]
                    whole = time.process_time() - c0
                agent = sum(clock.seconds.values())
                key = (pname, model)
                best_agent[key] = min(best_agent.get(key, float("inf")), agent)
                best_whole[key] = min(best_whole.get(key, float("inf")), whole)
                coverage[key] = sum(r.final for r in results) / len(results)
                owned[key] = sum(inventory(r) for r in results) / len(results)
    first = args.models[0]
    lines = [
        f"{args.sims} sims × {AGENTS} empowerment agents × {STEPS} steps per protocol "
        f"({agent_steps:,} agent-steps), one process, best of {args.rounds} interleaved "
        f"rounds; {load()} at the end. Agent work is timed around each call, whole "
        "simulations as a whole, both in CPU time. Ratio: against the first model on the "
        "same protocol.",
        "",
        "| protocol | model | final coverage | an agent's elements at the end "
        "| agent work µs / agent-step | ratio | whole simulation µs / agent-step | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for pname in protocols:
        for model in args.models:
            key, ref = (pname, model), (pname, first)
            a, w = best_agent[key], best_whole[key]
            lines.append(
                f"| {pname.rsplit('/', 1)[-1]} | {model} | {coverage[key]:.1f} | {owned[key]:.1f} "
                f"| {1e6 * a / agent_steps:.1f} | {a / best_agent[ref]:.2f} "
                f"| {1e6 * w / agent_steps:.1f} | {w / best_whole[ref]:.2f} |"
            )
    report("bench_model_cost", "An agent-step under each empowerment model", lines, args.record)


if __name__ == "__main__":
    main()
