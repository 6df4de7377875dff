"""The SQLite archive: round trips, atomic iterations, totals, read-only access."""

from __future__ import annotations

import pytest

from tpdisc.errors import ConfigError
from tpdisc.search.archive import Archive, Candidate
from tpdisc.storage import StorageError


def row(name: str, iteration: int, attempt: int = 0, **kw) -> Candidate:
    defaults = dict(mode="warm-up" if attempt == 0 else "repair", status="valid", proposer="test")
    defaults.update(kw)
    return Candidate(name=name, iteration=iteration, attempt=attempt, **defaults)


def test_round_trip_keeps_every_field(tmp_path) -> None:
    with Archive(tmp_path / "a.sqlite") as archive:
        seed = row(
            "paired",
            0,
            mode="seed",
            code="x = 1",
            fitness_mean=60.0,
            fitness_sem=1.0,
            fitness_values=[59.0, 61.0],
            seeds=[0, 1],
            logs=[[], []],
        )
        archive.add_seed(seed)
        child = row(
            "i0001",
            1,
            code="y = 2",
            parent_id=seed.id,
            lineage=[seed.id],
            contrast_ids=[seed.id],
            genome={"route": "ring"},
            fitness_mean=70.0,
            prompt_tokens=100,
            completion_tokens=20,
            cost=0.5,
            model="m",
            description="d",
            logging="l",
            reasoning="r",
            prompt="p",
            answer="a",
        )
        archive.finish_iteration(1, "warm-up", [child])
        back = archive.get(child.id)
    assert back == child
    assert back.code_sha256 is not None and back.valid


def test_iteration_is_one_transaction(tmp_path) -> None:
    with Archive(tmp_path / "a.sqlite") as archive:
        bad = row("i0001", 1, status="invalid", error="boom")
        clash = row("i0001", 1)  # same (iteration, attempt, name): the insert fails
        with pytest.raises(StorageError, match="refused a write"):
            archive.finish_iteration(1, "warm-up", [bad, clash])
        assert archive.candidates() == [] and archive.last_iteration() == 0
        fixed = row("i0001r1", 1, attempt=1, fitness_mean=3.0)
        accepted = archive.finish_iteration(
            1, "warm-up", [row("i0001", 1, status="invalid"), fixed]
        )
        assert accepted == fixed.id and fixed.repair_of is not None
        assert archive.last_iteration() == 1
        # An iteration cannot be stored twice.
        with pytest.raises(StorageError, match="refused a write"):
            archive.finish_iteration(1, "warm-up", [row("other", 1, fitness_mean=1.0)])
        assert len(archive.candidates()) == 2


def test_stats_totals_and_calls(tmp_path) -> None:
    with Archive(tmp_path / "a.sqlite") as archive:
        archive.add_seed(row("a", 0, mode="seed", fitness_mean=10.0))
        archive.add_seed(row("b", 0, mode="seed", fitness_mean=20.0))
        archive.finish_iteration(
            1,
            "warm-up",
            [
                row("i1", 1, status="invalid", error="e"),
                row("i1r1", 1, attempt=1, fitness_mean=30.0),
            ],
        )
        archive.record_call(
            1,
            "warm-up",
            model="m",
            prompt_tokens=10,
            completion_tokens=5,
            cost=0.25,
            requests=2,
            seconds=1.0,
            usage_estimated=False,
        )
        archive.record_call(
            1,
            "repair",
            model="m",
            prompt_tokens=7,
            completion_tokens=3,
            cost=0.5,
            requests=1,
            seconds=1.0,
            usage_estimated=True,
        )
        stats = archive.stats()
        totals = archive.totals()
        assert archive.find_code("nothing") is None
    assert (stats.n_valid, stats.n_invalid, stats.best_name) == (3, 1, "i1r1")
    assert stats.mean_fitness == pytest.approx(20.0) and stats.best_fitness == 30.0
    # the search's own protocols, the seeded baselines apart
    assert (totals.protocols, totals.valid, totals.invalid, totals.repairs) == (4, 1, 1, 1)
    assert totals.seeds == 2
    assert (totals.llm_calls, totals.prompt_tokens, totals.completion_tokens) == (2, 17, 8)
    assert totals.cost == pytest.approx(0.75)


def test_wal_mode_and_read_only_access(tmp_path) -> None:
    path = tmp_path / "a.sqlite"
    with Archive(path) as archive:
        mode = archive.db.execute("PRAGMA journal_mode").fetchone()[0]
        archive.add_seed(row("a", 0, mode="seed", code="c", fitness_mean=1.0))
        with Archive(path, readonly=True) as reader:  # while the writer is open
            assert [c.name for c in reader.candidates(valid_only=True)] == ["a"]
            assert reader.find_code("c") == 1
            with pytest.raises(StorageError):
                reader.set_meta("k", "v")
    assert mode == "wal"


def test_bad_paths_are_one_line_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no archive"):
        Archive(tmp_path / "missing.sqlite", readonly=True)
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database at all" * 100)
    with pytest.raises(ConfigError, match="not a usable archive"):
        Archive(junk)
    with (
        Archive(tmp_path / "a.sqlite") as archive,
        pytest.raises(ConfigError, match="no protocol with id 9"),
    ):
        archive.get(9)


def filled(archive: Archive) -> None:
    """Seeds, a lineage three deep, a tie on fitness, a failure and a duplicate."""
    big = dict(code="x = 1\n" * 100, prompt="p" * 1000, logs=[["log"] * 50], curve_mean=[1.0])
    for i, name in enumerate(("paired", "asocial")):
        archive.add_seed(row(name, 0, mode="seed", fitness_mean=50.0 + i, **big))
    lineage: list[int] = []
    for i, fitness in enumerate((55.0, 70.0, 70.0, 60.0), 1):
        big["code"] = f"y = {i}\n" * 100
        child = row(f"i{i}", i, mode="improve", fitness_mean=fitness, fitness_sem=1.0, **big)
        child.parent_id, child.lineage = (lineage[0] if lineage else None), list(lineage)
        archive.finish_iteration(i, "improve", [child])
        lineage = [child.id or 0, *lineage]
    archive.finish_iteration(
        5,
        "diversify",
        [
            row("i5", 5, status="invalid", error="boom", code="z"),
            row("i5r1", 5, attempt=1, status="duplicate", code="y = 1\n" * 100),
        ],
    )


def test_summaries_carry_no_texts_and_match_the_rows(tmp_path) -> None:
    with Archive(tmp_path / "a.sqlite") as archive:
        filled(archive)
        rows = archive.candidates()
        summaries = archive.summaries()
        valid = archive.summaries(valid_only=True)
        best = archive.summaries(valid_only=True, order="fitness", limit=3)
    heavy = {"code", "prompt", "answer", "logs", "curve_mean", "fitness_values", "genome"}
    assert not heavy & set(vars(summaries[0]))
    assert len(summaries) == len(rows) == 8
    for s, c in zip(summaries, rows, strict=True):
        assert (s.id, s.name, s.mode, s.status, s.parent_id, list(s.lineage), s.valid) == (
            c.id,
            c.name,
            c.mode,
            c.status,
            c.parent_id,
            c.lineage,
            c.valid,
        )
        assert s.fitness_mean == c.fitness_mean and s.fitness_sem == c.fitness_sem
    assert [s.name for s in valid] == [c.name for c in rows if c.valid]
    # best first; a tie keeps the order of storage, as a stable sort does
    ranked = sorted((c for c in rows if c.valid), key=lambda c: -c.fitness)
    assert [s.name for s in best] == [c.name for c in ranked[:3]] == ["i2", "i3", "i4"]


def test_typed_filters_and_reading_rows_by_id(tmp_path) -> None:
    with Archive(tmp_path / "a.sqlite") as archive:
        filled(archive)
        assert [c.name for c in archive.candidates(mode="seed")] == ["paired", "asocial"]
        assert [c.name for c in archive.candidates(status="invalid")] == ["i5"]
        assert len(archive.candidates(valid_only=True)) == 6
        assert archive.candidates(status="duplicate", valid_only=True) == []
        picked = archive.get_many([5, 1, 3])
        assert [c.id for c in picked] == [5, 1, 3] and all(c.code for c in picked)
        assert archive.get_many([]) == []
        with pytest.raises(ConfigError, match="no protocol with id 99"):
            archive.get_many([1, 99])
        with pytest.raises(ValueError, match="unknown status"):
            archive.candidates(status="where 1")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="unknown order"):
            archive.summaries(order="fitness_mean; DROP TABLE protocols")  # type: ignore[arg-type]
        stats = archive.stats()
    assert (stats.n_valid, stats.n_invalid, stats.best_name) == (6, 1, "i2")
    assert stats.mean_fitness == pytest.approx((50 + 51 + 55 + 70 + 70 + 60) / 6)


def test_an_archive_without_the_code_index_gets_it_on_open(tmp_path) -> None:
    path = tmp_path / "a.sqlite"
    with Archive(path) as archive:
        filled(archive)
        archive.db.execute("DROP INDEX protocols_code")  # as archives written before it
    with Archive(path, readonly=True) as reader:
        assert reader.find_code("y = 1\n" * 100) == 3
    with Archive(path) as archive:
        indexes = {r[0] for r in archive.db.execute("SELECT name FROM sqlite_master")}
        assert "protocols_code" in indexes
        assert archive.find_code("y = 1\n" * 100) == 3


def test_ranking_and_statistics_read_an_index_not_the_rows(tmp_path) -> None:
    """A summary column missing from protocols_summary would make every iteration read
    every row again (code, prompts, logs); the query plan says whether it does."""
    with Archive(tmp_path / "a.sqlite") as archive:
        filled(archive)
        statements: list[str] = []
        archive.db.set_trace_callback(statements.append)
        archive.summaries(valid_only=True)
        archive.summaries(valid_only=True, order="fitness", limit=3)
        archive.stats()
        archive.db.set_trace_callback(None)
        for sql in statements:
            plan = " ".join(r[3] for r in archive.db.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert "COVERING INDEX" in plan, (sql, plan)


def test_rescores_are_kept_and_an_older_archive_is_tolerated_then_migrated(tmp_path) -> None:
    from tpdisc.search.archive import Rescore

    path = tmp_path / "a.sqlite"
    with Archive(path) as archive:
        pid = archive.add_seed(row("a", 0, mode="seed", code="c", fitness_mean=5.0))
        archive.db.execute("DROP TABLE rescores")  # as archives written before it
    with Archive(path, readonly=True) as reader:
        assert reader.rescores() == {}  # read-only: no table, and no error
    with Archive(path) as archive:  # opened for writing: the table is added
        archive.add_rescore(Rescore(pid, [3, 4], [4.0, 6.0], 5.0, 1.0, "2026-01-01T00:00:00"))
        archive.add_rescore(Rescore(pid, [5, 6], [1.0, 3.0], 2.0, 1.0, "2026-01-02T00:00:00"))
        # the same seeds again replace the earlier scores there
        archive.add_rescore(Rescore(pid, [3, 4], [4.0, 4.0], 4.0, 0.0, "2026-01-03T00:00:00"))
    with Archive(path, readonly=True) as reader:
        latest = reader.rescores()[pid]
    assert (latest.seeds, latest.mean, latest.fitness_values) == ([3, 4], 4.0, [4.0, 4.0])
    assert latest.to_json()["sem"] == 0.0


def test_records_go_with_their_iteration_and_an_older_archive_has_none(tmp_path) -> None:
    from tpdisc.search.archive import RecordRow

    path = tmp_path / "a.sqlite"
    kept = RecordRow("settings-a", (0, 1), b"bytes")
    with Archive(path) as archive:
        archive.finish_iteration(
            1,
            "warm-up",
            [
                row("i1", 1, status="invalid", code="x = 1"),
                row("i1r1", 1, 1, code="y = 2", fitness_mean=3.0),
            ],
            records={"i1": kept, "i1r1": kept},  # only a valid row keeps them
        )
        with pytest.raises(StorageError):  # one transaction: neither is written
            archive.finish_iteration(
                1, "warm-up", [row("i2", 1, code="z", fitness_mean=1.0)], records={"i2": kept}
            )
        valid = archive.candidates(valid_only=True)[0].id
        assert valid is not None
        assert archive.records("settings-a", [valid, 99]) == {valid: kept}
        assert archive.records("settings-b", [valid]) == {}  # other settings: not these
        assert archive.record_sizes() == (1, 5)
        # records of other code than the row's (a hand edit) are not the protocol's
        archive.db.execute("UPDATE records SET code_sha256 = 'other'")
        assert archive.records("settings-a", [valid]) == {}
        archive.db.execute("DROP TABLE records")  # as archives written before them
    with Archive(path, readonly=True) as reader:
        assert reader.records("settings-a", [valid]) == {} and reader.record_sizes() == (0, 0)
        assert len(reader.candidates()) == 2
    with Archive(path) as archive:  # opened for writing: the table is added
        assert archive.record_sizes() == (0, 0)
        archive.db.execute(
            "INSERT INTO records VALUES (?, 's', ?, '[0, \"x\"]', x'00')",
            (valid, archive.get(valid).code_sha256),
        )
        with pytest.raises(ConfigError, match="records row 2: column seeds: expected"):
            archive.records("s", [valid])


def test_racing_rows_scored_designs_and_the_bar(tmp_path) -> None:
    """A raced row is scored (its code is known, its design teaches the surrogate) but
    never valid: not ranked, not counted among the valid."""
    with Archive(tmp_path / "a.sqlite") as archive:
        archive.add_seed(row("a", 0, mode="seed", fitness_mean=10.0))
        archive.finish_iteration(
            1,
            "warm-up",
            [row("i1", 1, fitness_mean=30.0, genome={"route": "everyone"}, code="x = 1")],
        )
        archive.finish_iteration(
            2,
            "warm-up",
            [row("i2", 2, status="raced", fitness_mean=5.0, genome={"n_memories": 3}, code="y")],
        )
        assert archive.fitness_at_rank(1) == 30.0 and archive.fitness_at_rank(2) == 10.0
        assert archive.fitness_at_rank(3) is None
        assert archive.scored_designs() == [({"route": "everyone"}, 30.0), ({"n_memories": 3}, 5.0)]
        assert archive.find_code("y") is not None
        assert archive.totals().raced == 1 and archive.totals().valid == 1  # the seed apart
        assert archive.totals().seeds == 1
        assert archive.stats().n_valid == 2
