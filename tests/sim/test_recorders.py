"""Recorders (tpdisc.sim.recorders): what the game tells them and when, that they leave the
game as it is, and the counters worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tpdisc.agents.base import FAILED, Memory
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.exchanges import Exchanges
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import Game, run_simulation
from tpdisc.sim.recorders import Delivery, MechanismRecorder


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


class Transcript:
    """A recorder that keeps every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, object]] = []

    def attempted(self, step: int, memories: Sequence[Memory]) -> None:
        self.calls.append(("attempted", step, list(memories)))

    def delivered(self, step: int, exchanges: Exchanges, deliveries: Sequence[Delivery]) -> None:
        self.calls.append(("delivered", step, list(deliveries)))


# A tight bottleneck, so that some deliveries are cut and ``kept`` is exercised.
CONFIG = SimConfig(n_agents=4, n_steps=12, agent_type="stochastic", bottleneck=2)


def test_each_step_reports_attempts_then_deliveries(toy: Domain) -> None:
    spy = Transcript()
    result = run_simulation(
        toy, CONFIG, BaselineProtocol("dynamic"), seed=5, record_log=True, recorders=[spy]
    )
    kinds = [(kind, step) for kind, step, _ in spy.calls]
    assert kinds == [(k, s) for s in range(CONFIG.n_steps) for k in ("attempted", "delivered")]
    assert result.history is not None and result.log is not None
    attempts = [payload for kind, _, payload in spy.calls if kind == "attempted"]
    for step, memories in enumerate(attempts):
        assert memories == [result.history.memories[i][step] for i in range(CONFIG.n_agents)]
    rows: list[tuple[int, int, int, bool]] = []
    received = 0
    cut = False
    for kind, step, payload in spy.calls:
        if kind != "delivered":
            continue
        assert isinstance(payload, list)
        assert [d[0] for d in payload] == sorted(d[0] for d in payload)
        for learner, entries, sent, given_kept, memories in payload:
            assert len(sent) == len(entries)
            kept = [True] * len(sent) if given_kept is None else list(given_kept)
            cut |= given_kept is not None
            assert list(memories) == [m for m, k in zip(sent, kept, strict=True) if k]
            assert len(memories) <= CONFIG.bottleneck
            received += len(memories)
            rows += [(step, learner, m[2], k) for m, k in zip(sent, kept, strict=True)]
    assert cut, "the bottleneck of 2 never cut a delivery: the test shows nothing about kept"
    assert received == result.received
    log = result.log
    assert rows == list(zip(log.step, log.learner, log.result, log.survived, strict=True))


def test_a_recorder_leaves_the_game_as_it_was(toy: Domain) -> None:
    plain = run_simulation(toy, CONFIG, BaselineProtocol("dynamic"), seed=9, record_log=True)
    watched = run_simulation(
        toy, CONFIG, BaselineProtocol("dynamic"), seed=9, record_log=True, recorders=[Transcript()]
    )
    assert watched.curve == plain.curve
    assert watched.log == plain.log and watched.history == plain.history
    assert watched.mechanism == plain.mechanism and watched.schedule == plain.schedule


def test_a_game_without_recorders_plays(toy: Domain) -> None:
    game = Game(toy, CONFIG, seed=1)
    protocol = BaselineProtocol("paired").open(CONFIG.n_agents, CONFIG.n_steps, game.protocol_seed)
    for step in range(CONFIG.n_steps):
        game.attempts(step, game.choose())
        game.deliver(step, protocol.share(step, game.agent_states()))
    assert all(len(s.memories) == CONFIG.n_steps for s in game.states)
    played = run_simulation(toy, CONFIG, BaselineProtocol("paired"), seed=1)
    assert game.coverage == played.final


def test_mechanism_counters_by_hand() -> None:
    n = 10
    counters = MechanismRecorder(["a", "a"], [(0, 1), (0, 1)], n)
    # Step 0: agent 0 makes 5 from (0, 1); agent 1 fails (1, 1).
    counters.attempted(0, [(0, 1, 5), (1, 1, FAILED)])
    # Agent 1 is sent agent 0's success and its own failure: only the first is novel.
    sent: list[Memory] = [(0, 1, 5), (1, 1, FAILED)]
    counters.delivered(0, {1: [(0, 0), (1, 0)]}, [(1, [(0, 0), (1, 0)], sent, None, sent)])
    assert (counters.received, counters.novel_received) == (2, 1)
    # Step 1: agent 1 re-makes the received pair in the other order, and agent 0 makes 5
    # again, which it was never sent: one remake, one result remake, both agent 1's.
    counters.attempted(1, [(1, 0, 5), (1, 0, 5)])
    assert counters.remakes == [0, 1] and counters.result_remakes == [0, 1]
    assert counters.successes == [2, 1] and counters.steps == 2
    mechanism = counters.mechanism([[0, 1, 5], [0, 1, 5]])["a"]
    assert mechanism["success_rate"] == 3 / 4
    assert mechanism["remake_fraction"] == mechanism["remake_result_fraction"] == 1 / 4
    assert mechanism["inventory_gain"] == 1.0


def test_a_reception_counts_only_from_the_next_step() -> None:
    counters = MechanismRecorder(["a"], [(0, 1)], 10)
    counters.attempted(0, [(0, 1, 5)])
    sent: list[Memory] = [(0, 1, 5)]
    counters.delivered(0, {0: [(0, 0)]}, [(0, [(0, 0)], sent, None, sent)])
    assert counters.remakes == [0]  # the attempt came before the delivery of its own step
    assert counters.novel_received == 0  # the learner had tried the pair itself
