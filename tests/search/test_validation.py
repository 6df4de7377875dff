"""Validation and scoring of candidates, through the sandbox."""

from __future__ import annotations

import pytest

from tpdisc.domain.variants import make_domain
from tpdisc.executors.serial import SerialExecutor
from tpdisc.sandbox.config import SandboxConfig
from tpdisc.search import blocks
from tpdisc.search.config import SearchConfig
from tpdisc.search.validation import CandidateEvaluator, Race
from tpdisc.sim.config import SimConfig
from tpdisc.testing.fake_author import _CRASH, _INVALID_EXCHANGE, _SYNTAX_ERROR

CONFIG = SearchConfig(
    sims=3,
    check_steps=5,
    sim=SimConfig(n_agents=4, n_steps=12, agent_type="stochastic"),
    sandbox=SandboxConfig(time_limit=5.0),
)
GOOD = blocks.render(blocks.Genome(route="everyone", weights=(("recency", 1.0),)))


@pytest.fixture
def evaluator(toy_graph) -> CandidateEvaluator:
    return CandidateEvaluator(make_domain(toy_graph), CONFIG, SerialExecutor())


def test_good_code_is_scored_on_the_baseline_seeds(evaluator) -> None:
    ticks = []
    evaluator.on_simulation = lambda: ticks.append(1)
    scored = evaluator.score("good", GOOD)
    assert scored.error is None and scored.evaluation is not None
    assert scored.evaluation.seeds == [0, 1, 2] and len(ticks) == 3
    assert [len(curve) for curve in scored.evaluation.curves] == [13, 13, 13]
    assert [{e["metric_name"] for e in logs} for logs in scored.logs] == [
        {"memories_sent", "active_steps"}
    ] * 3
    baseline = evaluator.score_baseline("stochastic")
    assert baseline.evaluation.seeds == scored.evaluation.seeds


def test_sandboxed_and_trusted_scores_agree(evaluator, toy_graph) -> None:
    trusted = CandidateEvaluator(
        make_domain(toy_graph), CONFIG.updated(sandboxed=False), SerialExecutor()
    )
    assert (
        evaluator.score("good", GOOD).evaluation.final
        == trusted.score("good", GOOD).evaluation.final
    )


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (_SYNTAX_ERROR, "SyntaxError at line 8"),
        ("import os\n" + GOOD, "os"),
        (_CRASH, "KeyError"),
        (_INVALID_EXCHANGE, "out of range"),
        ("x = 1\n", "share_memories"),
    ],
)
def test_failures_come_back_as_readable_text(evaluator, code: str, expected: str) -> None:
    scored = evaluator.score("bad", code)
    assert scored.evaluation is None
    assert expected in scored.error
    assert "\n" not in scored.error or scored.error.startswith("The pre-check")


def test_runaway_code_times_out(toy_graph) -> None:
    spin = GOOD.replace(
        "        quota = self.quota",
        "        while True:\n            pass\n        quota = self.quota",
    )
    evaluator = CandidateEvaluator(
        make_domain(toy_graph),
        CONFIG.updated(sandbox=SandboxConfig(time_limit=0.5)),
        SerialExecutor(),
    )
    scored = evaluator.score("spin", spin)
    assert scored.error is not None and scored.error.startswith("[timeout]")


def test_a_precheck_refusal_is_a_failed_candidate_with_its_reason(evaluator) -> None:
    chain = "class C0:\n    def share_memories(self, i, s):\n        return {}\n"
    chain += "".join(f"class C{k}(C{k - 1}):\n    pass\n" for k in range(1, 3_000))
    scored = evaluator.score("chain", chain)
    assert scored.evaluation is None
    assert scored.error == (
        "The pre-check found problems:\n- the source defines 3,000 classes; the limit is 256"
    )


def test_a_crash_inside_the_precheck_fails_the_candidate_not_the_search(
    evaluator, monkeypatch
) -> None:
    def explode(code: str) -> list[str]:
        raise RecursionError("maximum recursion depth exceeded\nwhile walking")

    monkeypatch.setattr("tpdisc.search.validation.precheck", explode)
    scored = evaluator.score("deep", GOOD)
    assert scored.evaluation is None
    assert scored.error == (
        "The pre-check found problems:\n- the pre-check could not read this source "
        "(RecursionError: maximum recursion depth exceeded while walking)"
    )


def test_an_escape_refused_by_the_precheck_is_a_failed_candidate(evaluator) -> None:
    code = GOOD.replace("import numpy as np", "import numpy as np\nimport random", 1)
    code += "\n\nLEAK = random._os.sys.modules\n"
    line = code.splitlines().index("LEAK = random._os.sys.modules") + 1
    scored = evaluator.score("leak", code)
    assert scored.evaluation is None
    assert scored.error == (
        "The pre-check found problems:\n"
        f"- line {line}: random._os: private attributes of modules are not allowed"
    )


def test_a_race_stops_a_candidate_clearly_below_the_bar(evaluator) -> None:
    """With a bar far above anything reachable, the race stops after its first round;
    with a bar at zero, the candidate gets every seed, the same scores as unraced."""
    raced = CandidateEvaluator(evaluator.domain, CONFIG.updated(race_sims=2), evaluator.executor)
    stopped = raced.score("good", GOOD, Race(1e6))
    assert stopped.raced and stopped.error is None
    assert stopped.evaluation.seeds == [0, 1] and len(stopped.logs) == 2
    kept = raced.score("good", GOOD, Race(0.0))
    full = evaluator.score("good", GOOD)
    assert not kept.raced and kept.evaluation.seeds == [0, 1, 2]
    assert kept.evaluation.final == full.evaluation.final
    assert kept.evaluation.curves == full.evaluation.curves
    assert [len(logs) for logs in kept.logs] == [len(logs) for logs in full.logs]


def test_a_race_whose_first_round_is_every_seed_is_no_race(evaluator) -> None:
    whole = CandidateEvaluator(evaluator.domain, CONFIG.updated(race_sims=3), evaluator.executor)
    scored = whole.score("good", GOOD, Race(1e6))
    assert not scored.raced and scored.evaluation.seeds == [0, 1, 2]


def test_raced_out_is_mean_plus_two_sems_under_the_bar() -> None:
    from tpdisc.search.validation import raced_out
    from tpdisc.sim.evaluate import Evaluation

    ev = Evaluation("p", [0, 1, 2, 3], [10, 12, 10, 12], [[0]] * 4)  # mean 11, sem 0.577
    assert raced_out(ev, 12.2) and not raced_out(ev, 12.1)


def test_a_race_stops_a_twin_of_a_protocol_scored_before(evaluator) -> None:
    """The same behaviour in other code (here a comment added): its first round repeats
    the archived protocol's results, so it stops there as that protocol's twin."""
    raced = CandidateEvaluator(evaluator.domain, CONFIG.updated(race_sims=2), evaluator.executor)
    first = raced.score("good", GOOD, Race(None))
    assert first.twin is None and not first.raced and first.evaluation.seeds == [0, 1, 2]
    twins = {tuple(first.evaluation.final[:2]): 7}
    again = raced.score("again", GOOD + "\n# the same protocol\n", Race(None, twins))
    assert again.twin == 7 and not again.raced and again.evaluation.seeds == [0, 1]
    other = raced.score("other", GOOD, Race(None, {(-1, -1): 7}))
    assert other.twin is None and other.evaluation.seeds == [0, 1, 2]
