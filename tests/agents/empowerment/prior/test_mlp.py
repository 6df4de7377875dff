from __future__ import annotations

import numpy as np

from tpdisc.agents.empowerment.prior.mlp import MLP, Training, bce_with_logits, cosine_loss, fit


def numeric_gradient(model: MLP, x: np.ndarray, y: np.ndarray, loss, param: np.ndarray, i: int):
    eps = 1e-3
    flat = param.reshape(-1)
    old = flat[i]
    flat[i] = old + eps
    up = loss(model.forward(x)[-1], y)[0]
    flat[i] = old - eps
    down = loss(model.forward(x)[-1], y)[0]
    flat[i] = old
    return (up - down) / (2 * eps)


def check_gradients(sizes: list[int], loss, y: np.ndarray) -> None:
    rng = np.random.default_rng(0)
    model = MLP(sizes, rng)
    # float64 for a clean finite-difference check
    model.weights = [w.astype(np.float64) for w in model.weights]
    model.biases = [b.astype(np.float64) + 0.1 for b in model.biases]
    x = rng.standard_normal((7, sizes[0]))
    outs = model.forward(x)
    _, grad = loss(outs[-1], y)
    grads = model.gradients(outs, grad.astype(np.float64))
    for param, g in zip(model.params, grads, strict=True):
        for i in rng.choice(param.size, size=min(5, param.size), replace=False):
            expected = numeric_gradient(model, x, y, loss, param, int(i))
            assert abs(g.reshape(-1)[i] - expected) < 1e-4 * max(1.0, abs(expected))


def test_gradients_of_bce() -> None:
    y = np.array([1, 0, 1, 1, 0, 0, 1], dtype=np.float64)
    check_gradients([3, 5, 1], bce_with_logits, y)


def test_gradients_of_cosine_loss() -> None:
    y = np.random.default_rng(1).standard_normal((7, 4))
    check_gradients([3, 6, 5, 4], cosine_loss, y)


def test_cosine_loss_value() -> None:
    pred = np.array([[1.0, 0.0], [0.0, 2.0]])
    target = np.array([[3.0, 0.0], [1.0, 0.0]])
    loss, _ = cosine_loss(pred, target)
    assert np.isclose(loss, -(1.0 + 0.0) / 2)


def test_fit_learns_and_keeps_best_epoch() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    model = MLP([2, 8, 1], rng)
    scores: list[float] = []

    def validate(m: MLP) -> float:
        return bce_with_logits(m.forward(x)[-1], y)[0]

    start = validate(model)
    best = fit(
        model,
        400,
        lambda idx: (x[idx], y[idx]),
        bce_with_logits,
        Training(epochs=30, batch_size=32, patience=30, learning_rate=1e-2),
        rng,
        validate,
        lambda epoch, score: scores.append(score),
    )
    assert best < 0.5 * start
    assert np.isclose(best, min(scores))
    assert np.isclose(validate(model), best)  # the best weights are restored
