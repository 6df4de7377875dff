"""A digest of what a set of simulations did, to check that a speed-up changed nothing.

Runs a fixed matrix of seeded simulations (empowerment agents under each open modelling
choice, β/2 and p_social = 0.9; stochastic agents; a mixed population; the domain
variants; several baselines; long and large games) and hashes, per simulation, the coverage
curve, the routing schedule, the whole transmission log, the counters and the agents'
statistics. Equal digests before and after a change mean every agent made the same choice
at every step.

    python benchmarks/outcome_digest.py [--out FILE] [--compare FILE] [--quick]

Run it on the old code with ``--out before.json`` and on the new code with
``--compare before.json``: it names the simulations that differ (exit status 1).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from tpdisc.agents.base import AgentParams
from tpdisc.agents.empowerment.model import EmpowermentModel, named_model
from tpdisc.agents.stochastic_model import StochasticModel
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import VariantSpec, make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation

# The rows named as before the empowerment model had a section of its own play that
# model, ``previous``, and stochastic agents for whom a received memory counts as tried
# for good, as they did then: their digests must not move when another model changes.
PREVIOUS = named_model("previous")
FOR_GOOD = StochasticModel(received="always")


def _params(empowerment: EmpowermentModel, p_social: float = 0.5) -> AgentParams:
    return AgentParams(p_social=p_social, empowerment=empowerment, stochastic=FOR_GOOD)


PARAMS = {
    "default": _params(PREVIOUS),
    "beta/2": _params(replace(PREVIOUS, beta=0.025)),
    "p_social=0.9": _params(PREVIOUS, p_social=0.9),
    "owned=zero": _params(replace(PREVIOUS, owned="zero")),
    "owned=ignore": _params(replace(PREVIOUS, owned="ignore")),
    "received=prior": _params(replace(PREVIOUS, received="prior")),
    "zscore=no": _params(replace(PREVIOUS, zscore=False)),
    "fallback=any": _params(replace(PREVIOUS, fallback="any")),
    # the default model of the first identification study (docs/fidelity.md)
    "calibrated": _params(named_model("calibrated")),
    "paper-literal": _params(named_model("paper-literal")),
    # issue 35's default: a received failure known for one choice (calibrated-step), and a
    # received memory a stochastic agent's tried pair for one choice
    "calibrated-step": AgentParams(empowerment=named_model("calibrated-step")),
    "stochastic=never": AgentParams(stochastic=StochasticModel(received="never")),
    # today's default: the social bias on received elements the agent lacks (issue 45)
    "calibrated-text": AgentParams(),
}
# Rows of the first models only (the later ones have rows of their own below).
LATER = ("calibrated-step", "stochastic=never", "calibrated-text")
FIRST = tuple(name for name in PARAMS if name not in LATER)
VARIANTS = ("full", "depth-limited", "dropout", "3-item", "heterogeneous")
# (variant, agents: a type or a population, n_agents, n_steps, params, baseline, seed)
Case = tuple[str, str, int, int, str, str, int]


def cases(quick: bool) -> list[Case]:
    out: list[Case] = []
    for params in (*FIRST, "calibrated-step"):
        for baseline in ("asocial", "paired", "stochastic", "dynamic"):
            out += [("full", "empowerment", 10, 150, params, baseline, s) for s in (0, 1)]
    for variant in VARIANTS[1:]:
        for baseline in ("paired", "graph"):
            out += [(variant, "empowerment", 10, 150, "default", baseline, s) for s in (0, 1)]
    # the small depth-limited game runs out of valuable pairs: fallback choices, both kinds
    out += [("depth-limited", "empowerment", 10, 150, "fallback=any", "asocial", s) for s in (0, 1)]
    for variant in VARIANTS:
        for baseline in ("asocial", "paired", "stochastic"):
            out += [(variant, "stochastic", 10, 150, "default", baseline, s) for s in (0, 1)]
    for params in ("calibrated-step", "stochastic=never"):
        for baseline in ("paired", "stochastic"):
            out += [("full", "stochastic", 10, 150, params, baseline, s) for s in (0, 1)]
    for baseline in ("asocial", "paired", "stochastic", "dynamic"):
        out += [("full", "empowerment", 10, 150, "calibrated-text", baseline, s)
                for s in (0, 1)]  # fmt: skip
    mixed = "empowerment:4,stochastic:3,empowerment:3"
    for baseline in ("paired", "stochastic"):
        out += [("full", mixed, 10, 150, "default", baseline, s) for s in (0, 1)]
    out += [
        ("full", "empowerment", 50, 150, "default", "paired", 0),
        ("full", "empowerment", 3, 150, "p_social=0.9", "paired", 2),
        ("full", "empowerment", 1, 100, "default", "asocial", 3),
    ]
    if not quick:
        out += [
            ("full", "empowerment", 10, 1000, "default", "paired", 0),
            ("full", "empowerment", 10, 1000, "owned=zero", "stochastic", 1),
            ("full", "stochastic", 10, 1000, "default", "paired", 0),
        ]
    return out


def digest(result: SimResult) -> str:
    assert result.log is not None
    payload = [
        result.curve,
        result.schedule.to_json(),
        {name: column.tolist() for name, column in result.log.columns().items()},
        result.received,
        result.novel_received,
        sorted(result.agent_stats.items()),
    ]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, help="Write the digests to this JSON file.")
    p.add_argument("--compare", type=Path, help="Compare with digests written by --out.")
    p.add_argument("--quick", action="store_true", help="Leave out the 1000-step games.")
    p.add_argument("--recipes", default=None, help="Little Alchemy 2 recipe file.")
    args = p.parse_args()
    graph = default_graph(args.recipes)
    domains = {v: make_domain(graph, VariantSpec(v)) for v in VARIANTS}
    digests: dict[str, str] = {}
    t0 = time.perf_counter()
    for variant, agents, n_agents, n_steps, params, baseline, seed in cases(args.quick):
        if ":" in agents:
            config = SimConfig.with_population(agents, n_steps=n_steps, params=PARAMS[params])
        else:
            config = SimConfig(
                n_agents=n_agents, n_steps=n_steps, agent_type=agents, params=PARAMS[params]
            )
        result = run_simulation(
            domains[variant], config, BaselineProtocol(baseline), seed, record_log=True
        )
        key = f"{variant} | {agents} | {n_agents}x{n_steps} | {params} | {baseline} | {seed}"
        digests[key] = digest(result)
    total = hashlib.sha256("".join(digests.values()).encode()).hexdigest()[:16]
    print(f"{len(digests)} simulations in {time.perf_counter() - t0:.1f} s; digest {total}")
    if args.out:
        args.out.write_text(json.dumps(digests, indent=1))
    if args.compare:
        before = json.loads(args.compare.read_text())
        differ = [k for k in digests if before.get(k) != digests[k]]
        missing = [k for k in before if k not in digests]
        for key in differ:
            print(f"differs: {key}")
        for key in missing:
            print(f"not run: {key}")
        print("same outcomes" if not differ else f"{len(differ)} simulations differ")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
