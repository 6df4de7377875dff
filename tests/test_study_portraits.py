"""Portraits of a study's best protocols: one per best protocol, or a note saying why not."""

from __future__ import annotations

from pathlib import Path

from tpdisc.sim.executors import make_executor
from tpdisc.study.config import StudyConfig
from tpdisc.study.layout import StudyDir
from tpdisc.study.portraits import portrait_count, relative, study_portraits


def test_no_best_stage_no_portrait_and_no_data_a_note(tmp_path: Path) -> None:
    folder, config = StudyDir(tmp_path), StudyConfig()
    serial = make_executor("serial")
    assert study_portraits(folder, config, None, None, serial).pages == {}
    best = {"protocols": [{"name": "evolve-1", "file": "best/evolve-1.py"}]}
    got = study_portraits(folder, config, best, None, serial)
    assert got.pages == {} and "recipe data" in got.notes[0]
    assert portrait_count(None, config) == 0
    assert portrait_count(best, config) == 3


def test_relative_hrefs() -> None:
    assert relative("portraits/a/index.html", 0) == "portraits/a/index.html"
    assert relative("portraits/a/index.html", 2) == "../../portraits/a/index.html"
