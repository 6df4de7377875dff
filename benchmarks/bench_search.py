"""Benchmark 5: search iterations, without any LLM latency.

Runs the search loop with the offline proposer (block-built protocols, no model call) on
the default settings (30 sims × 10 agents × 150 steps, sandboxed candidates, all cores):
seeding the archive with the five baselines, then a few iterations (warm-up and
evolution). Each iteration is split into proposing, the short sandboxed check run, scoring
(30 sandboxed simulations on the process pool) and the rest (selection, archive writes).
With an LLM proposer, the model's latency comes on top.

    python benchmarks/bench_search.py [--record] [--iterations 3]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchlib import agent_types, full_domain, load, parser, report, usable_cores

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


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--iterations", type=int, default=3, help="Iterations to time.")
    p.add_argument(
        "--agent-type",
        action="append",
        help="Agent type to search with (repeatable; default: empowerment where available, "
        "as SPEC §4 scores with, else stochastic).",
    )
    args = p.parse_args()
    domain = full_domain(args.recipes)
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
