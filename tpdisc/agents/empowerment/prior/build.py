"""Building the prior: k-fold cross-validated predictions for every pair of elements.

Each pair's P(success) and P(result) come from the models of the one fold that held it
out, so no prediction ever saw its own label (Brändle et al. 2023). The full distribution
P(r | a, b) over all elements is summarised for the agents (see :class:`Prior`): its
expectation of the children counts, exactly, and its ``top_k`` most likely results, with
the rest of the mass spread evenly.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from tpdisc.agents.empowerment.prior.dataset import Fold, PairData, make_folds, pair_data
from tpdisc.agents.empowerment.prior.models import (
    LinkSettings,
    ResultSettings,
    fit_link,
    fit_result,
    result_distributions,
)
from tpdisc.agents.empowerment.prior.vectors import VectorBackend
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.portable_blas import architectures

# (what is happening, units done, units in all): one unit per model per fold.
Report = Callable[[str, float, float], None]
# Below this many pairs a fold trains in well under a second: processes would cost more.
PARALLEL_MIN_PAIRS = 20_000


@dataclass(frozen=True)
class PriorSettings:
    """Everything besides the data and the backend that changes a built prior."""

    folds: int = 10
    seed: int = 0
    validation: float = 0.2
    link: LinkSettings = field(default_factory=LinkSettings)
    result: ResultSettings = field(default_factory=ResultSettings)
    top_k: int = 16
    chunk: int = 2048
    threads: int = 1
    # Folds trained at once, each in its own process (0: one per core, at most one per fold,
    # for graphs large enough to pay the processes' start). Every fold draws from its own
    # seeded stream, so the prior's bytes do not depend on this.
    processes: int = 0

    def describe(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("chunk", "threads", "processes"):  # speed and memory, not the result
            data.pop(name)
        return data

    def worker_count(self, n_pairs: int) -> int:
        if self.processes:
            return max(1, min(self.processes, self.folds))
        if n_pairs < PARALLEL_MIN_PAIRS:
            return 1
        return max(1, min(len(os.sched_getaffinity(0)), self.folds))


@dataclass(frozen=True)
class Prior:
    """Cross-validated predictions for every unordered pair (numbered as in
    :func:`~tpdisc.agents.empowerment.prior.dataset.pair_index_table`).

    - ``p_success[p]``: P(success | pair p), both orders averaged.
    - ``expect[p]``: sum over all elements r of P(r | p) · ``children[r]`` (exact).
    - ``top_idx[p]``, ``top_p[p]``: the ``k`` most likely results and their probabilities.
    - ``resid[p]``: the probability left to each of the other ``n - k`` elements, on
      average: (1 - sum of ``top_p[p]``) / (n - k).
    """

    n_elements: int
    p_success: np.ndarray
    expect: np.ndarray
    children: np.ndarray
    top_idx: np.ndarray
    top_p: np.ndarray
    resid: np.ndarray
    meta: dict[str, Any]

    ARRAYS = ("p_success", "expect", "children", "top_idx", "top_p", "resid")

    @property
    def top_k(self) -> int:
        return int(self.top_idx.shape[1])

    @property
    def metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = self.meta.get("metrics", {})
        return metrics


@dataclass
class _Accumulator:
    """Per-pair outputs and the held-out rank of every true result, filled fold by fold."""

    data: PairData
    top_k: int
    exact_pairs: np.ndarray | None
    PER_PAIR: ClassVar[tuple[str, ...]] = (
        "p_success",
        "expect",
        "top_idx",
        "top_p",
        "resid",
        "predicted_by",
    )
    p_success: np.ndarray = field(init=False)
    expect: np.ndarray = field(init=False)
    top_idx: np.ndarray = field(init=False)
    top_p: np.ndarray = field(init=False)
    resid: np.ndarray = field(init=False)
    ranks: np.ndarray = field(init=False)
    exact: np.ndarray | None = field(init=False)
    predicted_by: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n_pairs, n = self.data.n_pairs, self.data.n_elements
        self.p_success = np.full(n_pairs, np.nan, dtype=np.float32)
        self.expect = np.full(n_pairs, np.nan, dtype=np.float32)
        self.top_idx = np.zeros((n_pairs, self.top_k), dtype=np.uint16)
        self.top_p = np.zeros((n_pairs, self.top_k), dtype=np.float32)
        self.resid = np.zeros(n_pairs, dtype=np.float32)
        self.ranks = np.zeros(self.data.result_pair.size, dtype=np.int64)
        self.predicted_by = np.full(n_pairs, -1, dtype=np.int16)
        self.exact = (
            None
            if self.exact_pairs is None
            else np.zeros((self.exact_pairs.size, n), dtype=np.float32)
        )

    def add(self, fold: int, pairs: np.ndarray, probs: np.ndarray, children: np.ndarray) -> None:
        n, k = probs.shape[1], self.top_k
        self.predicted_by[pairs] = fold
        self.expect[pairs] = probs @ children
        top = np.argpartition(-probs, k - 1, axis=1)[:, :k]
        top_p = np.take_along_axis(probs, top, axis=1)
        order = np.argsort(-top_p, axis=1)
        self.top_idx[pairs] = np.take_along_axis(top, order, axis=1)
        self.top_p[pairs] = np.take_along_axis(top_p, order, axis=1)
        if n > k:
            self.resid[pairs] = np.maximum(1.0 - top_p.sum(axis=1), 0.0) / (n - k)
        position = np.full(self.data.n_pairs, -1, dtype=np.int64)
        position[pairs] = np.arange(pairs.size)
        rows = np.flatnonzero(position[self.data.result_pair] >= 0)
        at = position[self.data.result_pair[rows]]
        true_p = probs[at, self.data.result_element[rows]]
        self.ranks[rows] = 1 + (probs[at] > true_p[:, None]).sum(axis=1)
        if self.exact is not None and self.exact_pairs is not None:
            where = position[self.exact_pairs]
            hit = where >= 0
            self.exact[hit] = probs[where[hit]]


def build_prior(
    graph: RecipeGraph,
    backend: VectorBackend,
    settings: PriorSettings | None = None,
    *,
    report: Report | None = None,
    exact_pairs: np.ndarray | None = None,
) -> tuple[Prior, np.ndarray | None]:
    """Train and cross-validate both models on ``graph``; return the prior (and, for
    studies of the summary's accuracy, the full distributions of ``exact_pairs``)."""
    settings = settings or PriorSettings()
    with blas_threads(settings.threads):
        return _build(graph, backend, settings, report, exact_pairs)


@contextlib.contextmanager
def blas_threads(threads: int) -> Iterator[None]:
    """Limit every BLAS library the build uses to ``threads`` threads.

    The libraries are loaded first: threadpoolctl limits only those already loaded, and
    scipy's own OpenBLAS (behind scikit-learn's SVD) loaded inside the block ran the ngram
    vectors' SVD on every core, which rounds differently from one thread — so a process's
    first prior differed from its later ones. One thread also keeps the link model's small
    matrices fast on a busy machine.
    """
    import scipy.linalg  # noqa: F401  (scikit-learn's SVD and QR)
    import sklearn.decomposition
    import sklearn.metrics  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads):
        yield


def _build(
    graph: RecipeGraph,
    backend: VectorBackend,
    settings: PriorSettings,
    report: Report | None,
    exact_pairs: np.ndarray | None,
) -> tuple[Prior, np.ndarray | None]:
    started, load_before = time.perf_counter(), os.getloadavg()
    cpu_before = time.process_time()
    notify = report or (lambda what, done, total: None)
    total = 2.0 * settings.folds
    notify("element vectors", 0, total)
    vectors = np.asarray(backend.vectors(graph.names), dtype=np.float32)
    vector_seconds = time.perf_counter() - started
    data = pair_data(graph)
    children = graph.children_count.astype(np.float32)
    folds = make_folds(data.n_pairs, settings.folds, settings.seed, settings.validation)
    k = min(settings.top_k, data.n_elements)
    acc = _Accumulator(data, k, exact_pairs)
    seconds = {"link": 0.0, "result": 0.0}
    workers = settings.worker_count(data.n_pairs)
    if multiprocessing.current_process().daemon:  # a daemon may not start processes
        workers = 1
    if workers == 1:
        for fold in folds:
            _run_fold(fold, vectors, data, children, settings, acc, notify, total, seconds)
    else:
        jobs = [_FoldJob(fold, vectors, data, children, settings, k, exact_pairs) for fold in folds]
        for output in _parallel(jobs, workers, notify, total):
            output.merge_into(acc, seconds)
    if (acc.predicted_by < 0).any():
        raise RuntimeError("some pairs were never predicted: the folds do not cover the data")
    metrics = quality(data, acc.p_success, acc.ranks)
    metrics["mean_top_k_mass"] = float(acc.top_p.sum(axis=1).mean())
    elapsed = time.perf_counter() - started
    meta = {
        "backend": backend.describe(),
        "settings": settings.describe(),
        "recipes_sha256": graph.sha256,
        "n_elements": data.n_elements,
        "dim": int(vectors.shape[1]),
        "metrics": metrics,
        "build": {
            "seconds": round(elapsed, 1),
            "vector_seconds": round(vector_seconds, 1),
            "link_seconds": round(seconds["link"], 1),
            "result_seconds": round(seconds["result"], 1),
            "cpu_seconds": round(time.process_time() - cpu_before, 1),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "cores": os.cpu_count(),
            # The kernels that rounded it (tpdisc.portable_blas): another set, another prior.
            "blas": architectures(),
        },
    }
    prior = Prior(
        data.n_elements,
        acc.p_success,
        acc.expect,
        children,
        acc.top_idx,
        acc.top_p,
        acc.resid,
        meta,
    )
    return prior, acc.exact


def _run_fold(
    fold: Fold,
    vectors: np.ndarray,
    data: PairData,
    children: np.ndarray,
    settings: PriorSettings,
    acc: _Accumulator,
    notify: Report,
    total: float,
    seconds: dict[str, float],
) -> None:
    # The models get a copy of the data in which the fold's test pairs have no label, so
    # that no prediction can depend on its own pair's outcome, whatever the models do.
    rng = np.random.default_rng([settings.seed, fold.index])
    visible = data.hiding(fold.test)
    base = 2.0 * fold.index
    name = f"fold {fold.index + 1}/{settings.folds}"
    link_epochs = settings.link.training.epochs
    result_epochs = settings.result.training.epochs
    t0 = time.perf_counter()
    notify(f"{name}: link model", base, total)
    acc.p_success[fold.test] = fit_link(
        vectors,
        visible,
        fold,
        settings.link,
        rng,
        lambda e, s: notify(
            f"{name}: link model, epoch {e + 1} (val AUC {-s:.3f})",
            base + (e + 1) / link_epochs,
            total,
        ),
    )
    t1 = time.perf_counter()
    notify(f"{name}: result model", base + 1, total)
    model = fit_result(
        vectors,
        visible,
        fold,
        settings.result,
        rng,
        lambda e, s: notify(
            f"{name}: result model, epoch {e + 1} (val cosine {-s:.3f})",
            base + 1 + 0.8 * ((e + 1) / result_epochs),
            total,
        ),
    )
    notify(f"{name}: result distributions", base + 1 + 0.8, total)
    for start in range(0, fold.test.size, settings.chunk):
        pairs = fold.test[start : start + settings.chunk]
        probs = result_distributions(model, vectors, data.lo[pairs], data.hi[pairs])
        acc.add(fold.index, pairs, probs, children)
    seconds["link"] += t1 - t0
    seconds["result"] += time.perf_counter() - t1
    notify(f"{name}: done", base + 2, total)


@dataclass(frozen=True)
class _FoldJob:
    """One fold to train in a worker process (picklable)."""

    fold: Fold
    vectors: np.ndarray
    data: PairData
    children: np.ndarray
    settings: PriorSettings
    top_k: int
    exact_pairs: np.ndarray | None

    def __call__(self) -> _FoldOutput:
        acc = _Accumulator(self.data, self.top_k, self.exact_pairs)
        seconds = {"link": 0.0, "result": 0.0}
        with blas_threads(self.settings.threads):
            _run_fold(
                self.fold,
                self.vectors,
                self.data,
                self.children,
                self.settings,
                acc,
                lambda what, done, total: None,
                1.0,
                seconds,
            )
        test = self.fold.test
        rows = np.flatnonzero(np.isin(self.data.result_pair, test))
        exact_rows = (
            None if self.exact_pairs is None else np.flatnonzero(np.isin(self.exact_pairs, test))
        )
        return _FoldOutput(
            index=self.fold.index,
            test=test,
            columns={name: getattr(acc, name)[test] for name in _Accumulator.PER_PAIR},
            rank_rows=rows,
            ranks=acc.ranks[rows],
            exact_rows=exact_rows,
            exact=None if acc.exact is None or exact_rows is None else acc.exact[exact_rows],
            seconds=seconds,
        )


@dataclass(frozen=True)
class _FoldOutput:
    """What a worker's fold predicted, for its own test pairs only."""

    index: int
    test: np.ndarray
    columns: dict[str, np.ndarray]
    rank_rows: np.ndarray
    ranks: np.ndarray
    exact_rows: np.ndarray | None
    exact: np.ndarray | None
    seconds: dict[str, float]

    def merge_into(self, acc: _Accumulator, seconds: dict[str, float]) -> None:
        for name, column in self.columns.items():
            getattr(acc, name)[self.test] = column
        acc.ranks[self.rank_rows] = self.ranks
        if acc.exact is not None and self.exact is not None:
            acc.exact[self.exact_rows] = self.exact
        for name, value in self.seconds.items():
            seconds[name] += value


def _parallel(
    jobs: list[_FoldJob], workers: int, notify: Report, total: float
) -> list[_FoldOutput]:
    """Run the folds on ``workers`` processes; outputs in fold order whatever finished first."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # Not a plain fork: the parent has threads (a progress bar's, BLAS') whose locks a
    # forked child would inherit held.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    outputs: list[_FoldOutput] = []
    notify(f"training {len(jobs)} folds on {workers} processes", 0, total)
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(job) for job in jobs]
        for future in as_completed(futures):
            outputs.append(future.result())
            done = len(outputs)
            notify(f"{done}/{len(jobs)} folds trained", 2.0 * done, total)
    return sorted(outputs, key=lambda o: o.index)


def quality(data: PairData, p_success: np.ndarray, ranks: np.ndarray) -> dict[str, Any]:
    """Held-out quality: ROC-AUC of success; rank, top-1 and top-10 of the true result."""
    # Imported here, not at the top: simulations import this module (for :class:`Prior`,
    # through the cache) and must not pay scikit-learn's ~1 s import.
    from sklearn.metrics import roc_auc_score

    both = data.success.any() and not data.success.all()
    auc = float(roc_auc_score(data.success, p_success)) if both else float("nan")
    ranks = ranks[ranks > 0]
    return {
        "roc_auc": auc,
        "pairs": int(data.n_pairs),
        "successes": int(data.success.sum()),
        "mean_p_success_successes": float(p_success[data.success].mean()),
        "mean_p_success_failures": float(p_success[~data.success].mean()),
        "results": int(ranks.size),
        "mean_rank": float(ranks.mean()) if ranks.size else float("nan"),
        "median_rank": float(np.median(ranks)) if ranks.size else float("nan"),
        "top1": float((ranks == 1).mean()) if ranks.size else float("nan"),
        "top10": float((ranks <= 10).mean()) if ranks.size else float("nan"),
    }
