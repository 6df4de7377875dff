"""Evaluation results for people: the ranking table, the mechanism table, LLM usage lines
and figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import STANDARD_BASELINES
from tpdisc.safefiles import write_file
from tpdisc.sim.evaluate import Evaluation

if TYPE_CHECKING:
    from tpdisc.analysis.stats import PairwiseComparison, VersusReference


def compare_all(evaluations: list[Evaluation]) -> PairwiseComparison:
    """Every ordered pair of protocols, ranked best first: the matrix of pairwise.json."""
    # scipy and statsmodels take a while to import: only once there are results to test.
    from tpdisc.analysis.stats import pairwise

    ranked = sorted(evaluations, key=lambda e: -e.mean)
    return pairwise([e.protocol for e in ranked], [e.final for e in ranked])


def reference_of(evaluations: list[Evaluation], requested: str | None) -> str | None:
    """The protocol the others are tested against: ``requested``, else the best standard
    baseline among those evaluated (None when there is none)."""
    names = [e.protocol for e in evaluations]
    if requested is not None:
        if requested not in names:
            raise ConfigError(
                f"--reference {requested!r} is not among the protocols evaluated "
                f"({', '.join(names)})"
            )
        return requested
    baselines = [e for e in evaluations if e.protocol in STANDARD_BASELINES]
    return max(baselines, key=lambda e: e.mean).protocol if baselines else None


def versus(evaluations: list[Evaluation], requested: str | None) -> VersusReference | None:
    """Each protocol against the reference (see :func:`reference_of`), if there is one."""
    from tpdisc.analysis.stats import versus_reference

    reference = reference_of(evaluations, requested)
    if reference is None or len(evaluations) < 2:
        return None
    return versus_reference(compare_all(evaluations), reference)


ASOCIAL = "asocial"


def versus_asocial(
    evaluations: list[Evaluation], against: VersusReference | None
) -> VersusReference | None:
    """Each protocol against asocial play, when it was evaluated and is not the reference
    already: whether sharing beats not sharing, the reference study's first question,
    which a table of baselines against the best one cannot say."""
    from tpdisc.analysis.stats import versus_reference

    names = [e.protocol for e in evaluations]
    if ASOCIAL not in names or len(names) < 2:
        return None
    if against is not None and against.reference == ASOCIAL:
        return None
    return versus_reference(compare_all(evaluations), ASOCIAL)


def _against(ev: Evaluation, versus: VersusReference) -> list[str]:
    """The two cells of ``ev`` against ``versus``'s reference: Δ, and p with stars."""
    from tpdisc.analysis.stats import stars

    if ev.protocol == versus.reference:
        return ["reference", ""]
    p = versus.p_adjusted[ev.protocol]
    difference = versus.difference[ev.protocol]
    if p != p:  # nan: too few simulations to test
        shown = "–"
    elif difference <= 0:  # its p that it beats the reference is ~1: say why
        shown = "not better"
    else:
        shown = f"{p:.2g} {stars(p)}".strip()
    return [f"{difference:+.2f}", shown]


def results_table(
    evaluations: list[Evaluation],
    title: str,
    against: VersusReference | None = None,
    asocial: VersusReference | None = None,
) -> Table:
    """The ranking; with ``against``, each protocol's difference from the reference and
    the adjusted one-sided p that it beats it, with stars; with ``asocial``, the same
    against asocial play."""
    caption = None
    if against is not None:
        caption = (
            f"Δ: mean − mean of {against.reference}; p: one-sided Welch t-test that the "
            "protocol beats it, Benjamini–Hochberg-adjusted over all pairs (as in "
            "pairwise.json); * p<.05 ** p<.01 *** p<.001; not better: Δ ≤ 0, nothing to test "
            "(pairwise.png says whether the reference beats it)"
        )
        if asocial is not None:
            caption += "; the last two columns: the same against asocial play"
    table = Table(title=title, caption=caption)
    table.add_column("protocol")
    table.add_column("final coverage (mean ± sem)", justify="right")
    table.add_column("min–max", justify="right")
    for versus in (v for v in (against, asocial) if v is not None):
        table.add_column(f"Δ vs {versus.reference}", justify="right", no_wrap=True)
        table.add_column("p", justify="right", no_wrap=True)
    for ev in sorted(evaluations, key=lambda e: -e.mean):
        row = [ev.protocol, f"{ev.mean:.2f} ± {ev.sem:.2f}", f"{min(ev.final)}–{max(ev.final)}"]
        for versus in (v for v in (against, asocial) if v is not None):
            row += _against(ev, versus)
        table.add_row(*row)
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

    comparison = compare_all(evaluations)
    paths = [coverage_figure(evaluations, out / "coverage.png", title)]
    if len(evaluations) > 1:
        paths.append(pairwise_figure(comparison, out / "pairwise.png"))
    write_file(out / "pairwise.json", json.dumps(comparison.to_json(), indent=2))
    return paths
