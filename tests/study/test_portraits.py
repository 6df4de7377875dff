"""Portraits of a study's best protocols: one per best protocol, or a note saying why not."""

from __future__ import annotations

from pathlib import Path

from tpdisc.executors.make import make_executor
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


def test_stored_names_and_files_stay_inside_the_study(tmp_path: Path, toy_graph) -> None:
    folder, config = StudyDir(tmp_path / "study"), StudyConfig()
    folder.root.mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    (folder.root / "ok.py").write_text("x = 1\n")
    best = {
        "protocols": [
            {"name": "../../escaped", "file": "ok.py"},
            {"name": "evolve-1", "file": "../outside.py"},
        ]
    }
    got = study_portraits(folder, config, best, toy_graph, make_executor("serial"))
    assert got.pages == {}
    assert "not a plain name" in got.notes[0] and "leads out of this folder" in got.notes[1]
    assert not (tmp_path / "escaped").exists()
