"""Evaluation results for people: the ranking table, LLM usage lines and figures."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from tpdisc.sim.evaluate import Evaluation


def results_table(evaluations: list[Evaluation], title: str) -> Table:
    table = Table(title=title)
    table.add_column("protocol")
    table.add_column("final coverage (mean ± sem)", justify="right")
    table.add_column("min–max", justify="right")
    for ev in sorted(evaluations, key=lambda e: -e.mean):
        table.add_row(
            ev.protocol, f"{ev.mean:.2f} ± {ev.sem:.2f}", f"{min(ev.final)}–{max(ev.final)}"
        )
    return table


def llm_usage(evaluations: list[Evaluation]) -> list[str]:
    """One line per protocol with LLM agents: requests, cache hits, tokens, cost, fallbacks."""
    lines = []
    for ev in evaluations:
        s = ev.agent_stats
        if s.get("llm_choices"):
            lines.append(
                f"{ev.protocol}: LLM agents made {s['llm_requests']:.0f} requests "
                f"({s['llm_cache_hits']:.0f} answers from the cache), "
                f"{s['llm_prompt_tokens']:.0f} + {s['llm_completion_tokens']:.0f} tokens, "
                f"${s['llm_cost']:.4f}; {s['llm_reasks']:.0f} re-asks, "
                f"{s['llm_fallbacks']:.0f} fallbacks in {s['llm_choices']:.0f} choices"
            )
    return lines


def write_figures(evaluations: list[Evaluation], out: Path, title: str) -> list[Path]:
    from tpdisc.analysis.plots import coverage_figure, pairwise_figure
    from tpdisc.analysis.stats import pairwise

    ranked = sorted(evaluations, key=lambda e: -e.mean)
    comparison = pairwise([e.protocol for e in ranked], [e.final for e in ranked])
    paths = [coverage_figure(evaluations, out / "coverage.png", title)]
    if len(evaluations) > 1:
        paths.append(pairwise_figure(comparison, out / "pairwise.png"))
    (out / "pairwise.json").write_text(json.dumps(comparison.to_json(), indent=2))
    return paths
