"""The browsable report of a study: ``DIR/report/index.html``, one section per stage with
its figures and numbers, and an archive browser per search run.

The report folder stands alone (it can be zipped and mailed): the figures and the exports
are copied into it and referred to relatively, the style is inline, nothing is fetched
from the network. A stage not done yet shows as such; rebuilding the report as the study
goes on fills it in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tpdisc.config_tree import flatten
from tpdisc.domain.data import default_graph
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import TpdiscError
from tpdisc.executors.base import Executor
from tpdisc.report.markup import Markup, bullets, link, note, table
from tpdisc.report.page import escape, page
from tpdisc.report.search_run import build_report
from tpdisc.safefiles import copy_file, regular_files, write_file
from tpdisc.search.archive import Archive
from tpdisc.study import sections
from tpdisc.study.config import StudyConfig
from tpdisc.study.exports import DESCRIPTIONS
from tpdisc.study.findings import findings
from tpdisc.study.layout import StudyDir
from tpdisc.study.portraits import StudyPortraits, relative, study_portraits
from tpdisc.study.runner import STAGE_NAMES, study_status
from tpdisc.study.sections import View

# The settings that say how large a study is; the rest is in study.yaml.
CONFIG_KEYS = (
    "runs",
    "long_steps",
    "search.proposer",
    "search.llm.model",
    "search.iterations",
    "search.sims",
    "search.sim.n_agents",
    "search.sim.n_steps",
    "search.sim.agent_type",
    "search.sim.variant.name",
    "baselines.protocols",
    "baselines.sims",
    "best.sims",
    "ablation.runs",
    "ablation.top",
    "ablation.bottom",
    "ablation.sims",
    "features.runs",
    "features.sims",
    "volume.runs",
    "volume.sims",
    "embeddings.runs",
    "embeddings.backend",
    "generalization.runs",
    "generalization.settings",
    "generalization.baselines",
    "generalization.sims",
    "executor.kind",
)
# id, heading, the stage whose result the section needs, what it shows.
SECTIONS: tuple[tuple[str, str, str, Callable[[View], Markup]], ...] = (
    ("performance", "Performance", "baselines", sections.performance),
    ("search", "Search", "search", sections.search),
    ("ablation", "State-awareness ablation", "ablation", sections.ablation),
    ("features", "Behavioural features", "features", sections.features),
    ("volume", "Volume of transmission", "volume", sections.volume),
    ("generalization", "Generalization", "generalization", sections.generalization),
    ("embeddings", "Code embeddings", "embeddings", sections.embeddings),
)
# Wider than a run's browser: a figure and its table side by side. A table too wide to sit
# beside its figure wraps under it (its flex basis is its natural width).
STYLE = """
body { max-width: 88em; }
nav a { margin-right: 1em; }
section { border-top: 1px solid #ccc; margin-top: 2em; }
table.data { border-collapse: collapse; margin: .5em 0; }
table.data th, table.data td { padding: .2em .6em; border-bottom: 1px solid #ddd; }
table.data th { background: #f4f4f4; text-align: left; }
.pair { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.pair > div { flex: 1 1 auto; min-width: 0; overflow-x: auto; }
.pair > div:has(> figure) { flex: 1 1 30em; max-width: 60em; }
.pair > div.text { flex: 1 1 24em; max-width: 36em; }
td.num { white-space: nowrap; }
figure { margin: 0 0 1em 0; }
figure img { max-width: 100%; height: auto; }
p.note, figcaption.note { color: #555; }
figcaption { max-width: 50em; }
"""
BROWSERS = "runs"
OVERVIEW = "Stages, exports and settings"


def _copy(folder: StudyDir, source: Path, target: Path, suffix: str = "") -> list[str]:
    """Copy the files of ``source`` whose names end with ``suffix`` into ``target``; their
    names. Both are the study's own: a link in either is refused, never followed."""
    folder.folder(target)
    names = []
    for path in regular_files(source, folder.root, suffix):
        copy_file(path, target / path.name, source_root=folder.root, target_root=folder.root)
        names.append(path.name)
    return names


def _browsers(
    folder: StudyDir, search: dict[str, Any] | None, out: Path, portraits: Mapping[str, str]
) -> dict[str, str]:
    """An archive browser per run of a finished search; label -> its folder. A run whose
    best protocol has a portrait links to it."""
    found: dict[str, str] = {}
    for run in search["runs"] if search else []:
        label, run_dir = folder.run_folder(run)
        linked = {}
        best = run.get("best")
        best_id = best.get("id") if isinstance(best, dict) else None
        if label in portraits and isinstance(best_id, int) and not isinstance(best_id, bool):
            linked[best_id] = relative(portraits[label], 2)
        with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
            build_report(
                archive,
                run_dir,
                out / BROWSERS / label,
                ("../../index.html", "study report"),
                portraits=linked,
                root=folder.root,
            )
        found[label] = f"{BROWSERS}/{label}"
    return found


def _overview(folder: StudyDir, exports: list[str]) -> Markup:
    config = StudyConfig.from_dict(folder.settings(), str(folder.config))
    flat = flatten(config.to_dict())
    settings = table(
        ["setting", "value"],
        ([key, flat[key]] for key in CONFIG_KEYS if flat.get(key) is not None),
        labels=2,
    )
    stages = table(
        ["stage", "state", "detail"],
        ([s.name, s.state, s.detail] for s in study_status(folder.root) if s.name != "report"),
        labels=3,
    )
    by_table: dict[str, list[Markup]] = {}
    for name in exports:
        by_table.setdefault(Path(name).stem, []).append(
            link(f"exports/{name}", Path(name).suffix[1:])
        )
    files = [
        Markup(f"{escape(t)} ({', '.join(links)}): {escape(DESCRIPTIONS.get(t, ''))}")
        for t, links in by_table.items()
    ]
    return Markup(
        '<div class="pair">'
        f"<div><h3>Stages</h3>{stages}<h3>Exports</h3>"
        f"{bullets(files) if files else note('No table yet.')}"
        f"{note('Long-format tables for pandas or R (empty CSV cells: missing values).')}"
        f"</div><div><h3>Settings</h3>{settings}"
        f"{note('All of them: study.yaml in the study folder.')}</div></div>"
    )


def _section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}">\n<h2>{escape(title)}</h2>\n{body}\n</section>'


def _portraits(
    folder: StudyDir,
    best: dict[str, Any] | None,
    graph: RecipeGraph | None,
    executor: Executor | None,
    on_simulation: Callable[[str], None] | None,
) -> StudyPortraits:
    config = StudyConfig.from_dict(folder.settings(), str(folder.config))
    if best is None:
        return StudyPortraits()
    if graph is None:
        try:
            graph = default_graph(config.recipes)
        except TpdiscError:
            graph = None
    if executor is not None:
        return study_portraits(folder, config, best, graph, executor, on_simulation)
    with config.executor.open() as pool:
        return study_portraits(folder, config, best, graph, pool, on_simulation)


def _agents_line(folder: StudyDir) -> Markup:
    """Who played: every number of a study means what its agent model makes of it."""
    sim = StudyConfig.from_dict(folder.settings(), str(folder.config)).search.sim
    agents = ", ".join(f"{n} {kind}" for kind, n in sim.agents)
    text = f"{agents} agents, {sim.n_steps} steps"
    if any(kind == "empowerment" for kind, _ in sim.agents):
        model = sim.params.empowerment
        text += f"; empowerment model {model.label}, prior seed {model.prior.seed}"
    return Markup("<p>{}.</p>").format(text)


def build_study_report(
    folder: StudyDir,
    graph: RecipeGraph | None = None,
    executor: Executor | None = None,
    on_simulation: Callable[[str], None] | None = None,
) -> Path:
    """Write ``DIR/report/`` from what the study has done so far; returns its index.

    The best protocols' portraits are made here (a few seeds each, on ``executor``, by
    default the study's; ``on_simulation`` is told of each seed), or reused from the
    previous build when nothing they depend on changed."""
    out = folder.folder(folder.report)
    figures = set(_copy(folder, folder.figures, out / "figures", ".png"))
    exports = _copy(folder, folder.exports, out / "exports")
    results = {name: folder.read_result(name) for name in STAGE_NAMES}
    portraits = _portraits(folder, results["best"], graph, executor, on_simulation)
    browsers = _browsers(folder, results["search"], out, portraits.pages)
    view = View(results, figures, browsers, portraits.pages)
    with folder.reading(*(name for name in STAGE_NAMES if results[name] is not None)):
        found = findings(view, portraits.pages)
    first = _agents_line(folder) + found + bullets(portraits.notes)
    parts = [_section("findings", "Findings", first)]
    for ident, title, stage, draw in SECTIONS:
        if results[stage] is None:
            body = note(f"The {stage} stage: not run yet.")
        else:
            with folder.reading(stage):
                body = draw(view)
        parts.append(_section(ident, title, body))
    # The making of the study last: a reader comes for its results.
    parts.append(_section("overview", OVERVIEW, _overview(folder, exports)))
    nav = " ".join(
        f'<a href="#{ident}">{escape(title)}</a>'
        for ident, title, *_ in [("findings", "Findings"), *SECTIONS, ("overview", OVERVIEW)]
    )
    name = folder.root.resolve().name
    built = datetime.now(UTC).isoformat(timespec="seconds")
    html = (
        f"<h1>Findings of the study in {escape(name)}/</h1>\n"
        f"<p>Built {escape(built)} from {escape(folder.root.resolve())}.</p>\n"
        f"<nav>{nav}</nav>\n" + "\n".join(parts)
    )
    return write_file(out / "index.html", page(f"{name}: study report", html, STYLE), folder.root)
