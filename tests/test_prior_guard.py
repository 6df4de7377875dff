"""The check that fails any test building the real game's prior (tests/prior_guard.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.prior_guard import TOY_PRIOR_MAX_ELEMENTS, CacheWatch, RealPriorBuilt, refusing_builds
from tpdisc.domain.recipes import RecipeGraph, parse_wordcraft

BASE = ("air", "earth", "fire", "water")


def chain_graph(n: int) -> RecipeGraph:
    """``n`` elements: the four base ones, then each new one made of the one before and air."""
    entities = {name: {"id": i, "recipes": []} for i, name in enumerate(BASE)}
    previous = "water"
    for i in range(len(BASE), n):
        entities[f"e{i}"] = {"id": i, "recipes": [[previous, "air"]]}
        previous = f"e{i}"
    return parse_wordcraft({"entities": entities}, f"chain-{n}")


def test_a_build_above_the_toy_size_is_refused_and_remembered(toy_graph: RecipeGraph) -> None:
    built: list[int] = []
    refused: list[str] = []
    guarded = refusing_builds(lambda graph: built.append(graph.n_elements), refused)
    guarded(toy_graph)
    with pytest.raises(RealPriorBuilt, match="real game's prior"):
        guarded(chain_graph(TOY_PRIOR_MAX_ELEMENTS + 1))
    assert built == [toy_graph.n_elements]
    assert len(refused) == 1 and f"{TOY_PRIOR_MAX_ELEMENTS + 1} elements" in refused[0]


def fake_prior(cache: Path, key: str, n_elements: int | None) -> None:
    """A lock, and unless ``n_elements`` is None the prior it guarded, as the store leaves them."""
    folder = cache / "priors"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"prior-{key}.lock").touch()
    if n_elements is not None:
        meta = np.array(json.dumps({"n_elements": n_elements}))
        np.savez(folder / f"prior-{key}.npz", meta=meta)


def test_the_cache_tells_large_and_unfinished_builds_once(tmp_path: Path) -> None:
    fake_prior(tmp_path, "toy", 16)
    fake_prior(tmp_path, "real", 700)
    fake_prior(tmp_path, "killed", None)
    watch = CacheWatch()
    found = watch.new_violations([tmp_path])
    assert len(found) == 2
    assert "prior-killed.npz" in found[0] and "did not finish" in found[0]
    assert "prior-real.npz" in found[1] and "700 elements" in found[1]
    assert watch.new_violations([tmp_path]) == []  # each build is reported once


BUILD = """
from tpdisc.agents.empowerment.prior.build import PriorSettings
from tpdisc.agents.empowerment.prior.mlp import Training
from tpdisc.agents.empowerment.prior.models import LinkSettings, ResultSettings
from tpdisc.agents.empowerment.prior.store import ensure_prior
from tpdisc.agents.empowerment.prior.vectors import NgramBackend
from tests.test_prior_guard import chain_graph

small = PriorSettings(
    folds=2,
    link=LinkSettings(hidden=2, training=Training(1, 64)),
    result=ResultSettings(hidden=(4,), training=Training(1, 64)),
    top_k=2,
)
ensure_prior(chain_graph({n}), NgramBackend(dim=2), small, report=lambda *a: None)
"""


def test_a_build_in_another_process_is_seen_in_its_cache(tmp_path: Path) -> None:
    """A real build, in a process of its own as a command's would be: the store's files tell
    its size (just above the toy limit, a fast stand-in for the real game's 700)."""
    n = TOY_PRIOR_MAX_ELEMENTS + 1
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", BUILD.format(n=n)],
        cwd=root,
        env={**os.environ, "TPDISC_CACHE": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (found,) = CacheWatch().new_violations([tmp_path])
    assert f"{n} elements was built" in found
