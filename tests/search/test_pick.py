"""A search's pick and the protocols named by run: what "best" means, and RUN_DIR:NAME."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import TOY
from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.search.archive import Archive, Candidate, Rescore
from tpdisc.search.pick import run_pick, run_protocol, run_references, split_reference

CODE = """class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        return {}
"""


def row(name: str, iteration: int, fitness: float, mode: str = "improve") -> Candidate:
    return Candidate(
        name=name,
        iteration=iteration,
        attempt=0,
        mode=mode,
        status="valid",
        proposer="test",
        code=None if mode == "seed" else f"# {name}\n{CODE}",
        fitness_mean=fitness,
    )


def make_run(folder: Path) -> dict[str, int]:
    """A run of three protocols and a seeded baseline; their row ids by name."""
    folder.mkdir(parents=True, exist_ok=True)
    with Archive(folder / Archive.FILE_NAME) as archive:
        ids = {"paired": archive.add_seed(row("paired", 0, 60.0, "seed"))}
        for k, (name, fitness) in enumerate([("i0001", 70.0), ("i0002", 80.0), ("i0003", 75.0)]):
            ids[name] = archive.finish_iteration(k + 1, "improve", [row(name, k + 1, fitness)]) or 0
    return ids


def test_without_fresh_scores_the_pick_is_the_best_by_fitness(tmp_path: Path) -> None:
    make_run(tmp_path / "run")
    with Archive(tmp_path / "run" / Archive.FILE_NAME, readonly=True) as archive:
        pick = run_pick(archive)
    assert (pick.name, pick.fresh, pick.rescored) == ("i0002", None, 0)
    assert pick.why() == "the best by fitness, 80.00; none re-scored"


def test_with_fresh_scores_the_pick_is_the_best_there_whatever_its_fitness(
    tmp_path: Path,
) -> None:
    ids = make_run(tmp_path / "run")
    with Archive(tmp_path / "run" / Archive.FILE_NAME) as archive:
        archive.add_rescore(Rescore(ids["i0002"], [30, 31], [70.0, 71.0], 70.5, 0.5))
        archive.add_rescore(Rescore(ids["i0003"], [30, 31], [74.0, 74.0], 74.0, 0.0))
        pick = run_pick(archive)
    assert (pick.name, pick.rescored) == ("i0003", 2)
    assert pick.why() == (
        "the best of the 2 re-scored on fresh seeds, 74.00 ± 0.00 (fitness 75.00)"
    )


def test_a_run_without_a_valid_protocol_has_no_pick(tmp_path: Path) -> None:
    with Archive(tmp_path / Archive.FILE_NAME) as archive:
        with pytest.raises(ConfigError, match="no valid protocol of its own to pick"):
            run_pick(archive)
        archive.add_seed(row("paired", 0, 60.0, "seed"))  # a yardstick, not a find
        with pytest.raises(ConfigError, match="no valid protocol of its own to pick"):
            run_pick(archive)


def test_a_seeded_baseline_is_never_the_pick_even_when_it_scores_best(tmp_path: Path) -> None:
    ids = make_run(tmp_path / "run")
    with Archive(tmp_path / "run" / Archive.FILE_NAME) as archive:
        archive.add_seed(row("dynamic", 0, 95.0, "seed"))
        archive.add_rescore(Rescore(ids["paired"], [30, 31], [99.0, 99.0], 99.0, 0.0))
        assert run_pick(archive).name == "i0002"


def test_references_name_a_run_s_protocol_or_its_pick(tmp_path: Path) -> None:
    make_run(tmp_path / "runs" / "first")
    run = str(tmp_path / "runs" / "first")
    assert split_reference(run) == (Path(run), None)
    assert split_reference(f"{run}:i0001") == (Path(run), "i0001")
    assert split_reference("paired") is None and split_reference("mine.py") is None
    colon = tmp_path / "odd:name.py"
    colon.write_text(CODE)
    assert split_reference(str(colon)) is None  # a file, even with a colon in its name
    with pytest.raises(ConfigError, match="is not a run directory"):
        split_reference(f"{tmp_path}:i0001")
    named = run_protocol(f"{run}:i0001")
    assert isinstance(named, SourceProtocol)
    assert (named.name, named.origin, named.trusted) == ("i0001", f"{run}:i0001", False)
    assert named.source.startswith("# i0001")
    picked = run_protocol(run, trusted=True)
    assert isinstance(picked, SourceProtocol) and (picked.name, picked.trusted) == ("i0002", True)
    assert run_protocol(f"{run}:paired") == BaselineProtocol("paired")
    with pytest.raises(ConfigError, match="no protocol named 'i0099'"):
        run_protocol(f"{run}:i0099")
    assert set(run_references([run, "paired", f"{run}:i0003"])) == {run, f"{run}:i0003"}


def test_the_tables_name_of_a_reference_is_the_protocol_s(tmp_path: Path) -> None:
    """evaluate, compare and inspect show a run's protocol by its name (i0002), as the
    archive and the reports do."""
    import json

    from typer.testing import CliRunner

    from tpdisc.cli import app

    make_run(tmp_path / "run")
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    args = ["--sims", "2", "--agents", "3", "--steps", "4", "--agent-type", "stochastic"]
    args += ["--executor", "serial", "--recipes", str(recipes), "--trusted", "--json"]
    run = str(tmp_path / "run")
    result = CliRunner().invoke(app, ["evaluate", run, f"{run}:i0001", "asocial", *args])
    assert result.exit_code == 0, result.output
    assert [r["protocol"] for r in json.loads(result.stdout)["results"]] == [
        "i0002",
        "i0001",
        "asocial",
    ]
    assert f"{run}: its pick, i0002 (the best by fitness, 80.00" in result.stderr
