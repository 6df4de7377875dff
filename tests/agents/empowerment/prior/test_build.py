from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tpdisc.agents.empowerment.prior.build as build
from tpdisc.agents.empowerment.prior.build import PriorSettings, build_prior
from tpdisc.agents.empowerment.prior.dataset import Fold, PairData, pair_data
from tpdisc.agents.empowerment.prior.mlp import Training
from tpdisc.agents.empowerment.prior.models import LinkSettings, ResultSettings
from tpdisc.agents.empowerment.prior.vectors import NgramBackend
from tpdisc.domain.recipes import RecipeGraph

SMALL = PriorSettings(
    folds=4,
    link=LinkSettings(hidden=4, training=Training(3, 16)),
    result=ResultSettings(hidden=(16,), training=Training(3, 8)),
    top_k=5,
)


def test_no_prediction_sees_its_own_label(
    toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Structural check: every fold's models get data in which exactly that fold's test
    pairs carry no label, and each pair is predicted by the fold that held it out.

    The spies are oracles: they return whatever label the data shows for the test pairs. Had
    any test label leaked, the prior would reproduce the true successes.
    """
    truth = pair_data(toy_graph)
    seen: list[tuple[int, np.ndarray, np.ndarray]] = []

    def oracle_link(vectors: Any, data: PairData, fold: Fold, *args: Any) -> np.ndarray:
        hidden = data.hidden if data.hidden is not None else np.zeros(data.n_pairs, bool)
        seen.append((fold.index, np.flatnonzero(hidden), fold.test))
        assert not set(fold.train) & set(fold.test)
        assert not set(fold.validation) & set(fold.test)
        return data.success[fold.test].astype(np.float32)

    def oracle_result(vectors: Any, data: PairData, fold: Fold, *args: Any) -> None:
        assert not np.isin(data.result_pair, fold.test).any()

    monkeypatch.setattr(build, "fit_link", oracle_link)
    monkeypatch.setattr(build, "fit_result", oracle_result)
    prior, _ = build_prior(toy_graph, NgramBackend(dim=4), SMALL)
    assert len(seen) == SMALL.folds
    for _, hidden, test in seen:
        assert np.array_equal(hidden, np.sort(test))
    all_tests = np.concatenate([test for _, _, test in seen])
    assert np.array_equal(np.sort(all_tests), np.arange(truth.n_pairs))
    assert truth.success.any() and not prior.p_success.any()


@pytest.fixture(scope="module")
def built(toy_graph_module: RecipeGraph) -> tuple[Any, np.ndarray]:
    everything = np.arange(pair_data(toy_graph_module).n_pairs)
    return build_prior(toy_graph_module, NgramBackend(dim=8), SMALL, exact_pairs=everything)


@pytest.fixture(scope="module")
def toy_graph_module() -> RecipeGraph:
    from tests.conftest import TOY
    from tpdisc.domain.recipes import parse_wordcraft

    return parse_wordcraft(TOY, "toy")


def test_prior_summaries_match_full_distributions(
    built: tuple[Any, np.ndarray], toy_graph_module: RecipeGraph
) -> None:
    prior, exact = built
    n, k = toy_graph_module.n_elements, SMALL.top_k
    assert np.allclose(exact.sum(axis=1), 1, atol=1e-5)
    assert ((prior.p_success >= 0) & (prior.p_success <= 1)).all()
    # expectation of the children counts is exact
    assert np.allclose(prior.expect, exact @ toy_graph_module.children_count, atol=1e-4)
    # top results are the most likely ones, in decreasing order, with their probabilities
    assert np.allclose(np.take_along_axis(exact, prior.top_idx.astype(int), axis=1), prior.top_p)
    assert (np.diff(prior.top_p, axis=1) <= 1e-7).all()
    assert np.allclose(prior.top_p[:, -1], np.sort(exact, axis=1)[:, -k], atol=1e-6)
    # the rest of the mass is spread over the other n - k elements
    assert np.allclose(prior.top_p.sum(axis=1) + prior.resid * (n - k), 1, atol=1e-5)


def test_prior_quality_and_build_record(built: tuple[Any, np.ndarray]) -> None:
    prior, _ = built
    m = prior.metrics
    assert 0 <= m["roc_auc"] <= 1
    assert m["successes"] == 15 and m["results"] == 16
    assert 1 <= m["mean_rank"] <= 16 and 0 <= m["top1"] <= m["top10"] <= 1
    assert prior.meta["settings"]["folds"] == SMALL.folds
    assert "threads" not in prior.meta["settings"]
    assert prior.meta["build"]["seconds"] >= 0
    assert prior.meta["build"]["blas"]  # the OpenBLAS kernels that rounded it


def test_build_is_reproducible(toy_graph: RecipeGraph) -> None:
    a, _ = build_prior(toy_graph, NgramBackend(dim=4), SMALL)
    b, _ = build_prior(toy_graph, NgramBackend(dim=4), SMALL)
    assert np.array_equal(a.p_success, b.p_success)
    assert np.array_equal(a.top_p, b.top_p)


def test_progress_is_reported(toy_graph: RecipeGraph) -> None:
    calls: list[tuple[str, float, float]] = []
    build_prior(toy_graph, NgramBackend(dim=4), SMALL, report=lambda *c: calls.append(c))
    assert calls[-1][1] == calls[-1][2] == 2 * SMALL.folds
    assert all(done <= total for _, done, total in calls)
    assert [done for _, done, _ in calls] == sorted(done for _, done, _ in calls)


def test_every_blas_library_runs_one_thread_even_if_loaded_late() -> None:
    """threadpoolctl limits only loaded libraries: scipy's own OpenBLAS, loaded by the ngram
    backend's SVD, once ran on every core in a process's first build (other rounding, so
    other bytes than its later builds). A fresh interpreter checks the limit covers it."""
    import subprocess
    import sys

    script = (
        "from threadpoolctl import threadpool_info\n"
        "from tpdisc.agents.empowerment.prior.build import blas_threads\n"
        "with blas_threads(1):\n"
        "    from sklearn.decomposition import TruncatedSVD\n"
        "    libs = [(i['filepath'], i['num_threads']) for i in threadpool_info()]\n"
        "print(libs)\n"
        "assert len(libs) >= 1 and all(n == 1 for _, n in libs), libs\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
