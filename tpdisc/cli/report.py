"""Evaluation results for people: the ranking table, the mechanism table, LLM usage lines
and figures."""

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


def mechanism_table(evaluations: list[Evaluation], title: str) -> Table:
    """Per protocol (ranked as in :func:`results_table`) and agent type, the mechanism
    numbers' means over simulations (definitions in :mod:`tpdisc.sim.mechanism`)."""
    table = Table(
        title=title,
        caption="owned: elements an agent owns at the end; gained: the same without start "
        "elements; success: attempts that made something; re-made pair / result: attempts "
        "of a pair received as a success / making an element received as a result; "
        "Jaccard: mean distance between two agents' gains (– with one agent); union: "
        "distinct elements the type owns",
    )
    table.add_column("protocol")
    table.add_column("agents")
    for header in ("owned", "gained", "success", "re-made pair", "re-made result", "Jaccard"):
        # numbers stay whole on narrow terminals: names and headers give way first
        table.add_column(header, justify="right", min_width=5)
    table.add_column("union", justify="right", min_width=5)

    def number(value: float | None, spec: str) -> str:
        return "–" if value is None else format(value, spec)

    for ev in sorted(evaluations, key=lambda e: -e.mean):
        kinds = list(ev.mechanism.items())
        for k, (kind, m) in enumerate(kinds):
            table.add_row(
                ev.protocol if k == 0 else "",
                kind,
                number(m["inventory_size"], ".1f"),
                number(m["inventory_gain"], ".1f"),
                number(m["success_rate"], ".3f"),
                number(m["remake_fraction"], ".3f"),
                number(m["remake_result_fraction"], ".3f"),
                number(m["jaccard_distance"], ".3f"),
                number(m["union_size"], ".1f"),
                end_section=k == len(kinds) - 1,
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
