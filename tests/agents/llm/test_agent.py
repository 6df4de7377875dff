"""LLM agents against the local OpenAI-compatible server: answers, re-asks, fallbacks,
errors, concurrency, the response cache, and mixed populations under every baseline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tpdisc.agents.base import AgentContext, AgentParams, AgentState
from tpdisc.agents.llm.agent import STAT_KEYS, LLMAgent
from tpdisc.agents.llm.cache import ResponseCache
from tpdisc.agents.llm.config import CACHE_FILE, LLMAgentConfig
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.llm_client import LLMConfig, LLMError, ModelPrice
from tpdisc.protocols.baselines import BASELINES
from tpdisc.protocols.resolve import resolve_protocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate
from tpdisc.sim.game import run_simulation
from tpdisc.testing.chat_server import FakeChatServer, Reply
from tpdisc.testing.llm_player import ScriptedPlayer


def llm_config(server: FakeChatServer, tmp_path: Path, **changes: Any) -> LLMAgentConfig:
    client = {
        "base_url": server.base_url,
        "model": "fake-model",
        "max_retries": 2,
        "backoff_initial": 0.0,  # retries without waiting: the tests observe counts only
        "backoff_max": 0.0,
        "timeout": 10.0,
    }
    client.update(changes.pop("client", {}))
    settings: dict[str, Any] = {"cache_path": str(tmp_path / "answers.sqlite")}
    settings.update(changes)
    return LLMAgentConfig(LLMConfig(**client), **settings)


def one_agent(graph: RecipeGraph, config: LLMAgentConfig, n_steps: int = 10) -> LLMAgent:
    ctx = AgentContext(graph, 0, 1, n_steps, AgentParams(llm=config))
    return LLMAgent.from_context(ctx)


def start_state(graph: RecipeGraph, names: list[str]) -> AgentState:
    return AgentState.start(graph.n_elements, [graph.id_of(n) for n in names])


def sim_config(population: str, config: LLMAgentConfig, n_steps: int = 20) -> SimConfig:
    return SimConfig.with_population(population, n_steps=n_steps, params=AgentParams(llm=config))


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


def paired() -> Any:
    return resolve_protocol("paired", trusted=True)


# --- one agent, scripted answers ------------------------------------------------------------


def test_valid_answer_is_the_pair(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    answer = Reply.text("Water is wet.\n<answer> Water + 'FIRE' </answer>", completion_tokens=7)
    with FakeChatServer([answer]) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        state = start_state(toy_graph, ["air", "earth", "fire", "water"])
        pair = agent.choose(state, [], np.random.default_rng(0))
        request = server.requests[0]
    assert pair == (toy_graph.id_of("fire"), toy_graph.id_of("water"))
    assert request.model == "fake-model"
    assert request.messages[0]["role"] == "system"
    assert "Step 1 of 10." in request.last_user_text
    stats = agent.stats()
    assert set(stats) == set(STAT_KEYS)
    assert (stats["llm_choices"], stats["llm_calls"], stats["llm_requests"]) == (1, 1, 1)
    assert (stats["llm_reasks"], stats["llm_fallbacks"], stats["llm_cache_hits"]) == (0, 0, 0)
    assert stats["llm_prompt_tokens"] == len(request.text().split())  # the server's count
    assert stats["llm_completion_tokens"] == 7


def test_unusable_answer_is_reasked_with_the_reason(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    script = ["<answer>gold + fire</answer>", "Sorry. <answer>fire + fire</answer>"]
    with FakeChatServer(script) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        state = start_state(toy_graph, ["air", "earth", "fire", "water"])
        pair = agent.choose(state, [], np.random.default_rng(0))
        first, reask = server.requests
    fire = toy_graph.id_of("fire")
    assert pair == (fire, fire)
    assert reask.messages[:2] == first.messages
    assert reask.messages[2] == {"role": "assistant", "content": "<answer>gold + fire</answer>"}
    assert "'gold' is not one of the elements you can use now" in reask.last_user_text
    assert "use now are: air, earth, fire, water." in reask.last_user_text
    stats = agent.stats()
    assert (stats["llm_reasks"], stats["llm_fallbacks"], stats["llm_calls"]) == (1, 0, 2)


def test_second_unusable_answer_falls_back_to_an_untried_pair(
    toy_graph: RecipeGraph, tmp_path: Path
) -> None:
    air, earth = toy_graph.id_of("air"), toy_graph.id_of("earth")
    with FakeChatServer(lambda request: Reply.text("no idea")) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        state = start_state(toy_graph, ["air", "earth"])
        agent.observe_own(air, air, toy_graph.id_of("pressure"))
        agent.observe_received([(earth, air, -1)])
        rng = np.random.default_rng(1)
        choices = {agent.choose(state, [], rng) for _ in range(5)}
        assert len(server.requests) == 10
    assert choices == {(earth, earth)}  # the only pair whose outcome it has not seen
    stats = agent.stats()
    assert (stats["llm_choices"], stats["llm_reasks"], stats["llm_fallbacks"]) == (5, 5, 5)


def test_fallback_is_uniform_over_untried_pairs(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    names = ["air", "earth", "fire", "water"]
    with FakeChatServer(lambda request: Reply.text("<answer>gold + lead</answer>")) as server:
        config = llm_config(server, tmp_path, cache=False)
        state = start_state(toy_graph, names)
        agent = one_agent(toy_graph, config)
        rng = np.random.default_rng(3)
        ids = [toy_graph.id_of(n) for n in names]
        agent.observe_own(ids[0], ids[0], -1)  # air + air is known: never chosen
        counts: dict[tuple[int, int], int] = {}
        for _ in range(180):
            pair = agent.fallback.choose(state, [], rng)
            counts[pair] = counts.get(pair, 0) + 1
    assert (ids[0], ids[0]) not in counts and len(counts) == 9
    expected = 180 / 9
    assert all(abs(c - expected) < 6 * np.sqrt(expected) for c in counts.values())


def test_borrowed_elements_are_offered_and_usable(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    with FakeChatServer(["<answer>mud + fire</answer>"]) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        state = start_state(toy_graph, ["air", "earth", "fire", "water"])
        earth, water, mud = (toy_graph.id_of(n) for n in ("earth", "water", "mud"))
        agent.observe_received([(earth, water, mud)])
        pair = agent.choose(state, [earth, water, mud], np.random.default_rng(0))
        prompt = server.requests[0].last_user_text
    assert pair == tuple(sorted((mud, toy_graph.id_of("fire"))))
    assert "usable this step only): mud\n" in prompt  # owned elements are not "borrowed"
    assert "- earth + water -> mud" in prompt


def test_received_records_are_shown_once(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    with FakeChatServer(lambda r: Reply.text("<answer>air + air</answer>")) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        state = start_state(toy_graph, ["air", "earth", "fire", "water"])
        earth, water, mud = (toy_graph.id_of(n) for n in ("earth", "water", "mud"))
        agent.observe_received([(earth, water, mud)])
        agent.choose(state, [earth, water, mud], np.random.default_rng(0))
        agent.choose(state, [], np.random.default_rng(0))
        second = server.requests[1].last_user_text
    assert "Step 2 of 10." in second
    assert "since your last attempt:\nnone" in second


def test_repeated_pairs_are_counted(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    with FakeChatServer(lambda r: Reply.text("<answer>air + fire</answer>")) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        state = start_state(toy_graph, ["air", "earth", "fire", "water"])
        air, fire = toy_graph.id_of("air"), toy_graph.id_of("fire")
        agent.choose(state, [], np.random.default_rng(0))
        agent.observe_own(air, fire, toy_graph.id_of("energy"))
        agent.choose(state, [], np.random.default_rng(0))
    assert agent.stats()["llm_repeats"] == 1


def test_cost_at_configured_prices(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    reply = Reply.text("<answer>air + air</answer>", prompt_tokens=1000, completion_tokens=50)
    with FakeChatServer(lambda r: reply) as server:
        prices = {"fake-model": ModelPrice(input_per_million=3.0, output_per_million=15.0)}
        agent = one_agent(toy_graph, llm_config(server, tmp_path, client={"prices": prices}))
        state = start_state(toy_graph, ["air"])
        for _ in range(2):
            agent.choose(state, [], np.random.default_rng(0))
    stats = agent.stats()
    assert stats["llm_prompt_tokens"] == 2000 and stats["llm_completion_tokens"] == 100
    assert stats["llm_cost"] == pytest.approx(2 * (1000 * 3.0 + 50 * 15.0) / 1e6)


# --- server errors --------------------------------------------------------------------------


def test_rate_limits_and_server_errors_are_retried(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    script = [
        Reply.error(429, "slow down", retry_after=0),
        Reply.error(500, "oops"),
        "<answer>earth + water</answer>",
    ]
    with FakeChatServer(script) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        state = start_state(toy_graph, ["air", "earth", "fire", "water"])
        pair = agent.choose(state, [], np.random.default_rng(0))
        assert len(server.requests) == 3
    assert pair == (toy_graph.id_of("earth"), toy_graph.id_of("water"))
    stats = agent.stats()
    assert (stats["llm_calls"], stats["llm_requests"], stats["llm_fallbacks"]) == (1, 3, 0)


def test_dead_endpoint_stops_the_simulation(toy: Domain, tmp_path: Path) -> None:
    with FakeChatServer(lambda request: Reply.error(503, "overloaded")) as server:
        config = sim_config("stochastic:2,llm:2", llm_config(server, tmp_path), n_steps=3)
        with pytest.raises(LLMError, match=r"LLM agent [23], step 1: .*giving up after 3"):
            run_simulation(toy, config, paired(), seed=0)


def test_a_failed_agent_cancels_the_requests_not_yet_sent(toy: Domain, tmp_path: Path) -> None:
    slow_failure = Reply(status=503, raw_body='{"error": {"message": "down"}}', delay=0.3)
    with FakeChatServer(lambda request: slow_failure) as server:
        config = llm_config(server, tmp_path, concurrency=2, client={"max_retries": 0})
        with pytest.raises(LLMError, match="LLM agent 0, step 1"):
            run_simulation(toy, sim_config("llm:6", config, n_steps=2), paired(), seed=0)
        time.sleep(1.0)  # time for requests still queued to go out, were they not cancelled
        assert len(server.requests) <= 4  # agents 4 and 5 never asked


def test_rejected_request_is_not_retried(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    with FakeChatServer([Reply.error(400, "context length exceeded")]) as server:
        agent = one_agent(toy_graph, llm_config(server, tmp_path))
        with pytest.raises(LLMError, match=r"HTTP 400.*context length exceeded"):
            agent.choose(start_state(toy_graph, ["air"]), [], np.random.default_rng(0))
        assert len(server.requests) == 1


# --- concurrency ----------------------------------------------------------------------------


def test_agents_of_a_step_ask_concurrently_within_the_limit(toy: Domain, tmp_path: Path) -> None:
    player = ScriptedPlayer(delay=0.05)
    with FakeChatServer(player) as server:
        config = llm_config(server, tmp_path, concurrency=3, cache=False)
        result = run_simulation(toy, sim_config("llm:8", config, n_steps=3), paired(), seed=5)
        assert len(server.requests) == 24
    assert 2 <= player.max_in_flight <= 3
    with FakeChatServer(ScriptedPlayer()) as server:
        one_at_a_time = llm_config(server, tmp_path, concurrency=1, cache=False)
        serial = run_simulation(toy, sim_config("llm:8", one_at_a_time, n_steps=3), paired(), 5)
    assert serial.curve == result.curve and serial.agent_stats == result.agent_stats


# --- acceptance: 10 agents, 20 steps, then a rerun from the cache ---------------------------


def test_ten_llm_agents_twenty_steps_then_rerun_from_cache(toy: Domain, tmp_path: Path) -> None:
    player = ScriptedPlayer(invalid=0.3, invalid_reask=0.4)
    with FakeChatServer(player) as server:
        config = sim_config("llm:10", llm_config(server, tmp_path), n_steps=20)
        first = run_simulation(toy, config, paired(), seed=11)
        sent = len(server.requests)
        again = run_simulation(toy, config, paired(), seed=11)
        assert len(server.requests) == sent  # the rerun asked nothing
    stats = first.agent_stats
    assert len(first.curve) == 21 and first.final > 4
    assert stats["llm_choices"] == 200
    assert stats["llm_calls"] == stats["llm_requests"] == sent == 200 + stats["llm_reasks"]
    assert stats["llm_reasks"] > 0 and stats["llm_fallbacks"] > 0
    assert stats["llm_fallbacks"] < stats["llm_reasks"]
    assert stats["llm_prompt_tokens"] > 0 and stats["llm_completion_tokens"] > 0
    assert again.curve == first.curve
    rerun = again.agent_stats
    assert rerun["llm_cache_hits"] == sent
    assert rerun["llm_calls"] == rerun["llm_requests"] == rerun["llm_prompt_tokens"] == 0
    for key in ("llm_choices", "llm_reasks", "llm_fallbacks", "llm_repeats"):
        assert rerun[key] == stats[key]


def test_identical_prompts_of_different_agents_are_separate_draws(
    toy: Domain, tmp_path: Path
) -> None:
    with FakeChatServer(ScriptedPlayer()) as server:
        config = llm_config(server, tmp_path)
        run_simulation(toy, sim_config("llm:4", config, n_steps=1), paired(), seed=0)
        step_one = server.requests
    # Every agent starts alike, so the four prompts are equal, yet each got its own answer.
    assert len(step_one) == 4 and len({r.text() for r in step_one}) == 1
    cache = ResponseCache(tmp_path / "answers.sqlite")
    assert len(cache) == 4
    cache.close()


def test_a_new_seed_asks_again(toy: Domain, tmp_path: Path) -> None:
    with FakeChatServer(ScriptedPlayer()) as server:
        config = sim_config("llm:3", llm_config(server, tmp_path), n_steps=2)
        run_simulation(toy, config, paired(), seed=0)
        sent = len(server.requests)
        run_simulation(toy, config, paired(), seed=1)
        assert len(server.requests) == 2 * sent


def test_without_cache_every_run_asks(toy: Domain, tmp_path: Path) -> None:
    with FakeChatServer(ScriptedPlayer()) as server:
        config = sim_config("llm:2", llm_config(server, tmp_path, cache=False), n_steps=3)
        run_simulation(toy, config, paired(), seed=0)
        run_simulation(toy, config, paired(), seed=0)
        assert len(server.requests) == 12
    assert not (tmp_path / "answers.sqlite").exists()


def test_default_cache_lives_in_the_user_cache(
    toy: Domain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "user-cache"))
    with FakeChatServer(ScriptedPlayer()) as server:
        config = llm_config(server, tmp_path, cache_path=None)
        run_simulation(toy, sim_config("llm:2", config, n_steps=2), paired(), seed=0)
    assert config.resolved_cache_path() == tmp_path / "user-cache" / CACHE_FILE
    assert (tmp_path / "user-cache" / CACHE_FILE).is_file()


def test_worker_processes_read_the_same_cache(toy: Domain, tmp_path: Path) -> None:
    with FakeChatServer(ScriptedPlayer(invalid=0.2)) as server:
        config = sim_config("stochastic:2,llm:2", llm_config(server, tmp_path), n_steps=5)
        spec = paired()
        here = evaluate(toy, config, spec, [0, 1], executor=SerialExecutor())
        sent = len(server.requests)
        with ProcessExecutor(2) as pool:
            there = evaluate(toy, config, spec, [0, 1], executor=pool)
        assert len(server.requests) == sent
    assert there.curves == here.curves
    assert there.agent_stats["llm_cache_hits"] == here.agent_stats["llm_calls"] == sent


# --- populations and configuration ----------------------------------------------------------


@pytest.mark.parametrize("protocol", sorted(BASELINES))
def test_mixed_population_under_every_baseline(toy: Domain, tmp_path: Path, protocol: str) -> None:
    with FakeChatServer(ScriptedPlayer(invalid=0.2)) as server:
        config = sim_config("stochastic:3,llm:3", llm_config(server, tmp_path), n_steps=6)
        spec = resolve_protocol(protocol, trusted=True)
        result = run_simulation(toy, config, spec, seed=2, record_log=True)
        assert result.agent_stats["llm_requests"] == len(server.requests)
    assert len(result.curve) == 7
    assert result.agent_stats["llm_choices"] == 3 * 6


def test_mixed_population_with_empowerment_agents(
    toy: Domain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "user-cache"))  # the prior's cache
    with FakeChatServer(ScriptedPlayer(invalid=0.2)) as server:
        config = sim_config(
            "empowerment:2,stochastic:2,llm:2", llm_config(server, tmp_path), n_steps=6
        )
        result = run_simulation(toy, config, resolve_protocol("graph", trusted=True), seed=4)
        assert result.agent_stats["llm_requests"] == len(server.requests)
    assert len(result.curve) == 7 and result.agent_stats["llm_choices"] == 2 * 6
    assert config.to_dict()["population"] == [["empowerment", 2], ["stochastic", 2], ["llm", 2]]
