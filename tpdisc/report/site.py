"""A self-contained HTML browser of one search run: ``index.html`` with the run summary,
the best-fitness figure and a sortable protocol table, and ``protocols/<id>.html`` per
protocol with its highlighted code, lineage and diff against its parent.

Everything read from the archive is untrusted (an LLM wrote it), so every text goes
through :func:`html.escape` or pygments, which escapes too. Nothing is fetched from the
network: the CSS and the sorting script are inline, the figure is a PNG beside the page.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

from tpdisc.report.page import CODE_FORMATTER
from tpdisc.report.page import escape as _e
from tpdisc.report.page import facts as _facts
from tpdisc.report.page import page as _page
from tpdisc.search.archive import Archive, Candidate, CandidateSummary
from tpdisc.search.loop import CONFIG_FILE
from tpdisc.search.plots import best_fitness_figure
from tpdisc.search.prompts import format_fitness
from tpdisc.search.report import totals_line

FIGURE = "best_fitness.png"
PROTOCOLS = "protocols"
# The settings a reader needs to tell runs apart; the rest is in config.yaml itself.
CONFIG_KEYS = (
    "proposer",
    "iterations",
    "warmup",
    "sims",
    "seed",
    "sim.n_agents",
    "sim.n_steps",
    "sim.agent_type",
    "sim.variant.name",
    "executor.kind",
    "llm.model",
)
_DIFF_FORMATTER = HtmlFormatter(cssclass="hl")
# Sorts the table by the clicked column: numbers by data-sort, text otherwise; a second
# click on the same header reverses the order.
SORT_SCRIPT = """
document.querySelectorAll("table.protocols th").forEach((th, col) => {
  th.addEventListener("click", () => {
    const body = th.closest("table").tBodies[0];
    const up = th.dataset.dir !== "asc";
    th.closest("tr").querySelectorAll("th").forEach(h => delete h.dataset.dir);
    th.dataset.dir = up ? "asc" : "desc";
    const key = td => td.dataset.sort !== undefined ? parseFloat(td.dataset.sort) : td.textContent;
    const rows = Array.from(body.rows);
    rows.sort((a, b) => {
      const x = key(a.cells[col]), y = key(b.cells[col]);
      const c = typeof x === "number" ? (x - y) || 0 : String(x).localeCompare(String(y));
      return up ? c : -c;
    });
    rows.forEach(r => body.appendChild(r));
  });
});
"""


def build_report(
    archive: Archive,
    run_dir: Path,
    out: Path,
    back: tuple[str, str] | None = None,
    portraits: Mapping[int, str] | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """Write the report of ``archive`` (the run in ``run_dir``) to ``out``; returns the
    path of ``index.html``. ``back``, (href relative to ``out``, text), links the index
    up to the page that holds this run, such as a study's report. ``portraits``: the
    portrait pages of some protocols (id -> href relative to ``out``), linked from the
    index and their pages; ``notes``: lines shown under the summary."""
    out = Path(out)
    portraits = dict(portraits or {})
    (out / PROTOCOLS).mkdir(parents=True, exist_ok=True)
    rows = archive.summaries()
    known = {c.id for c in rows}
    best_fitness_figure(archive, out / FIGURE)
    index = out / "index.html"
    index.write_text(_index(archive, Path(run_dir), rows, back, portraits, notes), encoding="utf-8")
    codes: dict[int, str | None] = {}
    for summary in rows:
        candidate = archive.get(summary.id)
        parent = _parent_code(archive, candidate, known, codes)
        page = out / PROTOCOLS / f"{summary.id}.html"
        portrait = portraits.get(summary.id)
        up = None if portrait is None else _up(portrait)
        page.write_text(_protocol_page(candidate, parent, known, up), encoding="utf-8")
    return index


def _up(href: str) -> str:
    """``href`` (relative to the report's folder) as seen from a protocol page."""
    return href if "://" in href or href.startswith("/") else f"../{href}"


def _parent_code(
    archive: Archive, candidate: Candidate, known: set[int], codes: dict[int, str | None]
) -> str | None:
    # Many children share a parent: read each parent's code once.
    parent_id = candidate.parent_id
    if parent_id is None or parent_id not in known:
        return None
    if parent_id not in codes:
        codes[parent_id] = archive.get(parent_id).code
    return codes[parent_id]


def _config_facts(run_dir: Path) -> list[tuple[str, str]]:
    path = run_dir / CONFIG_FILE
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    facts = []
    for key in CONFIG_KEYS:
        value: Any = config
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            facts.append((key, str(value)))
    return facts


def _index(
    archive: Archive,
    run_dir: Path,
    rows: list[CandidateSummary],
    back: tuple[str, str] | None,
    portraits: Mapping[int, str],
    notes: Sequence[str],
) -> str:
    stats = archive.stats()
    best = (
        f"{stats.best_fitness:.3f} ({_e(stats.best_name)})"
        if math.isfinite(stats.best_fitness)
        else "none scored"
    )
    summary = [("run", _e(run_dir)), ("totals", _e(totals_line(archive))), ("best fitness", best)]
    names = {c.id: c.name for c in rows}
    if portraits:
        links = ", ".join(
            f'<a href="{_e(href)}">{_e(names.get(pid, pid))}</a>' for pid, href in portraits.items()
        )
        summary.append(("at work", f"{links} (flow, content, agents over a game)"))
    config = _config_facts(run_dir)
    config_html = _facts((k, _e(v)) for k, v in config) if config else f"<p>no {CONFIG_FILE}</p>"
    headers = ["id", "name", "iteration", "mode", "status", "fitness", "parent"]
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "\n".join(_row(c) for c in rows)
    up = f'<p><a href="{_e(back[0])}">&larr; {_e(back[1])}</a></p>\n' if back else ""
    return _page(
        f"tpdisc run {run_dir}",
        f"{up}<h1>Search run {_e(run_dir)}</h1>\n{_facts(summary)}\n"
        + "".join(f'<p class="description">{_e(n)}</p>\n' for n in notes)
        + f"<h2>Configuration</h2>\n{config_html}\n"
        f'<h2>Best fitness by iteration</h2>\n<img src="{FIGURE}" alt="best fitness by '
        f'iteration" width="700">\n'
        f"<h2>Protocols ({len(rows)})</h2>\n<p>Click a header to sort.</p>\n"
        f'<table class="protocols">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n'
        f"</tbody>\n</table>\n<script>{SORT_SCRIPT}</script>",
    )


def _row(c: CandidateSummary) -> str:
    # Unscored rows sort below every scored one; JavaScript's parseFloat reads "-Infinity",
    # not Python's "-inf".
    score = c.fitness_mean if c.fitness_mean is not None else "-Infinity"
    parent = (
        f'<a href="{PROTOCOLS}/{c.parent_id}.html">{c.parent_id}</a>'
        if c.parent_id is not None
        else ""
    )
    cells = [
        f'<td class="num" data-sort="{c.id}">{c.id}</td>',
        f'<td><a href="{PROTOCOLS}/{c.id}.html">{_e(c.name)}</a></td>',
        f'<td class="num" data-sort="{c.iteration}">{c.iteration}</td>',
        f"<td>{_e(c.mode)}</td>",
        f"<td>{_e(c.status)}</td>",
        f'<td class="num" data-sort="{score}">{_e(format_fitness(c))}</td>',
        f'<td class="num" data-sort="{c.parent_id if c.parent_id is not None else -1}">'
        f"{parent}</td>",
    ]
    css = "" if c.status == "valid" else ' class="invalid"'
    return f"<tr{css}>{''.join(cells)}</tr>"


def _link(protocol_id: int | None, known: set[int]) -> str:
    if protocol_id is None:
        return ""
    if protocol_id not in known:
        return str(protocol_id)
    return f'<a href="{protocol_id}.html">{protocol_id}</a>'


def _protocol_page(
    c: Candidate, parent_code: str | None, known: set[int], portrait: str | None = None
) -> str:
    assert c.id is not None  # rows read back from the archive always have one
    facts = [
        ("id", str(c.id)),
        ("status", _e(c.status)),
        ("mode", _e(c.mode)),
        ("iteration", str(c.iteration)),
        ("fitness", _e(format_fitness(c))),
        ("proposer", _e(c.proposer) + (f" ({_e(c.model)})" if c.model else "")),
        ("parent", _link(c.parent_id, known) or "none"),
        # Parent first, then its ancestors: a path up to the seed.
        ("lineage", " &larr; ".join(_link(i, known) for i in c.lineage) or "none"),
    ]
    if portrait is not None:
        facts.append(
            ("at work", f'<a href="{_e(portrait)}">portrait</a> (what it does over a game)')
        )
    if c.contrast_ids:
        facts.append(("contrasts", ", ".join(_link(i, known) for i in c.contrast_ids)))
    if c.repair_of is not None:
        facts.append(("repair of", _link(c.repair_of, known)))
    if c.duplicate_of is not None:
        facts.append(("same code as", _link(c.duplicate_of, known)))
    parts = [
        '<p><a href="../index.html">&larr; all protocols</a></p>',
        f"<h1>{_e(c.name)}</h1>",
        _facts(facts),
    ]
    if c.error:
        parts.append(f'<h2>Error</h2>\n<pre class="error">{_e(c.error)}</pre>')
    parts.append(
        f'<h2>Description</h2>\n<p class="description">{_e(c.description or "(none)")}</p>'
    )
    if c.logging:
        parts.append(f'<h2>Logging</h2>\n<p class="description">{_e(c.logging)}</p>')
    if c.reasoning:
        parts.append(f'<h2>Reasoning</h2>\n<p class="description">{_e(c.reasoning)}</p>')
    if c.code:
        parts.append(f"<h2>Code</h2>\n{highlight(c.code, PythonLexer(), CODE_FORMATTER)}")
    if c.code and parent_code:
        parts.append(_diff(parent_code, c.code, c.parent_id))
    return _page(f"{c.name} (id {c.id})", "\n".join(parts))


def _diff(parent_code: str, code: str, parent_id: int | None) -> str:
    lines = difflib.unified_diff(
        parent_code.splitlines(keepends=True),
        code.splitlines(keepends=True),
        fromfile=f"parent {parent_id}",
        tofile="this protocol",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if not text:
        return "<h2>Changes from the parent</h2>\n<p>The same code as its parent.</p>"
    return f"<h2>Changes from the parent</h2>\n{highlight(text, DiffLexer(), _DIFF_FORMATTER)}"
