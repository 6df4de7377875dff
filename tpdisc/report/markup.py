"""The pieces a study's report is written with: numbers formatted one way throughout, and
tables, figures and lists whose text is escaped unless it is :class:`~markupsafe.Markup`
already.

Every text of a study's JSON may come from an archive (protocol names an LLM chose) or
from whoever sent the study folder, so escaping is the default (Jinja2's own, through
markupsafe) and HTML must be asked for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from markupsafe import Markup

from tpdisc.analysis.stats import stars
from tpdisc.report.page import escape
from tpdisc.report.page import facts as page_facts
from tpdisc.sim.evaluate import sem

DASH = "–"  # what a missing or undefined number shows


def html(value: object) -> Markup:
    """``value`` as HTML: as it is when Markup already, escaped otherwise."""
    return escape(value)  # markupsafe's escape leaves Markup as it is


def num(value: float | None, digits: int = 2) -> str:
    """A number with ``digits`` decimals (integers as they are); None or NaN as a dash."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return DASH
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def pval(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return DASH
    return f"{p:.3g}"


def starred(p: float | None) -> str:
    """A p-value with its stars (* p<.05, ** p<.01, *** p<.001)."""
    return pval(p) + (f" {stars(p)}" if p is not None and stars(p) else "")


def mean_sem(mean: float | None, sem: float | None) -> str:
    if mean is None:
        return DASH
    return num(mean) if sem is None else f"{num(mean)} ± {num(sem)}"


def of_values(values: Sequence[float]) -> str:
    """Mean ± standard error of ``values``."""
    if not values:
        return DASH
    return mean_sem(sum(values) / len(values), sem(values))


def link(href: str, text: object) -> Markup:
    return Markup(f'<a href="{escape(href)}">{html(text)}</a>')


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], labels: int = 1) -> Markup:
    """The first ``labels`` columns are text, the others numbers (aligned right)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = [
            f"<td>{html(cell)}</td>" if k < labels else f'<td class="num">{html(cell)}</td>'
            for k, cell in enumerate(row)
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return Markup(
        f'<table class="data"><thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{chr(10).join(body)}\n</tbody></table>"
    )


def matrix(names: Sequence[str], cells: Sequence[Sequence[object]]) -> Markup:
    """A square table, rows and columns named alike."""
    return table(["", *names], ([name, *row] for name, row in zip(names, cells, strict=True)))


def facts(items: Iterable[tuple[str, object]]) -> Markup:
    return Markup(page_facts((k, html(v)) for k, v in items))


def bullets(items: Iterable[object]) -> Markup:
    inner = "".join(f"<li>{html(item)}</li>" for item in items)
    return Markup(f"<ul>{inner}</ul>" if inner else "")


def failures(failed: Mapping[str, str] | None, what: str = "failed") -> Markup:
    """The protocols that failed, with their errors (nothing when none did)."""
    if not failed:
        return Markup("")
    items = [Markup(f"{escape(k)}: <code>{escape(v)}</code>") for k, v in failed.items()]
    return Markup(f"<p>{escape(what)} ({len(items)}):</p>{bullets(items)}")


# What to look for in each figure of a study: the sentence under it.
CAPTIONS = {
    "coverage.png": "Mean ± sem over simulations. Look at where the curves part, and whether "
    "a gap still grows past the search's horizon.",
    "pairwise.png": "Row against column. Blue: the row reaches more, red: the column does; "
    "the colour is deep where one beats the other (BH-adjusted p < .05), pale where neither "
    "does; stars mark the row beating the column.",
    "search.png": "Best fitness found so far, per run. Does evolution (solid) keep climbing "
    "where generation alone (dashed) flattens, and when is the best seed baseline (dotted) "
    "passed?",
    "ablation.png": "Original against the schedule replayed with random content. A drop for "
    "the top set, not the bottom one, means the best protocols win by what they send, not "
    "only by whom they connect.",
    "features.png": "Which behaviours go with fitness: solid bars are significant, pale ones "
    "are not; ticks mark the reference's ρ. Look for solid bars that agree with the ticks.",
    "volume.png": "Memories delivered against fitness. A flat or falling cloud means more "
    "sharing does not buy coverage by itself.",
    "generalization.png": "Each setting's evolved protocols against its best baseline. Look "
    "for settings where the gain (above the bars) turns negative: the protocols' limits.",
    "embedding_map.png": "Protocols placed by the similarity of their code. Separate clouds "
    "mean the runs wrote different kinds of protocol.",
    "mmd_runs.png": "How different the runs' code is (MMD²): the brighter a cell, the "
    "more different.",
    "mmd_kinds.png": "How different evolution's code is from generation's (MMD²).",
}


def figures(available: set[str], names: Sequence[str]) -> Markup:
    """The figures of ``names`` that exist (``available``: the file names copied into the
    report's ``figures/``), each with the sentence saying what to look for."""
    # Each links to itself: a figure squeezed beside a table opens at full size.
    shown = [
        f'<figure><a href="figures/{escape(n)}"><img src="figures/{escape(n)}" '
        f'alt="{escape(Path(n).stem)}"></a>'
        + (f'<figcaption class="note">{escape(CAPTIONS[n])}</figcaption>' if n in CAPTIONS else "")
        + "</figure>"
        for n in names
        if n in available
    ]
    return Markup("".join(shown))


def beside(*parts: str) -> Markup:
    """Parts side by side where the page is wide enough, one under the other otherwise."""
    inner = "".join(f"<div>{part}</div>" for part in parts if part)
    return Markup(f'<div class="pair">{inner}</div>')


def note(text: object) -> Markup:
    return Markup(f'<p class="note">{html(text)}</p>')
