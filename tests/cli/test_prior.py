from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tpdisc.cli import app

runner = CliRunner()


@pytest.fixture
def toy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def test_prior_build_then_show(toy_file: Path) -> None:
    result = runner.invoke(app, ["prior", "show"])
    assert result.exit_code == 0 and "no prior" in result.output
    result = runner.invoke(app, ["prior", "build", "--recipes", str(toy_file)])
    assert result.exit_code == 0, result.output
    assert "ROC-AUC" in result.output and "ngram" in result.output
    result = runner.invoke(app, ["prior", "show", "--json"])
    rows = json.loads(result.output)
    assert len(rows) == 1 and rows[0]["ok"] and rows[0]["metrics"]["successes"] == 15


def test_prior_build_bad_backend(toy_file: Path) -> None:
    result = runner.invoke(app, ["prior", "build", "--recipes", str(toy_file), "--backend", "x"])
    assert result.exit_code == 1
    assert "unknown prior backend 'x'" in result.output
    assert "Traceback" not in result.output


def test_prior_build_seed_is_listed_with_its_fingerprint(toy_file: Path) -> None:
    # --prior-seed, as simulations name it; --seed, its old name, still works.
    for flag, seed in (("--prior-seed", "0"), ("--seed", "3")):
        result = runner.invoke(app, ["prior", "build", "--recipes", str(toy_file), flag, seed])
        assert result.exit_code == 0, result.output
    rows = json.loads(runner.invoke(app, ["prior", "show", "--json"]).output)
    prints = {row["fingerprint"]["seed"]: row["fingerprint"] for row in rows}
    assert set(prints) == {0, 3}
    assert prints[0]["sha256"] != prints[3]["sha256"]
    table = runner.invoke(app, ["prior", "show"]).output
    assert "seed" in table and prints[3]["sha256"][:8] in table


def test_results_record_the_prior_fingerprint(toy_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    args = ["evaluate", "asocial", "--recipes", str(toy_file), "--sims", "2", "--steps", "5"]
    args += ["--agents", "3", "--prior-seed", "2", "--executor", "serial", "--json", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    config = json.loads(out.read_text())["config"]
    assert config["params"]["empowerment"]["prior"]["seed"] == 2
    printed = config["agent_models"]["empowerment"]["prior"]
    rows = json.loads(runner.invoke(app, ["prior", "show", "--json"]).output)
    assert [row["fingerprint"] for row in rows] == [printed]
    assert printed["seed"] == 2


def test_prior_build_refuses_both_names_of_the_seed(toy_file: Path) -> None:
    args = ["prior", "build", "--recipes", str(toy_file), "--prior-seed", "1", "--seed", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert "--seed is the old name of --prior-seed" in result.output
