"""Portraits of a run's best protocols in ``tpdisc report``: built, linked both ways, and
reused from the stored data when the report is rebuilt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.report import test_search_run
from tpdisc.analysis import portrait
from tpdisc.cli import app
from tpdisc.executors.make import make_executor
from tpdisc.report import best_portraits
from tpdisc.report.portrait_pages import read_portrait
from tpdisc.search.archive import Archive, code_hash
from tpdisc.search.pick import run_pick

run_dir = test_search_run.run_dir
runner = CliRunner()


def best_name(run: Path) -> str:
    """The best protocol's name, as the command line prints it (i0003): the run's pick."""
    with Archive(run / Archive.FILE_NAME, readonly=True) as archive:
        return run_pick(archive).name


def best_id(run: Path) -> int:
    with Archive(run / Archive.FILE_NAME, readonly=True) as archive:
        return run_pick(archive).protocol_id


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


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(n_steps=3_000_000_000),  # matched the settings: was a 22 GiB array
        lambda d: d["coverage"]["protocol"]["mean"].__setitem__(0, 10**400),
        lambda d: d["agents"].__setitem__("inventory_by_agent", [[1.0] * 10**6]),
    ],
)
def test_a_stored_portrait_that_no_simulation_made_is_rebuilt_not_trusted(
    run_dir: Path, tmp_path: Path, change: object
) -> None:
    out = tmp_path / "report"
    recipes = run_dir.parent / "toy.json"
    args = ["report", str(run_dir), "--out", str(out), "--recipes", str(recipes)]
    assert runner.invoke(app, [*args, "--portrait-sims", "2"]).exit_code == 0
    data = out / "portraits" / best_name(run_dir) / "portrait.json"
    stored = json.loads(data.read_text())
    change(stored)  # type: ignore[operator]
    data.write_text(json.dumps(stored))
    result = runner.invoke(app, [*args, "--portrait-sims", "2"])
    assert result.exit_code == 0, result.output
    rebuilt = json.loads(data.read_text())
    assert rebuilt["n_steps"] == rebuilt["settings"]["n_steps"] < 1_000
    assert rebuilt["coverage"]["protocol"]["mean"][0] < 1_000


def test_a_best_protocol_with_mathtext_in_its_metrics_is_drawn_as_written(
    run_dir: Path, tmp_path: Path
) -> None:
    from tests.cli.test_inspect import ODD_METRIC

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    best = best_id(copy)
    with Archive(copy / Archive.FILE_NAME) as archive:
        archive.db.execute(
            "UPDATE protocols SET code=?, code_sha256=? WHERE id=?",
            (ODD_METRIC, code_hash(ODD_METRIC), best),
        )
    out = tmp_path / "report"
    args = ["report", str(copy), "--out", str(out), "--recipes", str(run_dir.parent / "toy.json")]
    result = runner.invoke(app, [*args, "--portrait-sims", "1"])
    assert result.exit_code == 0, result.output
    folder = out / "portraits" / best_name(copy)
    assert (folder / "metrics.png").read_bytes().startswith(b"\x89PNG")
    assert list(json.loads((folder / "portrait.json").read_text())["metrics"]) == [
        "$\\notacommand{x}$"
    ]
