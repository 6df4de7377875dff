"""The first screen of a study's report: what a reader came for, each finding linking to
the section that holds its details (and the best protocols to their portraits), and the
reference study's figure beside each (:mod:`tpdisc.analysis.published`), so that a report
read alone answers "does this match the paper?".

- the best protocols against the best standard baseline: final coverage at the search's
  horizon, the gain, the BH-adjusted one-sided Welch p of the performance section;
- the ablation's drop for the top set;
- the strongest behavioural features (largest |ρ|);
- the generalization summary: in how many settings the evolved protocols beat the best
  baseline;
- the key figure, the coverage curves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tpdisc.analysis import published
from tpdisc.report.markup import (
    DASH,
    Markup,
    bullets,
    figures,
    link,
    mean_sem,
    note,
    num,
    of_values,
    pval,
    starred,
    table,
)
from tpdisc.report.page import escape
from tpdisc.study.sections import View

STRONGEST = 3  # features listed


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _more(anchor: str, text: str = "details") -> Markup:
    return link(f"#{anchor}", f"→ {text}")


def best_against_baselines(view: View, portraits: Mapping[str, str]) -> Markup:
    baselines, best = view.results.get("baselines"), view.results.get("best")
    if baselines is None or best is None:
        return note("Best protocols against the baselines: not run yet.")
    standard = [b for b in baselines["protocols"] if b["kind"] == "standard"]
    top = max(standard or baselines["protocols"], key=lambda b: _mean(b["final_horizon"]))
    comparison = best.get("pairwise", {})
    names = comparison.get("names", [])
    rows = []
    percents = []
    for entry in best["protocols"]:
        gain = _mean(entry["final_horizon"]) - _mean(top["final_horizon"])
        base = _mean(top["final_horizon"])
        percent = 100 * gain / base if base else None
        if percent is not None:
            percents.append(percent)
        p = None
        if entry["name"] in names and top["name"] in names:
            i, j = names.index(entry["name"]), names.index(top["name"])
            p = comparison["p_adjusted"][i][j]
        label = f"{entry['name']} ({entry.get('protocol', '')})"
        portrait = portraits.get(entry["name"])
        rows.append(
            [link(portrait, label) if portrait else label, of_values(entry["final_horizon"]),
             f"{gain:+.2f}", num(percent, 1), starred(p),
             link(portrait, "portrait") if portrait else DASH]
        )  # fmt: skip
    headers = [
        "best protocol (run)",
        "final coverage",
        f"gain over {top['name']}",
        "gain %",
        "p (one-sided Welch, BH)",
        "at work",
    ]
    # Markup's format escapes the name (a study folder may come from anyone); adding Markup
    # to Markup keeps both as they are.
    title = Markup("<h3>Best protocols against the best standard baseline, {} ({}) {}</h3>")
    return (
        title.format(top["name"], of_values(top["final_horizon"]), _more("performance"))
        + table(headers, rows, labels=1)
        + reference_line(
            f"mean gain here {num(_mean(percents), 1)} %",
            f"every evolved protocol above every baseline, "
            f"+{published.BEST_GAIN_PERCENT:g} % over the best on average",
        )
        + note(
            f"Final coverage at the search's horizon ({baselines['horizon']} steps), mean ± "
            "sem over the simulations; p: that the protocol beats the baseline. A portrait "
            "shows who sent what to whom over a game, and the agents' inventories."
        )
    )


def reference_line(here: str, reference: str) -> Markup:
    """A finding's figure beside the reference study's."""
    return Markup(f'<p class="reference">{escape(f"{here}; the reference: {reference}.")}</p>')


def ablation_drop(view: View) -> Markup:
    data = view.results.get("ablation")
    if data is None or "top" not in data.get("sets", {}):
        return note("Ablation: not run yet.")
    s = data["sets"]["top"]
    delta = s["delta"]
    text = (
        f"Replaying the schedules of the top {s['n']} protocols with random content takes "
        f"their coverage from {mean_sem(s['original_mean'], s['original_sem'])} to "
        f"{mean_sem(s['ablated_mean'], s['ablated_sem'])}: "
        f"{'a drop' if delta is not None and delta < 0 else 'a change'} of "
        f"{num(abs(delta) if delta is not None and delta < 0 else delta)} ± "
        f"{num(s['delta_sem'])} (paired t-test p = {starred(s['p'])})."
    )
    before, after = published.ABLATION_TOP
    reference = reference_line(
        f"here {num(delta)}",
        f"{published.ABLATION_TOP_DELTA:+g} ({before:g} → {after:g}), back to asocial play",
    )
    return (
        Markup(f"<h3>What content adds {_more('ablation')}</h3><p>{escape(text)}</p>") + reference
    )


def strongest_features(view: View) -> Markup:
    data = view.results.get("features")
    if data is None:
        return note("Behavioural features: not run yet.")
    rows = [r for r in data["features"] if r.get("rho") is not None]
    rows.sort(key=lambda r: -abs(r["rho"]))
    items = [
        f"{r['name']} ({r['group']}): ρ = {num(r['rho'])}, q = {pval(r.get('q'))} "
        f"{r.get('stars', '')}".rstrip()
        + (
            ""
            if r.get("reference_rho") is None
            else f"; the reference: ρ = {num(r['reference_rho'])}"
        )
        for r in rows[:STRONGEST]
    ]
    return (
        Markup(f"<h3>Strongest behavioural features {_more('features')}</h3>")
        + (bullets(items) if items else note("No feature is defined."))
        + note(
            f"Over {data['n_protocols']} protocols: Spearman's ρ of (original − ablated) with "
            "fitness; q adjusted over the features (** q < .01, *** q < .001)."
        )
    )


def generalization_summary(view: View) -> Markup:
    data = view.results.get("generalization")
    if data is None:
        return note("Generalization: not run yet.")
    settings = data["settings"]
    better = [s for s in settings if (s.get("improvement") or 0) > 0]
    significant = [s for s in better if s.get("p") is not None and s["p"] < 0.05]
    gains = [s["improvement"] for s in settings if s.get("improvement") is not None]
    text = (
        f"The evolved protocols beat the best baseline in {len(better)} of {len(settings)} "
        f"settings ({len(significant)} at p < .05); mean gain {num(_mean(gains), 1)} %."
    )
    low, high = published.GENERALIZATION_GAINS
    reference = reference_line(
        f"gains here {_range(gains)}",
        f"+{low:g} … +{high:g} % over the best baseline, in every setting",
    )
    return (
        Markup(f"<h3>Generalization {_more('generalization')}</h3><p>{escape(text)}</p>")
        + reference
    )


def _range(percents: Sequence[float]) -> str:
    if not percents:
        return "none"
    return f"{min(percents):+.0f} … {max(percents):+.0f} %"


def findings(view: View, portraits: Mapping[str, str]) -> Markup:
    """The findings section's body."""
    key = figures(view.figures, ["coverage.png"])
    rest = Markup(ablation_drop(view) + strongest_features(view) + generalization_summary(view))
    # The key figure beside the shorter findings, so that it is on the first screen.
    return best_against_baselines(view, portraits) + Markup(
        f'<div class="pair"><div class="text">{rest}</div><div>{key}</div></div>'
    )
