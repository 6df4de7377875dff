"""The two models of the prior, trained on one cross-validation fold each time.

Both follow Brändle et al. (2023): a pair's features are the vectors of its two elements
concatenated, each pair presented in both orders, standardised with the statistics of the
training rows. Concatenated features are never materialised: a batch gathers rows of a
standardised element table, which gives the same numbers as standardising the
concatenation (both orders are always present, so both halves share their statistics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tpdisc.agents.empowerment.prior.dataset import Fold, PairData
from tpdisc.agents.empowerment.prior.mlp import (
    MLP,
    Training,
    bce_with_logits,
    cosine_loss,
    fit,
    sigmoid,
)

EpochReport = Callable[[int, float], None]


def standardised(vectors: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Element table standardised over the element occurrences ``first`` of training rows."""
    counts = np.bincount(first, minlength=len(vectors)).astype(np.float64)
    total = counts.sum()
    mean = counts @ vectors / total
    var = counts @ (vectors - mean) ** 2 / total
    std = np.sqrt(var)
    std[std < 1e-8] = 1.0
    return ((vectors - mean) / std).astype(np.float32)


def both_orders(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([a, b]), np.concatenate([b, a])


def features(table: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([table[a], table[b]], axis=1)


def predict_pairs(
    model: MLP, table: np.ndarray, a: np.ndarray, b: np.ndarray, batch: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """The model's outputs for ``(a, b)`` and for ``(b, a)``.

    The first layer of a pair is the sum of its two elements' projections, computed once
    per element: predicting every pair of a fold (or the validation pairs every epoch)
    then gathers rows instead of multiplying a pairs × features matrix.
    """
    weights, bias = model.weights[0], model.biases[0]
    dim = table.shape[1]
    first = table @ weights[:dim]
    second = table @ weights[dim:]
    out_ab, out_ba = [], []
    for i in range(0, a.size, batch):
        x, y = a[i : i + batch], b[i : i + batch]
        out_ab.append(model.finish(first[x] + second[y] + bias))
        out_ba.append(model.finish(first[y] + second[x] + bias))
    if not out_ab:
        empty = np.empty((0, model.weights[-1].shape[1]), dtype=np.float32)
        return empty, empty
    return np.concatenate(out_ab), np.concatenate(out_ba)


@dataclass(frozen=True)
class LinkSettings:
    """Brändle et al.'s link model and its training budget: 100 epochs of 30 batches of 32
    rows (3,000 Adam steps, about a seventh of one pass over the oversampled rows)."""

    hidden: int = 16
    training: Training = field(
        default_factory=lambda: Training(
            epochs=100, batch_size=32, steps_per_epoch=30, patience=None
        )
    )
    oversampling: float = 1.0
    # Models averaged per fold, each with its own initialisation and oversampling draw
    # (1: Brändle et al.'s single model).
    members: int = 1


def fit_link(
    vectors: np.ndarray,
    data: PairData,
    fold: Fold,
    settings: LinkSettings,
    rng: np.random.Generator,
    on_epoch: EpochReport | None = None,
) -> np.ndarray:
    """P(success) for the fold's test pairs, from a model that never saw them.

    Successes of the training part are resampled with replacement until they number
    ``oversampling`` times the failures (as Brändle et al. did); training stops on the
    validation pairs' ROC-AUC.
    """
    data.check_visible(np.concatenate([fold.train, fold.validation]))
    if settings.members == 1:
        return _fit_one_link(vectors, data, fold, settings, rng, on_epoch)
    predictions = [
        _fit_one_link(vectors, data, fold, settings, member, on_epoch if i == 0 else None)
        for i, member in enumerate(rng.spawn(settings.members))
    ]
    return np.asarray(np.mean(predictions, axis=0, dtype=np.float64), dtype=np.float32)


def _fit_one_link(
    vectors: np.ndarray,
    data: PairData,
    fold: Fold,
    settings: LinkSettings,
    rng: np.random.Generator,
    on_epoch: EpochReport | None,
) -> np.ndarray:
    train = fold.train
    positive = train[data.success[train]]
    negative = train[~data.success[train]]
    if positive.size == 0 or negative.size == 0:
        # Nothing to learn from a single class: predict its rate.
        return np.full(fold.test.size, float(positive.size > 0), dtype=np.float32)
    resampled = rng.choice(positive, size=round(settings.oversampling * negative.size))
    rows = np.concatenate([resampled, negative])
    a, b = both_orders(data.lo[rows], data.hi[rows])
    target = np.tile(data.success[rows], 2).astype(np.float32)
    table = standardised(vectors, a)
    model = MLP([2 * vectors.shape[1], settings.hidden, 1], rng)

    def batch(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return features(table, a[idx], b[idx]), target[idx]

    val = fold.validation
    val_labels = data.success[val]

    def validate(m: MLP) -> float:
        # Imported here: scikit-learn takes about a second to import, and simulations load
        # this module (through the prior's cache) without ever training a model.
        from sklearn.metrics import roc_auc_score

        if val_labels.all() or not val_labels.any():
            return 0.0
        ab, ba = predict_pairs(m, table, data.lo[val], data.hi[val])
        return -float(roc_auc_score(val_labels, (ab + ba)[:, 0]))

    fit(model, a.size, batch, bce_with_logits, settings.training, rng, validate, on_epoch)
    ab, ba = predict_pairs(model, table, data.lo[fold.test], data.hi[fold.test])
    return (0.5 * (sigmoid(ab) + sigmoid(ba)))[:, 0].astype(np.float32)


@dataclass(frozen=True)
class ResultModel:
    """A trained result network and the standardised element table it reads."""

    mlp: MLP
    table: np.ndarray


@dataclass(frozen=True)
class ResultSettings:
    """Brändle et al.'s result model and epochs (15), in batches of 64 at a learning rate of
    1.4e-3 instead of their 32 at 1e-3 (the rate scaled by the square root of the batch):
    the same held-out quality within the spread between folds, at half the Adam steps,
    which dominate the build (docs/prior.md)."""

    hidden: tuple[int, ...] = (1024, 1024)
    training: Training = field(
        default_factory=lambda: Training(
            epochs=15, batch_size=64, patience=None, learning_rate=1.4e-3
        )
    )


def fit_result(
    vectors: np.ndarray,
    data: PairData,
    fold: Fold,
    settings: ResultSettings,
    rng: np.random.Generator,
    on_epoch: EpochReport | None = None,
) -> ResultModel | None:
    """The result model of a fold, trained on the (pair, result) rows of its training
    pairs to output the result's vector under a cosine loss (None if it has no success)."""
    data.check_visible(np.concatenate([fold.train, fold.validation]))
    in_train = np.zeros(data.n_pairs, dtype=bool)
    in_train[fold.train] = True
    in_val = np.zeros(data.n_pairs, dtype=bool)
    in_val[fold.validation] = True
    rows = np.flatnonzero(in_train[data.result_pair])
    if rows.size == 0:
        return None
    pairs, results = data.result_pair[rows], data.result_element[rows]
    a, b = both_orders(data.lo[pairs], data.hi[pairs])
    target_ids = np.tile(results, 2)
    table = standardised(vectors, a)
    model = MLP([2 * vectors.shape[1], *settings.hidden, vectors.shape[1]], rng)

    def batch(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return features(table, a[idx], b[idx]), vectors[target_ids[idx]]

    val_rows = np.flatnonzero(in_val[data.result_pair])
    val_lo, val_hi = data.lo[data.result_pair[val_rows]], data.hi[data.result_pair[val_rows]]
    v_target = vectors[np.tile(data.result_element[val_rows], 2)]

    def validate(m: MLP) -> float:
        if val_rows.size == 0:
            return 0.0
        ab, ba = predict_pairs(m, table, val_lo, val_hi)
        return cosine_loss(np.concatenate([ab, ba]), v_target)[0]

    fit(model, a.size, batch, cosine_loss, settings.training, rng, validate, on_epoch)
    return ResultModel(model, table)


def result_distributions(
    model: ResultModel | None, vectors: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """P(r | a, b) for every element r: softmax (temperature 1) of the z-scored cosine
    similarities between the predicted vector and each element's vector, averaged over
    the two orders of the pair. Uniform when the fold had no success to learn from."""
    n = len(vectors)
    if model is None:
        return np.full((a.size, n), 1.0 / n, dtype=np.float32)
    ab, ba = predict_pairs(model.mlp, model.table, a, b)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return 0.5 * (softmax_zscored(ab, unit) + softmax_zscored(ba, unit))


def softmax_zscored(pred: np.ndarray, unit: np.ndarray) -> np.ndarray:
    pred = pred / np.maximum(np.linalg.norm(pred, axis=1, keepdims=True), 1e-12)
    sim = pred @ unit.T
    sim -= sim.mean(axis=1, keepdims=True)
    std = sim.std(axis=1, keepdims=True)
    sim /= np.where(std > 1e-12, std, 1.0)
    sim -= sim.max(axis=1, keepdims=True)
    np.exp(sim, out=sim)
    sim /= sim.sum(axis=1, keepdims=True)
    return sim
