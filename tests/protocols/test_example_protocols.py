"""The example protocols: each runs untrusted in the sandbox like a generated protocol, and
each follows the rule that defines its strategy family on small hand-made states."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.helpers import wait_for, zygote_children
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.loader import SourceProtocol, load_protocol_class
from tpdisc.sandbox import SandboxConfig, SandboxedSource, precheck, sandbox_support
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples" / "protocols"
FILES = sorted(EXAMPLES.glob("*.py"))
NEW = [p for p in FILES if p.stem != "state_aware"]
BASE = ("air", "earth", "fire", "water")


def make(stem: str, n_agents: int, n_steps: int = 10) -> Any:
    path = EXAMPLES / f"{stem}.py"
    return load_protocol_class(path.read_text(), str(path))(n_agents, n_steps)


def state(*memories: tuple[str, str, str | None]) -> dict[str, Any]:
    """An agent that owns the base elements and every result of its memories."""
    made = tuple(r for _, _, r in memories if r is not None)
    inventory = BASE + tuple(dict.fromkeys(made))
    return {"inventory": inventory, "memories": tuple(memories)}


def test_the_examples_are_all_here() -> None:
    assert {p.stem for p in FILES} >= {
        "state_aware",
        "rarity_first",
        "ingredient_productivity",
        "targeted_failures",
        "one_step_away",
        "specialised_groups",
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_runs_untrusted_in_the_sandbox(path: Path, toy_graph: RecipeGraph) -> None:
    assert precheck(path.read_text()) == []
    supported, why = sandbox_support()
    if not supported:
        pytest.skip(f"the sandbox cannot confine protocols here: {why}")
    spec = SandboxedSource.of(SourceProtocol.from_file(path), SandboxConfig())
    assert not spec.trusted
    config = SimConfig(n_agents=4, n_steps=20, agent_type="stochastic")
    result = run_simulation(make_domain(toy_graph), config, spec, seed=1)
    assert result.received > 0 and result.final > 4
    assert all(set(m) >= {"metric_name", "metric_value"} for m in result.protocol_logs)
    assert wait_for(lambda: not zygote_children()), f"workers left: {zygote_children()}"


@pytest.mark.parametrize("path", NEW, ids=lambda p: p.stem)
def test_never_resends_and_respects_the_bottleneck(path: Path, toy_graph: RecipeGraph) -> None:
    spec = SourceProtocol.from_file(path, trusted=True)
    config = SimConfig(n_agents=6, n_steps=30, agent_type="stochastic")
    for seed in range(3):
        log = run_simulation(make_domain(toy_graph), config, spec, seed, record_log=True).log
        assert log is not None and len(log) > 0 and all(log.survived)
        per_step = Counter(zip(log.step, log.learner, strict=True))
        assert max(per_step.values()) <= 20
        recipes = Counter(
            (learner, min(a, b), max(a, b), r)
            for learner, a, b, r in zip(log.learner, log.e1, log.e2, log.result, strict=True)
        )
        assert max(recipes.values()) == 1
        assert all(t != learner for t, learner in zip(log.teacher, log.learner, strict=True))


def successes_sent(out: dict[int, list[tuple[int, int]]], states: dict[int, Any]) -> dict:
    """recipient -> results of the successful memories it was sent."""
    results = {}
    for recipient, memories in out.items():
        made = [states[sender]["memories"][index][2] for sender, index in memories]
        results[recipient] = [r for r in made if r is not None]
    return results


def test_rarity_first_gives_each_rare_result_to_few_agents() -> None:
    tp = make("rarity_first", 4)
    assert type(tp).__init__.__globals__["MAX_HOLDERS"] == 3
    lava = ("earth", "fire", "lava")
    states = {
        0: state(("fire", "water", "steam"), lava),
        1: state(("earth", "water", "mud"), lava),
        2: state(("water", "earth", "mud"), ("fire", "earth", "lava")),
        3: state(("air", "fire", None)),
    }
    out = tp.share_memories(0, states)
    sent = successes_sent(out, states)
    got = Counter(r for results in sent.values() for r in results)
    # steam (one owner) reaches two more agents, mud (two owners) one more; lava is owned by
    # three of the four agents already and no longer rare
    assert got == {"steam": 2, "mud": 1}
    assert all(len(results) <= 1 for results in sent.values())  # one success per step
    assert "steam" not in sent.get(0, []) and "mud" not in sent.get(1, []) + sent.get(2, [])
    # secondary: the failure air + fire goes to the agents that could still attempt it
    assert {r for r, memories in out.items() if (3, 0) in memories} == {0, 1, 2}
    assert tp.share_memories(1, states) == {}


def test_ingredient_productivity_prefers_productive_ingredients() -> None:
    tp = make("ingredient_productivity", 3)
    states = {
        # fire: three distinct pairs, all successful
        0: state(("fire", "water", "steam"), ("earth", "fire", "lava"), ("fire", "fire", "energy")),
        # air: one success in three pairs
        1: state(("air", "air", "pressure"), ("air", "earth", None), ("air", "water", None)),
        2: state(),
    }
    out = tp.share_memories(0, states)
    sent = successes_sent(out, states)
    # fire + fire, the most productive ingredients, goes first, to one of the two agents that
    # lack it; the other one gets the next best (fire with water or earth), agent 0 pressure
    assert sorted(sent) == [0, 1, 2] and all(len(r) == 1 for r in sent.values())
    first, second = sorted(sent[1] + sent[2], key=lambda r: r != "energy")
    assert first == "energy" and second in ("lava", "steam")
    assert sent[0] == ["pressure"]
    # secondary: the failures with air go to the agents holding both ingredients
    assert sorted(out[0][1:]) == sorted(out[2][1:]) == [(1, 1), (1, 2)]
    # each recipe goes to a single agent over the whole game
    given = Counter(r for results in sent.values() for r in results)
    for step in range(1, 4):
        for results in successes_sent(tp.share_memories(step, states), states).values():
            assert len(results) <= 1
            given.update(results)
    assert given == {"energy": 1, "steam": 1, "lava": 1, "pressure": 1}


def test_targeted_failures_go_only_to_holders_of_both_ingredients() -> None:
    tp = make("targeted_failures", 3)
    states = {
        0: state(("earth", "fire", "lava"), ("air", "lava", None)),
        1: state(("fire", "earth", "lava")),
        2: state(("air", "water", None)),
    }
    out = tp.share_memories(0, states)
    assert sorted(out[1]) == [(0, 1), (2, 0)]  # it holds air and lava, air and water
    assert out[2] == [(0, 0)]  # lava opens new combinations; air + lava it could not try
    assert out[0] == [(2, 0)]
    # once agent 2 makes lava, the failure air + lava becomes one it could walk into, its
    # recipe is a dead end to those who own lava already, and earth + fire is not resent
    states[2] = state(("air", "water", None), ("air", "fire", "lava"))
    assert tp.share_memories(1, states) == {0: [(2, 1)], 1: [(2, 1)], 2: [(0, 1)]}
    assert tp.share_memories(2, states) == {}


def test_one_step_away_sends_successes_to_agents_owning_one_ingredient() -> None:
    tp = make("one_step_away", 3)
    states = {
        0: state(("fire", "water", "steam"), ("earth", "steam", "geyser")),
        1: state(("earth", "fire", "lava"), ("earth", "water", "mud"), ("lava", "mud", "brick")),
        2: state(),
    }
    # geyser: agents 1 and 2 own earth and lack steam; steam, lava and mud they could make
    # from what they own, brick from nothing they own: neither is sent
    assert tp.share_memories(0, states) == {1: [(0, 1)], 2: [(0, 1)]}
    assert tp.share_memories(1, states) == {}
    # once agent 2 makes lava, brick is one step away for it
    states[2] = state(("earth", "fire", "lava"))
    assert tp.share_memories(2, states) == {2: [(1, 2)]}


def test_specialised_groups_share_inside_first_and_across_later() -> None:
    n_steps = 100
    tp = make("specialised_groups", 6, n_steps)
    start = type(tp).__init__.__globals__["CROSS_START"]
    pairs = [(a, b) for i, a in enumerate(BASE) for b in BASE[i:]]
    many = tuple((a, b, f"thing{k}") for k, (a, b) in enumerate(pairs[: start + 2]))
    states = {agent: state() for agent in range(6)}
    states[0] = state(("fire", "water", "steam"))  # team 0 is agents 0-2, team 1 agents 3-5
    states[4] = state(*many)
    out = tp.share_memories(0, states)
    # teammate first, then only a few memories from the other team early on
    assert out[1][0] == (0, 0)
    assert len(out[1]) == 1 + start and {sender for sender, _ in out[1][1:]} == {4}
    assert sorted(out[3]) == [(0, 0)] + [(4, k) for k in range(len(many))]
    # later the rest crosses over, and nothing is sent twice
    later = tp.share_memories(n_steps - 1, states)
    assert len(later[1]) == 2 and not set(later[1]) & set(out[1])
    assert 3 not in later
