"""A study's numbers as long-format tables for pandas or R: ``DIR/exports/NAME.parquet``
and the same rows as ``NAME.csv`` (empty CSV cells are missing values).

One row per observation, every table self-describing (no join needed for the usual
plots):

``coverage``
    protocol, kind, run, seed, step, coverage: one row per step (step 0 is the start, before
    the first step) of every simulation over the long horizon of stages ``baselines`` and
    ``best``. ``kind`` is standard or extended for a baseline (``run`` empty), evolution or
    generation for a run's best protocol (``run`` its label, ``protocol`` its archive name).
``fitness``
    run, run_kind, protocol_id, name, mode, status, valid, iteration, parent_id, seed,
    fitness, fitness_mean: one row per protocol of every run's archive and evaluation seed,
    ``fitness`` being that seed's final coverage and ``fitness_mean`` the archive's mean
    over the protocol's seeds (repeated on its rows); a protocol never scored (invalid,
    duplicate) has one row with ``seed``, ``fitness`` and ``fitness_mean`` missing.
``features``
    feature, group, n, rho, p, q, stars, cohens_d, rho_original, rho_ablated, reference_rho:
    one row per behavioural feature, from ``results/features.json``.
``feature_values``
    run, protocol_id, name, fitness, feature, group, condition, value: one row per protocol
    of the features stage, feature and condition (original, ablated), pooled over the
    protocol's seeds as the stage computed them (from the runs' analysis tables).
``generalization``
    setting, protocol, role, seed, n_agents, steps, final_coverage: one row per simulation
    of the generalization stage; ``role`` is evolved (``protocol`` is the run's label) or
    baseline.

A table whose stage is not done is not written; a simulation whose protocol failed has no
rows (its error is in the stage's JSON).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from tpdisc.analysis.feature_study import CONDITIONS
from tpdisc.analysis.features import FEATURES
from tpdisc.analysis.simulate import load_run
from tpdisc.analysis.store import settings_hash
from tpdisc.domain.data import default_graph
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.safefiles import writing
from tpdisc.search.archive import Archive
from tpdisc.study.config import StudyConfig
from tpdisc.study.layout import StudyDir, select_runs
from tpdisc.study.store import StudyStore

Rows = list[dict[str, Any]]
# What a row is, for the report's list of exports.
DESCRIPTIONS = {
    "coverage": "coverage after each step of every simulation of the baselines and the best "
    "protocols over the long horizon",
    "fitness": "every protocol of every run, one row per evaluation seed",
    "features": "the statistics of each behavioural feature",
    "feature_values": "each feature of each protocol of the features stage, per condition",
    "generalization": "the final coverage of every simulation of the generalization suite",
}

SCHEMAS: dict[str, pa.Schema] = {
    "coverage": pa.schema(
        [
            ("protocol", pa.string()),
            ("kind", pa.string()),
            ("run", pa.string()),
            ("seed", pa.int64()),
            ("step", pa.int64()),
            ("coverage", pa.int64()),
        ]
    ),
    "fitness": pa.schema(
        [
            ("run", pa.string()),
            ("run_kind", pa.string()),
            ("protocol_id", pa.int64()),
            ("name", pa.string()),
            ("mode", pa.string()),
            ("status", pa.string()),
            ("valid", pa.bool_()),
            ("iteration", pa.int64()),
            ("parent_id", pa.int64()),
            ("seed", pa.int64()),
            ("fitness", pa.float64()),
            ("fitness_mean", pa.float64()),
        ]
    ),
    "features": pa.schema(
        [
            ("feature", pa.string()),
            ("group", pa.string()),
            ("n", pa.int64()),
            ("rho", pa.float64()),
            ("p", pa.float64()),
            ("q", pa.float64()),
            ("stars", pa.string()),
            ("cohens_d", pa.float64()),
            ("rho_original", pa.float64()),
            ("rho_ablated", pa.float64()),
            ("reference_rho", pa.float64()),
        ]
    ),
    "feature_values": pa.schema(
        [
            ("run", pa.string()),
            ("protocol_id", pa.int64()),
            ("name", pa.string()),
            ("fitness", pa.float64()),
            ("feature", pa.string()),
            ("group", pa.string()),
            ("condition", pa.string()),
            ("value", pa.float64()),
        ]
    ),
    "generalization": pa.schema(
        [
            ("setting", pa.string()),
            ("protocol", pa.string()),
            ("role", pa.string()),
            ("seed", pa.int64()),
            ("n_agents", pa.int64()),
            ("steps", pa.int64()),
            ("final_coverage", pa.int64()),
        ]
    ),
}


def _config(folder: StudyDir) -> StudyConfig:
    return StudyConfig.from_dict(folder.settings(), str(folder.config))


def coverage_rows(folder: StudyDir) -> Rows | None:
    stages = [s for s in ("baselines", "best") if folder.result(s).is_file()]
    if not stages:
        return None
    rows: Rows = []
    with StudyStore(folder.database) as store:
        for stage in stages:
            data = folder.read_result(stage) or {}
            stored = store.stored(stage)
            for entry in data["protocols"]:
                baseline = stage == "baselines"
                for seed in entry["seeds"]:
                    summary = stored[entry["name"]][seed].summary
                    if summary is None:  # a hand-edited file: it lists a failed seed
                        raise ValueError(f"{entry['name']}: seed {seed} has no simulation")
                    base = {
                        "protocol": entry["name"] if baseline else entry["protocol"],
                        "kind": entry["kind"],
                        "run": "" if baseline else entry["name"],
                        "seed": seed,
                    }
                    rows += [
                        {**base, "step": step, "coverage": value}
                        for step, value in enumerate(summary.curve)
                    ]
    return rows


def fitness_rows(folder: StudyDir) -> Rows | None:
    search = folder.read_result("search")
    if search is None:
        return None
    rows: Rows = []
    for run in search["runs"]:
        _, run_dir = folder.run_folder(run)
        with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
            candidates = archive.candidates()
        for c in candidates:
            base = {
                "run": run["label"],
                "run_kind": run["kind"],
                "protocol_id": c.id,
                "name": c.name,
                "mode": c.mode,
                "status": c.status,
                "valid": c.valid,
                "iteration": c.iteration,
                "parent_id": c.parent_id,
                "fitness_mean": c.fitness_mean,
            }
            scored = list(zip(c.seeds or [], c.fitness_values or [], strict=True))
            if not scored:
                rows.append({**base, "seed": None, "fitness": None})
            rows += [{**base, "seed": seed, "fitness": value} for seed, value in scored]
    return rows


def features_rows(folder: StudyDir) -> Rows | None:
    data = folder.read_result("features")
    if data is None:
        return None
    return [
        {**{k: v for k, v in row.items() if k != "name"}, "feature": row["name"]}
        for row in data["features"]
    ]


def feature_value_rows(folder: StudyDir, graph: RecipeGraph | None = None) -> Rows | None:
    """Read back from each run's analysis table under the settings the stage used (the
    run's simulation and the study's recipe file), pooled over the seeds it used."""
    if not folder.result("features").is_file():
        return None
    config = _config(folder)
    graph = graph if graph is not None else default_graph(config.recipes)
    groups = {f.name: f.group for f in FEATURES}
    sims = config.features.sims
    rows: Rows = []
    for ref in select_runs(folder.runs(config.runs), config.features.runs):
        run = load_run(ref.path, graph=graph)
        key = settings_hash(run.settings)  # the key the stage registered; not registered again
        with run.store() as store:
            for protocol in run.protocols:
                seeds = protocol.seeds[:sims] if sims else protocol.seeds
                stored = store.features(key, [protocol.id], seeds).get(protocol.id, {})
                base = {
                    "run": ref.label,
                    "protocol_id": protocol.id,
                    "name": protocol.name,
                    "fitness": protocol.fitness,
                }
                for condition in CONDITIONS:
                    rows += [
                        {**base, "feature": name, "group": groups.get(name),
                         "condition": condition, "value": value}
                        for name, value in stored.get(condition, {}).items()
                    ]  # fmt: skip
    return rows


def generalization_rows(folder: StudyDir) -> Rows | None:
    data = folder.read_result("generalization")
    if data is None:
        return None
    baselines = set(data["baselines"])
    rows: Rows = []
    with StudyStore(folder.database) as store:
        stored = store.stored("generalization")
    order = {s["name"]: k for k, s in enumerate(data["settings"])}
    for item in sorted(stored, key=lambda i: (order.get(i.partition("/")[0], -1), i)):
        setting, _, protocol = item.partition("/")
        if setting not in order:  # not part of the finished stage
            continue
        for seed, got in sorted(stored[item].items()):
            if got.summary is None:
                continue
            rows.append(
                {
                    "setting": setting,
                    "protocol": protocol,
                    "role": "baseline" if protocol in baselines else "evolved",
                    "seed": seed,
                    "n_agents": got.summary.n_agents,
                    "steps": len(got.summary.curve) - 1,
                    "final_coverage": got.summary.final,
                }
            )
    return rows


def _write(table: pa.Table, path: Path, writer: Callable[[pa.Table, Any], None]) -> Path:
    # A reader (or a copy into the report) never sees half a file, nor writes through a link.
    with writing(path) as stream:
        writer(table, stream)
    return path


def write_table(folder: StudyDir, name: str, rows: Rows) -> list[Path]:
    """``rows`` as ``exports/NAME.parquet`` and ``exports/NAME.csv``."""
    schema = SCHEMAS[name]
    columns = {field.name: [row.get(field.name) for row in rows] for field in schema}
    table = pa.Table.from_pydict(columns, schema=schema)
    folder.folder(folder.exports)
    return [
        _write(table, folder.exports / f"{name}.parquet", pq.write_table),
        _write(table, folder.exports / f"{name}.csv", pa_csv.write_csv),
    ]


def write_exports(folder: StudyDir, graph: RecipeGraph | None = None) -> list[Path]:
    """Every table whose stage is done; returns the files written. ``graph`` is the
    study's recipe graph when the caller has it loaded (else read from the config's
    recipes, as the study did)."""
    makers: dict[str, tuple[tuple[str, ...], Callable[[], Rows | None]]] = {
        "coverage": (("baselines", "best"), lambda: coverage_rows(folder)),
        "fitness": (("search",), lambda: fitness_rows(folder)),
        "features": (("features",), lambda: features_rows(folder)),
        "feature_values": (("features",), lambda: feature_value_rows(folder, graph)),
        "generalization": (("generalization",), lambda: generalization_rows(folder)),
    }
    written: list[Path] = []
    for name, (stages, make) in makers.items():
        with folder.reading(*stages):
            rows = make()
        if rows is not None:
            written += write_table(folder, name, rows)
    return written
