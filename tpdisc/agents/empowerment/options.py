"""The empowerment agents' options: their lasting candidates and the softmax over them.

:class:`Rows` holds the pairs of owned elements with the terms their empowerment is made
of, :class:`LiveOptions` the ones worth something with the sums z-scoring needs; both are
shared by the numpy reference and the kernels (:mod:`tpdisc.agents.empowerment.kernels`),
which update them in place. :mod:`tpdisc.agents.empowerment.agent` is what uses them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tpdisc.agents.empowerment import kernels
from tpdisc.agents.empowerment.kernels import BAND_MIN, NEGLIGIBLE, ZERO

_NO_EXTRA = np.empty(0)  # softmax_draw_compiled's "no extra options"; never written


def softmax_probabilities(values: np.ndarray, beta: float, zscore: bool) -> np.ndarray:
    """Choice probabilities: softmax with temperature ``beta`` of the (z-scored) values."""
    weights = _softmax_weights(np.asarray(values, dtype=np.float64), beta, zscore)
    p: np.ndarray = weights / weights.sum()
    return p


def _softmax_weights(x: np.ndarray, beta: float, zscore: bool) -> np.ndarray:
    """Unnormalised softmax weights, the best option's being 1."""
    scale = temperature(x.size, float(x.sum()), float(x @ x), beta, zscore)
    if scale is None:
        return np.ones_like(x)
    w = x - x.max()
    w *= 1.0 / scale
    np.exp(w, out=w)
    return w


def temperature(n: int, total: float, squares: float, beta: float, zscore: bool) -> float | None:
    """The softmax's temperature on the raw values, from the count, sum and sum of squares
    of the options' values; None when z-scoring leaves nothing to tell apart (every value
    equal). Z-scoring only rescales: (z - max z) = (x - max x) / sd, so the mean is never
    needed."""
    if not zscore:
        return beta
    mean = total / n
    var = squares / n - mean * mean
    if var <= 1e-24 * max(1.0, mean * mean):
        return None
    return beta * math.sqrt(var)


def uniform_draw(x: np.ndarray, n: int, rng: np.random.Generator) -> int:
    """Every one of the ``n`` options equal (the finite entries of ``x``, then the others):
    a uniform draw, as a softmax of equal weights."""
    k = min(int(rng.random() * n), n - 1)
    live = np.flatnonzero(x > ZERO)
    return int(live[k]) if k < live.size else x.size + k - live.size


class Scratch:
    """Arrays that kernels fill for their caller, a value and a position per entry, kept
    by an agent from one decision to the next (numba would box a new array per return)."""

    def __init__(self, capacity: int = 256) -> None:
        self.values = np.empty(capacity)
        self.positions = np.empty(capacity, dtype=np.intp)

    def reserve(self, size: int) -> None:
        if size > self.values.size:
            capacity = max(size, 2 * self.values.size)
            self.values = np.empty(capacity)
            self.positions = np.empty(capacity, dtype=np.intp)

    def first(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The positions and values a kernel wrote, as views."""
        return self.positions[:count], self.values[:count]


def _grow(holder: object, names: Sequence[str], used: int, need: int) -> None:
    """Give the aligned arrays ``names`` of ``holder`` room for ``need`` entries (at least
    doubling), keeping their first ``used``."""
    capacity = getattr(holder, names[0]).shape[0]
    if need <= capacity:
        return
    capacity = max(need, 2 * capacity)
    for name in names:
        old = getattr(holder, name)
        new = np.empty((capacity, *old.shape[1:]), dtype=old.dtype)
        new[:used] = old[:used]
        setattr(holder, name, new)


class Rows:
    """The lasting candidates (pairs of owned elements), as growable aligned arrays.

    A row's empowerment is ``(a + b · U) / (1 - c - d · n_owned)``, ``U`` being the sum of
    the agent's element adjustments ``u`` and ``n_owned`` its number of owned elements:

    - ``a = P(s) · (expect + Σ_top (P(r) - ρ) · u(r))``, ``b = P(s) · ρ``;
    - ``c = Σ_top (P(r) - ρ) · owned(r)``, ``d = ρ`` (only used when renormalising).

    A pair whose outcome the agent knows is *frozen*: ``a`` holds its value, ``b = c = d = 0``.
    """

    FIELDS = ("lo", "hi", "ps", "a", "b", "c", "d", "value", "top", "dtop", "code", "frozen")

    def __init__(self, k: int, top_dtype: np.dtype, capacity: int = 128) -> None:
        self.size = 0
        self.k = k
        self.lo = np.empty(capacity, dtype=np.intp)
        self.hi = np.empty(capacity, dtype=np.intp)
        self.ps = np.empty(capacity)
        self.a = np.empty(capacity)
        self.b = np.empty(capacity)
        self.c = np.empty(capacity)
        self.d = np.empty(capacity)
        self.value = np.empty(capacity)  # the current empowerment, refreshed when it changes
        self.top = np.empty((capacity, k), dtype=top_dtype)
        self.dtop = np.empty((capacity, k))
        self.code = np.empty(capacity, dtype=np.int16)  # as in ``known``
        self.frozen = np.empty(capacity, dtype=bool)

    def reserve(self, extra: int) -> None:
        _grow(self, self.FIELDS, self.size, self.size + extra)


class SocialPairs:
    """The pairs of each social element the agent does not own with its inventory, with
    their (a, b, c, d) terms (see :class:`Rows`) and top results, kept from one decision to
    the next by the kernel ``social_prior``, which also lays them out.

    ``block[e]`` = (first pair, pairs kept, room) of element ``e``'s pairs, in inventory
    order; a block that runs out of room moves to the end of the store, and an element
    the agent gains is forgotten, its block left unused.
    """

    def __init__(self, n_elements: int, k: int, top_dtype: np.dtype, capacity: int = 1024):
        self.block = np.zeros((n_elements, 3), dtype=np.intp)
        self.pid = np.empty(capacity, dtype=np.intp)
        self.top = np.empty((capacity, k), dtype=top_dtype)
        self.terms = np.empty((capacity, 4))
        self.used = 0

    def reserve(self, blocks: int, m: int) -> None:
        """Room for ``blocks`` new blocks for an inventory of ``m`` elements."""
        _grow(self, ("pid", "top", "terms"), self.used, self.used + blocks * (2 * m + 8))

    def forget(self, e: int) -> None:
        self.block[e, 1] = 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.block, self.pid, self.top, self.terms


class LiveOptions:
    """The lasting candidates worth something (value above ZERO), in row order, with the
    count, sum and sum of squares of their values (what z-scoring needs).

    Rebuilt after a gain, when every value moves. In between, a row whose outcome becomes
    known keeps its place with its new value, -inf once it is worth nothing (a softmax
    weight of 0), so that a decision reads these arrays instead of scanning every row.
    """

    def __init__(self) -> None:
        self.rows = np.empty(0, dtype=np.intp)
        self.x = np.empty(0)
        self.count = 0
        self.total = self.squares = 0.0
        self.dirty = True
        self.position = np.empty(0, dtype=np.int32)  # by row: its place in ``rows``, or -1
        self._room = Scratch()  # what ``rows`` and ``x`` view on the compiled path
        self._x, self._position = self.x.data, self.position.data

    def rebuild(self, values: np.ndarray, compiled: bool) -> None:
        n = values.size
        if self.position.size < n:
            self.position = np.empty(max(n, 2 * self.position.size), dtype=np.int32)
        if compiled:
            room = self._room
            room.reserve(n)
            self.count, self.total = kernels.live_options(
                values, n, self.position, room.positions, room.values
            )
            self.rows, self.x = room.first(self.count)
        else:
            self.rows = np.flatnonzero(values > ZERO)
            self.x = values.take(self.rows)
            self.count = self.rows.size
            self.total = float(self.x.sum())
            self.position[:n] = -1
            self.position[self.rows] = np.arange(self.count, dtype=np.int32)
        self.squares = float(self.x @ self.x)  # BLAS: numpy's bits on either path
        self._x, self._position = self.x.data, self.position.data
        self.dirty = False

    def update(self, r: int, value: float) -> None:
        """Row ``r`` is now worth ``value`` (scalar work: a few times per agent-step)."""
        if self.dirty:
            return
        p = self._position[r]
        if p < 0:
            self.dirty = value > ZERO  # a new option: its place is found by a rebuild
            return
        old = self._x[p]
        if old > ZERO:
            self.count -= 1
            self.total -= old
            self.squares -= old * old
        if value > ZERO:
            self.count += 1
            self.total += value
            self.squares += value * value
            self._x[p] = value  # type: ignore[call-overload]  # a float memoryview
        else:
            self._x[p] = -math.inf  # type: ignore[call-overload]


def softmax_draw(
    x: np.ndarray,
    count: int,
    total: float,
    squares: float,
    extra: np.ndarray | None,
    rng: np.random.Generator,
    beta: float,
    zscore: bool,
) -> int:
    """Softmax draw over the options of ``x`` (its ``count`` finite entries, whose values
    sum to ``total`` and their squares to ``squares``; the others, -inf, are worth
    nothing), then those of ``extra`` (every entry an option). Returns the position of
    the option drawn in ``x`` followed by ``extra``.

    The draw is over every option in order, as :func:`softmax_probabilities` weighs
    them; over many options, those more than ``NEGLIGIBLE`` temperatures below the best
    are left out (see ``NEGLIGIBLE`` in :mod:`tpdisc.agents.empowerment.kernels`).
    """
    n, size = count, x.size  # options, and entries (options and -inf ones)
    top = float(x.max()) if count else -math.inf
    if extra is not None:
        n += extra.size
        size += extra.size
        total += float(extra.sum())
        squares += float(extra @ extra)
        top = max(top, float(extra.max()))
    if n == 1:
        return int(np.flatnonzero(x > ZERO)[0]) if count else x.size
    scale = temperature(n, total, squares, beta, zscore)
    if scale is None:
        return uniform_draw(x, n, rng)
    if size < BAND_MIN:
        band = None
        w = x - top if extra is None else np.concatenate([x, extra]) - top
    else:  # the band of each part; only its values are gathered
        cutoff = top - NEGLIGIBLE * scale
        band = np.flatnonzero(x >= cutoff)
        w = x.take(band)
        if extra is not None:
            extra_band = np.flatnonzero(extra >= cutoff)
            band = np.concatenate([band, x.size + extra_band])
            w = np.concatenate([w, extra.take(extra_band)])
        w -= top
    w *= 1.0 / scale
    np.exp(w, out=w)
    cumulative = np.cumsum(w)
    k = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    if k == w.size:  # the random number times the sum rounded up to the sum: the last
        k = int(np.flatnonzero(w)[-1])
    return k if band is None else int(band[k])


def softmax_draw_compiled(
    x: np.ndarray,
    count: int,
    total: float,
    squares: float,
    extra: np.ndarray | None,
    rng: np.random.Generator,
    beta: float,
    zscore: bool,
    room: Scratch,
) -> int:
    """:func:`softmax_draw` with the kernels, which write the weights into ``room``;
    ``np.exp`` and ``@`` stay numpy's."""
    if extra is None:
        extra = _NO_EXTRA
    else:
        squares += float(extra @ extra)
    room.reserve(x.size + extra.size)
    w = room.values
    outcome, n, size = kernels.prepare_draw(x, count, total, squares, extra, beta, zscore, w)
    if outcome >= 0:
        return outcome
    if outcome == kernels.UNIFORM:
        return uniform_draw(x, n, rng)
    weights = w[:size]
    np.exp(weights, out=weights)
    return kernels.pick(w, size, rng.random())
