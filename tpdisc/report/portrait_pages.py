"""The pages of protocol portraits (``tpdisc inspect``, and the reports' links to them).

One folder per protocol, ``SLUG/index.html`` with its figures as PNG beside it and the
portrait's data as ``portrait.json`` (what a report rebuilds from without simulating), and
an ``index.html`` above them that sets the protocols side by side. Protocol names, source
and docstrings may come from an LLM: every text is escaped, the code goes through pygments.
Nothing refers to the network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.lexers import PythonLexer

from tpdisc.analysis import portrait_plots as plots
from tpdisc.analysis.portrait import CONDITIONS, THIRDS, Portrait
from tpdisc.errors import TpdiscError
from tpdisc.report.page import CODE_FORMATTER, escape, facts, page
from tpdisc.safefiles import make_dirs, read_capped, write_file

DATA = "portrait.json"
# A stored portrait holds curves of a few hundred steps: megabytes at most.
MAX_DATA_BYTES = 50_000_000
STYLE = """
body { max-width: 80em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; }
figcaption { color: #444; max-width: 60em; }
table.data { border-collapse: collapse; margin: .5em 0; }
table.data th, table.data td { padding: .2em .6em; border-bottom: 1px solid #ddd; }
table.data th { background: #f4f4f4; text-align: left; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; }
nav a { margin-right: 1em; }
.grid { display: grid; gap: 1em; }
.grid img { width: 100%; height: auto; }
.docstring { white-space: pre-wrap; background: #f8f8f8; padding: .6em; }
"""
# What a reader should look for in each figure: the sentence under it.
CAPTIONS = {
    "coverage": "The gap between the solid blue line and the dashed orange one is what the "
    "protocol's choice of content adds over its bare schedule (who talks to whom, how much); "
    "the gap to grey is what sharing adds over no sharing at all.",
    "flow": "Rows send, columns receive. A diagonal band or blocks mean fixed partners or "
    "groups; an even wash means anyone hears anyone; a bright row is a hub that others "
    "learn from. Compare the two panels: is it successes or failures that travel?",
    "flow_thirds": "The same flow in each third of the game on one colour scale: a pattern "
    "that fades or moves means the protocol routes by state (who owns what), not by a "
    "fixed network.",
    "content": "Solid lines are the protocol, dashed its ablation on the same schedule: "
    "where they part, the protocol chooses what to send. Look for a high share of results "
    "the recipient lacks, of pairs it can make (owns 2 ingredients), and few re-sends.",
    "agents": "Competence (mean inventory) against diversity (Jaccard distance): sharing "
    "usually raises the first and lowers the second; a protocol that keeps inventories "
    "different while they grow covers more of the tree together. A high re-make share means "
    "agents spend their attempts re-making what they were sent.",
    "metrics": "The protocol's own bookkeeping, read after every step: what it counted "
    "while it routed.",
    "comparison": "Solid: each protocol; dashed: its ablation. The middle and right panels "
    "place each protocol between competence and diversity, with asocial play for reference.",
}


def slug(name: str) -> str:
    """A folder name for a protocol name (names may hold any character)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:80] or "protocol"


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _cell(value: Any) -> str:
    return escape(value)  # a cell that is Markup already stays as it is


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], labels: int = 1) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{_cell(c)}</td>" if k < labels else f'<td class="num">{_cell(c)}</td>'
            for k, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f'<table class="data"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _figure(name: str, alt: str, caption: str) -> str:
    return (
        f'<figure><a href="{name}"><img src="{name}" alt="{escape(alt)}"></a>'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


def _matrix(rows: Sequence[Sequence[float]]) -> str:
    n = len(rows)
    return _table(
        ["sender \\ recipient", *map(str, range(n))],
        [[str(i), *(_num(v, 1) for v in row)] for i, row in enumerate(rows)],
    )


def draw_figures(portrait: Portrait, folder: Path) -> list[str]:
    """The portrait's PNGs in ``folder``; the names written."""
    names = []
    for name, draw in (
        ("coverage.png", plots.coverage_figure),
        ("flow.png", plots.flow_figure),
        ("flow_thirds.png", plots.flow_thirds_figure),
        ("content.png", plots.content_figure),
        ("agents.png", plots.agents_figure),
        ("metrics.png", plots.metrics_figure),
    ):
        if draw(portrait, folder / name) is not None:
            names.append(name)
    return names


def _summary(p: Portrait) -> str:
    coverage = [
        [plots.LABELS[c], _num(p.coverage[c]["mean"][-1]), _num(p.coverage[c]["sem"][-1]),
         _num(p.agents[c]["mean_inventory"][-1]), _num(p.agents[c]["jaccard"][-1], 3),
         _num(p.agents[c]["remake_fraction"], 3)]
        for c in CONDITIONS
    ]  # fmt: skip
    whole, ablation = p.content["whole_game"], p.content["ablation_whole_game"]
    content = [
        [label, _num(whole[key], digits), _num(ablation[key], digits)]
        for key, label, digits in (
            ("delivered", "memories delivered per simulation", 1),
            ("success_share", "share that are successes", 3),
            ("rarity", "rarity of their results (1 − share of agents owning it)", 3),
            ("lacks_result", "share of successes whose result the recipient lacks", 3),
            ("has_0", "share where the recipient owns 0 of the ingredients", 3),
            ("has_1", "… owns 1", 3),
            ("has_2", "… owns both (it can make the pair)", 3),
            ("resend_share", "share re-sent (recipe delivered to it before)", 3),
        )
    ]
    return (
        "<h3>At the end of the game</h3>"
        + _table(
            [
                "condition",
                "final coverage",
                "± sem",
                "mean inventory",
                "Jaccard distance",
                "re-made received recipe",
            ],
            coverage,
        )
        + _accounting(p)
        + "<h3>What it delivered, whole game</h3>"
        + _table(["measure", "protocol", "its ablation"], content)
    )


WAY_LABELS = {
    "remake": "re-made a recipe it was sent",
    "alone": "nothing received usable (as in asocial play)",
    "borrowed": "used a received element it lacks",
    "steered": "steered by the social bias to a received element it owns",
    "anyway": "received elements, own pair chosen without the bias",
}


def _accounting(p: Portrait) -> str:
    """Where the elements come from: per way of choosing, new elements for the group /
    attempts, and the way's contribution to the gain over asocial play."""
    if p.accounting is None:
        return ""
    conditions = [c for c in CONDITIONS if c != "asocial"]
    rows = []
    for way, label in WAY_LABELS.items():
        row: list[Any] = [label]
        for c in conditions:
            cell = p.accounting[c][way]
            row += [f"{cell['group']:.1f} / {cell['attempts']:.0f}", f"{cell['contribution']:+.1f}"]
        rows.append(row)
    headers = ["attempts that…"]
    for c in conditions:
        headers += [f"{plots.LABELS[c]}: new for the group / attempts", "contribution"]
    return (
        "<h3>Where the elements come from</h3>"
        + _table(headers, rows)
        + "<p>Each attempt, per simulation, by how it was chosen. <em>New for the group</em>: "
        "elements nobody had found; <em>contribution</em>: those minus what the same attempts "
        "found in asocial play at the same steps, on the same seeds. The contributions add up "
        "to the gain over asocial play.</p>"
    )


def portrait_page(p: Portrait, figures: Sequence[str], back: tuple[str, str] | None) -> str:
    """The HTML of one portrait; ``back``: (href, text) of the page above it."""
    settings = p.settings
    agents = settings.get("population") or settings.get("agent_type", "")
    about = [
        ("protocol", escape(p.name)),
        ("from", escape(p.origin)),
        ("simulations", escape(f"{len(p.seeds)} (seeds {', '.join(map(str, p.seeds))})")),
        ("game", escape(f"{p.n_agents} agents ({agents}), {p.n_steps} steps")),
    ]
    nav = " ".join(
        f'<a href="#{k}">{escape(v)}</a>'
        for k, v in (("coverage", "Coverage"), ("flow", "Flow"), ("content", "Content"),
                     ("agents", "Agents"), ("metrics", "Metrics"), ("source", "Source"))
    )  # fmt: skip
    parts = []
    if back:
        parts.append(f'<p><a href="{escape(back[0])}">&larr; {escape(back[1])}</a></p>')
    parts += [f"<h1>Portrait of {escape(p.name)}</h1>", facts(about), f"<nav>{nav}</nav>"]
    if p.docstring:
        # Its first paragraph says what it does; the rest (rules, reasons) opens on demand.
        first, _, rest = p.docstring.strip().partition("\n\n")
        parts.append(f'<p class="docstring">{escape(first)}</p>')
        if rest.strip():
            parts.append(
                f'<details><summary>The rest of its docstring</summary><p class="docstring">'
                f"{escape(rest.strip())}</p></details>"
            )
    parts.append(_summary(p))
    parts.append('<section id="coverage"><h2>Coverage beside its ablation and asocial play</h2>')
    parts.append(_figure("coverage.png", "coverage curves", CAPTIONS["coverage"]) + "</section>")
    parts.append('<section id="flow"><h2>Flow: who sent to whom</h2>')
    parts.append(_figure("flow.png", "flow matrices", CAPTIONS["flow"]))
    parts.append(_figure("flow_thirds.png", "flow per third", CAPTIONS["flow_thirds"]))
    similarity = p.flow.get("early_late_similarity")
    parts.append(
        f"<p>Early against late routing: cosine similarity {_num(similarity)} (1: the same "
        "pairs carry the same shares of the traffic; lower: the routing moved).</p>"
    )
    parts.append("<details><summary>The matrices as numbers (mean per simulation)</summary>")
    parts.append("<h3>Successes</h3>" + _matrix(p.flow["successes"]))
    parts.append("<h3>Failures</h3>" + _matrix(p.flow["failures"]))
    for label in THIRDS:
        parts.append(f"<h3>All, {label} third</h3>" + _matrix(p.flow["thirds"][label]))
    parts.append("</details></section>")
    parts.append('<section id="content"><h2>Content over the game</h2>')
    parts.append(_figure("content.png", "content over steps", CAPTIONS["content"]) + "</section>")
    parts.append('<section id="agents"><h2>The agents</h2>')
    parts.append(_figure("agents.png", "agents over steps", CAPTIONS["agents"]) + "</section>")
    parts.append('<section id="metrics"><h2>get_logs() metrics over steps</h2>')
    if "metrics.png" in figures:
        rows = [
            [name, m["description"], _num(next(
                (v for v in reversed(m["mean_per_step"]) if v is not None), None))]
            for name, m in p.metrics.items()
        ]  # fmt: skip
        parts.append(_figure("metrics.png", "get_logs metrics", CAPTIONS["metrics"]))
        parts.append(_table(["metric", "description", "last value"], rows, labels=2))
    else:
        parts.append("<p>This protocol reports no numeric metric through get_logs().</p>")
    parts.append("</section>")
    parts.append('<section id="source"><h2>Source</h2>')
    code = highlight(p.source, PythonLexer(), CODE_FORMATTER) if p.source else "<p>none</p>"
    parts.append(code + "</section>")
    return page(f"Portrait of {p.name}", "\n".join(parts), STYLE)


def write_portrait(
    portrait: Portrait,
    folder: Path,
    back: tuple[str, str] | None = None,
    root: Path | None = None,
) -> Path:
    """``folder/index.html``, its figures and ``portrait.json``; returns the page. The
    folder is reached from ``root`` (default: the folder above it) without following a
    link, and a file there that is a link is replaced."""
    make_dirs(folder, root if root is not None else folder.parent)
    figures = draw_figures(portrait, folder)
    write_file(folder / DATA, json.dumps(portrait.to_json(), indent=1))
    return write_file(folder / "index.html", portrait_page(portrait, figures, back))


def read_portrait(folder: Path) -> Portrait | None:
    """The portrait stored in ``folder`` (None: none, unreadable, or not one tpdisc could
    have written: see :meth:`Portrait.from_json`), not read through a link."""
    try:
        data = read_capped(folder / DATA, MAX_DATA_BYTES, root=folder.parent)
        return Portrait.from_json(json.loads(data))
    except (TpdiscError, ValueError, RecursionError):
        return None


def write_portraits(
    portraits: Sequence[Portrait], out: Path, back: tuple[str, str] | None = None
) -> Path:
    """A folder per portrait under ``out`` and ``out/index.html`` setting them side by
    side; returns the index."""
    make_dirs(out)
    folders = []
    for p in portraits:
        name, k = slug(p.name), 2
        while name in folders:
            name, k = f"{slug(p.name)}-{k}", k + 1
        folders.append(name)
        write_portrait(p, out / name, ("../index.html", "all protocols"), out)
    rows = [
        [
            Markup(f'<a href="{f}/index.html">{escape(p.name)}</a>'),
            *(_num(p.coverage[c]["mean"][-1]) for c in CONDITIONS),
            _num(p.content["whole_game"]["delivered"], 1),
            _num(p.content["whole_game"]["lacks_result"], 3),
            _num(p.agents["protocol"]["jaccard"][-1], 3),
        ]
        for p, f in zip(portraits, folders, strict=True)
    ]
    head = ["protocol", "final coverage", "its ablation", "asocial", "delivered per game",
            "result lacked", "Jaccard at the end"]  # fmt: skip
    linked = _table(head, rows)
    parts = []
    if back:
        parts.append(f'<p><a href="{escape(back[0])}">&larr; {escape(back[1])}</a></p>')
    names = ", ".join(p.name for p in portraits)
    parts += [f"<h1>Protocols at work: {escape(names)}</h1>", linked]
    parts.append("<p>Each name opens the protocol's portrait: flow, content, agents, source.</p>")
    if len(portraits) > 1:
        plots.comparison_figure(portraits, out / "comparison.png")
        parts.append('<section id="side-by-side"><h2>Side by side</h2>')
        parts.append(_figure("comparison.png", "comparison", CAPTIONS["comparison"]))
        columns = f"repeat({len(portraits)}, 1fr)"
        for image, title in (("flow.png", "Flow"), ("content.png", "Content"),
                             ("agents.png", "Agents")):  # fmt: skip
            cells = "".join(
                f'<div><p><a href="{f}/index.html">{escape(p.name)}</a></p>'
                f'<a href="{f}/{image}"><img src="{f}/{image}" alt="{escape(p.name)} '
                f'{title.lower()}"></a></div>'
                for p, f in zip(portraits, folders, strict=True)
            )
            parts.append(f'<h3>{title}</h3><div class="grid" style="grid-template-columns: '
                         f'{columns}">{cells}</div>')  # fmt: skip
        parts.append("</section>")
    return write_file(
        out / "index.html", page(f"Protocols at work: {names}", "\n".join(parts), STYLE)
    )
