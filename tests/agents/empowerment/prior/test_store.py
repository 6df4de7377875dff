from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tpdisc.agents.empowerment.prior.store as store
from tpdisc.agents.empowerment.prior.build import PriorSettings
from tpdisc.agents.empowerment.prior.mlp import Training
from tpdisc.agents.empowerment.prior.models import LinkSettings, ResultSettings
from tpdisc.agents.empowerment.prior.store import (
    PriorCacheError,
    cached_priors,
    ensure_prior,
    load_prior,
    prior_key,
)
from tpdisc.agents.empowerment.prior.vectors import NgramBackend
from tpdisc.domain.recipes import RecipeGraph

SMALL = PriorSettings(
    folds=3,
    link=LinkSettings(hidden=4, training=Training(2, 16)),
    result=ResultSettings(hidden=(8,), training=Training(2, 8)),
    top_k=4,
)
BACKEND = NgramBackend(dim=4)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path))
    return tmp_path


def count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    builds: list[int] = []
    real = store.build_prior

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        builds.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "build_prior", counting)
    return builds


def test_built_once_then_loaded(toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = count_builds(monkeypatch)
    first, path = ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    second, path2 = ensure_prior(toy_graph, BACKEND, SMALL)
    assert builds == [1] and path == path2 and path.is_file()
    assert np.array_equal(first.p_success, second.p_success)
    assert not second.p_success.flags.writeable
    assert [row["ok"] for row in cached_priors()] == [True]


def test_corrupt_cache_is_rebuilt(
    toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    builds = count_builds(monkeypatch)
    _, path = ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte somewhere in the arrays
    path.write_bytes(bytes(raw))
    with pytest.raises(PriorCacheError):
        load_prior(path)
    ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    assert builds == [1, 1]
    assert "rebuilding the prior" in capsys.readouterr().err
    load_prior(path)  # sound again

    path.write_bytes(b"not a zip file")
    ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    assert len(builds) == 3


def test_stale_cache_is_rebuilt(toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = count_builds(monkeypatch)
    _, path = ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    # A sound file made for another key (copied by hand, older settings) is not used.
    with np.load(path) as npz:
        meta = json.loads(str(npz["meta"]))
        arrays = {name: npz[name] for name in npz.files if name != "meta"}
    meta["key"] = "someotherkey"
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
    with pytest.raises(PriorCacheError, match="key"):
        load_prior(path, prior_key(toy_graph, BACKEND, SMALL))
    ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    assert builds == [1, 1]


def test_key_depends_on_recipes_backend_and_settings(toy_graph: RecipeGraph) -> None:
    key = prior_key(toy_graph, BACKEND, SMALL)
    assert prior_key(toy_graph, NgramBackend(dim=5), SMALL) != key
    assert prior_key(toy_graph, BACKEND, PriorSettings(folds=4)) != key
    restricted = toy_graph.restricted_to(range(10))
    assert restricted.sha256 == toy_graph.sha256
    assert prior_key(restricted, BACKEND, SMALL) != key
    # speed settings do not change the prior
    faster = PriorSettings(folds=3, link=SMALL.link, result=SMALL.result, top_k=4, threads=2)
    assert prior_key(toy_graph, BACKEND, faster) == key


def test_rebuild_forces_a_build(toy_graph: RecipeGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = count_builds(monkeypatch)
    ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None, rebuild=True)
    assert builds == [1, 1]


def file_arrays(path: Path) -> dict[str, bytes]:
    with np.load(path, allow_pickle=False) as npz:
        return {name: npz[name].tobytes() for name in npz.files if name != "meta"}


def test_the_same_seed_gives_the_same_bytes_and_another_seed_another_prior(
    toy_graph: RecipeGraph, cache: Path
) -> None:
    from dataclasses import replace

    first, path = ensure_prior(toy_graph, BACKEND, SMALL)
    before = file_arrays(path)
    again, _ = ensure_prior(toy_graph, BACKEND, SMALL, rebuild=True)
    assert file_arrays(path) == before
    assert store.fingerprint(again.meta) == store.fingerprint(first.meta)
    # folds trained in worker processes: the same bytes (each fold has its own stream)
    ensure_prior(toy_graph, BACKEND, replace(SMALL, processes=2), rebuild=True)
    assert file_arrays(path) == before
    other, other_path = ensure_prior(toy_graph, BACKEND, replace(SMALL, seed=1))
    assert other_path != path
    assert file_arrays(other_path) != before
    print_ = store.fingerprint(other.meta)
    assert print_["seed"] == 1 and print_["key"] == other.meta["key"]
    assert print_["sha256"] != store.fingerprint(first.meta)["sha256"]
    assert 0.0 <= print_["quality"]["roc_auc"] <= 1.0


def test_checksums_are_those_of_the_arrays_bytes_so_earlier_caches_still_load() -> None:
    import hashlib

    from tpdisc.agents.empowerment.prior.store import _checksum

    wide = np.arange(48, dtype=np.uint16).reshape(6, 8)
    for array in (wide, wide[:, ::2], np.linspace(0, 1, 7, dtype=np.float32)):
        expected = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
        assert _checksum(array) == expected


def test_a_worker_load_skips_the_sha256_but_not_the_archives_crc(toy_graph: RecipeGraph) -> None:
    _, path = ensure_prior(toy_graph, BACKEND, SMALL, report=lambda *a: None)
    with np.load(path) as npz:
        arrays = {name: npz[name] for name in npz.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta["checksums"]["p_success"] = "0" * 64  # a sound archive whose sha256 disagrees
    with path.open("wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta)), **arrays)
    with pytest.raises(PriorCacheError, match="checksum of 'p_success'"):
        load_prior(path)
    assert np.array_equal(load_prior(path, verify=False).p_success, arrays["p_success"])

    raw = bytearray(path.read_bytes())
    at = raw.find(arrays["p_success"].tobytes())
    raw[at] ^= 0xFF  # a flipped byte inside an array: the archive's CRC-32 catches it
    path.write_bytes(bytes(raw))
    with pytest.raises(PriorCacheError, match="CRC"):
        load_prior(path, verify=False)


# --- round 5: a process that waits for another's build says so, and how far it is --------

# Another process building the prior of the toy game with SMALL settings: it takes the
# build's lock, stays a moment at its first fold (so that the waiter sees one stage at
# least), then builds for real, telling its progress through the lock as every build does.
BUILDER = """
import sys, time
from tests.conftest import TOY
from tests.agents.empowerment.prior.test_store import BACKEND, SMALL
from tpdisc.agents.empowerment.prior import store
from tpdisc.domain.recipes import parse_wordcraft

graph = parse_wordcraft(TOY, "toy")
key = store.prior_key(graph, BACKEND, SMALL)
path = store.prior_path(key)
with store.building(path) as publish:
    publish("fold 1/3: link model", 0, 6)
    time.sleep(2)
    prior, _ = store.build_prior(graph, BACKEND, SMALL, report=publish)
    store.save_prior(prior, key, path)
"""


def test_a_command_waiting_for_another_process_build_says_so_and_shows_its_progress(
    toy_graph: RecipeGraph,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = store.prior_path(prior_key(toy_graph, BACKEND, SMALL))
    lock = path.with_suffix(".lock")
    builder = subprocess.Popen(
        [sys.executable, "-c", BUILDER],
        env={**os.environ, "TPDISC_CACHE": str(cache)},
        cwd=Path(__file__).parents[4],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while f'"pid": {builder.pid}' not in (lock.read_text() if lock.is_file() else ""):
        assert builder.poll() is None and time.monotonic() < deadline, builder.communicate()
        time.sleep(0.05)
    builds = count_builds(monkeypatch)
    _, got = ensure_prior(toy_graph, BACKEND, SMALL)
    assert builder.wait(timeout=120) == 0, builder.communicate()[1]
    said = capsys.readouterr().err.splitlines()
    assert said[0] == (
        f"waiting for process {builder.pid}, which is building the empowerment agents' prior "
        f"this command needs ({path}); it is used once built"
    )
    assert f"process {builder.pid} building the prior: fold 1/3: link model (0%)" in said
    assert got == path and builds == []  # the other's prior, not one of its own
