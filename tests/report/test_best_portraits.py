"""Portraits of a run's best protocols in ``tpdisc report``: built, linked both ways, and
reused from the stored data when the report is rebuilt."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.report import test_search_run
from tpdisc.analysis import portrait
from tpdisc.cli import app
from tpdisc.executors.make import make_executor
from tpdisc.report import best_portraits
from tpdisc.report.portrait_pages import read_portrait
from tpdisc.search.archive import Archive
from tpdisc.search.listing import labels

run_dir = test_search_run.run_dir
runner = CliRunner()


def best_name(run: Path) -> str:
    """The best protocol's name, as the command line prints it (i0003)."""
    with Archive(run / Archive.FILE_NAME, readonly=True) as archive:
        names = labels(archive.summaries())
        rows = [c for c in archive.summaries(valid_only=True) if c.mode != "seed"]
    return names[max(rows, key=lambda c: (c.fitness, -c.id)).id]


def test_the_report_links_the_best_protocol_to_its_portrait(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report"
    recipes = run_dir.parent / "toy.json"
    args = ["report", str(run_dir), "--out", str(out), "--recipes", str(recipes)]
    result = runner.invoke(app, [*args, "--portrait-sims", "2"])
    assert result.exit_code == 0, result.output
    best = best_name(run_dir)
    # named as its page is, and as the command line names it: portraits/i0003, i0003.html
    page = out / "portraits" / best / "index.html"
    assert page.is_file()
    assert f'href="portraits/{best}/index.html"' in (out / "index.html").read_text()
    protocol_page = (out / "protocols" / f"{best}.html").read_text()
    assert f'href="../portraits/{best}/index.html"' in protocol_page
    assert 'href="../../index.html"' in page.read_text()
    stored = read_portrait(page.parent)
    assert stored is not None and list(stored.seeds) == [0, 1]

    def no_simulation(*args: object, **kwargs: object) -> None:
        raise AssertionError("the stored portrait should have been reused")

    monkeypatch.setattr(best_portraits, "build_portraits", no_simulation)
    result = runner.invoke(app, [*args, "--portrait-sims", "2"])
    assert result.exit_code == 0, result.output
    with pytest.raises(AssertionError, match="reused"):  # other seeds: a new portrait
        best_portraits.run_portraits(run_dir, out, make_executor("serial"), sims=1,
                                     recipes=recipes)  # fmt: skip


def test_without_the_run_s_recipes_the_report_says_why_it_has_no_portrait(
    run_dir: Path, tmp_path: Path, real_graph: object
) -> None:
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "is not this run" in (out / "index.html").read_text()
    assert not (out / "portraits").exists()


def test_no_portraits_when_asked_for_none(run_dir: Path, tmp_path: Path) -> None:
    pages, notes = best_portraits.run_portraits(run_dir, tmp_path, make_executor("serial"), top=0)
    assert (pages, notes) == ({}, [])
    assert portrait.PortraitTask  # the module the report builds portraits with
