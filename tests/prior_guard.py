"""The check that no test builds the real game's prior.

Building it costs minutes of CPU (more on a busy machine), enough to push a test past its
timeout; tests play on toy graphs, whose priors build in seconds. Two nets catch a build:

- in the test process, :func:`refusing_builds` wraps the prior store's builder so that a
  build of a large graph stops at once with a message naming the rule;
- in every other process (a command run as a subprocess, pool workers), the prior's cache
  tells: each build takes a lock file beside the prior it writes, so
  :class:`CacheWatch` looks after each test for new locks whose prior is large, or whose
  prior never got written (a build still running, or killed with its test).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

# Priors of up to this many elements are toy graphs' (the largest in the tests has 16);
# the real game has 700, and every variant of it plays on the full game's prior.
TOY_PRIOR_MAX_ELEMENTS = 100

RULE = (
    "no test may build the real game's prior (minutes of CPU): play a toy graph "
    "(tests/conftest.py's TOY), or stochastic agents on the real one"
)


class RealPriorBuilt(AssertionError):
    """A test built (or started to build) a prior larger than a toy graph's."""


def refusing_builds(build: Callable[..., Any], seen: list[str]) -> Callable[..., Any]:
    """``build`` (the prior store's ``build_prior``), refusing graphs above the toy size;
    each refusal is also appended to ``seen``, so that a caller that swallows the error
    still fails its test."""

    def guarded(graph: Any, *args: Any, **kwargs: Any) -> Any:
        if graph.n_elements > TOY_PRIOR_MAX_ELEMENTS:
            message = f"a prior of {graph.n_elements} elements was about to be built: {RULE}"
            seen.append(message)
            raise RealPriorBuilt(message)
        return build(graph, *args, **kwargs)

    return guarded


def prior_size(path: Path) -> int | None:
    """The number of elements of the cached prior at ``path`` (None if it cannot be read)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            return int(json.loads(str(npz["meta"]))["n_elements"])
    except Exception:  # a prior being written, or not a prior: nothing to tell from it
        return None


class CacheWatch:
    """The prior builds that cache folders show, each reported once."""

    def __init__(self) -> None:
        self.seen: set[Path] = set()

    def new_violations(self, caches: Iterable[Path]) -> list[str]:
        found = []
        for cache in caches:
            for lock in sorted((cache / "priors").glob("prior-*.lock")):
                if lock in self.seen:
                    continue
                self.seen.add(lock)
                prior = lock.with_suffix(".npz")
                if not prior.is_file():
                    found.append(
                        f"{prior.name}: a prior build started and did not finish within the "
                        f"test (toy priors build in seconds): {RULE}"
                    )
                elif (size := prior_size(prior)) is not None and size > TOY_PRIOR_MAX_ELEMENTS:
                    found.append(f"{prior.name}: a prior of {size} elements was built: {RULE}")
        return found
