"""The analysis table in a run's archive: round trips, settings hashes, one transaction per
protocol, and the archive still opening beside it."""

from __future__ import annotations

import pytest

from tpdisc.analysis.store import (
    ABLATED,
    ALL_SEEDS,
    FEATURES,
    ORIGINAL,
    AnalysisStore,
    SimSummary,
    settings_hash,
)
from tpdisc.errors import ConfigError
from tpdisc.search.archive import Archive, Candidate


@pytest.fixture
def archive_path(tmp_path):
    path = tmp_path / Archive.FILE_NAME
    with Archive(path) as archive:
        archive.add_seed(
            Candidate(
                name="paired",
                iteration=0,
                attempt=0,
                mode="seed",
                status="valid",
                proposer="test",
                fitness_mean=5.0,
            )
        )
    return path


def summary(seed: int, final: int = 7) -> SimSummary:
    return SimSummary(seed, final, received=12, novel_received=9, n_agents=3, curve=(4, 6, final))


def test_summaries_round_trip_by_kind_seed_and_settings(archive_path) -> None:
    settings = {"sim": {"n_agents": 3}, "recipes_sha256": "abc"}
    with AnalysisStore(archive_path) as store:
        key = store.register(settings)
        assert key == settings_hash({"recipes_sha256": "abc", "sim": {"n_agents": 3}})
        assert store.settings(key) == settings and store.settings("nope") is None
        rows = [(ORIGINAL, s, summary(s).to_json()) for s in (15, 16)]
        rows.append((ABLATED, 15, summary(15, 5).to_json()))
        features = {"seeds": [15, 16], "features": {"recency": 0.5, "rarity": None}}
        rows.append((FEATURES + ORIGINAL, ALL_SEEDS, features))
        store.put(1, key, rows)
    with AnalysisStore(archive_path) as store:
        assert store.summaries(ORIGINAL, key, [1, 2]) == {1: {15: summary(15), 16: summary(16)}}
        assert store.summaries(ABLATED, key, [1]) == {1: {15: summary(15, 5)}}
        assert store.get(FEATURES + ORIGINAL, key, [1]) == {1: {ALL_SEEDS: features}}
        assert store.features(key, [1, 2]) == {1: {"original": features["features"]}}
        assert store.features(key, [1], seeds=[15, 16]) == store.features(key, [1])
        assert store.features(key, [1], seeds=[15]) == {}
        assert store.get(ORIGINAL, settings_hash({"other": 1}), [1]) == {}
        assert store.count() == 4 and store.count(ORIGINAL) == 2
        # A value stored again replaces the old one.
        store.put(1, key, [(ORIGINAL, 15, summary(15, 9).to_json())])
        assert store.summaries(ORIGINAL, key, [1])[1][15].final == 9
    assert summary(3).novel_per_agent == 3.0 and summary(3).received_per_agent == 4.0


def test_a_protocol_is_stored_whole_or_not_at_all(archive_path) -> None:
    with AnalysisStore(archive_path) as store:
        key = store.register({})
        rows = [(ORIGINAL, 0, summary(0).to_json()), (ORIGINAL, 1, {"bad": object()})]
        with pytest.raises(TypeError):
            store.put(1, key, rows)
        assert store.count() == 0


def test_many_protocols_are_read_in_chunks(archive_path) -> None:
    with AnalysisStore(archive_path) as store:
        key = store.register({})
        for pid in range(1200):
            store.put(pid, key, [(ORIGINAL, 0, summary(0, pid).to_json())])
        got = store.summaries(ORIGINAL, key, range(1200))
    assert len(got) == 1200 and got[1199][0].final == 1199


def test_the_archive_opens_as_before_beside_the_table(archive_path) -> None:
    with AnalysisStore(archive_path) as store:
        store.put(1, store.register({}), [(ORIGINAL, 0, summary(0).to_json())])
    with Archive(archive_path, readonly=True) as archive:
        assert [c.name for c in archive.candidates()] == ["paired"]
    with Archive(archive_path) as archive:
        assert archive.stats().n_valid == 1


def test_no_archive_no_store(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no archive"):
        AnalysisStore(tmp_path / "missing.sqlite")
