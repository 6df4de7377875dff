from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler

from tpdisc.agents.empowerment.prior.dataset import PairData, make_folds
from tpdisc.agents.empowerment.prior.mlp import Training
from tpdisc.agents.empowerment.prior.models import (
    LinkSettings,
    ResultSettings,
    both_orders,
    features,
    fit_link,
    fit_result,
    result_distributions,
    softmax_zscored,
    standardised,
)


def test_standardised_table_equals_scaling_the_concatenation() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((6, 3)).astype(np.float64)
    a, b = both_orders(rng.integers(0, 6, 50), rng.integers(0, 6, 50))
    table = standardised(vectors, a)
    expected = StandardScaler().fit_transform(features(vectors, a, b))
    assert np.allclose(features(table, a, b), expected, atol=1e-5)


def test_softmax_of_zscored_cosines() -> None:
    rng = np.random.default_rng(1)
    unit = rng.standard_normal((9, 4))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    pred = rng.standard_normal((3, 4)) * 5
    probs = softmax_zscored(pred, unit)
    assert np.allclose(probs.sum(axis=1), 1)
    cos = (pred / np.linalg.norm(pred, axis=1, keepdims=True)) @ unit.T
    z = (cos - cos.mean(axis=1, keepdims=True)) / cos.std(axis=1, keepdims=True)
    assert np.allclose(probs, np.exp(z) / np.exp(z).sum(axis=1, keepdims=True), atol=1e-6)


def synthetic(n: int = 30, dim: int = 6) -> tuple[np.ndarray, PairData]:
    """Elements with random vectors; a pair succeeds when its two first coordinates are
    both high, and yields the element closest to the sum of its vectors."""
    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    lo, hi = np.triu_indices(n)
    success = (vectors[lo, 0] > 0.2) & (vectors[hi, 0] > 0.2)
    pairs = np.flatnonzero(success)
    target = vectors[lo[pairs]] + vectors[hi[pairs]]
    results = np.argmax(target @ vectors.T, axis=1)
    data = PairData(n, lo.astype(np.int32), hi.astype(np.int32), success, pairs, results)
    return vectors, data


def test_link_model_learns_held_out_pairs() -> None:
    vectors, data = synthetic()
    fold = make_folds(data.n_pairs, 5, seed=0, validation=0.2)[0]
    settings = LinkSettings(training=Training(epochs=15, batch_size=64, patience=15))
    p = fit_link(vectors, data.hiding(fold.test), fold, settings, np.random.default_rng(0))
    assert p.shape == fold.test.shape
    assert ((p >= 0) & (p <= 1)).all()
    assert roc_auc_score(data.success[fold.test], p) > 0.85


def test_result_model_gives_distributions() -> None:
    vectors, data = synthetic()
    fold = make_folds(data.n_pairs, 5, seed=0, validation=0.2)[0]
    settings = ResultSettings(hidden=(32,), training=Training(epochs=20, batch_size=16))
    model = fit_result(vectors, data.hiding(fold.test), fold, settings, np.random.default_rng(0))
    test = fold.test[data.success[fold.test]]
    probs = result_distributions(model, vectors, data.lo[test], data.hi[test])
    assert probs.shape == (test.size, data.n_elements)
    assert np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    # the true result ranks far better than chance (rank ~15 of 30)
    truth = {int(p): int(r) for p, r in zip(data.result_pair, data.result_element, strict=True)}
    ranks = [1 + (row > row[truth[int(p)]]).sum() for p, row in zip(test, probs, strict=True)]
    assert np.mean(ranks) < 8
    uniform = result_distributions(None, vectors, data.lo[:2], data.hi[:2])
    assert np.allclose(uniform, 1 / data.n_elements)
