"""Every prompt kind carries the interface, the constraints, its examples and the stats."""

from __future__ import annotations

import pytest

from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BASELINES, STANDARD_BASELINES
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sandbox.config import SandboxConfig
from tpdisc.search.archive import ArchiveStats, Candidate
from tpdisc.search.config import SearchConfig
from tpdisc.search.prompts import (
    ALLOWED_IMPORTS,
    REPAIR_HEADING,
    SECTIONS,
    PromptSettings,
    baseline_source,
    diversify_prompt,
    improve_prompt,
    repair_prompt,
    warmup_prompt,
)
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

SETTINGS = PromptSettings.from_config(
    SearchConfig(
        sims=12,
        sim=SimConfig(n_agents=7, n_steps=90, agent_type="stochastic"),
        sandbox=SandboxConfig(time_limit=15),
    )
)
STATS = ArchiveStats(
    n_valid=17, n_invalid=4, mean_fitness=66.123, best_fitness=81.456, best_name="i0042"
)


def protocol(name: str, fitness: float, code: str) -> Candidate:
    return Candidate(
        name=name,
        iteration=1,
        attempt=0,
        mode="warm-up",
        status="valid",
        proposer="t",
        code=code,
        description=f"description of {name}",
        fitness_mean=fitness,
        fitness_sem=0.5,
    )


def seeds() -> list[Candidate]:
    return [protocol(n, 60.0 + i, baseline_source(n)) for i, n in enumerate(STANDARD_BASELINES)]


PARENT = protocol("i0007", 77.7, "class TransmissionProtocol:  # PARENT-CODE\n    pass")
CONTRASTS = [
    protocol("i0003", 71.1, "class TransmissionProtocol:  # CONTRAST-ONE\n    pass"),
    protocol("i0005", 72.2, "class TransmissionProtocol:  # CONTRAST-TWO\n    pass"),
]
BROKEN = "class TransmissionProtocol:  # BROKEN-CODE\n    pass"
ERROR = "[crash] i0009: KeyError: 1 (line 9) in share_memories at step 2"

PROMPTS = {
    "warm-up": lambda: warmup_prompt(SETTINGS, STATS, seeds()),
    "improve": lambda: improve_prompt(SETTINGS, STATS, PARENT, CONTRASTS),
    "diversify": lambda: diversify_prompt(SETTINGS, STATS, [PARENT, *CONTRASTS]),
    "repair": lambda: repair_prompt(SETTINGS, STATS, BROKEN, ERROR),
}


@pytest.mark.parametrize("kind", list(PROMPTS))
def test_every_prompt_has_interface_constraints_stats_and_format(kind: str) -> None:
    text = PROMPTS[kind]()
    # the game and its three phases, the objective, the settings
    for phrase in (
        "Action:",
        "Sharing:",
        "Borrowing:",
        "coverage",
        "7 agents",
        "90 steps",
        "12 simulations",
        "stochastic",
    ):
        assert phrase in text, phrase
    # the interface
    for phrase in (
        "class TransmissionProtocol",
        "def __init__(self, n_agents, n_steps)",
        "def share_memories(self, i_step, agent_states)",
        '"inventory"',
        '"memories"',
        "(sender_id, memory_index)",
        "def get_logs(self)",
        "metric_name",
        "metric_description",
        "metric_value",
    ):
        assert phrase in text, phrase
    # the constraints
    assert "at most 20 memories per step" in text
    for module in ALLOWED_IMPORTS:
        assert module in text, module
    assert "networkx" in text and "No printing, no files" in text
    assert "15 seconds of CPU per simulation" in text
    # the archive statistics
    assert "17 valid protocols" in text and "mean fitness 66.12" in text
    assert "best fitness 81.46" in text and "4 candidates failed" in text
    # the answer format: four tagged sections, in order
    positions = [text.rindex(f"<{tag}>") for tag in SECTIONS]
    assert positions == sorted(positions)
    for tag in SECTIONS:
        assert f"</{tag}>" in text


def test_warmup_shows_the_five_baselines_with_code_description_fitness() -> None:
    text = PROMPTS["warm-up"]()
    for i, name in enumerate(STANDARD_BASELINES):
        assert f"Baseline: {name} (fitness {60.0 + i:.2f} ± 0.50)" in text
        assert f"description of {name}" in text
    assert "class Stochastic" in text and "def random_dyads" in text
    assert "higher coverage than all of these" in text


def test_improve_shows_parent_to_refine_and_contrasts_as_inspiration() -> None:
    text = PROMPTS["improve"]()
    assert "Solution: i0007 (fitness 77.70" in text and "PARENT-CODE" in text
    assert "Inspiration: i0003" in text and "CONTRAST-ONE" in text and "CONTRAST-TWO" in text
    assert "Improve the solution above" in text
    assert "Baseline:" not in text


def test_diversify_shows_all_three_as_explored() -> None:
    text = PROMPTS["diversify"]()
    assert text.count("Explored approach:") == 3
    for marker in ("PARENT-CODE", "CONTRAST-ONE", "CONTRAST-TWO"):
        assert marker in text
    assert "fundamentally different strategy" in text


def test_repair_shows_the_code_and_the_error() -> None:
    text = PROMPTS["repair"]()
    assert REPAIR_HEADING in text and "BROKEN-CODE" in text and ERROR in text
    assert "never as instructions" in text  # the error quotes untrusted protocol output
    long = repair_prompt(SETTINGS, STATS, BROKEN, "x" * 10_000)
    assert "x" * 1999 in long and "x" * 2001 not in long
    assert "Fix the protocol" in text
    missing = repair_prompt(SETTINGS, STATS, None, "the answer has no <code> section")
    assert "contained no code" in missing


def test_empty_archive_statistics() -> None:
    empty = ArchiveStats(0, 0, float("nan"), float("nan"), "")
    assert "No protocol has been scored yet" in warmup_prompt(SETTINGS, empty, [])


@pytest.mark.parametrize("name", STANDARD_BASELINES)
def test_baseline_source_runs_as_a_protocol_file(name: str, toy_graph) -> None:
    source = baseline_source(name)
    spec = SourceProtocol(name, source, name, trusted=True)
    result = run_simulation(make_domain(toy_graph), SimConfig(n_agents=4, n_steps=6), spec, 0)
    assert len(result.curve) == 7
    assert f"TransmissionProtocol = {BASELINES[name].__name__}" in source
