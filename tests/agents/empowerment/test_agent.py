from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import TOY
from tpdisc.agents.base import FAILED, AgentParams, AgentState
from tpdisc.agents.candidates import choose_biased
from tpdisc.agents.empowerment.agent import EmpowermentAgent
from tpdisc.agents.empowerment.compiled_agent import make_agent
from tpdisc.agents.empowerment.kernels import FAILURE, NEGLIGIBLE, OWN_SUCCESS, UNKNOWN, ZERO
from tpdisc.agents.empowerment.model import EmpowermentModel, named_model
from tpdisc.agents.empowerment.options import softmax_probabilities
from tpdisc.agents.empowerment.prior.build import Prior, PriorSettings, build_prior
from tpdisc.agents.empowerment.prior.dataset import pair_index_table
from tpdisc.agents.empowerment.prior.mlp import Training
from tpdisc.agents.empowerment.prior.models import LinkSettings, ResultSettings
from tpdisc.agents.empowerment.prior.vectors import NgramBackend
from tpdisc.agents.empowerment.tables import EmpowermentTables
from tpdisc.domain.recipes import RecipeGraph, parse_wordcraft
from tpdisc.domain.variants import VariantSpec, make_domain
from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

GRAPH = parse_wordcraft(TOY, "toy")
# The model these tests were written for; the calibrated default has tests of its own.
PREVIOUS = named_model("previous")
N = GRAPH.n_elements
PAIR = pair_index_table(N)


def settings(top_k: int) -> PriorSettings:
    return PriorSettings(
        folds=4,
        link=LinkSettings(hidden=4, training=Training(3, 16)),
        result=ResultSettings(hidden=(16,), training=Training(3, 8)),
        top_k=top_k,
    )


@pytest.fixture(scope="module")
def full() -> tuple[Prior, np.ndarray]:
    """A prior keeping every result (top k = n), with its exact distributions."""
    prior, exact = build_prior(
        GRAPH, NgramBackend(dim=8), settings(N), exact_pairs=np.arange(PAIR.max() + 1)
    )
    assert exact is not None
    return prior, exact


def start(
    prior: Prior,
    *,
    choices: EmpowermentModel | None = None,
    beta: float = 0.05,
    p_social: float = 0.5,
    played: RecipeGraph = GRAPH,
    seed: int = 0,
) -> tuple[EmpowermentAgent, AgentState, np.random.Generator]:
    model = replace(choices or PREVIOUS, beta=beta)
    agent = make_agent(EmpowermentTables.build(prior, played), model, p_social)
    state = AgentState.start(N, GRAPH.base)
    rng = np.random.default_rng(seed)
    agent.choose(state, [], rng)
    return agent, state, rng


def gain(agent: EmpowermentAgent, state: AgentState, name: str, rng: np.random.Generator) -> int:
    e = GRAPH.id_of(name)
    state.owned[e] = True
    state.inventory.append(e)
    agent.choose(state, [], rng)
    return e


def value_of(agent: EmpowermentAgent, a: str, b: str, social: list[int] | None = None) -> float:
    pairs, values, _ = agent.candidate_values(social or [])
    x, y = sorted((GRAPH.id_of(a), GRAPH.id_of(b)))
    hit = np.flatnonzero((pairs.lo == x) & (pairs.hi == y))
    assert hit.size == 1, f"{a} + {b} is not a candidate"
    return float(values[hit[0]])


@pytest.mark.parametrize("owned", ["zero", "renormalise", "ignore"])
def test_values_are_exact_when_the_prior_keeps_every_result(
    full: tuple[Prior, np.ndarray], owned: str
) -> None:
    prior, exact = full
    agent, state, rng = start(prior, choices=replace(PREVIOUS, owned=owned))
    gain(agent, state, "steam", rng)
    gain(agent, state, "lava", rng)
    pairs, values, _ = agent.candidate_values([])
    item = GRAPH.children_count * agent.noise
    for lo, hi, value in zip(pairs.lo, pairs.hi, values, strict=True):
        p = PAIR[lo, hi]
        dist = exact[p]
        if owned == "zero":
            expected = dist @ (item * ~state.owned)
        elif owned == "renormalise":
            expected = dist @ (item * ~state.owned) / dist[~state.owned].sum()
        else:
            expected = dist @ item
        assert value == pytest.approx(prior.p_success[p] * expected, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("owned", ["zero", "renormalise"])
def test_usable_social_elements_count_as_owned_in_values(
    full: tuple[Prior, np.ndarray], owned: str
) -> None:
    """owns=usable: a pair with a social element the agent lacks is valued as if every
    social element were owned (making one of them is worth nothing this step)."""
    prior, exact = full
    agent, state, rng = start(prior, choices=replace(PREVIOUS, owned=owned, owns="usable"))
    gain(agent, state, "steam", rng)
    social = [GRAPH.id_of(n) for n in ("mud", "lava", "steam")]  # steam is owned
    usable = state.owned.copy()
    usable[social] = True
    pairs, values, _ = agent.candidate_values(social)
    item = GRAPH.children_count * agent.noise
    checked = 0
    for lo, hi, value in zip(pairs.lo, pairs.hi, values, strict=True):
        if state.owned[lo] and state.owned[hi]:
            continue  # a lasting candidate: valued on the inventory alone
        p = PAIR[lo, hi]
        dist = exact[p]
        expected = dist @ (item * ~usable)
        if owned == "renormalise":
            expected /= dist[~usable].sum()
        assert value == pytest.approx(prior.p_success[p] * expected, rel=1e-4, abs=1e-6)
        checked += 1
    assert checked > 5


def test_a_received_success_can_mark_its_pair_as_tried(full: tuple[Prior, np.ndarray]) -> None:
    """received=zero (the calibrated model): the pair is known and worth nothing, as if the
    agent had made it; nothing else changes."""
    prior, _ = full
    agent, _, _ = start(prior, choices=replace(PREVIOUS, received="zero"))
    fire, water, steam, earth = (GRAPH.id_of(n) for n in ("fire", "water", "steam", "earth"))
    assert value_of(agent, "fire", "water") > 0
    before = value_of(agent, "earth", "fire")
    agent.observe_received([(fire, water, steam)])
    assert value_of(agent, "fire", "water") == 0
    assert agent.known[PAIR[fire, water]] == FAILURE
    assert value_of(agent, "earth", "fire") == before
    assert agent.known[PAIR[earth, earth]] == UNKNOWN


def test_choice_probabilities() -> None:
    values = np.array([1.0, 2.0, 3.0, 3.5])
    for zscore in (True, False):
        p = softmax_probabilities(values, 0.05, zscore)
        assert p.sum() == pytest.approx(1) and (p >= 0).all()
        assert np.argmax(p) == 3
    sharp = softmax_probabilities(values, 0.05, True)
    soft = softmax_probabilities(values, 0.5, True)
    assert sharp.max() > soft.max()
    # z-scoring makes the choice blind to the scale of the values
    assert np.allclose(softmax_probabilities(10 * values, 0.5, True), soft)
    assert not np.allclose(softmax_probabilities(10 * values, 0.5, False), soft)
    assert np.allclose(softmax_probabilities(np.ones(3), 0.05, True), 1 / 3)


def test_knowledge_updates(full: tuple[Prior, np.ndarray]) -> None:
    prior, _ = full
    agent, state, rng = start(prior)
    air, water, fire, earth = (GRAPH.id_of(n) for n in ("air", "water", "fire", "earth"))
    assert value_of(agent, "air", "earth") > 0
    agent.observe_own(air, earth, FAILED)  # own failure
    assert value_of(agent, "air", "earth") == 0
    agent.observe_received([(earth, earth, FAILED)])  # received failure
    assert value_of(agent, "earth", "earth") == 0
    steam = GRAPH.id_of("steam")
    agent.observe_received([(fire, water, steam)])  # received success: worth EmpItem(steam)
    assert value_of(agent, "fire", "water") == pytest.approx(
        GRAPH.children_count[steam] * agent.noise[steam]
    )
    gain(agent, state, "steam", rng)  # once owned, the result is worth nothing
    assert value_of(agent, "fire", "water") == 0
    lava = GRAPH.id_of("lava")
    agent.observe_own(earth, fire, lava)  # own success
    assert agent.known[PAIR[earth, fire]] == OWN_SUCCESS
    assert value_of(agent, "earth", "fire") == 0
    agent.observe_received([(earth, fire, lava)])  # an own success stays an own success
    assert agent.known[PAIR[earth, fire]] == OWN_SUCCESS
    assert agent.known[PAIR[air, air]] == UNKNOWN and agent.known[PAIR[air, earth]] == FAILURE


@pytest.mark.parametrize("failures", ["always", "step", "never"])
def test_how_long_a_received_failure_is_known(
    full: tuple[Prior, np.ndarray], failures: str
) -> None:
    """failures=always: a certain failure for good; step: for the next choice only, then
    the pair is unknown again; never: the agent's knowledge ignores it."""
    prior, _ = full
    barren = GRAPH.restricted_to(GRAPH.base)  # every value is 0: choices fall back to untried
    air, earth = GRAPH.id_of("air"), GRAPH.id_of("earth")
    others = [(a, b) for a in GRAPH.base for b in GRAPH.base if a <= b and (a, b) != (air, earth)]
    model = replace(PREVIOUS, failures=failures)
    agent, state, rng = start(prior, played=barren, choices=model)
    agent.observe_received([(a, b, FAILED) for a, b in others])
    first = {agent.choose(state, [], rng)}
    later = {agent.choose(state, [], rng) for _ in range(60)}
    known = {int(agent.known[PAIR[a, b]]) for a, b in others}
    if failures == "always":
        assert first == later == {(air, earth)} and known == {FAILURE}
    elif failures == "step":
        assert first == {(air, earth)} and len(later) > 1 and known == {UNKNOWN}
    else:
        assert len(later | first) > 1 and known == {UNKNOWN}
        agent.observe_received([(air, earth, FAILED)])
        assert {agent.choose(state, [], rng) for _ in range(60)} != {(air, earth)}


def test_a_failure_known_for_one_choice_leaves_values_as_they_were(
    full: tuple[Prior, np.ndarray],
) -> None:
    """failures=step: outside the next choice, the pair keeps its value; an own success
    or failure is never undone by forgetting a received one."""
    prior, _ = full
    agent, state, rng = start(prior, choices=replace(PREVIOUS, failures="step"))
    fire, water, earth = (GRAPH.id_of(n) for n in ("fire", "water", "earth"))
    before = value_of(agent, "fire", "water")
    assert before > 0
    agent.observe_own(earth, earth, FAILED)
    agent.observe_received([(fire, water, FAILED), (earth, earth, FAILED)])
    assert agent.known[PAIR[fire, water]] == UNKNOWN  # not yet: it waits for the choice
    agent.choose(state, [], rng)
    assert value_of(agent, "fire", "water") == before
    assert agent.known[PAIR[fire, water]] == UNKNOWN
    assert agent.known[PAIR[earth, earth]] == FAILURE  # own attempts are known for good


def test_received_success_left_to_the_prior(full: tuple[Prior, np.ndarray]) -> None:
    prior, _ = full
    agent, _, _ = start(prior, choices=replace(PREVIOUS, received="prior"))
    before = value_of(agent, "fire", "water")
    fire, water, steam, earth = (GRAPH.id_of(n) for n in ("fire", "water", "steam", "earth"))
    agent.observe_received([(fire, water, steam), (earth, earth, FAILED)])
    assert value_of(agent, "fire", "water") == before
    assert value_of(agent, "earth", "earth") == 0


def test_social_items_make_candidates(full: tuple[Prior, np.ndarray]) -> None:
    prior, _ = full
    agent, _, _ = start(prior)
    lava, water, steam = (GRAPH.id_of(n) for n in ("lava", "water", "steam"))
    pairs, values, _ = agent.candidate_values([lava, water, steam])
    assert pairs.size == 10 + 5 + 6  # base pairs, lava with 4+1, steam with 4+1+1
    # pairs using a borrowed item, and owned pairs with an item named in a memory
    assert pairs.social.sum() == 5 + 6 + 4
    assert (values >= 0).all()
    assert value_of(agent, "lava", "steam", [lava, water, steam]) > 0


def test_social_values_follow_gains(full: tuple[Prior, np.ndarray]) -> None:
    """A social item's pairs are valued once between two gains: after a gain (which moves
    every value), they are what a fresh computation gives."""
    prior, _ = full
    agent, state, rng = start(prior)
    stone = GRAPH.id_of("stone")
    before = agent.candidate_values([stone])[1]
    gain(agent, state, "steam", rng)
    kept = agent.candidate_values([stone])[1]
    agent._social_cache.clear()
    fresh = agent.candidate_values([stone])[1]
    assert np.array_equal(kept, fresh)
    social_before, social_after = before[-3:], kept[-3:]  # stone with the inventory, itself
    assert not np.array_equal(social_before, social_after)


def test_noise_is_drawn_once_per_agent(full: tuple[Prior, np.ndarray]) -> None:
    prior, _ = full
    agent, state, rng = start(prior, seed=1)
    noise = agent.noise.copy()
    for name in ("steam", "mud", "lava"):
        gain(agent, state, name, rng)
    assert np.array_equal(agent.noise, noise)
    same, _, _ = start(prior, seed=1)
    other, _, _ = start(prior, seed=2)
    assert np.array_equal(same.noise, noise) and not np.array_equal(other.noise, noise)
    assert noise.min() > 0.5 and noise.max() < 1.5


def choice_counts(agent: EmpowermentAgent, state: AgentState, social: list[int], n: int) -> dict:
    rng = np.random.default_rng(5)
    counts: dict[tuple[int, int], int] = {}
    for _ in range(n):
        pair = agent.choose(state, social, rng)
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def test_beta_sharpens_choices(full: tuple[Prior, np.ndarray]) -> None:
    prior, _ = full
    top_share = []
    for beta in (0.05, 0.5, 5.0):
        agent, state, _ = start(prior, beta=beta)
        counts = choice_counts(agent, state, [], 400)
        top_share.append(max(counts.values()) / 400)
    assert top_share[0] > top_share[1] > top_share[2]


def test_p_social_restricts_to_borrowed_items(full: tuple[Prior, np.ndarray]) -> None:
    prior, _ = full
    mud = GRAPH.id_of("mud")
    shares = []
    for p_social in (0.0, 1.0):
        agent, state, _ = start(prior, p_social=p_social, beta=5.0)
        counts = choice_counts(agent, state, [mud], 300)
        shares.append(sum(c for pair, c in counts.items() if mud in pair) / 300)
    assert shares[1] == 1.0
    assert shares[0] < 0.9


def reference_choice(
    agent: EmpowermentAgent, social: list[int], rng: np.random.Generator
) -> tuple[int, int]:
    """The choice as SPEC §2 defines it, over the whole candidate set: what the agent's
    shortcuts (options found without building every candidate) must reproduce exactly."""
    pairs, values, untried = agent.candidate_values(social)
    allowed = values > ZERO
    worthless = not allowed.any()
    if worthless and agent.choices.fallback == "untried":
        allowed = untried
    if social:
        options = choose_biased(pairs, allowed, agent.p_social, rng)
    else:
        options = np.flatnonzero(allowed)
        if not options.size:
            options = np.arange(values.size)
    if worthless:
        k = int(options[rng.integers(options.size)])
    else:
        k = int(options[softmax_draw(values[options], agent, rng)])
    return int(pairs.lo[k]), int(pairs.hi[k])


def softmax_draw(values: np.ndarray, agent: EmpowermentAgent, rng: np.random.Generator) -> int:
    """SPEC §2's draw: a softmax over every option, in order (the agent leaves out options
    whose probability is below 1e-17, which a draw tells apart about once in 10^13)."""
    if values.size == 1:
        return 0
    p = softmax_probabilities(values, agent.beta, agent.choices.zscore)
    cumulative = np.cumsum(p)
    k = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return min(k, values.size - 1)


@pytest.mark.parametrize("p_social", [0.0, 0.5, 1.0])
def test_choices_match_the_whole_candidate_set(
    full: tuple[Prior, np.ndarray], p_social: float
) -> None:
    prior, _ = full
    agent, state, rng = start(prior, p_social=p_social, beta=0.5)
    for name in ("steam", "lava", "mud"):
        gain(agent, state, name, rng)
    air, water, fire, earth = (GRAPH.id_of(n) for n in ("air", "water", "fire", "earth"))
    agent.observe_own(air, water, GRAPH.id_of("steam"))
    agent.observe_received([(earth, earth, FAILED), (GRAPH.id_of("lava"), water, 10)])
    steam, stone, brick, island = (GRAPH.id_of(n) for n in ("steam", "stone", "brick", "island"))
    socials = [[], [steam], [stone], [brick, fire], [stone, steam, island], [island, brick, stone]]
    for social in socials:
        for seed in range(30):
            fast = agent.choose(state, social, np.random.default_rng(seed))
            assert fast == reference_choice(agent, social, np.random.default_rng(seed))


@pytest.mark.parametrize("zscore", [True, False])
def test_draw_over_many_options_matches_the_full_softmax(
    full: tuple[Prior, np.ndarray], zscore: bool
) -> None:
    """Thousands of options, some worth nothing (-inf), plus social ones: the draw that
    leaves out the negligible options picks what the softmax over every option picks."""
    prior, _ = full
    agent, _, _ = start(prior, choices=replace(PREVIOUS, zscore=zscore))
    data = np.random.default_rng(7)
    x = data.uniform(0.0, 10.0, 3000)
    x[data.random(x.size) < 0.2] = -np.inf
    live = np.flatnonzero(np.isfinite(x))
    extra = data.uniform(5.0, 10.0, 40)
    compact = np.concatenate([x[live], extra])
    total, squares = float(x[live].sum()), float(x[live] @ x[live])
    temperature = agent.beta * (compact.std() if zscore else 1.0)
    assert (compact < compact.max() - NEGLIGIBLE * temperature).mean() > 0.3  # left out
    picks = set()
    for seed in range(300):
        j = agent._softmax_draw(x, live.size, total, squares, extra, np.random.default_rng(seed))
        k = softmax_draw(compact, agent, np.random.default_rng(seed))
        assert j == (live[k] if k < live.size else x.size + k - live.size)
        picks.add(j)
    assert len(picks) > 5  # a real draw, not always the best option


@pytest.mark.parametrize("lasting", ["always", "step"])
def test_live_options_follow_every_change_of_value(
    full: tuple[Prior, np.ndarray], lasting: str
) -> None:
    """What a decision reads (the options worth something, their sums) stays what a scan of
    every row gives, through own attempts, received failures and successes (known for good,
    or for one choice and then forgotten), and gains."""
    prior, _ = full
    model = replace(PREVIOUS, owned="zero", failures=lasting, remember=lasting)
    agent, state, rng = start(prior, choices=model)
    names = ("steam", "lava", "mud", "stone")
    unowned = [e for e in range(N) if GRAPH.children_count[e] and e not in GRAPH.base]
    data = np.random.default_rng(3)
    for step in range(80):
        if step % 20 == 0:
            gain(agent, state, names[step // 20], rng)
        r = int(data.integers(agent.rows.size))  # a lasting candidate, often still an option
        a, b = int(agent.rows.lo[r]), int(agent.rows.hi[r])
        kind = data.random()
        if kind < 0.3:
            agent.observe_own(a, b, FAILED)
        elif kind < 0.6:
            agent.observe_received([(a, b, FAILED)])
        else:  # a received success: worth its result while the agent lacks it
            agent.observe_received([(a, b, int(data.choice(unowned)))])
        agent.choose(state, [], rng)
        live, rows = agent.live, agent.rows
        values = rows.value[: rows.size]
        worth = np.flatnonzero(values > ZERO)
        assert np.array_equal(live.rows[np.isfinite(live.x)], worth)
        assert np.array_equal(live.x[np.isfinite(live.x)], values[worth])
        assert live.count == worth.size
        assert live.total == pytest.approx(values[worth].sum(), rel=1e-12)
        assert live.squares == pytest.approx(values[worth] @ values[worth], rel=1e-12)


def test_fallback_when_nothing_is_worth_anything(full: tuple[Prior, np.ndarray]) -> None:
    prior, _ = full
    barren = GRAPH.restricted_to(GRAPH.base)  # nothing has children: every value is 0
    air, earth = GRAPH.id_of("air"), GRAPH.id_of("earth")
    known = [(a, b) for a in GRAPH.base for b in GRAPH.base if a <= b and (a, b) != (air, earth)]
    for fallback, expect_only_untried in (("untried", True), ("any", False)):
        agent, state, _ = start(prior, played=barren, choices=replace(PREVIOUS, fallback=fallback))
        agent.observe_received([(a, b, FAILED) for a, b in known])
        counts = choice_counts(agent, state, [], 200)
        assert agent.stats()["empowerment_fallbacks"] >= 200
        if expect_only_untried:
            assert set(counts) == {(air, earth)}
        else:
            assert len(counts) > 1


def test_choices_parse_and_validate() -> None:
    c = EmpowermentModel.parse("zscore=no, owned=renormalise")
    assert c == EmpowermentModel(zscore=False, owned="renormalise")
    assert EmpowermentModel.parse(c.changes()) == c
    with pytest.raises(ConfigError, match="owned"):
        replace(PREVIOUS, owned="maybe")
    with pytest.raises(ConfigError, match="name=value"):
        EmpowermentModel.parse("temperature=2")


@pytest.fixture(scope="module")
def toy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prior-cache")


def test_simulations_with_empowerment_agents(
    toy_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(toy_cache))
    config = SimConfig(n_agents=4, n_steps=15, agent_type="empowerment")
    assert SimConfig().agent_type == "empowerment"  # the default agents
    assert AgentParams().empowerment.prior.backend == "ngram"
    domain = make_domain(GRAPH)
    paired = BaselineProtocol("paired")
    a = run_simulation(domain, config, paired, seed=3)
    b = run_simulation(domain, config, paired, seed=3)
    assert a.curve == b.curve and a.curve[0] == 4 and a.final > 4
    assert np.all(np.diff(a.curve) >= 0)
    assert "empowerment_fallbacks" in a.agent_stats
    # A restricted variant: the prior comes from the full game, ground truth from the variant.
    limited = make_domain(GRAPH, VariantSpec("depth-limited", max_depth=1))
    assert limited.source is GRAPH
    run = run_simulation(limited, config, paired, seed=3)
    assert run.final <= len(limited.reachable)
