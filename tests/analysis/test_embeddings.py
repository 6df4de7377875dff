"""Code embeddings: tokens, the TF-IDF backend, MMD² with the cosine kernel, and the command
on small search runs of the toy game."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from tests.conftest import TOY
from tpdisc.analysis import embeddings
from tpdisc.analysis.embeddings import (
    TfidfBackend,
    code_tokens,
    make_backend,
    mmd2,
    mmd_matrix,
    run_protocols,
    tsne_map,
)
from tpdisc.cli import app as main_app
from tpdisc.cli.analyze_models import register
from tpdisc.errors import ConfigError
from tpdisc.search.archive import Archive
from tpdisc.search.pick import run_pick

runner = CliRunner()
EXAMPLES = Path(__file__).parents[2] / "examples" / "protocols"


def test_tokens_keep_code_and_drop_prose() -> None:
    source = 'def f(x):  # a comment\n    return x + 1 if x else "text"\n'
    assert code_tokens(source) == [
        "def", "f", "(", "x", ")", ":", "return", "x", "+", "<num>", "if", "x", "else", "<str>",
    ]  # fmt: skip
    assert code_tokens("def broken(:\n    '''open") == ["def", "broken(:", "'''open"]


def test_mmd_is_zero_for_identical_groups_and_positive_otherwise() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 5))
    assert mmd2(x, x) == 0.0
    assert mmd2(x, x[::-1]) == pytest.approx(0.0, abs=1e-12)  # a group is a set
    assert mmd2(x, 3 * x) == pytest.approx(0.0, abs=1e-12)  # cosine: only directions count
    y = rng.normal(size=(4, 5)) + 2.0
    assert mmd2(x, y) > 0.1
    # the biased estimator: the squared distance between mean unit vectors
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    gap = unit(x).mean(axis=0) - unit(y).mean(axis=0)
    assert mmd2(x, y) == pytest.approx(float(gap @ gap))
    matrix = mmd_matrix(np.vstack([x, x, y]), ["a"] * 6 + ["b"] * 6 + ["c"] * 4, "abc")
    assert matrix[0, 1] == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(matrix, matrix.T) and np.all(np.diag(matrix) == 0)
    assert matrix[0, 2] > 0.1


def test_tfidf_backend_embeds_similar_code_close() -> None:
    sources = [p.read_text() for p in sorted(EXAMPLES.glob("*.py"))]
    renamed = sources[0].replace("self", "me")
    vectors = TfidfBackend(dims=4).embed([*sources, sources[0], renamed])
    assert vectors.shape == (len(sources) + 2, 4)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    first = vectors[0]
    assert first @ vectors[len(sources)] == pytest.approx(1.0)  # same code, same vector
    assert make_backend("tfidf").embed(["x = 1"]).shape[0] == 1
    assert tsne_map(vectors).shape == (len(vectors), 2)
    assert tsne_map(vectors[:2]).shape == (2, 2)


def test_minilm_backend_names_the_extra_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ConfigError, match=r"pip install 'tpdisc\[sentence\]'"):
        make_backend("minilm").embed(["x = 1"])
    with pytest.raises(ConfigError, match="unknown embedding backend 'bert'"):
        make_backend("bert")


TINY = [
    "--sims", "2", "--steps", "8", "--agents", "4", "--agent-type", "stochastic",
    "--executor", "serial",
]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A generation-only run and an evolution run of 4 iterations on the toy game."""
    root = tmp_path_factory.mktemp("runs")
    recipes = root / "toy.json"
    recipes.write_text(json.dumps(TOY))
    made = []
    for name, extra in (("generated", ["--generation-only"]), ("evolved", [])):
        run_dir = root / name
        args = ["evolve", "--run-dir", str(run_dir), "--recipes", str(recipes)]
        result = runner.invoke(main_app, [*args, "--iterations", "4", *TINY, *extra])
        assert result.exit_code == 0, result.output
        made.append(run_dir)
    return made[0], made[1]


def test_protocols_of_a_run_have_their_kind(runs: tuple[Path, Path]) -> None:
    generated, evolved = runs
    kinds = {p.kind for p in run_protocols(generated)}
    assert kinds == {"generated"}
    found = run_protocols(evolved)
    assert {p.kind for p in found} <= {"warm-up", "evolved"}
    assert "evolved" in {p.kind for p in found}
    assert all(p.run == "evolved" and p.code for p in found)
    with pytest.raises(ConfigError, match="not a run directory"):
        run_protocols(generated.parent)


def test_embeddings_command(runs: tuple[Path, Path], tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    out = tmp_path / "emb.json"
    args = ["embeddings", *map(str, runs), "--json", str(out), "--plot", str(tmp_path / "f")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["backend"] == "tfidf" and data["runs"] == ["generated", "evolved"]
    mmd = np.asarray(data["mmd"])
    assert mmd.shape == (2, 2) and mmd[0, 0] == 0 and mmd[0, 1] == mmd[1, 0] >= 0
    points = data["points"]
    assert {"run", "name", "x", "y", "fitness"} <= set(points[0])
    for run, folder in zip(data["runs"], runs, strict=True):
        mine = [p for p in points if p["run"] == run]
        (best,) = [p for p in mine if p["best"]]
        with Archive(folder / Archive.FILE_NAME, readonly=True) as archive:
            assert best["name"] == run_pick(archive).name  # the run's pick, as everywhere
    for name in ("embedding_map.png", "mmd_runs.png", "mmd_kinds.png"):
        assert (tmp_path / "f" / name).stat().st_size > 0

    # one run alone works too (a 1 × 1 matrix)
    alone = runner.invoke(app, ["embeddings", str(runs[0])])
    assert alone.exit_code == 0, alone.output
    missing = runner.invoke(app, ["embeddings", str(tmp_path)])
    assert missing.exit_code == 1 and "not a run directory" in missing.stderr


def test_generalize_takes_the_best_protocol_of_a_run(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    app = typer.Typer()
    register(app)
    best = embeddings.best_of(run_protocols(runs[0]))
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    out = tmp_path / "general.json"
    args = ["generalize", str(runs[0]), "--trusted", "--settings", "3-item", "--json", str(out)]
    result = runner.invoke(app, [*args, "--recipes", str(recipes), *TINY])
    assert result.exit_code == 0, result.output
    assert f"{runs[0]}: its pick, {best.name} (" in result.stderr
    (row,) = json.loads(out.read_text())["settings"]
    assert list(row["evolved"]) == [best.name]
