"""The prior's cache: one ``.npz`` file per (recipes, backend, settings) in the user cache.

A file records its own key and a checksum of every array; a file that does not load,
does not match its key or fails a checksum is reported and rebuilt, never used. Building
holds a lock, so parallel simulation workers that need the same prior wait for one build.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from tpdisc.agents.empowerment.prior.build import Prior, PriorSettings, Report, build_prior
from tpdisc.agents.empowerment.prior.dataset import n_pairs
from tpdisc.agents.empowerment.prior.vectors import VectorBackend, backend_from_spec
from tpdisc.domain.data import cache_dir
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import visible
from tpdisc.safefiles import open_lock

# 2: the ngram vectors' SVD runs on one thread in every process (1 let a process's first
# build use all cores, which rounded differently)
FORMAT_VERSION = 2


class PriorCacheError(Exception):
    """A cached prior is unreadable, corrupt or stale (internal: it triggers a rebuild)."""


def recipe_digest(graph: RecipeGraph) -> str:
    """Hash of what the prior learns from: element names and every recipe.

    Content, not the file's hash: a variant's restricted graph keeps the file's sha256 but
    must never be mistaken for the full game.
    """
    payload = json.dumps(
        {"names": list(graph.names), "recipes": sorted([*k, *v] for k, v in graph.recipes.items())}
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def prior_key(graph: RecipeGraph, backend: VectorBackend, settings: PriorSettings) -> str:
    identity = {
        "format": FORMAT_VERSION,
        "recipes": recipe_digest(graph),
        "backend": backend.describe(),
        "settings": settings.describe(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def prior_dir() -> Path:
    return cache_dir() / "priors"


def prior_path(key: str) -> Path:
    return prior_dir() / f"prior-{key}.npz"


def _checksum(array: np.ndarray) -> str:
    # Hashed in place: a copy (tobytes) of the 26 MB of a full game's prior would cost every
    # process that loads it as much time again as the hash.
    return hashlib.sha256(np.ascontiguousarray(array).data.cast("B")).hexdigest()


def save_prior(prior: Prior, key: str, path: Path) -> None:
    arrays = {name: getattr(prior, name) for name in Prior.ARRAYS}
    meta = {
        **prior.meta,
        "key": key,
        "format": FORMAT_VERSION,
        "checksums": {name: _checksum(a) for name, a in arrays.items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    with tmp.open("wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta)), **arrays)
    tmp.replace(path)


def load_prior(path: Path, key: str | None = None, *, verify: bool = True) -> Prior:
    """Read and verify a cached prior; :class:`PriorCacheError` says why it cannot be used.

    ``verify=False`` skips the arrays' sha256 (13 ms for the full game's prior): the archive
    still checks each array's CRC-32 as it reads it, which catches a corrupt file, so this
    suits a process loading a file that another one has just verified (a pool worker)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            meta = json.loads(str(npz["meta"]))
            arrays = {name: npz[name] for name in Prior.ARRAYS}
    except FileNotFoundError:
        raise PriorCacheError(f"{path}: not built yet") from None
    except Exception as err:
        raise PriorCacheError(f"{path}: unreadable ({type(err).__name__}: {err})") from None
    if meta.get("format") != FORMAT_VERSION:
        raise PriorCacheError(f"{path}: format {meta.get('format')}, expected {FORMAT_VERSION}")
    if key is not None and meta.get("key") != key:
        raise PriorCacheError(f"{path}: built for key {meta.get('key')}, expected {key}")
    checksums = meta.get("checksums", {})
    for name, array in arrays.items() if verify else ():
        if checksums.get(name) != _checksum(array):
            raise PriorCacheError(f"{path}: checksum of {name!r} does not match (corrupt file)")
    n = int(meta.get("n_elements", -1))
    p = n_pairs(n)
    k = arrays["top_idx"].shape[1] if arrays["top_idx"].ndim == 2 else -1
    expected = {
        "p_success": (p,),
        "expect": (p,),
        "children": (n,),
        "top_idx": (p, k),
        "top_p": (p, k),
        "resid": (p,),
    }
    for name, shape in expected.items():
        if arrays[name].shape != shape:
            raise PriorCacheError(f"{path}: {name} has shape {arrays[name].shape}, not {shape}")
    for array in arrays.values():
        array.setflags(write=False)
    return Prior(n, meta=meta, **arrays)


# A build tells the processes waiting for it how far it is, through its lock file (a line
# of JSON: pid, stage, done, total), rewritten at most this often.
PUBLISH_SECONDS = 0.5
# How often a waiting process looks at the lock and at the build's progress.
WAIT_SECONDS = 0.5


@contextlib.contextmanager
def building(path: Path) -> Iterator[Report]:
    """The build of the prior at ``path`` to this process alone while the block runs; a
    process that needs it meanwhile waits, saying for what and showing how far the build
    is. Yields ``publish(what, done, total)``: report the build's progress to them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_lock(path.with_suffix(".lock")) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _wait_for_build(fh, path)
        try:
            publish = _publisher(fh)
            publish("starting", 0, 1)
            yield publish
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _publisher(fh: IO[str]) -> Report:
    last: list[Any] = [0.0, ""]

    def publish(what: str, done: float, total: float) -> None:
        # Each new stage (a fold) at once, its epochs at most every PUBLISH_SECONDS.
        now, stage = time.monotonic(), what.split(":")[0]
        if now - last[0] < PUBLISH_SECONDS and stage == last[1] and done < total:
            return
        last[0], last[1] = now, stage
        state = {"pid": os.getpid(), "what": what[:200], "done": done, "total": total}
        with contextlib.suppress(OSError):  # progress only: a full disk must not stop a build
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps(state))
            fh.flush()

    return publish


def _build_state(fh: IO[str]) -> dict[str, Any]:
    """What the lock file says of the build under way (empty when it says nothing usable:
    the file is anyone's)."""
    try:
        fh.seek(0)
        state = json.loads(fh.read(1000))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(state, dict):
        return {}
    fields = (("pid", int), ("what", str), ("done", int | float), ("total", int | float))
    if not all(isinstance(state.get(k), kind) for k, kind in fields):
        return {}
    if isinstance(state["pid"], bool) or not 0 <= state["done"] <= state["total"] < 1e9:
        return {}
    return state


def _wait_for_build(fh: IO[str], path: Path) -> None:
    """Wait for the lock of the build that another process has under way, saying in one
    line what this process waits for and then how far that build is."""
    state = _build_state(fh)
    who = f"process {state['pid']}" if state else "another process"
    print(
        f"waiting for {who}, which is building the empowerment agents' prior this command "
        f"needs ({visible(str(path), lines=False)}); it is used once built",
        file=sys.stderr,
    )
    with progress_report(f"{who} building the prior") as bar:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            state = _build_state(fh)
            if state:
                bar(visible(state["what"], lines=False), state["done"], state["total"])
            time.sleep(WAIT_SECONDS)


def ensure_prior(
    graph: RecipeGraph,
    backend: VectorBackend | str = "ngram",
    settings: PriorSettings | None = None,
    *,
    report: Report | None = None,
    rebuild: bool = False,
    verify: bool = True,
) -> tuple[Prior, Path]:
    """The cached prior of ``graph``, built first if missing, stale or corrupt (``verify``:
    see :func:`load_prior`)."""
    backend = backend_from_spec(backend) if isinstance(backend, str) else backend
    settings = settings or PriorSettings()
    key = prior_key(graph, backend, settings)
    path = prior_path(key)
    if not rebuild:
        with contextlib.suppress(PriorCacheError):
            return load_prior(path, key, verify=verify), path
    with building(path) as publish:
        if not rebuild:
            try:
                return load_prior(path, key), path
            except PriorCacheError as err:
                if path.exists():
                    print(f"warning: rebuilding the prior: {err}", file=sys.stderr)
        if report is not None:
            prior, _ = build_prior(graph, backend, settings, report=_both(report, publish))
        else:
            print(
                "building the empowerment agents' prior (once for this recipe file, backend "
                f"and seed {settings.seed}; see 'tpdisc prior')",
                file=sys.stderr,
            )
            with progress_report() as bar:
                prior, _ = build_prior(graph, backend, settings, report=_both(bar, publish))
        save_prior(prior, key, path)
        if report is None:
            quality = prior.metrics
            print(
                f"prior built in {prior.meta['build']['seconds']:.0f} s (held-out ROC-AUC "
                f"{quality.get('roc_auc', float('nan')):.3f}, mean rank "
                f"{quality.get('mean_rank', float('nan')):.1f}) and cached: {path}",
                file=sys.stderr,
            )
    return load_prior(path, key), path


def _both(first: Report, second: Report) -> Report:
    def report(what: str, done: float, total: float) -> None:
        first(what, done, total)
        second(what, done, total)

    return report


@contextlib.contextmanager
def progress_report(label: str = "building prior") -> Iterator[Report]:
    """Progress of a build on stderr, headed ``label``: a rich bar on a terminal, else a
    line per fold."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        last = [""]

        def line(what: str, done: float, total: float) -> None:
            head = what.split(":")[0]
            if head != last[0]:  # one line per fold (or stage), not per epoch
                last[0] = head
                console.print(
                    f"{label}: {what} ({done / total:.0%})",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )

        yield line
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn(label, style="bold", markup=False),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("", total=None)

        def report(what: str, done: float, total: float) -> None:
            progress.update(task, completed=done, total=total, description=what)

        yield report


def fingerprint(meta: dict[str, Any]) -> dict[str, Any]:
    """What identifies a prior in a result: its cache key, one sha256 over its arrays, the
    backend, the seed and its held-out quality."""
    checksums = meta.get("checksums", {})
    digest = hashlib.sha256(
        json.dumps([checksums.get(name) for name in Prior.ARRAYS]).encode()
    ).hexdigest()
    metrics = meta.get("metrics", {})
    return {
        "key": meta.get("key"),
        "sha256": digest,
        "backend": meta.get("backend"),
        "seed": meta.get("settings", {}).get("seed"),
        "quality": {
            name: metrics.get(name)
            for name in (
                "roc_auc",
                "mean_rank",
                "top1",
                "top10",
                "mean_p_success_successes",
                "mean_p_success_failures",
            )
        },
    }


def cached_priors() -> list[dict[str, Any]]:
    """Summaries of every prior in the cache (for ``tpdisc prior show``)."""
    rows = []
    for path in sorted(prior_dir().glob("prior-*.npz")):
        try:
            prior = load_prior(path)
            meta = prior.meta
            rows.append({"path": str(path), "ok": True, **meta, "fingerprint": fingerprint(meta)})
        except PriorCacheError as err:
            rows.append({"path": str(path), "ok": False, "error": str(err)})
    return rows
