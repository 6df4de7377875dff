"""What ``tpdisc archive`` shows: one name per protocol, and counts that say what they count."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tpdisc.errors import ConfigError
from tpdisc.search.archive import Archive, Candidate
from tpdisc.search.listing import export, labels, protocol_id, show, table, totals_line


def row(name: str, iteration: int, **kw) -> Candidate:
    defaults = dict(mode="improve", status="valid", proposer="test", code=f"# {name}")
    return Candidate(name=name, iteration=iteration, attempt=0, **{**defaults, **kw})


@pytest.fixture
def archive(tmp_path: Path) -> Archive:
    """Two seeded baselines, then i0001 from paired and i0002 from i0001, with a contrast."""
    with Archive(tmp_path / "archive.sqlite") as archive:
        seeds = [
            row(name, 0, mode="seed", fitness_mean=fitness)
            for name, fitness in (("asocial", 10.0), ("paired", 20.0))
        ]
        for seed in seeds:
            archive.add_seed(seed)
        first = row("i0001", 1, parent_id=seeds[1].id, lineage=[seeds[1].id], fitness_mean=30.0)
        archive.finish_iteration(1, "improve", [first])
        second = row(
            "i0002",
            2,
            parent_id=first.id,
            lineage=[first.id, seeds[1].id],
            contrast_ids=[seeds[0].id],
            fitness_mean=40.0,
        )
        archive.finish_iteration(2, "improve", [second])
    return Archive(tmp_path / "archive.sqlite", readonly=True)


def text(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(renderable)
    return out.getvalue()


def test_the_table_names_protocols_and_parents_by_name(archive: Archive) -> None:
    printed = text(table(archive))
    header = next(line for line in printed.splitlines() if "rank" in line)
    assert header.split("┃")[1:4] == [" rank ", " protocol ", " mode    "]
    best = next(line for line in printed.splitlines() if " i0002 " in line)
    assert [cell.strip() for cell in best.split("│")][1:3] == ["1", "i0002"]
    assert "│ i0001  " in best  # its parent, by name
    assert "│ 3  " not in best  # never a row id (i0001's is 3)


def test_show_names_parent_lineage_and_contrasts(archive: Archive) -> None:
    facts = text(show(archive, protocol_id(archive, "i0002"))).splitlines()
    assert facts[0] == "i0002 — valid, improve, iteration 2"
    assert facts[2] == "parent i0001; lineage i0001 ← paired; contrasts asocial"


def test_a_protocol_is_found_by_its_name_only(archive: Archive) -> None:
    assert archive.get(protocol_id(archive, " paired ")).name == "paired"
    with pytest.raises(ConfigError, match="lists them by name"):
        protocol_id(archive, "3")  # i0001's row id


def test_an_older_archive_tells_protocols_that_share_a_name_apart() -> None:
    from tpdisc.search.archive import CandidateSummary

    def summary(pid: int, name: str) -> CandidateSummary:
        return CandidateSummary(pid, name, 1, 0, "improve", "valid", "t", None, (), 1.0, 0, 0, 0)

    assert labels([summary(1, "paired"), summary(7, "i0004"), summary(9, "i0004")]) == {
        1: "paired",
        7: "i0004-7",
        9: "i0004-9",
    }


def test_an_export_is_headed_by_the_name(archive: Archive, tmp_path: Path) -> None:
    path = export(archive, protocol_id(archive, "i0001"), tmp_path / "best.py")
    assert path.read_text().startswith(f"# i0001 from {tmp_path} (improve, valid)\n")


def test_the_counts_keep_the_seeded_baselines_apart(archive: Archive) -> None:
    assert totals_line(archive) == (
        "2 iterations: 2 valid, 0 failed, 0 duplicates (0 repair attempts); 2 baselines seeded"
    )
