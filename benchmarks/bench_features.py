"""Behavioural features: the cost of extracting them for one protocol.

Per sharing baseline: 30 simulations × 10 stochastic agents × 150 steps on the full game,
run serially with ``record_log=True``; then the 23 features of SPEC §6 from those results
(:func:`tpdisc.analysis.features.feature_values`: rebuilding the states at each
transmission, grouping, pooling), timed alone, in one process. The stochastic baseline
is the heaviest routing (20 memories to every agent every step); paired is the default.

Then what logging costs a simulation (issue 28: at most 1.5 times an unlogged one,
extraction included): the same seeds run without and with ``record_log``, alternately,
with each agent type, and the features extracted from each logged one; and what the
tally costs one (``tally=True``: what a search records and the features' workers send
back since issue 48, without the log).

    python benchmarks/bench_features.py [--record] [--repeat 3]
"""

from __future__ import annotations

import statistics
import subprocess
import time

from benchlib import ROOT, full_domain, load, parser, report, timed

from tpdisc.analysis.features import extract_result, feature_values, pool
from tpdisc.domain.variants import Domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import prepare_simulation
from tpdisc.sim.game import run_simulation

SIMS, AGENTS, STEPS = 30, 10, 150
BASELINES = ("stochastic", "paired")
RATIO_SIMS = 10
RATIO_LIMIT = 1.5


def logging_cost(domain: Domain) -> list[str]:
    """Per agent type and protocol: unlogged and logged simulation, extraction, ratio."""
    lines = [
        "",
        f"Logged against unlogged, {RATIO_SIMS} seeds each, run alternately in one process "
        f"(medians per simulation; issue 28's limit: {RATIO_LIMIT}×); {load()}.",
        "",
        "| agents | protocol | unlogged | logged | extraction | (logged + extraction) / unlogged "
        "| tallied | tallied / unlogged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for agent_type in ("empowerment", "stochastic"):
        config = SimConfig(n_agents=AGENTS, n_steps=STEPS, agent_type=agent_type)
        prepare_simulation(domain, config)
        for baseline in BASELINES:
            protocol = BaselineProtocol(baseline)
            run_simulation(domain, config, protocol, 0)  # warm: kernels, tables
            plain, logged, extraction, tallied = [], [], [], []
            for seed in range(RATIO_SIMS):
                t0 = time.perf_counter()
                run_simulation(domain, config, protocol, seed)
                t1 = time.perf_counter()
                result = run_simulation(domain, config, protocol, seed, record_log=True)
                t2 = time.perf_counter()
                feature_values([result])
                t3 = time.perf_counter()
                run_simulation(domain, config, protocol, seed, tally=True)
                t4 = time.perf_counter()
                plain.append(t1 - t0)
                logged.append(t2 - t1)
                extraction.append(t3 - t2)
                tallied.append(t4 - t3)
            a, b, c, d = (statistics.median(x) for x in (plain, logged, extraction, tallied))
            ratio = (b + c) / a
            mark = "" if ratio <= RATIO_LIMIT else " (over the limit)"
            lines.append(
                f"| {agent_type} | {baseline} | {1000 * a:.1f} ms | {1000 * b:.1f} ms "
                f"| {1000 * c:.1f} ms | **{ratio:.2f}×**{mark} | {1000 * d:.1f} ms "
                f"| {d / a:.2f}× |"
            )
    return lines


def commit() -> str:
    """The commit measured (with a mark when the work tree differs from it)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{' + local changes' if dirty else ''}" if head else "unknown"


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--repeat", type=int, default=3, help="Timed repetitions of the extraction.")
    args = p.parse_args()
    domain = full_domain(args.recipes)
    config = SimConfig(n_agents=AGENTS, n_steps=STEPS, agent_type="stochastic")
    lines = [
        f"`python benchmarks/bench_features.py --record`, commit {commit()}.",
        "",
        f"{SIMS} simulations × {AGENTS} stochastic agents × {STEPS} steps per protocol, full "
        f"game, `record_log=True`, one process; {load()}.",
        "",
        "| protocol | events (delivered memories) | simulating (not counted) | "
        "feature extraction | "
        "per simulation | pooling alone |",
        "|---|---|---|---|---|---|",
    ]
    for baseline in BASELINES:
        protocol = BaselineProtocol(baseline)
        t0 = time.perf_counter()
        results = [
            run_simulation(domain, config, protocol, s, record_log=True) for s in range(SIMS)
        ]
        simulate = time.perf_counter() - t0
        events = sum(sum(r.log.survived) for r in results if r.log is not None)
        whole = timed(lambda results=results: feature_values(results), args.repeat)
        extracted = [extract_result(r) for r in results]
        pooling = timed(lambda extracted=extracted: pool(extracted), args.repeat)
        lines.append(
            f"| {baseline} | {events:,} | {simulate:.2f} s | **{whole.wall_median:.3f} s** "
            f"(min {min(whole.wall):.3f}) | {1000 * whole.wall_median / SIMS:.1f} ms | "
            f"{1000 * pooling.wall_median:.1f} ms |"
        )
    lines += [
        "",
        f"Medians of {args.repeat} runs. Simulations with `record_log=True` carry the log "
        "and every agent's attempts (`SimResult.history`); extraction is what "
        "`feature_values` adds on top.",
    ]
    lines += logging_cost(domain)
    report("bench_features", "Behavioural feature extraction", lines, args.record)


if __name__ == "__main__":
    main()
