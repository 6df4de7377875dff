"""The compiled hot loop against its pure-Python reference (tpdisc.agents.compiled).

Both paths must make the same choice at every step: the kernels rebuild numpy's sums bit
for bit, and every simulation here runs twice, once each way, and must come out the same
(curve, routing, every transmitted memory, counters). The outcome digest of
``benchmarks/outcome_digest.py`` checks the same on the real game with its real prior.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from tests.conftest import TOY
from tpdisc.agents.base import FAILED, AgentParams, AgentState
from tpdisc.agents.compiled import reference_mode, use_kernels
from tpdisc.agents.empowerment.agent import EmpowermentAgent
from tpdisc.agents.empowerment.compiled_agent import CompiledEmpowermentAgent, make_agent
from tpdisc.agents.empowerment.kernels import pairwise_sum, pick
from tpdisc.agents.empowerment.model import EmpowermentModel, named_model
from tpdisc.agents.empowerment.prior.build import Prior, PriorSettings, build_prior
from tpdisc.agents.empowerment.prior.mlp import Training
from tpdisc.agents.empowerment.prior.models import LinkSettings, ResultSettings
from tpdisc.agents.empowerment.prior.vectors import NgramBackend
from tpdisc.agents.empowerment.tables import EmpowermentTables
from tpdisc.agents.stochastic import StochasticAgent
from tpdisc.domain.recipes import RecipeGraph, parse_wordcraft
from tpdisc.domain.variants import Domain, VariantSpec, make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation

GRAPH = parse_wordcraft(TOY, "toy")
# The model these tests were written for; the calibrated default has tests of its own.
PREVIOUS = named_model("previous")
N = GRAPH.n_elements
CHOICES = [
    EmpowermentModel(),
    PREVIOUS,
    replace(PREVIOUS, owned="zero"),
    replace(PREVIOUS, owned="ignore"),
    replace(PREVIOUS, received="prior"),
    replace(PREVIOUS, zscore=False),
    replace(PREVIOUS, fallback="any"),
    replace(PREVIOUS, owns="usable"),
    replace(PREVIOUS, remember="step"),
    replace(EmpowermentModel(), success="base-rate", noise="pair"),
    replace(PREVIOUS, owns="usable", remember="step", received="zero"),
    replace(PREVIOUS, received_worth=0.25, bias="unowned"),
    replace(PREVIOUS, noise="pair", noise_sd=0.3),
    replace(EmpowermentModel(), failures="step"),
    replace(EmpowermentModel(), failures="never"),
    replace(EmpowermentModel(), failures="step", remember="step"),
    replace(PREVIOUS, failures="step", remember="step", owns="usable"),
]


def test_reference_mode_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("", False), ("0", False), ("no", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("TPDISC_REFERENCE", value)
        assert reference_mode() is expected
    monkeypatch.delenv("TPDISC_REFERENCE")
    assert not reference_mode()
    monkeypatch.setenv("TPDISC_REFERENCE", "1")
    assert StochasticAgent(N, 0.5).compiled is False  # reference=None: the environment decides
    assert StochasticAgent(N, 0.5, reference=False).compiled is True


def test_pairwise_sum_is_numpys_sum() -> None:
    data = np.random.default_rng(0)
    for n in [*range(300), 511, 1000, 1023, 1024, 4097, 10_001, 70_000]:
        x = data.standard_normal(n) * data.random(n) ** 4 * 1e3
        assert pairwise_sum(x, 0, n) == x.sum(), n
    x = data.standard_normal(1000)
    assert pairwise_sum(x, 100, 500) == x[100:600].sum()


def test_pick_is_numpys_search_of_the_running_sums() -> None:
    """The draw over the first ``size`` weights of a buffer finds what ``searchsorted``
    over their ``cumsum`` finds, for every target, zero weights included, and for a target
    of the whole sum (u = 1: then the last positive weight, as the reference guards against
    rounding); entries past ``size`` are not read."""
    data = np.random.default_rng(7)
    past_the_end = 0
    for size in (1, 2, 3, 8, 300):
        for _ in range(20):
            w = data.random(size) ** 3
            w[data.random(size) < 0.3] = 0.0
            w[data.integers(size)] = data.random() + 1e-3
            buffer = np.concatenate([w, np.full(5, 1e300)])
            sums = np.cumsum(w)
            for u in (0.0, data.random(), 0.5, np.nextafter(1.0, 0.0), 1.0):
                k = int(np.searchsorted(sums, u * sums[-1], side="right"))
                if k == size:
                    k = int(np.flatnonzero(w)[-1])
                    past_the_end += 1
                assert pick(buffer, size, u) == k, (size, u)
    assert past_the_end  # the guarded case did come up


# --- empowerment agents, step by step -----------------------------------------------------


@pytest.fixture(scope="module", params=[5, N], ids=["top5", "top-all"])
def prior(request: pytest.FixtureRequest) -> Prior:
    """Priors of the toy game keeping the top 5 results (an odd row length for the kernels'
    two-lane sums) or all of them."""
    settings = PriorSettings(
        folds=4,
        link=LinkSettings(hidden=4, training=Training(3, 16)),
        result=ResultSettings(hidden=(16,), training=Training(3, 8)),
        top_k=request.param,
    )
    built, _ = build_prior(GRAPH, NgramBackend(dim=8), settings)
    return built


def pair_of_agents(
    prior: Prior, choices: EmpowermentModel, played: RecipeGraph = GRAPH
) -> tuple[EmpowermentAgent, EmpowermentAgent]:
    tables = EmpowermentTables.build(prior, played)
    return (
        make_agent(tables, replace(choices, beta=0.5), 0.5, reference=True),
        make_agent(tables, replace(choices, beta=0.5), 0.5, reference=False),
    )


def test_the_path_is_chosen_once_when_the_agent_is_made(
    prior: Prior, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = EmpowermentTables.build(prior, GRAPH)
    monkeypatch.setenv("TPDISC_REFERENCE", "1")
    assert type(make_agent(tables)) is EmpowermentAgent
    assert type(make_agent(tables, reference=False)) is CompiledEmpowermentAgent
    monkeypatch.setenv("TPDISC_REFERENCE", "0")
    assert type(make_agent(tables)) is CompiledEmpowermentAgent
    monkeypatch.delenv("TPDISC_REFERENCE")
    assert make_agent(tables).compiled  # the kernels unless told otherwise


def assert_same_state(reference: EmpowermentAgent, compiled: EmpowermentAgent) -> None:
    """Every number a later choice reads, bit for bit."""
    assert compiled.compiled and not reference.compiled
    n = reference.rows.size
    assert compiled.rows.size == n
    for name in ("lo", "hi", "value", "code", "frozen"):
        assert np.array_equal(getattr(compiled.rows, name)[:n], getattr(reference.rows, name)[:n])
    assert np.array_equal(compiled.known, reference.known)
    assert compiled.u_sum == reference.u_sum and compiled.n_owned == reference.n_owned
    live_r, live_c = reference.live, compiled.live
    assert live_c.dirty == live_r.dirty
    if not live_r.dirty:
        assert np.array_equal(live_c.rows, live_r.rows) and np.array_equal(live_c.x, live_r.x)
        assert (live_c.count, live_c.total, live_c.squares) == (
            live_r.count,
            live_r.total,
            live_r.squares,
        )


def lockstep(
    reference: EmpowermentAgent, compiled: EmpowermentAgent, seed: int, steps: int = 60
) -> Iterator[tuple[AgentState, int, list[int]]]:
    """Drive both agents through the same game: gains, own attempts, received memories,
    social items, all drawn from ``seed``; yields the state, a seed for the choice's
    random stream and the social items before each choice."""
    data = np.random.default_rng(seed)
    state = AgentState.start(N, GRAPH.base)
    for _ in range(steps):
        social = [int(e) for e in data.choice(N, int(data.integers(0, 5)), replace=False)]
        yield state, int(data.integers(2**32)), social
        unowned = np.flatnonzero(~state.owned)
        if unowned.size and data.random() < 0.3:
            e = int(data.choice(unowned))
            state.owned[e] = True
            state.inventory.append(e)
        a, b = (int(e) for e in data.choice(state.inventory, 2))
        own = FAILED if data.random() < 0.6 else int(data.integers(N))
        memories = [
            (int(data.integers(N)), int(data.integers(N)), FAILED if data.random() < 0.5 else r)
            for r in data.integers(N, size=int(data.integers(0, 12)))
        ]
        for agent in (reference, compiled):
            agent.observe_own(a, b, own)
            agent.observe_received(memories)


@pytest.mark.parametrize("choices", CHOICES, ids=lambda c: f"{c.name}:{c.changes()}")
def test_empowerment_kernels_follow_the_reference(prior: Prior, choices: EmpowermentModel) -> None:
    for seed in range(3):
        reference, compiled = pair_of_agents(prior, choices)
        for state, draw, social in lockstep(reference, compiled, seed):
            expected_rng, got_rng = np.random.default_rng(draw), np.random.default_rng(draw)
            expected = reference.choose(state, social, expected_rng)
            assert compiled.choose(state, social, got_rng) == expected
            # the same draws taken, and the same word on the social bias
            assert got_rng.random() == expected_rng.random()
            assert compiled.steered == reference.steered
            assert_same_state(reference, compiled)


@pytest.mark.parametrize("choices", CHOICES[:3], ids=lambda c: f"{c.name}:{c.changes()}")
def test_kept_social_pairs_and_near_rows_follow_the_reference(
    prior: Prior, choices: EmpowermentModel
) -> None:
    """The compiled agent keeps each social element's pairs across gains and finds the
    rows of its social items by their slots: after every gain, the same pairs, values and
    rows, bit for bit, as computing them afresh; elements come back after many gains."""
    data = np.random.default_rng(3)
    for seed in range(3):
        reference, compiled = pair_of_agents(prior, choices)
        for state, draw, social in lockstep(reference, compiled, seed, steps=40):
            expected = reference.choose(state, social, np.random.default_rng(draw))
            assert compiled.choose(state, social, np.random.default_rng(draw)) == expected
            unowned = np.flatnonzero(~state.owned)
            for size in (1, 2, 3):
                if unowned.size < size:
                    break
                extra = data.choice(unowned, size, replace=False)
                reference._social_cache.clear()
                compiled._social_cache.clear()
                for got, want in zip(
                    compiled._social_prior(extra), reference._social_prior(extra), strict=True
                ):
                    assert np.array_equal(got, want)
            owned = np.array(state.inventory)
            mine = data.choice(owned, int(data.integers(0, owned.size + 1)), replace=False)
            got_rows, got_x, got_total = compiled._near_social(mine)
            want_rows, want_x, want_total = reference._near_social(mine)
            assert np.array_equal(got_rows, want_rows) and np.array_equal(got_x, want_x)
            assert got_total == want_total
        # the store did keep pairs across gains
        assert compiled._social_pairs_kept.block[:, 1].any()


def test_fallback_choices_follow_the_reference(prior: Prior) -> None:
    """Nothing worth anything in a game without children: the uniform fallback draws."""
    barren = GRAPH.restricted_to(GRAPH.base)
    for choices in (EmpowermentModel(), PREVIOUS, replace(PREVIOUS, fallback="any")):
        reference, compiled = pair_of_agents(prior, choices, barren)
        for state, draw, social in lockstep(reference, compiled, 5, steps=20):
            expected = reference.choose(state, social, np.random.default_rng(draw))
            assert compiled.choose(state, social, np.random.default_rng(draw)) == expected
        assert compiled.fallbacks == reference.fallbacks
        # With the top 5 only, the mean-field rest leaves values above ZERO: no fallback.
        assert reference.fallbacks > 0 or prior.top_idx.shape[1] < N


@pytest.mark.parametrize("zscore", [True, False])
def test_softmax_draw_over_many_options_follows_the_reference(prior: Prior, zscore: bool) -> None:
    """Above BAND_MIN entries the draw weighs only a band: the same on both paths, -inf
    entries and social options included."""
    reference, compiled = pair_of_agents(prior, replace(PREVIOUS, zscore=zscore))
    data = np.random.default_rng(11)
    # a few options far above the rest put the rest outside the band
    high, spread = (1e6, 5e4) if zscore else (100.0, 2.0)
    for size, cluster in ((3, 0), (900, 0), (900, 3), (1500, 0), (1500, 3), (5000, 10)):
        x = data.uniform(0.0, 10.0, size)
        x[data.random(size) < 0.2] = -np.inf
        x[data.choice(size, cluster, replace=False)] = high + data.uniform(0.0, spread, cluster)
        live = x[np.isfinite(x)]
        total, squares = float(live.sum()), float(live @ live)
        for extra in (None, data.uniform(5.0, 12.0, 40)):
            for seed in range(40):
                args = (x, live.size, total, squares, extra)
                expected = reference._softmax_draw(*args, np.random.default_rng(seed))
                assert compiled._softmax_draw(*args, np.random.default_rng(seed)) == expected


# --- whole simulations ------------------------------------------------------------------------


def outcome(result: SimResult) -> tuple[object, ...]:
    assert result.log is not None
    columns = {name: column.tolist() for name, column in result.log.columns().items()}
    return (
        result.curve,
        result.schedule.to_json(),
        columns,
        result.received,
        result.novel_received,
        result.agent_stats,
        result.mechanism,
    )


def both_paths(
    monkeypatch: pytest.MonkeyPatch, domain: Domain, config: SimConfig, baseline: str, seed: int
) -> None:
    outcomes = []
    for reference in ("1", "0"):
        monkeypatch.setenv("TPDISC_REFERENCE", reference)
        result = run_simulation(domain, config, BaselineProtocol(baseline), seed, record_log=True)
        outcomes.append(outcome(result))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("baseline", ["paired", "stochastic", "dynamic"])
def test_empowerment_simulations_on_the_toy_game(
    monkeypatch: pytest.MonkeyPatch, baseline: str
) -> None:
    domains = [make_domain(GRAPH), make_domain(GRAPH, VariantSpec("depth-limited", max_depth=1))]
    for domain in domains:
        for choices in CHOICES[:4]:
            config = SimConfig(
                n_agents=6,
                n_steps=40,
                agent_type="empowerment",
                params=AgentParams(empowerment=choices, p_social=0.7),
            )
            for seed in range(2):
                both_paths(monkeypatch, domain, config, baseline, seed)


def test_mixed_population_on_the_toy_game(monkeypatch: pytest.MonkeyPatch) -> None:
    config = SimConfig.with_population("empowerment:3,stochastic:3", n_steps=40)
    for seed in range(3):
        both_paths(monkeypatch, make_domain(GRAPH), config, "stochastic", seed)


@pytest.mark.parametrize("baseline", ["paired", "stochastic", "asocial"])
def test_stochastic_simulations_on_the_real_game(
    monkeypatch: pytest.MonkeyPatch, real_graph: RecipeGraph, baseline: str
) -> None:
    domain = make_domain(real_graph)
    config = SimConfig(n_agents=10, n_steps=150, agent_type="stochastic")
    for seed in range(3):
        both_paths(monkeypatch, domain, config, baseline, seed)


# --- stochastic agents, step by step -------------------------------------------------------


def test_stochastic_kernels_follow_the_reference() -> None:
    data = np.random.default_rng(4)
    for p_social in (0.0, 0.5, 1.0):
        reference = StochasticAgent(N, p_social, reference=True)
        compiled = StochasticAgent(N, p_social, reference=False)
        state = AgentState.start(N, [0, 1, 2, 3])
        for _ in range(80):
            social = [int(e) for e in data.choice(N, int(data.integers(0, 6)), replace=False)]
            seed = int(data.integers(2**32))
            expected = reference.choose(state, social, np.random.default_rng(seed))
            assert compiled.choose(state, social, np.random.default_rng(seed)) == expected
            if data.random() < 0.2 and not state.owned.all():
                e = int(data.choice(np.flatnonzero(~state.owned)))
                state.owned[e] = True
                state.inventory.append(e)
            memories = [
                (int(data.integers(N)), int(data.integers(N)), FAILED)
                for _ in range(int(data.integers(0, 8)))
            ]
            for agent in (reference, compiled):
                agent.observe_received(memories)
            assert np.array_equal(compiled.unknown, reference.unknown)


def test_each_agent_type_has_its_default_path_and_the_environment_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TPDISC_REFERENCE", raising=False)
    assert use_kernels(True) and not use_kernels(False)
    assert StochasticAgent(N, 0.5).compiled is False  # numba's start costs more than it saves
    monkeypatch.setenv("TPDISC_REFERENCE", "0")
    assert use_kernels(False) and StochasticAgent(N, 0.5).compiled is True
    monkeypatch.setenv("TPDISC_REFERENCE", "1")
    assert not use_kernels(True)


def test_kernels_load_numba_at_their_first_call_only() -> None:
    code = (
        "import sys\n"
        "import tpdisc.agents.stochastic, tpdisc.agents.empowerment.kernels\n"
        "assert 'numba' not in sys.modules\n"
        "import numpy as np\n"
        "from tpdisc.agents.empowerment.kernels import pairwise_sum\n"
        "assert pairwise_sum(np.ones(5), 0, 5) == 5.0\n"
        "assert 'numba' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_numba_starts_without_importing_scipy_linalg_and_leaves_it_importable() -> None:
    """Numba's BLAS check is met by the extension module alone; afterwards scipy.linalg,
    its Cython BLAS and numba's own BLAS calls work as in any process."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from tpdisc.agents.compiled import load_kernels\n"
        "load_kernels()\n"
        "assert 'scipy.linalg' not in sys.modules\n"
        "assert 'scipy.linalg.cython_blas' not in sys.modules\n"
        "from numba.np import arraymath\n"
        "assert arraymath._HAVE_BLAS\n"
        "from tpdisc.agents.empowerment.kernels import pairwise_sum\n"  # registered later
        "assert pairwise_sum(np.ones(3), 0, 3) == 3.0\n"
        "import scipy.linalg.cython_blas\n"
        "assert '__pyx_capi__' in vars(scipy.linalg.cython_blas)\n"
        "assert np.allclose(scipy.linalg.solve(2 * np.eye(3), np.ones(3)), 0.5)\n"
        "import numba\n"
        "dot = numba.njit(lambda a, b: np.dot(a, b))\n"
        "assert dot(np.ones((2, 3)), np.ones(3)).tolist() == [3.0, 3.0]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
