"""Portraits of a study's best protocols (``DIR/best/LABEL.py``), for its report:
``report/portraits/LABEL/``, at the search's horizon, on the first seeds of the best stage.

Built with the report, from the data a previous build stored beside each page when it is
still the same protocol, simulation and seeds (see :mod:`tpdisc.report.best_portraits`),
else by simulating a few seeds on the study's executor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.errors import TpdiscError, excerpt
from tpdisc.executors.base import Executor
from tpdisc.report.best_portraits import PORTRAIT_SIMS, PORTRAITS, portrait_page
from tpdisc.safefiles import FileRefused, inside, safe_name
from tpdisc.sandbox import load_protocols
from tpdisc.study.config import StudyConfig
from tpdisc.study.layout import StudyDir


@dataclass(frozen=True)
class StudyPortraits:
    """The portrait pages made (run label -> href relative to the report), and why any
    best protocol has none."""

    pages: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def study_portraits(
    folder: StudyDir,
    config: StudyConfig,
    best: Mapping[str, Any] | None,
    graph: RecipeGraph | None,
    executor: Executor,
    on_simulation: Callable[[str], None] | None = None,
) -> StudyPortraits:
    """A portrait per best protocol of the best stage's results ``best`` (None: the stage
    has not run, so no portrait); ``graph`` None when the recipe data is not at hand."""
    if best is None:
        return StudyPortraits()
    if graph is None:
        return StudyPortraits(notes=("no portraits: the study's recipe data is not at hand",))
    sim = config.search.sim
    domain = make_domain(graph, sim.variant)
    seeds = list(range(min(PORTRAIT_SIMS, config.best.sims)))
    pages: dict[str, str] = {}
    notes: list[str] = []
    for entry in best["protocols"]:
        label, file = entry.get("name"), entry.get("file")
        if not isinstance(file, str) or not file:
            continue
        # The study folder may come from anyone: the label names a folder of the report,
        # the file must be the study's own.
        if not isinstance(label, str) or safe_name(label) != label:
            notes.append(f"no portrait of {excerpt(label)}: its name is not a plain name")
            continue
        try:
            path = inside(folder.root, file, f"file of {label}")
        except FileRefused as err:
            notes.append(f"no portrait of {label}: {err}")
            continue
        if not path.is_file():  # inside() refused a link: this is the study's own file
            continue
        try:
            (spec,) = load_protocols([str(path)], sandbox=config.search.sandbox)
            target = folder.report / PORTRAITS / label
            name = f"{label} ({entry.get('protocol', spec.name)})"
            portrait_page(name, spec, domain, sim, seeds, target, executor,
                          ("../../index.html", "study report"), on_simulation,
                          folder.root)  # fmt: skip
        except TpdiscError as err:
            notes.append(f"no portrait of {label}: {err}")
            continue
        pages[label] = f"{PORTRAITS}/{label}/index.html"
    return StudyPortraits(pages, tuple(notes))


def portrait_count(best: Mapping[str, Any] | None, config: StudyConfig) -> int:
    """Simulations (seeds) the portraits may need, for a progress bar."""
    if best is None:
        return 0
    return len(best["protocols"]) * min(PORTRAIT_SIMS, config.best.sims)


def relative(href: str, depth: int) -> str:
    """``href`` (relative to the report) from a page ``depth`` folders below it."""
    return str(Path(*([".."] * depth), href)) if depth else href
