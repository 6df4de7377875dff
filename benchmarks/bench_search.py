"""Benchmark 5: search iterations, without any LLM latency.

Runs the search loop with the offline proposer (block-built protocols, no model call) on
the default settings (30 sims × 10 agents × 150 steps, sandboxed candidates, all cores):
seeding the archive with the five baselines, then a few iterations (warm-up and
evolution). Each iteration is split into proposing, the short sandboxed check run, scoring
(30 sandboxed simulations on the process pool) and the rest (selection, archive writes).
With an LLM proposer, the model's latency comes on top.

    python benchmarks/bench_search.py [--record] [--iterations 3]

With ``--records``, what keeping the analyses' records costs a search (issue 48: at most
5 % of an iteration): two searches of the same settings and seed, one keeping records of
every evaluation seed and one of none, run iteration by iteration in turn (which goes
first alternates), on one pool; they propose and score the same candidates, so each
iteration is a pair. Reported: the medians, the median of the paired ratios, and the
bytes of records per protocol in the archive.

    python benchmarks/bench_search.py --records [--iterations 12] [--record]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from benchlib import agent_types, full_domain, load, parser, report, usable_cores

from tpdisc.domain.variants import Domain
from tpdisc.executors.process import ProcessExecutor
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import SearchLoop
from tpdisc.search.proposers import OfflineProposer
from tpdisc.sim.config import SimConfig


def timer(spent: dict[str, float], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - t0

    return timed


def records_cost(domain: Domain, iterations: int, agent: str) -> list[str]:
    """Iterations with and without records, in turn, on one pool."""
    config = SearchConfig(
        iterations=iterations, warmup=max(1, iterations // 4), sim=SimConfig(agent_type=agent)
    )
    times: dict[str, list[float]] = {"records": [], "none": []}
    with tempfile.TemporaryDirectory() as tmp, ProcessExecutor() as pool:
        pool.run([partial(int, 0)] * pool.workers)  # start the workers now
        loops = {
            "records": SearchLoop(Path(tmp) / "records", config, domain, OfflineProposer(), pool),
            "none": SearchLoop(
                Path(tmp) / "none",
                replace(config, record_seeds=()),
                domain,
                OfflineProposer(),
                pool,
            ),
        }
        try:
            for loop in loops.values():
                loop.seed()
            for i in range(1, iterations + 1):
                order = list(loops.items())
                for name, loop in order if i % 2 else order[::-1]:
                    t0 = time.perf_counter()
                    loop.iteration(i)
                    times[name].append(time.perf_counter() - t0)
            same = [(c.name, c.fitness_values) for c in loops["none"].archive.candidates()] == [
                (c.name, c.fitness_values) for c in loops["records"].archive.candidates()
            ]
            protocols, size = loops["records"].archive.record_sizes()
            smallest, largest = (
                loops["records"]
                .archive.db.execute(
                    "SELECT COALESCE(MIN(length(data)), 0), COALESCE(MAX(length(data)), 0)"
                    " FROM records"
                )
                .fetchone()
            )
        finally:
            for loop in loops.values():
                loop.close()
    ratios = [a / b for a, b in zip(times["records"], times["none"], strict=True)]
    return [
        f"| {agent} | {statistics.median(times['records']):.2f} s | "
        f"{statistics.median(times['none']):.2f} s | **{statistics.median(ratios):.3f}** "
        f"({min(ratios):.3f}–{max(ratios):.3f}) | {size / max(protocols, 1) / 1000:.1f} kB "
        f"(each {smallest / 1000:.1f}–{largest / 1000:.1f}; "
        f"{protocols} protocols, {config.sims} seeds each) | {'yes' if same else 'NO'} | "
        f"{load()} |"
    ]


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--iterations", type=int, default=3, help="Iterations to time.")
    p.add_argument(
        "--records",
        action="store_true",
        help="Time iterations with and without the analyses' records, in turn (issue 48).",
    )
    p.add_argument(
        "--agent-type",
        action="append",
        help="Agent type to search with (repeatable; default: empowerment where available, "
        "as SPEC §4 scores with, else stochastic).",
    )
    args = p.parse_args()
    domain = full_domain(args.recipes)
    if args.records:
        lines = [
            f"Offline proposer, {args.iterations} iterations of two searches of one seed in "
            "turn, one keeping records of all 30 evaluation seeds of each valid protocol, one "
            f"keeping none; process pool of {usable_cores()} workers. Wall seconds.",
            "",
            "| agents | iteration, records (median) | without | paired ratio (median, range) "
            "| records per protocol (mean) | same archives | load |",
            "|---|---|---|---|---|---|---|",
        ]
        for agent in args.agent_type or agent_types()[:1]:
            lines += records_cost(domain, args.iterations, agent)
        report("bench_search_records", "What the records cost a search", lines, args.record)
        return
    lines = [
        f"Offline proposer, {args.iterations} iterations after seeding (warm-up "
        f"{max(1, args.iterations // 4)}), default settings, sandboxed candidates, process "
        f"pool of {usable_cores()} workers (started before timing). Times are wall seconds.",
        "",
        "| agents | seeding (5 baselines) | iteration (median) | range | propose | check run "
        "| scoring | rest | outcomes | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for agent in args.agent_type or agent_types()[:1]:
        config = SearchConfig(
            iterations=args.iterations,
            warmup=max(1, args.iterations // 4),
            sim=SimConfig(agent_type=agent),
        )
        with (
            tempfile.TemporaryDirectory() as tmp,
            ProcessExecutor() as pool,
            SearchLoop(Path(tmp), config, domain, OfflineProposer(), pool) as loop,
        ):
            pool.run([partial(int, 0)] * pool.workers)  # start the workers now
            t0 = time.perf_counter()
            loop.seed()
            seeding = time.perf_counter() - t0
            spent: dict[str, float] = defaultdict(float)
            loop.proposer.propose = timer(spent, "propose", loop.proposer.propose)  # type: ignore[method-assign]
            loop.evaluator.check = timer(spent, "check", loop.evaluator.check)  # type: ignore[method-assign]
            loop.evaluator._evaluate = timer(spent, "score", loop.evaluator._evaluate)  # type: ignore[method-assign]
            durations, outcomes = [], []
            for i in range(1, args.iterations + 1):
                t0 = time.perf_counter()
                row = loop.iteration(i)
                durations.append(time.perf_counter() - t0)
                outcomes.append(row.status if row is not None else "none")
        total = sum(durations)
        rest = total - sum(spent.values())
        per = {k: spent[k] / args.iterations for k in ("propose", "check", "score")}
        counts = ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(outcomes)))
        lines.append(
            f"| {agent} | {seeding:.1f} s | {statistics.median(durations):.2f} s | "
            f"{min(durations):.2f}–{max(durations):.2f} s | {per['propose']:.3f} s | "
            f"{per['check']:.2f} s | {per['score']:.2f} s | {rest / args.iterations:.2f} s | "
            f"{counts} | {load()} |"
        )
    lines += [
        "",
        "Propose, check run, scoring and rest are means per iteration; an iteration whose "
        "candidate fails its check is repaired (up to 3 times), so it may check and score "
        "more than once.",
    ]
    report("bench_search", "One search iteration without LLM latency", lines, args.record)


if __name__ == "__main__":
    main()
