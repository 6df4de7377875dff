"""Stochastic agents: uniform over untried pairs, with the social bias of SPEC §2.

Frequencies are checked with a fixed seed and a tolerance of 6 standard deviations: a
correct agent passes whatever the seed, a biased one fails by far.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tpdisc.agents.base import AgentContext, AgentParams, AgentState
from tpdisc.agents.candidates import candidate_pairs, choose_biased
from tpdisc.agents.stochastic import StochasticAgent
from tpdisc.agents.stochastic_model import StochasticModel
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import ConfigError

N_ELEMENTS = 16


def within(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) < 6 * np.sqrt(n * p * (1 - p))


def draws(agent: StochasticAgent, state: AgentState, social: list[int], n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return Counter(agent.choose(state, social, rng) for _ in range(n))


def test_uniform_over_all_pairs_at_first() -> None:
    agent = StochasticAgent(N_ELEMENTS, p_social=0.5)
    state = AgentState.start(N_ELEMENTS, [0, 1, 2, 3])
    n = 10_000
    counts = draws(agent, state, [], n)
    assert set(counts) == {(a, b) for a in range(4) for b in range(a, 4)}
    assert all(within(c, n, 1 / 10) for c in counts.values())


def test_known_pairs_are_not_tried_again() -> None:
    agent = StochasticAgent(N_ELEMENTS, p_social=0.5)
    state = AgentState.start(N_ELEMENTS, [0, 1, 2])
    agent.observe_own(1, 0, 5)  # either order
    agent.observe_received([(2, 2, -1), (2, 0, 7)])
    counts = draws(agent, state, [], 3000)
    assert set(counts) == {(0, 0), (1, 1), (1, 2)}
    assert all(within(c, 3000, 1 / 3) for c in counts.values())


@pytest.mark.parametrize("reference", [True, False])
@pytest.mark.parametrize("received", ["always", "step", "never"])
def test_how_long_a_received_memory_counts_as_tried(received: str, reference: bool) -> None:
    """always: a received pair is tried for good; step: for the next choice only; never:
    untried means not tried by the agent itself."""
    agent = StochasticAgent(N_ELEMENTS, p_social=0.5, reference=reference, received=received)
    state = AgentState.start(N_ELEMENTS, [0, 1])
    agent.observe_received([(0, 0, -1), (1, 0, 7)])
    rng = np.random.default_rng(0)
    first = agent.choose(state, [], rng)
    later = {agent.choose(state, [], rng) for _ in range(200)}
    if received == "always":
        assert first == (1, 1) and later == {(1, 1)}
    elif received == "step":
        assert first == (1, 1) and later == {(0, 0), (0, 1), (1, 1)}
    else:
        assert later | {first} == {(0, 0), (0, 1), (1, 1)}


def test_received_rule_is_validated() -> None:
    with pytest.raises(ConfigError, match="received='sometimes'; choose from always, step"):
        StochasticAgent(N_ELEMENTS, p_social=0.5, received="sometimes")


def test_everything_known_falls_back_to_any_pair() -> None:
    agent = StochasticAgent(N_ELEMENTS, p_social=0.5)
    state = AgentState.start(N_ELEMENTS, [0, 1])
    for a, b in [(0, 0), (0, 1), (1, 1)]:
        agent.observe_own(a, b, -1)
    assert set(draws(agent, state, [], 300)) == {(0, 0), (0, 1), (1, 1)}


@pytest.mark.parametrize("p_social", [0.0, 0.5, 0.9, 1.0])
def test_social_bias(p_social: float) -> None:
    """Base four plus one social item: 5 of the 15 pairs use it. The agent restricts itself
    to those with probability p_social, else picks among all 15."""
    agent = StochasticAgent(N_ELEMENTS, p_social)
    state = AgentState.start(N_ELEMENTS, [0, 1, 2, 3])
    n = 6000
    counts = draws(agent, state, [9], n, seed=1)
    social = sum(c for (a, b), c in counts.items() if 9 in (a, b))
    p = p_social + (1 - p_social) * 5 / 15
    if p == 1.0:
        assert social == n
    else:
        assert within(social, n, p)
    assert all(a in (0, 1, 2, 3, 9) and b in (0, 1, 2, 3, 9) for a, b in counts)


def test_social_bias_skips_known_social_pairs() -> None:
    agent = StochasticAgent(N_ELEMENTS, p_social=1.0)
    state = AgentState.start(N_ELEMENTS, [0, 1])
    agent.observe_received([(0, 9, -1), (1, 9, -1)])
    assert set(draws(agent, state, [9], 200)) == {(9, 9)}
    agent.observe_own(9, 9, -1)
    # no untried social pair left: back to the untried pairs of the inventory
    assert set(draws(agent, state, [9], 300)) == {(0, 0), (0, 1), (1, 1)}


def test_from_context_reads_its_params(toy_graph: RecipeGraph) -> None:
    params = AgentParams(p_social=0.9, stochastic=StochasticModel(received="never"))
    agent = StochasticAgent.from_context(AgentContext(toy_graph, 0, 3, 10, params))
    assert agent.kind == "stochastic" and agent.p_social == 0.9 and agent.received == "never"


def test_seeded_choices() -> None:
    state = AgentState.start(N_ELEMENTS, [0, 1, 2, 3])

    def seq(seed: int) -> list[tuple[int, int]]:
        agent, rng = StochasticAgent(N_ELEMENTS, 0.5), np.random.default_rng(seed)
        return [agent.choose(state, [7], rng) for _ in range(30)]

    assert seq(3) == seq(3) and seq(3) != seq(4)


def reference_choice(
    agent: StochasticAgent, state: AgentState, social: list[int], rng: np.random.Generator
) -> tuple[int, int]:
    """SPEC §2 over the whole candidate set: the social bias, then uniform among untried."""
    pairs = candidate_pairs(state, social)
    untried = agent.unknown[pairs.lo * N_ELEMENTS + pairs.hi]
    options = choose_biased(pairs, untried, agent.p_social, rng)
    k = int(options[rng.integers(options.size)])
    return int(pairs.lo[k]), int(pairs.hi[k])


@pytest.mark.parametrize("p_social", [0.0, 0.5, 1.0])
def test_choices_match_the_whole_candidate_set(p_social: float) -> None:
    """The agent's shortcuts (keys kept while the inventory stays the same, pairs using a
    social item looked for only when the bias applies) draw exactly as the definition."""
    agent = StochasticAgent(N_ELEMENTS, p_social)
    state = AgentState.start(N_ELEMENTS, [0, 1, 2, 3])
    socials = [[], [9], [2], [9, 1, 11], [3, 12, 13]]
    for step, gained in enumerate([None, 5, None, 8, 9]):
        if gained is not None:
            state.owned[gained] = True
            state.inventory.append(gained)
        agent.observe_received([(0, step % 4, -1), (1, 9, 6)])
        for social in socials:
            for seed in range(20):
                fast = agent.choose(state, social, np.random.default_rng(seed))
                assert fast == reference_choice(agent, state, social, np.random.default_rng(seed))
