"""A self-contained HTML browser of one search run: ``index.html`` with the run summary,
the best-fitness figure and a sortable protocol table, and ``protocols/<name>.html`` per
protocol (the name the command line uses, such as ``i0009``; see
:func:`tpdisc.search.listing.labels`) with its highlighted code, lineage and diff against
its parent.

Everything read from the archive is untrusted (an LLM wrote it, or whoever sent the run
folder): the archive checks every value it reads, and the pages are Jinja2 templates
(:mod:`tpdisc.report.templates`) that escape every one; code is highlighted by pygments,
which escapes too. Nothing is fetched from the
network: the CSS and the sorting script are inline, the figure is a PNG beside the page.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

from tpdisc.config_tree import read_yaml
from tpdisc.errors import ConfigError
from tpdisc.report.page import CODE_FORMATTER, STYLE
from tpdisc.report.templates import render
from tpdisc.safefiles import make_dirs, write_file
from tpdisc.search.archive import Archive, Candidate, CandidateSummary, Rescore
from tpdisc.search.listing import fresh_caption, fresh_text, labels, totals_line
from tpdisc.search.loop import CONFIG_FILE
from tpdisc.search.pick import run_pick
from tpdisc.search.plots import best_fitness_figure
from tpdisc.search.prompts import format_fitness

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
    "sim.params.empowerment.name",
    "sim.params.empowerment.beta",
    "sim.variant.name",
    "executor.kind",
    "llm.model",
)
_DIFF_FORMATTER = HtmlFormatter(cssclass="hl")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
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


def page_name(name: str, protocol_id: int) -> str:
    """The file of a protocol's page: its name, as ``tpdisc archive`` prints it, when that
    makes a plain file name (an archive from elsewhere may hold any name)."""
    return f"{name}.html" if _SAFE_NAME.fullmatch(name) else f"protocol-{protocol_id}.html"


def page_names(names: Mapping[int, str]) -> dict[int, str]:
    """Each protocol's page file, from its name (:func:`~tpdisc.search.listing.labels`)."""
    return {pid: page_name(name, pid) for pid, name in names.items()}


def build_report(
    archive: Archive,
    run_dir: Path,
    out: Path,
    back: tuple[str, str] | None = None,
    portraits: Mapping[int, str] | None = None,
    notes: Sequence[str] = (),
    root: Path | None = None,
) -> Path:
    """Write the report of ``archive`` (the run in ``run_dir``) to ``out``; returns the
    path of ``index.html``. ``back``, (href relative to ``out``, text), links the index
    up to the page that holds this run, such as a study's report. ``portraits``: the
    portrait pages of some protocols (id -> href relative to ``out``), linked from the
    index and their pages; ``notes``: lines shown under the summary. ``root``: the folder
    ``out`` is in (a run's or a study's), from which no link is followed to reach it
    (default: ``out`` is the user's own path)."""
    out = Path(out)
    portraits = dict(portraits or {})
    archive.check_rows()  # a bad row refuses the report before any page of it is written
    make_dirs(out, root)
    make_dirs(out / PROTOCOLS, out)
    rows = archive.summaries()
    names = labels(rows)
    pages = page_names(names)
    rescores = archive.rescores()
    best_fitness_figure(archive, out / FIGURE)
    index = write_file(
        out / "index.html",
        _index(archive, Path(run_dir), rows, back, names, pages, rescores, portraits, notes),
    )
    codes: dict[int, str | None] = {}
    for summary in rows:
        candidate = archive.get(summary.id)
        parent = _parent_code(archive, candidate, pages, codes)
        page = out / PROTOCOLS / pages[summary.id]
        portrait = portraits.get(summary.id)
        up = None if portrait is None else _up(portrait)
        html = _protocol_page(candidate, parent, names, pages, rescores.get(summary.id), up)
        write_file(page, html)
    return index


def _up(href: str) -> str:
    """``href`` (relative to the report's folder) as seen from a protocol page."""
    return href if "://" in href or href.startswith("/") else f"../{href}"


def _parent_code(
    archive: Archive,
    candidate: Candidate,
    known: Mapping[int, str],
    codes: dict[int, str | None],
) -> str | None:
    # Many children share a parent: read each parent's code once.
    parent_id = candidate.parent_id
    if parent_id is None or parent_id not in known:
        return None
    if parent_id not in codes:
        codes[parent_id] = archive.get(parent_id).code
    return codes[parent_id]


def _config_facts(run_dir: Path) -> list[tuple[str, str]]:
    try:
        config = read_yaml(run_dir / CONFIG_FILE, run_dir)
    except ConfigError:
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
    names: Mapping[int, str],
    pages: Mapping[int, str],
    rescores: Mapping[int, Rescore],
    portraits: Mapping[int, str],
    notes: Sequence[str],
) -> str:
    stats = archive.stats()
    summary: list[tuple[str, object]] = [
        ("run", run_dir),
        ("totals", totals_line(archive)),
    ]
    if math.isfinite(stats.best_fitness):
        # "Best" is the run's pick, as everywhere: the best on fresh seeds where any were
        # re-scored; the highest fitness on the search's own seeds is partly luck.
        pick = run_pick(archive)
        summary.append(("best protocol", f"{pick.name}: {pick.why()}"))
        summary.append(
            (
                "highest fitness",
                f"{stats.best_fitness:.3f} ({stats.best_name}, on the search's own seeds)",
            )
        )
    else:
        summary.append(("best protocol", "none scored"))
    if rescores:
        summary.append(("fresh seeds", fresh_caption(rescores)))
    headers = ["protocol", "iteration", "mode", "status", "fitness"]
    headers += ["fresh seeds"] if rescores else []
    headers += ["parent"]
    return render(
        "run_index.html",
        title=f"tpdisc run {run_dir}",
        style=Markup(STYLE),
        back=back,
        run_dir=run_dir,
        summary=summary,
        config=_config_facts(run_dir),
        config_file=CONFIG_FILE,
        figure=FIGURE,
        at_work=[(href, names.get(pid, pid)) for pid, href in portraits.items()],
        notes=list(notes),
        headers=headers,
        fresh=bool(rescores),
        rows=[_row(c, names, pages, rescores) for c in rows],
        protocols=PROTOCOLS,
        script=Markup(SORT_SCRIPT),
    )


def _row(
    c: CandidateSummary,
    names: Mapping[int, str],
    pages: Mapping[int, str],
    rescores: Mapping[int, Rescore],
) -> dict[str, Any]:
    fresh = rescores.get(c.id)
    return {
        "order": c.id,  # the name column sorts in the order protocols were made
        "name": names[c.id],
        "page": pages[c.id],
        "iteration": c.iteration,
        "mode": c.mode,
        "status": c.status,
        # Unscored rows sort below every scored one; JavaScript's parseFloat reads
        # "-Infinity", not Python's "-inf".
        "score": c.fitness_mean if c.fitness_mean is not None else "-Infinity",
        "fitness": format_fitness(c),
        "fresh": fresh_text(fresh),
        "fresh_sort": fresh.mean if fresh is not None else "-Infinity",
        "parent": names.get(c.parent_id, "?") if c.parent_id is not None else None,
        "parent_page": pages.get(c.parent_id) if c.parent_id is not None else None,
        "parent_sort": c.parent_id if c.parent_id is not None else -1,
    }


def _protocol_page(
    c: Candidate,
    parent_code: str | None,
    names: Mapping[int, str],
    known: Mapping[int, str],
    fresh: Rescore | None,
    portrait: str | None = None,
) -> str:
    assert c.id is not None  # rows read back from the archive always have one
    name = names[c.id]
    seeds = f" over seeds {c.seeds[0]}..{c.seeds[-1]}" if c.seeds else ""
    fresh_seeds = (
        f"{fresh_text(fresh)} over seeds {fresh.seeds[0]}..{fresh.seeds[-1]}, "
        "which the search never used"
        if fresh is not None
        else None
    )
    code = Markup(highlight(c.code, PythonLexer(), CODE_FORMATTER)) if c.code else None
    diff = None
    if c.code and parent_code and c.parent_id is not None:  # a parent in the archive
        diff = _diff(parent_code, c.code, names.get(c.parent_id, "?"))
    return render(
        "protocol.html",
        title=name,
        style=Markup(STYLE),
        c=c,
        label=name,
        names=names,
        known=known,
        fitness=format_fitness(c) + seeds,
        fresh=fresh_seeds,
        portrait=portrait,
        code=code,
        diff=diff,
    )


def _diff(parent_code: str, code: str, parent: str) -> Markup:
    """The highlighted unified diff from the parent's code; empty when they are the same."""
    lines = difflib.unified_diff(
        parent_code.splitlines(keepends=True),
        code.splitlines(keepends=True),
        fromfile=f"parent {parent}",
        tofile="this protocol",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    # pygments escapes the text it highlights.
    return Markup(highlight(text, DiffLexer(), _DIFF_FORMATTER)) if text else Markup()
