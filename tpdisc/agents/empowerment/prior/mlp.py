"""A small multilayer perceptron in numpy, trained with Adam.

Enough for the two models of the prior (a 16-unit link classifier and a 1024-1024 result
regressor under a cosine loss) without pulling a deep-learning framework into the install.
Initialisation (Glorot uniform, zero biases) and Adam's constants follow Keras, which
Brändle et al. used.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Loss = Callable[[np.ndarray, np.ndarray], tuple[float, np.ndarray]]


def bce_with_logits(logits: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """Binary cross-entropy of ``sigmoid(logits)``; returns the mean loss and d/dlogits."""
    z = logits[:, 0]
    loss = np.maximum(z, 0) - z * target + np.log1p(np.exp(-np.abs(z)))
    grad = (sigmoid(z) - target) / z.size
    return float(loss.mean()), grad[:, None].astype(np.float32)


def cosine_loss(pred: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative cosine similarity (Keras' ``cosine_similarity`` loss) and its gradient."""
    eps = 1e-12
    p_norm = np.sqrt((pred * pred).sum(axis=1, keepdims=True) + eps)
    t_unit = target / np.sqrt((target * target).sum(axis=1, keepdims=True) + eps)
    p_unit = pred / p_norm
    cos = (p_unit * t_unit).sum(axis=1, keepdims=True)
    grad = -(t_unit - cos * p_unit) / p_norm / pred.shape[0]
    return float(-cos.mean()), grad.astype(np.float32)


def sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


class MLP:
    """Dense layers with ReLU between them and a linear last layer."""

    def __init__(self, sizes: Sequence[int], rng: np.random.Generator) -> None:
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []
        for fan_in, fan_out in itertools.pairwise(sizes):
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            self.weights.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
            self.biases.append(np.zeros(fan_out, dtype=np.float32))

    @property
    def params(self) -> list[np.ndarray]:
        return [*self.weights, *self.biases]

    def forward(self, x: np.ndarray) -> list[np.ndarray]:
        """Outputs of every layer (the input first), for backpropagation."""
        outs = [x]
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = outs[-1] @ w + b
            if i < last:
                np.maximum(h, 0, out=h)
            outs.append(h)
        return outs

    def predict(self, x: np.ndarray, batch: int = 4096) -> np.ndarray:
        return np.concatenate([self.forward(x[i : i + batch])[-1] for i in range(0, len(x), batch)])

    def finish(self, h: np.ndarray) -> np.ndarray:
        """The output, given the first layer's pre-activation ``h`` (modified in place)."""
        for w, b in zip(self.weights[1:], self.biases[1:], strict=True):
            np.maximum(h, 0, out=h)
            h = h @ w + b
        return h

    def gradients(self, outs: list[np.ndarray], grad_out: np.ndarray) -> list[np.ndarray]:
        """Gradients of weights then biases, given d(loss)/d(output)."""
        grads_w: list[np.ndarray] = [np.empty(0)] * len(self.weights)
        grads_b: list[np.ndarray] = [np.empty(0)] * len(self.weights)
        g = grad_out
        for i in range(len(self.weights) - 1, -1, -1):
            grads_w[i] = outs[i].T @ g
            grads_b[i] = g.sum(axis=0)
            if i:
                g = g @ self.weights[i].T
                g *= outs[i] > 0
        return [*grads_w, *grads_b]


class Adam:
    def __init__(
        self,
        params: list[np.ndarray],
        lr: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-7,
    ) -> None:
        self.params, self.lr, self.beta1, self.beta2, self.eps = params, lr, beta1, beta2, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self._scratch = [np.empty_like(p) for p in params]
        self.t = 0

    def step(self, grads: list[np.ndarray]) -> None:
        self.t += 1
        scale = self.lr * np.sqrt(1 - self.beta2**self.t) / (1 - self.beta1**self.t)
        # In place, through one scratch buffer per parameter: the result network has 1.4 M
        # weights, and fresh temporaries of that size (page faults included) made Adam cost
        # twice the forward and backward passes together.
        for p, g, m, v, buf in zip(self.params, grads, self.m, self.v, self._scratch, strict=True):
            np.multiply(g, 1 - self.beta1, out=buf)
            m *= self.beta1
            m += buf
            np.multiply(g, g, out=buf)
            buf *= 1 - self.beta2
            v *= self.beta2
            v += buf
            np.sqrt(v, out=buf)
            buf += self.eps
            np.divide(m, buf, out=buf)
            buf *= scale
            p -= buf


@dataclass(frozen=True)
class Training:
    """How long and in what batches to train.

    An epoch is a pass over the rows, or ``steps_per_epoch`` batches when set (Keras'
    meaning: Brändle et al. trained the link model for 100 epochs of 30 steps). Training
    stops after ``patience`` epochs without a better validation score (``None``: never);
    the weights of the best epoch are kept either way.
    """

    epochs: int
    batch_size: int
    patience: int | None = 3
    learning_rate: float = 1e-3
    steps_per_epoch: int | None = None


Batches = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def fit(
    model: MLP,
    n_rows: int,
    batch: Batches,
    loss: Loss,
    training: Training,
    rng: np.random.Generator,
    validate: Callable[[MLP], float],
    on_epoch: Callable[[int, float], None] | None = None,
) -> float:
    """Train on rows ``0..n_rows-1`` (``batch(rows)`` builds inputs and targets, so large
    feature matrices never need to exist), keep the weights of the best validation epoch.

    Returns the best validation value (lower is better).
    """
    adam = Adam(model.params, lr=training.learning_rate)
    best = validate(model)
    best_params = [p.copy() for p in model.params]
    waited = 0
    size = training.batch_size
    steps = training.steps_per_epoch or -(-n_rows // size)
    order, at = rng.permutation(n_rows), 0
    for epoch in range(training.epochs):
        for _ in range(steps):
            if at >= n_rows:  # a fresh shuffle once every row has been used
                order, at = rng.permutation(n_rows), 0
            x, y = batch(order[at : at + size])
            at += size
            outs = model.forward(x)
            _, grad = loss(outs[-1], y)
            adam.step(model.gradients(outs, grad))
        score = validate(model)
        if on_epoch is not None:
            on_epoch(epoch, score)
        if score < best:
            best, waited = score, 0
            best_params = [p.copy() for p in model.params]
        else:
            waited += 1
            if training.patience is not None and waited >= training.patience:
                break
    for p, saved in zip(model.params, best_params, strict=True):
        p[...] = saved
    return best
