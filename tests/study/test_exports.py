"""A study's exports: long-format tables, Parquet and CSV alike, each row traceable to the
simulation or archive row it comes from."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from tests.tiny_study import LONG_STEPS, keep_only, tiny_study
from tpdisc.analysis.features import FEATURES
from tpdisc.search.archive import Archive, Candidate
from tpdisc.study.exports import SCHEMAS, write_exports
from tpdisc.study.layout import StudyDir
from tpdisc.study.store import StudyStore

# Everything a CSV writer must quote: a comma, quotes, a line break.
AWKWARD = 'a "name", with\nall of it'


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> StudyDir:
    folder = tiny_study(tmp_path_factory.mktemp("exports"))
    with Archive(folder.root / "runs" / "evolve-1" / Archive.FILE_NAME) as archive:
        archive.add_seed(
            Candidate(name=AWKWARD, iteration=4, attempt=1, mode="repair", status="invalid",
                      proposer="offline", code="broken(", error="SyntaxError")
        )  # fmt: skip
    written = write_exports(folder)
    assert sorted(p.name for p in written) == sorted(
        f"{name}.{ext}" for name in SCHEMAS for ext in ("parquet", "csv")
    )
    return folder


def read(folder: StudyDir, name: str) -> list[dict]:
    rows: list[dict] = pq.read_table(folder.exports / f"{name}.parquet").to_pylist()
    return rows


def test_every_table_is_written_whole_in_both_formats(study: StudyDir) -> None:
    assert not list(study.exports.glob("*.part"))
    for name, schema in SCHEMAS.items():
        parquet = pq.read_table(study.exports / f"{name}.parquet")
        assert parquet.schema.equals(schema), name
        assert parquet.num_rows > 0, name
        csv = pa_csv.read_csv(
            study.exports / f"{name}.csv",
            convert_options=pa_csv.ConvertOptions(column_types=schema, strings_can_be_null=False),
        )
        assert csv.column_names == schema.names
        assert csv.equals(parquet), f"{name}: the CSV and the Parquet file differ"


def test_coverage_is_every_step_of_every_stored_simulation(study: StudyDir) -> None:
    rows = read(study, "coverage")
    with StudyStore(study.database) as store:
        sims = [s.summary for stage in ("baselines", "best")
                for seeds in store.stored(stage).values() for s in seeds.values()]  # fmt: skip
    assert all(s is not None and len(s.curve) == LONG_STEPS + 1 for s in sims)
    assert len(rows) == sum(len(s.curve) for s in sims if s is not None)
    curves: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for row in rows:
        curves[(row["protocol"], row["kind"], row["run"], row["seed"])].append(
            (row["step"], row["coverage"])
        )
    for key, points in curves.items():
        assert [step for step, _ in points] == list(range(LONG_STEPS + 1)), key
        values = [value for _, value in points]
        assert values[0] == 4 and values == sorted(values), key  # the toy's 4 base elements
    kinds = {(kind, run == "") for _, kind, run, _ in curves}
    assert kinds == {("standard", True), ("evolution", False), ("generation", False)}
    best = study.read_result("best")
    assert best is not None
    named = {(p["protocol"], p["name"]) for p in best["protocols"]}
    assert {(protocol, run) for protocol, _, run, _ in curves if run} == named


def test_fitness_has_a_row_per_protocol_and_seed(study: StudyDir) -> None:
    rows = read(study, "fitness")
    by_protocol: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for row in rows:
        by_protocol[(row["run"], row["protocol_id"])].append(row)
    for label, kind in (("evolve-1", "evolution"), ("generate-1", "generation")):
        with Archive(study.root / "runs" / label / Archive.FILE_NAME, readonly=True) as archive:
            candidates = archive.candidates()
        assert {pid for run, pid in by_protocol if run == label} == {c.id for c in candidates}
        for c in candidates:
            mine = by_protocol[(label, int(c.id or 0))]
            assert {r["run_kind"] for r in mine} == {kind}
            assert {(r["name"], r["mode"], r["valid"]) for r in mine} == {(c.name, c.mode, c.valid)}
            if c.valid:
                assert [r["seed"] for r in mine] == c.seeds
                assert [r["fitness"] for r in mine] == c.fitness_values
                assert sum(r["fitness"] for r in mine) / len(mine) == pytest.approx(c.fitness)
            else:
                assert [(r["seed"], r["fitness"], r["fitness_mean"]) for r in mine] == [
                    (None, None, None)
                ]
    assert any(r["name"] == AWKWARD for r in rows)  # read back whole from both formats


def test_feature_values_are_the_ones_the_statistics_were_computed_on(study: StudyDir) -> None:
    features = read(study, "features")
    data = study.read_result("features")
    assert data is not None
    assert [r["feature"] for r in features] == [f["name"] for f in data["features"]]
    values: dict[tuple[str, int, str], dict[str, float | None]] = defaultdict(dict)
    for row in read(study, "feature_values"):
        values[(row["run"], row["protocol_id"], row["feature"])][row["condition"]] = row["value"]
        assert row["group"] == next(f.group for f in FEATURES if f.name == row["feature"])
    protocols = {(run, pid) for run, pid, _ in values}
    assert len(protocols) == data["n_protocols"] > 0
    assert {run for run, _ in protocols} == {"generate-1"}  # the stage's runs: generation
    for row in features:
        both = [
            v for (_, _, name), v in values.items()
            if name == row["feature"] and None not in (v.get("original"), v.get("ablated"))
        ]  # fmt: skip
        assert len(both) == row["n"], row["feature"]


def test_generalization_has_every_stored_simulation(study: StudyDir) -> None:
    rows = read(study, "generalization")
    data = study.read_result("generalization")
    assert data is not None
    with StudyStore(study.database) as store:
        stored = store.stored("generalization")
    assert len(rows) == sum(len(seeds) for seeds in stored.values())
    for setting in data["settings"]:
        mine = [r for r in rows if r["setting"] == setting["name"]]
        evolved = [r["final_coverage"] for r in mine if r["role"] == "evolved"]
        assert {r["protocol"] for r in mine if r["role"] == "evolved"} == {"evolve-1"}
        assert {r["protocol"] for r in mine if r["role"] == "baseline"} == set(data["baselines"])
        assert sum(evolved) / len(evolved) == pytest.approx(setting["evolved_mean"])
        if setting["name"] == "6-agents":
            assert {r["n_agents"] for r in mine} == {6}


def test_a_stage_not_done_has_no_table(study: StudyDir, tmp_path: Path) -> None:
    early = StudyDir(tmp_path / "early")
    shutil.copytree(study.root, early.root)
    shutil.rmtree(early.exports)
    keep_only(early, {"baselines"})
    written = write_exports(early)
    assert sorted(p.name for p in written) == ["coverage.csv", "coverage.parquet"]
    table = pq.read_table(early.exports / "coverage.parquet")
    assert set(table.column("kind").to_pylist()) == {"standard"}
    assert table.num_rows == 5 * 3 * (LONG_STEPS + 1)  # 5 standard baselines, 3 seeds each
