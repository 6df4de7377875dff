"""The public Python API: ``from tpdisc import …``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tpdisc
from tests.conftest import TOY
from tpdisc import EvaluationConfig, ExecutorConfig, SimConfig, evaluate_config, load_config


def test_every_public_name_resolves() -> None:
    for name in tpdisc.__all__:
        assert getattr(tpdisc, name) is not None, name
    assert set(dir(tpdisc)) == set(tpdisc.__all__)


def test_import_tpdisc_is_light() -> None:
    probe = "import sys, tpdisc; print(sorted(m for m in sys.modules if m.startswith('tpdisc')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    # tpdisc.portable_blas: the BLAS kernels' pin, which must run before numpy loads (a few
    # standard-library imports, no numpy).
    assert loaded.stdout.strip() == "['tpdisc', 'tpdisc.portable_blas']"
    assert "numpy" not in loaded.stdout


def test_the_readme_example_runs(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    config = EvaluationConfig(
        protocols=("asocial", "paired"),
        sims=3,
        sim=SimConfig(agent_type="stochastic", n_agents=4, n_steps=10),
        executor=ExecutorConfig("serial"),
        recipes=str(recipes),
    )
    seen: list[str] = []
    evaluations = evaluate_config(config, on_result=lambda name, _: seen.append(name))
    assert [e.protocol for e in evaluations] == ["asocial", "paired"]
    assert all(len(e.final) == 3 for e in evaluations) and len(seen) == 6
    path = tmp_path / "exp.yaml"
    path.write_text(tpdisc.config_tree.dump_yaml(config))
    assert load_config(EvaluationConfig, path) == config
