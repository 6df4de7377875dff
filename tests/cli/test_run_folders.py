"""Run and study folders are untrusted input: a colleague's folder, or a damaged one.

A valid SQLite archive may hold any value in any column (SQLite keeps text in an INTEGER
column); every command that reads one refuses a bad value in one line naming the file,
the row and the column, and never writes stored markup into a page.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.search.test_archive import row
from tests.storage_faults import TPDISC, read_only
from tests.storage_faults import one_line_error as failed_in_one_line
from tpdisc.analysis.store import AnalysisStore, SimSummary
from tpdisc.cli import app
from tpdisc.errors import ConfigError
from tpdisc.report.search_run import _protocol_page
from tpdisc.search.archive import Archive, CandidateSummary, Rescore, code_hash
from tpdisc.study.layout import StudyDir
from tpdisc.study.store import StudyStore

runner = CliRunner()
MARKUP = '<script>alert("x")</script>'


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run folder with a seed and a child of it, as a search leaves them."""
    run = tmp_path / "run"
    run.mkdir()
    with Archive(run / Archive.FILE_NAME) as archive:
        seed = row("paired", 0, mode="seed", code="x = 1", fitness_mean=50.0)
        archive.add_seed(seed)
        child = row("child", 1, code="x = 2", fitness_mean=55.0, parent_id=seed.id)
        child.lineage = [seed.id or 0]
        archive.finish_iteration(1, "warm-up", [child])
    return run


def tamper(run: Path, sql: str, *args: object) -> None:
    with sqlite3.connect(run / Archive.FILE_NAME) as db:
        db.execute(sql, args)


def one_line_error(result: object) -> str:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == 1, result.output  # type: ignore[attr-defined]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]
    assert len(stderr.strip().splitlines()) == 1, stderr
    return str(stderr)


def ends_in_one_error(result: object) -> str:
    """The one ``error:`` line a command that said what it does first ended with."""
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == 1, result.output  # type: ignore[attr-defined]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and stderr.rstrip("\n").splitlines()[-1] == errors[0], stderr
    return errors[0]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("parent_id", MARKUP, "column parent_id: expected an id or null, got '<script>"),
        ("lineage", json.dumps([MARKUP]), "column lineage: expected a JSON list of ids"),
        ("contrast_ids", json.dumps([1, MARKUP]), "column contrast_ids: expected a JSON list"),
        ("mode", "sideways", "column mode: expected one of seed, warm-up"),
        ("lineage", "[" * 5000, "column lineage: expected JSON text, got '[[[["),
        ("fitness_mean", "high", "column fitness_mean: expected a finite number or null"),
        ("prompt_tokens", 1.5, "column prompt_tokens: expected a whole number, got 1.5"),
        ("fitness_values", "[" + "9" * 400 + "]", "column fitness_values: expected a JSON list"),
        ("lineage", json.dumps([10**30]), "column lineage: expected a JSON list of ids"),
    ],
)
@pytest.mark.parametrize("command", [["report"], ["archive"], ["archive", "--json"]])
def test_a_bad_value_is_one_line_naming_file_row_and_column(
    run_dir: Path, command: list[str], column: str, value: object, message: str
) -> None:
    tamper(run_dir, f"UPDATE protocols SET {column}=? WHERE name='child'", value)
    result = runner.invoke(app, [command[0], str(run_dir), *command[1:]])
    if command == ["archive"] and column not in {f.name for f in fields(CandidateSummary)}:
        assert result.exit_code == 0  # the listing never reads that column
        return
    stderr = one_line_error(result)
    assert f"{run_dir / Archive.FILE_NAME}: protocols row 2: {message}" in stderr
    assert not (run_dir / "report" / "protocols" / "child.html").exists()


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("seeds", "[]", "column seeds: expected a JSON list of whole numbers, not empty"),
        ("seeds", json.dumps([MARKUP]), "column seeds: expected a JSON list of whole numbers"),
        ("fitness_values", "[", "column fitness_values: expected JSON text, got '['"),
        ("mean", "high", "column mean: expected a finite number, got 'high'"),
        ("sem", MARKUP, "column sem: expected a finite number, got '<script>"),
        ("protocol_id", "x2", "column protocol_id: expected an id, got 'x2'"),
    ],
)
@pytest.mark.parametrize("command", [["report"], ["archive"], ["archive", "--json"]])
def test_a_bad_rescore_row_is_one_line(
    run_dir: Path, command: list[str], column: str, value: object, message: str
) -> None:
    with Archive(run_dir / Archive.FILE_NAME) as archive:
        archive.add_rescore(Rescore(2, [100, 101], [6.0, 7.0], 6.5, 0.5))
    tamper(run_dir, f"UPDATE rescores SET {column}=?", value)
    stderr = one_line_error(runner.invoke(app, [command[0], str(run_dir), *command[1:]]))
    assert f"{run_dir / Archive.FILE_NAME}: rescores row " in stderr and message in stderr


def test_a_bad_iteration_row_is_one_line(run_dir: Path) -> None:
    tamper(run_dir, "UPDATE iterations SET mode=?, protocol_id='2' WHERE iteration=1", MARKUP)
    stderr = one_line_error(runner.invoke(app, ["report", str(run_dir)]))
    assert "iterations row 1: column mode: expected one of seed, warm-up" in stderr


def test_a_resumed_search_refuses_a_bad_row(run_dir: Path) -> None:
    tamper(run_dir, "UPDATE protocols SET fitness_mean='x' WHERE name='paired'")
    with Archive(run_dir / Archive.FILE_NAME) as archive, pytest.raises(ConfigError) as info:
        archive.stats()  # what a resumed evolve reads first
    assert "protocols row 1: column fitness_mean: expected a finite number" in str(info.value)


def test_pages_escape_names_even_when_nothing_checked_them(run_dir: Path) -> None:
    # The templates escape whatever they are given: a check that missed something would
    # still not put markup into a page. Parent, lineage and contrasts show names.
    with Archive(run_dir / Archive.FILE_NAME) as archive:
        child = archive.get(2)
    child.parent_id, child.lineage, child.contrast_ids = 1, [1], [1]
    names = {1: MARKUP, 2: "child"}
    page = _protocol_page(child, None, names, {1: "paired.html", 2: "child.html"}, None)
    assert "<script>" not in page and page.count("&lt;script&gt;") == 3


@pytest.fixture
def study(tmp_path: Path, run_dir: Path) -> StudyDir:
    folder = StudyDir(tmp_path / "study")
    folder.root.mkdir()
    (folder.root / "runs").mkdir()
    run_dir.rename(folder.root / "runs" / "evolve-1")
    return folder


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"label": "../../escaped", "path": "runs/evolve-1"}, "a run's label must be a plain"),
        ({"label": "evolve-1", "path": "../.."}, "leads out of this folder"),
        ({"label": "evolve-1", "path": "/etc"}, "leads out of this folder"),
        ({"label": "evolve-1", "path": 3}, "expected a path, got 3"),
    ],
)
def test_stored_labels_and_paths_stay_inside_the_study(
    study: StudyDir, run: dict[str, object], message: str
) -> None:
    from tpdisc.study.report import _browsers

    study.write_result("search", {"runs": [run]})
    with pytest.raises(ConfigError, match=message) as info:
        _browsers(study, study.read_result("search"), study.report, {})
    assert str(study.result("search")) in str(info.value)
    assert not (study.root.parent / "escaped").exists()


def test_stage_results_that_are_not_json_objects_are_one_line(study: StudyDir) -> None:
    study.results.mkdir()
    for text, message in [("[" * 100_000, "not a stage's results"), ("[1]", "a JSON object")]:
        study.result("search").write_text(text)
        with pytest.raises(ConfigError, match=message):
            study.read_result("search")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{", "column value: expected JSON text, got '{'"),
        (json.dumps({"seed": 0}), "field final: expected a whole number, got None"),
        (json.dumps({"error": ["x"]}), "field error: expected text"),
        ("[" * 5000, "expected JSON text"),
        (json.dumps({"seed": 0, "final": 10**400, "received": 0, "novel_received": 0,
                     "n_agents": 1}), "field final: 1000000000000"),
        (json.dumps({"seed": 0, "final": 5, "received": 0, "novel_received": 0,
                     "n_agents": 1, "curve": [1, 4]}), "not the curve's last value"),
    ],
)  # fmt: skip
def test_a_bad_row_of_study_sqlite_is_one_line(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "study.sqlite"
    with StudyStore(path) as store:
        store.db.execute(
            "INSERT INTO sims VALUES ('baselines', 'asocial', 3, ?, 1, 'now')", (value,)
        )
        with pytest.raises(ConfigError) as info:
            store.stored("baselines")
    assert str(info.value).startswith(f"{path}: sims row (baselines, 'asocial', 3): ")
    assert message in str(info.value)


def test_a_bad_analysis_row_is_one_line(run_dir: Path) -> None:
    path = run_dir / Archive.FILE_NAME
    with AnalysisStore(path) as store:
        good = SimSummary(seed=0, final=5, received=1, novel_received=1, n_agents=2)
        store.put(1, "s", [("original", 0, good.to_json())])
        assert store.summaries("original", "s", [1]) == {1: {0: good}}
        store.db.execute(
            "UPDATE analysis SET value=?", (json.dumps({**good.to_json(), "n_agents": 0}),)
        )
        with pytest.raises(
            ConfigError, match=r"analysis row \(1, original, 0\): column value: field n_agents"
        ):
            store.summaries("original", "s", [1])


def test_an_exported_protocol_gets_no_code_from_its_stored_name(
    run_dir: Path, tmp_path: Path
) -> None:
    name = "x\nraise SystemExit('injected')\r"
    tamper(run_dir, "UPDATE protocols SET name=? WHERE id=2", name)
    out = tmp_path / "exported.py"
    result = runner.invoke(app, ["archive", str(run_dir), "--export", name, str(out)])
    assert result.exit_code == 0, result.output
    code = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    assert code == ["", "x = 2"]


# --- links inside a run folder lead nowhere ---------------------------------------------


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the run folder that its links point to."""
    path = tmp_path / "bashrc"
    path.write_text("alias ls='ls -F'\n")
    return path


def test_a_report_folder_that_is_a_link_is_refused(run_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run_dir / "report").symlink_to(elsewhere, target_is_directory=True)
    result = runner.invoke(app, ["report", str(run_dir), "--portraits", "0"])
    assert f"{run_dir / 'report'}: a symbolic link" in one_line_error(result)
    assert not list(elsewhere.iterdir())


def test_an_archive_that_is_a_link_is_refused(run_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (run_dir / Archive.FILE_NAME).rename(other)
    (run_dir / Archive.FILE_NAME).symlink_to(other)
    for command in (["archive"], ["report", "--portraits", "0"]):
        result = runner.invoke(app, [*command, str(run_dir)])
        assert f"{run_dir / Archive.FILE_NAME}: a symbolic link" in one_line_error(result)


def test_a_resumed_search_reads_no_config_through_a_link(run_dir: Path, victim: Path) -> None:
    (run_dir / "config.yaml").symlink_to(victim)
    result = runner.invoke(app, ["evolve", "--run-dir", str(run_dir), "--iterations", "2"])
    assert f"{run_dir / 'config.yaml'}: cannot read the config" in one_line_error(result)
    assert "a symbolic link" in result.stderr
    assert victim.read_text() == "alias ls='ls -F'\n"


def test_a_lock_file_that_is_a_link_is_never_written(run_dir: Path, victim: Path) -> None:
    from tpdisc.search.config import SearchConfig

    SearchConfig(iterations=2).save(run_dir / "config.yaml")
    (run_dir / ".lock").symlink_to(victim)
    result = runner.invoke(app, ["evolve", "--run-dir", str(run_dir)])
    assert f"{run_dir / '.lock'}: a symbolic link" in one_line_error(result)
    assert victim.read_text() == "alias ls='ls -F'\n"


def test_outputs_replace_links_instead_of_writing_through_them(
    run_dir: Path, victim: Path, tmp_path: Path
) -> None:
    exported, figure = tmp_path / "exported.py", tmp_path / "fitness.png"
    exported.symlink_to(victim)
    figure.symlink_to(victim)
    result = runner.invoke(
        app, ["archive", str(run_dir), "--export", "child", str(exported), "--plot", str(figure)]
    )
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "alias ls='ls -F'\n"
    assert not exported.is_symlink() and "x = 2" in exported.read_text()
    assert not figure.is_symlink() and figure.read_bytes().startswith(b"\x89PNG")


# --- stored text reaches the terminal as plain text -------------------------------------


def test_stored_text_is_shown_as_it_is_never_as_markup_or_escapes(run_dir: Path) -> None:
    code = "x = '\x1b[2J'\n"
    tamper(
        run_dir,
        "UPDATE protocols SET model=?, description=?, code=?, code_sha256=? WHERE id=2",
        "[/]x[link=https://evil.example]click[/link]",
        "clear \x1b[2J\x1b]0;pwned\x07 title",
        code,
        code_hash(code),  # the row is whole: the code is what was scored
    )
    for command in (["--show", "child"], []):
        result = runner.invoke(app, ["archive", str(run_dir), *command], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output
    shown = runner.invoke(app, ["archive", str(run_dir), "--show", "child"], env={"COLUMNS": "200"})
    assert "model [/]x[link=https://evil.example]click[/link]" in shown.stdout
    assert "clear \\x1b[2J\\x1b]0;pwned\\x07 title" in shown.stdout


def test_stored_simulations_must_be_of_their_own_cell(tmp_path: Path, toy_graph: object) -> None:
    from tpdisc.domain.variants import VariantSpec, make_domain
    from tpdisc.executors.serial import SerialExecutor
    from tpdisc.protocols.baselines import BaselineProtocol
    from tpdisc.sim.config import SimConfig
    from tpdisc.study.store import Cell

    path = tmp_path / "study.sqlite"
    sim = SimConfig(n_agents=3, n_steps=5, agent_type="stochastic")
    cell = Cell("asocial", make_domain(toy_graph, VariantSpec()), sim,
                BaselineProtocol("asocial"), (0,))  # fmt: skip
    short = {"seed": 0, "final": 4, "received": 0, "novel_received": 0, "n_agents": 3,
             "curve": [4, 4]}  # fmt: skip
    with StudyStore(path) as store:
        store.db.execute(
            "INSERT INTO sims VALUES ('best', 'asocial', 0, ?, 1, 'now')", (json.dumps(short),)
        )
        with pytest.raises(ConfigError) as info:
            store.simulate("best", [cell], SerialExecutor())
    assert str(info.value) == (
        f"{path}: sims row (best, 'asocial', 0): column value: field curve: 2 points, not "
        "the 6 of 5 steps"
    )


# --- round 5: values read back are checked where they are read ----------------------------


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished offline search of a few iterations on the toy game (copy it to change it)."""
    from tests.cli.test_search import TINY
    from tests.conftest import TOY

    folder = tmp_path_factory.mktemp("evolved")
    recipes = folder / "toy.json"
    recipes.write_text(json.dumps(TOY))
    run = folder / "run"
    args = ["evolve", "--run-dir", str(run), "--recipes", str(recipes), *TINY]
    result = runner.invoke(app, [*args, "--iterations", "3", "--no-rescore"])
    assert result.exit_code == 0, result.output
    return run


@pytest.fixture
def copy_of(evolved: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(evolved, copy)
    return copy


def toy_recipes(evolved: Path) -> str:
    return str(evolved.parent / "toy.json")


def best_valid(run: Path) -> tuple[int, str]:
    """The id and name of the best protocol the run found (the one re-scored and portrayed:
    the seeded baselines are not among them)."""
    with Archive(run / Archive.FILE_NAME, readonly=True) as archive:
        found = archive.summaries(valid_only=True, order="fitness")
    best = next(s for s in found if s.mode != "seed")
    return best.id, best.name


@pytest.mark.parametrize(
    "command",
    [["archive"], ["report", "--portraits", "0"], ["evolve", "--iterations", "4"]],
)
def test_text_where_a_number_belongs_in_meta_is_one_line(copy_of: Path, command: list[str]) -> None:
    tamper(copy_of, "UPDATE meta SET value='one' WHERE key='schema_version'")
    args = [*command[:1], *(["--run-dir"] if command[0] == "evolve" else []), str(copy_of)]
    result = runner.invoke(app, [*args, *command[1:]])
    assert one_line_error(result).strip() == (
        f"error: {copy_of / Archive.FILE_NAME}: meta row 'schema_version': column value: "
        "expected a whole number, got 'one'"
    )


@pytest.mark.parametrize(
    "command", [["report"], ["archive", "--show", "child"], ["archive", "--json"]]
)
def test_seeds_and_fitness_values_that_disagree_are_one_line(
    run_dir: Path, command: list[str]
) -> None:
    tamper(run_dir, "UPDATE protocols SET seeds='[0, 1]', fitness_values='[5.0]' WHERE id=2")
    result = runner.invoke(app, [command[0], str(run_dir), *command[1:]])
    assert f"{run_dir / Archive.FILE_NAME}: protocols row 2: column fitness_values: " in (
        one_line_error(result)
    )
    assert "expected a value per seed (2 seeds), got [5.0]" in result.stderr


def test_a_rescore_whose_seeds_and_values_disagree_is_one_line(run_dir: Path) -> None:
    with Archive(run_dir / Archive.FILE_NAME) as archive:
        archive.add_rescore(Rescore(2, [100, 101, 102], [6.0, 7.0], 6.5, 0.5))
    for command in (["archive"], ["report"]):
        result = runner.invoke(app, [command[0], str(run_dir), *command[1:]])
        assert "rescores row 2: column fitness_values: expected a value per seed (3 seeds)" in (
            one_line_error(result)
        )


def test_a_trigger_in_a_run_folder_is_refused_before_any_write(copy_of: Path) -> None:
    # A later write would meet it: it could refuse every iteration, or change other rows.
    tamper(
        copy_of,
        "CREATE TRIGGER later AFTER INSERT ON iterations BEGIN DELETE FROM protocols; END",
    )
    for args in (["archive", str(copy_of)], ["evolve", "--run-dir", str(copy_of)]):
        result = runner.invoke(app, [*args])
        assert one_line_error(result).strip() == (
            f"error: {copy_of / Archive.FILE_NAME}: not a usable archive (holds a trigger "
            "('later'), which tpdisc never makes: not a database of tpdisc's)"
        )
    tamper(copy_of, "DROP TRIGGER later")
    with Archive(copy_of / Archive.FILE_NAME, readonly=True) as archive:
        assert archive.last_iteration() == 3 and len(archive.candidates()) == 8


def test_a_damaged_page_met_by_a_later_write_is_one_line(copy_of: Path, evolved: Path) -> None:
    # Pages freed by a long text that was cleared, whose list is damaged: no read goes
    # there, the next write that needs room does.
    path = copy_of / Archive.FILE_NAME
    db = sqlite3.connect(path)
    db.execute("UPDATE protocols SET answer=? WHERE id=1", ("x" * 400_000,))
    db.execute("UPDATE protocols SET answer=NULL WHERE id=1")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with path.open("r+b") as raw:
        raw.seek(32)
        trunk = int.from_bytes(raw.read(4), "big")
        assert trunk > 0
        raw.seek(16)
        size = int.from_bytes(raw.read(2), "big")
        raw.seek((trunk - 1) * size)
        raw.write(b"\x00\x00\x00\x00\xff\xff\xff\xff")  # its count of free pages
    listed = runner.invoke(app, ["archive", str(copy_of)])
    assert listed.exit_code == 0, listed.output  # reads pass it by
    toy = toy_recipes(evolved)
    resume = ["evolve", "--run-dir", str(copy_of), "--iterations", "5", "--recipes", toy]
    assert ends_in_one_error(runner.invoke(app, resume)).startswith(
        f"error: {path}: damaged, or not an SQLite database (database disk image is malformed)"
    )
    with Archive(path, readonly=True) as archive:
        assert archive.last_iteration() == 3  # nothing half-written


# --- round 5: code that does not hash to its code_sha256 is never used -------------------


@pytest.mark.parametrize(
    "command",
    [
        ["archive", "RUN", "--show", "NAME"],
        ["archive", "RUN", "--show", "NAME", "--json"],
        ["archive", "RUN", "--export", "NAME", "OUT"],
        ["archive", "RUN", "--rescore", "1", "--executor", "serial", "--recipes", "TOY"],
        ["report", "RUN", "--portraits", "0"],
        ["report", "RUN", "--portrait-sims", "1", "--recipes", "TOY"],
        ["analyze", "volume", "RUN", "--sims", "1", "--executor", "serial", "--recipes", "TOY"],
    ],
)
def test_code_changed_after_it_was_scored_is_refused_wherever_it_is_used(
    copy_of: Path, evolved: Path, tmp_path: Path, command: list[str]
) -> None:
    pid, name = best_valid(copy_of)
    tamper(copy_of, "UPDATE protocols SET code = code || ? WHERE id=?", "\nx = 'changed'\n", pid)
    out = tmp_path / "exported.py"
    places = {"RUN": str(copy_of), "NAME": name, "OUT": str(out), "TOY": toy_recipes(evolved)}
    result = runner.invoke(app, [places.get(a, a) for a in command])
    assert one_line_error(result).startswith(
        f"error: {copy_of / Archive.FILE_NAME}: protocols row {pid}: column code: does not "
        "hash to the row's code_sha256 ("
    )
    assert "changed after it was scored, so refused" in result.stderr
    assert not out.exists()
    assert not (copy_of / "report" / "index.html").exists()


# --- round 5: read-only run folders are read, and written nowhere but where asked ---------


def test_a_finished_run_on_read_only_storage_is_read(
    copy_of: Path, evolved: Path, tmp_path: Path
) -> None:
    before = sorted(p.name for p in copy_of.iterdir())
    _, name = best_valid(copy_of)
    listing = read_only(copy_of, [*TPDISC, "archive", str(copy_of)])
    assert listing.returncode == 0 and name in listing.stdout, listing.stderr
    shown = read_only(copy_of, [*TPDISC, "archive", str(copy_of), "--show", name])
    assert shown.returncode == 0 and "class " in shown.stdout, shown.stderr
    elsewhere = tmp_path / "elsewhere"
    report = [*TPDISC, "report", str(copy_of), "--out", str(elsewhere)]
    written = read_only(
        copy_of, [*report, "--portrait-sims", "1", "--recipes", toy_recipes(evolved)]
    )
    assert written.returncode == 0, written.stderr
    assert f"report written to {elsewhere / 'index.html'}" in written.stdout
    assert (elsewhere / "index.html").is_file() and list((elsewhere / "portraits").iterdir())
    assert sorted(p.name for p in copy_of.iterdir()) == before  # nothing written beside it
    inside = read_only(copy_of, [*TPDISC, "report", str(copy_of), "--portraits", "0"])
    assert f"{copy_of / 'report'}: cannot make the folder (Read-only file system)" in (
        failed_in_one_line(inside)
    )


def test_an_analysis_of_a_run_on_read_only_storage_says_why_in_one_line(
    copy_of: Path, evolved: Path
) -> None:
    # An analysis keeps its simulations in the run's archive: on read-only storage it
    # cannot, and says so (SQLite's words were "unable to open database file").
    command = [*TPDISC, "analyze", "volume", str(copy_of), "--sims", "1", "--executor",
               "serial", "--recipes", toy_recipes(evolved)]  # fmt: skip
    assert failed_in_one_line(read_only(copy_of, command)) == (
        f"error: {copy_of / Archive.FILE_NAME}: cannot store the analysis' simulations "
        "(Read-only file system): an analysis keeps them in the run's archive; copy the run "
        "folder to writable storage"
    )


# --- round 5: a run folder whose name is not UTF-8 -----------------------------------------


def test_a_run_folder_whose_name_is_not_utf8_is_reported(run_dir: Path) -> None:
    odd = run_dir.with_name(os.fsdecode(b"run\xff"))
    run_dir.rename(odd)
    result = runner.invoke(app, ["report", str(odd), "--portraits", "0"])
    assert result.exit_code == 0, result.output
    page = (odd / "report" / "index.html").read_text(encoding="utf-8")
    assert "run\\udcff" in page  # the name's byte, shown as its escape
    listed = runner.invoke(app, ["archive", str(odd)], env={"COLUMNS": "300"})
    assert listed.exit_code == 0 and "run\\udcff: protocols by fitness" in listed.stdout
