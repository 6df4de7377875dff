"""A study's results for readers: the export tables, then the report that links them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.study.exports import write_exports
from tpdisc.study.layout import StudyDir
from tpdisc.study.report import build_study_report
from tpdisc.study.runner import hold_study


def publish(
    folder: StudyDir,
    graph: RecipeGraph | None = None,
    on_simulation: Callable[[str], None] | None = None,
) -> Path:
    """Write ``DIR/exports/`` and ``DIR/report/`` from what the study has done so far;
    returns the report's index. ``graph``: the study's recipe graph, when loaded already;
    ``on_simulation``: told of each seed simulated for the best protocols' portraits."""
    with hold_study(folder):
        write_exports(folder, graph)
        return build_study_report(folder, graph, on_simulation=on_simulation)
