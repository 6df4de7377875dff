"""Re-scoring a search's best protocols on fresh seeds: which seeds, and what is said."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tpdisc.errors import ConfigError
from tpdisc.search import progress as progress_module
from tpdisc.search.archive import Candidate, Rescore
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import Event
from tpdisc.search.progress import SearchProgress
from tpdisc.search.rescore import RescoreResult, fresh_seeds


def candidate(pid: int, name: str, fitness: float) -> Candidate:
    return Candidate(
        name=name,
        iteration=pid,
        attempt=0,
        mode="improve",
        status="valid",
        proposer="offline",
        fitness_mean=fitness,
        id=pid,
    )


def test_fresh_seeds_follow_the_search_and_never_overlap_it() -> None:
    config = SearchConfig(sims=10)
    assert fresh_seeds(config) == list(range(10, 20))
    assert fresh_seeds(config, 30) == list(range(30, 40))
    with pytest.raises(ConfigError, match=r"seeds 5\.\.14 are not fresh.*start at 10"):
        fresh_seeds(config, 5)


def test_the_verdict_names_another_protocol_when_it_is_best_on_fresh_seeds() -> None:
    top = [candidate(14, "i0009", 79.1), candidate(2, "paired", 76.0)]
    result = RescoreResult(list(range(30, 60)), top)
    result.rescored = {
        14: Rescore(14, result.seeds, [], 74.1, 0.8),
        2: Rescore(2, result.seeds, [], 75.0, 0.7),
    }
    verdict = result.verdict()
    assert verdict is not None
    assert "best of these 2 is paired (75.00 ± 0.70), not i0009" in verdict
    assert "(79.10; 74.10 there)" in verdict and "30..59" in verdict
    result.rescored[14] = Rescore(14, result.seeds, [], 77.0, 0.5)
    assert (result.verdict() or "").startswith("i0009 stays the best of these 2")


def test_the_simulations_bar_is_gone_when_the_search_ends() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with SearchProgress(console, 3, 0, 10) as progress:
        assert len(progress.progress.tasks) == 2
    assert [t.description for t in progress.progress.tasks] == ["iterations"]


def test_the_search_display_names_a_cost_only_when_there_is_one() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=150)
    with SearchProgress(console, 3, 0, 10) as progress:
        for cost in (0.0, 0.25):  # an offline search spends nothing; a model may
            event = Event("iteration", 1, 3, "improve", "valid", "i0001", 50.0, 50.0, cost)
            progress.event(event)
            status = progress.progress.tasks[0].fields["status"]
            assert ("$" in status) == (cost > 0), status
    assert "$0.0000" not in out.getvalue() and "$0.2500" in out.getvalue()


@pytest.mark.parametrize(("gap", "lines"), [(0.0, 10), (3600.0, 1)])
def test_in_a_log_the_search_prints_a_line_per_tenth_and_per_few_seconds_at_most(
    monkeypatch: pytest.MonkeyPatch, gap: float, lines: int
) -> None:
    monkeypatch.setattr(progress_module, "LOG_GAP_SECONDS", gap)
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=150)
    with SearchProgress(console, 40, 0, 10) as progress:
        progress.event(Event("seed", 0, 40, "seed", "valid", "paired", 50.0, 50.0, 0.0))
        for i in range(1, 41):
            progress.simulation()
            progress.event(Event("iteration", i, 40, "improve", "valid", f"i{i:04d}", 1.0, 50.0, 0))
    printed = out.getvalue().splitlines()
    assert len(printed) == lines, printed
    assert printed[-1] == "iterations: 40/40 (best 50.00 | last i0040 1.00)"


def test_a_search_named_by_its_run_says_so_in_each_line_of_a_log() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=150)
    with SearchProgress(console, 1, 0, 10, label="evolve-2") as progress:
        progress.event(Event("iteration", 1, 1, "improve", "valid", "i0001", 1.0, 50.0, 0))
    assert out.getvalue().splitlines() == [
        "evolve-2 iterations: 1/1 (best 50.00 | last i0001 1.00)"
    ]


@pytest.mark.parametrize("terminal", [True, False])
def test_the_search_display_prints_an_iterations_notes(terminal: bool) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=200)
    note = "i0001: the answer was cut off at 4,096 tokens (max_tokens 4,096)"
    with SearchProgress(console, 5, 0, 10) as progress:
        progress.event(
            Event("iteration", 1, 5, "warm-up", "valid", "i0001r1", 1.0, 50.0, 0, (note,))
        )
    assert note in out.getvalue()
