"""Evaluation results for people: the ranking table, the mechanism and accounting tables,
LLM usage lines and figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import STANDARD_BASELINES
from tpdisc.safefiles import write_file
from tpdisc.sim.accounting import WAYS, asocial_rate, contributions, pooled
from tpdisc.sim.evaluate import Evaluation

if TYPE_CHECKING:
    from tpdisc.analysis.portrait import Portrait
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


def asocial_of(evaluations: list[Evaluation]) -> Evaluation | None:
    """The evaluation of asocial play among ``evaluations``: the baseline ``asocial``, else
    a protocol that delivered nothing in any simulation (the reference's asocial file)."""
    for ev in evaluations:
        if ev.protocol == "asocial":
            return ev
    for ev in evaluations:
        if ev.received and not any(ev.received) and not ev.protocol.endswith("(ablated)"):
            return ev
    return None


def accounting_table(evaluations: list[Evaluation], n_agents: int) -> Table:
    """Per protocol (ranked as in :func:`results_table`), where its elements come from
    (:mod:`tpdisc.sim.accounting`): per way of choosing, the new elements for the group
    and the attempts made that way; with asocial play among the protocols on the same
    seeds, each way's contribution to the gain over it."""
    asocial = asocial_of(evaluations)
    caption = (
        "Each way: new elements for the group / attempts, per simulation. remake: a pair "
        "received as a success; alone: nothing received usable this step; borrowed: uses a "
        "received element it does not own; steered: the social bias narrowed the choice to "
        "pairs using a received element it owns; anyway: received elements, own pair chosen "
        "without the bias."
    )
    rate = None
    if asocial is not None:
        rate = asocial_rate(asocial.curve_mean(), n_agents)
        caption += (
            f" Second line: the way's contribution to the gain over {asocial.protocol} "
            "(its new elements minus what its attempts found in asocial play at the same "
            "steps); the contributions add up to the gain."
        )
    table = Table(title="Where the elements come from (means over sims)", caption=caption)
    table.add_column("protocol")
    table.add_column("coverage", justify="right")
    if rate is not None:
        table.add_column("gain", justify="right")
    for way in WAYS:
        table.add_column(way, justify="right", min_width=6)
    for ev in sorted(evaluations, key=lambda e: -e.mean):
        if not ev.accounting_runs:
            continue
        accounting = ev.accounting
        whole = pooled(accounting)
        same_seeds = asocial is not None and ev.seeds == asocial.seeds
        parts = contributions(accounting, rate) if rate is not None and same_seeds else None
        row = [ev.protocol, f"{ev.mean:.1f}"]
        if rate is not None:
            row.append(
                "–" if parts is None or asocial is None else f"{ev.mean - asocial.mean:+.1f}"
            )
        for way in WAYS:
            group = whole["counts"][way]["group"]
            cell = f"{group:.1f} / {sum(whole['attempts_by_step'][way]):.0f}"
            if parts is not None:
                cell += f"\n{parts[way]:+.1f}"
            row.append(cell)
        table.add_row(*row)
    return table


def portrait_accounting_table(portraits: list[Portrait]) -> Table:
    """Per portrait, the protocol and its ablation: each way's new elements for the group /
    attempts and its contribution to the gain over asocial play on the same seeds."""
    table = Table(
        title="Where the elements come from (means over sims, against asocial play)",
        caption="Each way: new elements for the group / attempts, then the way's "
        "contribution to the gain over asocial play on the same seeds (they add up to the "
        "gain). Ways as in 'tpdisc evaluate --help' (--details); the pages say more.",
    )
    table.add_column("protocol")
    table.add_column("coverage", justify="right")
    table.add_column("gain", justify="right")
    for way in WAYS:
        table.add_column(way, justify="right", min_width=6)
    for p in portraits:
        if p.accounting is None:
            continue
        asocial = p.coverage["asocial"]["mean"][-1]
        for condition, label in (("protocol", p.name), ("ablation", f"{p.name} (ablated)")):
            final = p.coverage[condition]["mean"][-1]
            cells = p.accounting[condition]
            table.add_row(
                label,
                f"{final:.1f}",
                f"{final - asocial:+.1f}",
                *(
                    f"{cells[w]['group']:.1f} / {cells[w]['attempts']:.0f}\n"
                    f"{cells[w]['contribution']:+.1f}"
                    for w in WAYS
                ),
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
