"""Behavioural features against fitness: the statistics and the command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from tests.cli.test_analyze import make_run
from tests.conftest import TOY
from tpdisc.analysis.feature_study import (
    cohens_d,
    feature_study,
    feature_table,
    missing_features,
)
from tpdisc.analysis.features import FEATURE_NAMES
from tpdisc.analysis.simulate import load_run
from tpdisc.cli import app
from tpdisc.executors.serial import SerialExecutor

runner = CliRunner()


def test_cohens_d_is_the_pooled_standard_deviation_form() -> None:
    a, b = [1.0, 2.0, 4.0, 7.0], [0.0, 1.0, 1.5]
    pooled = np.sqrt((3 * np.var(a, ddof=1) + 2 * np.var(b, ddof=1)) / 5)
    assert cohens_d(a, b) == pytest.approx((np.mean(a) - np.mean(b)) / pooled)
    assert cohens_d([1.0], b) is None and cohens_d([1.0, 1.0], [1.0, 1.0]) is None


def test_the_table_matches_scipy_and_statsmodels() -> None:
    rng = np.random.default_rng(0)
    keys = [("run", i) for i in range(40)]
    fitness = {k: float(rng.normal(80, 10)) for k in keys}
    values = {}
    for k in keys:
        original = {name: float(rng.normal()) for name in FEATURE_NAMES}
        ablated = {name: float(rng.normal()) for name in FEATURE_NAMES}
        original["recency_bias"] = fitness[k] / 100 + 1.0  # a feature that tracks fitness
        ablated["recency_bias"] = 0.5
        original["success_bias"] = ablated["success_bias"] = None  # undefined everywhere
        values[k] = {"original": original, "ablated": ablated}
    rows = {row.name: row for row in feature_table(values, fitness)}
    f = [fitness[k] for k in keys]
    diff = [
        values[k]["original"]["rarity_bias"] - values[k]["ablated"]["rarity_bias"] for k in keys
    ]
    rho, p = stats.spearmanr(diff, f)
    assert rows["rarity_bias"].rho == pytest.approx(rho) and rows["rarity_bias"].p == pytest.approx(
        p
    )
    tested = [r for r in feature_table(values, fitness) if r.p is not None]
    _, q, _, _ = multipletests([r.p for r in tested], method="fdr_bh")
    assert [r.q for r in tested] == pytest.approx(list(q))
    assert rows["recency_bias"].rho == pytest.approx(1.0) and rows["recency_bias"].stars == "***"
    assert rows["success_bias"].n == 0 and rows["success_bias"].rho is None
    assert next(iter(feature_table(values, fitness))).name == "recency_bias"  # sorted by |ρ|


def test_features_are_stored_and_not_simulated_again(tmp_path, toy_graph) -> None:
    run = load_run(make_run(tmp_path / "run", n_protocols=4), graph=toy_graph, n_steps=5)
    calls: list[str] = []
    assert len(missing_features([run], 2)) == 4
    study = feature_study([run], SerialExecutor(), n_sims=2, on_simulation=calls.append)
    assert study.n_protocols == 4 and len(calls) == 4 * 2  # one tick per seed: a pair
    assert {row.name for row in study.rows} == set(FEATURE_NAMES)
    again = feature_study([run], SerialExecutor(), n_sims=2, on_simulation=calls.append)
    assert len(calls) == 8 and again.to_json() == study.to_json()
    assert missing_features([run], 2) == {}


def test_the_command_on_a_generation_only_run(tmp_path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    run_dir = tmp_path / "run"
    tiny = ["--sims", "2", "--steps", "8", "--agents", "4", "--agent-type", "stochastic"]
    made = runner.invoke(app, ["evolve", "--run-dir", str(run_dir), "--recipes", str(recipes),
                               "--generation-only", "--iterations", "4", *tiny,
                               "--executor", "serial"])  # fmt: skip
    assert made.exit_code == 0, made.output
    out = tmp_path / "features.json"
    args = ["analyze", "features", str(run_dir), "--sims", "2", "--steps", "6", "--json",
            str(out), "--recipes", str(recipes), "--executor", "serial", "--plot",
            str(tmp_path / "fig")]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["n_protocols"] == 4 and len(data["features"]) == 23
    keys = {"name", "group", "n", "rho", "p", "q", "cohens_d", "rho_original", "rho_ablated"}
    assert all(keys <= set(row) for row in data["features"])
    assert (tmp_path / "fig" / "features.png").stat().st_size > 0
