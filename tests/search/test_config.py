"""The search settings: validation, YAML round trip, what a resumed run may change."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tpdisc.agents.base import AgentParams
from tpdisc.agents.empowerment.model import EmpowermentModel, PriorChoice, named_model
from tpdisc.cli.options import SEARCH_LLM_OPTIONS
from tpdisc.cli.settings import Options
from tpdisc.domain.variants import VariantSpec
from tpdisc.errors import ConfigError
from tpdisc.llm_client import LLMConfig, ModelPrice
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import CONFIG_FILE
from tpdisc.search.run import resolve_config
from tpdisc.sim.config import ExecutorConfig, SimConfig


def test_defaults_follow_the_spec() -> None:
    config = SearchConfig()
    assert (config.iterations, config.warmup, config.sims) == (200, 50, 30)
    assert (config.sim.n_agents, config.sim.n_steps, config.max_repairs) == (10, 150, 3)
    assert (config.thompson_lambda, config.contrast_temperature) == (3.0, 0.4)
    assert config.sim == SimConfig()
    assert config.seeds == list(range(30)) and config.sandboxed


def test_warmup_and_generation_only() -> None:
    config = SearchConfig(iterations=10, warmup=3)
    assert [config.is_warmup(i) for i in (1, 3, 4, 10)] == [True, True, False, False]
    only = SearchConfig(iterations=10, warmup=3, generation_only=True)
    assert all(only.is_warmup(i) for i in range(1, 11))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("sims", 0, "sims"),
        ("warmup", 500, "warmup"),
        ("thompson_lambda", 0.0, "thompson_lambda"),
        ("p_improve", 1.5, "p_improve"),
        ("proposer", "magic", "proposer"),
        ("max_repairs", -1, "max_repairs"),
        ("race_sims", 0, "race_sims"),
        ("race_rank", 0, "race_rank"),
        ("surrogate_screen", 0, "surrogate_screen"),
    ],
)
def test_bad_values_name_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SearchConfig(**{field: value})


def test_llm_proposer_needs_an_llm() -> None:
    with pytest.raises(ConfigError, match="base URL"):
        SearchConfig(proposer="llm")


def test_yaml_round_trip(tmp_path) -> None:
    llm = LLMConfig(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        max_cost=2.0,
        prices={"m": ModelPrice(0.5, 3.0)},
    )
    config = SearchConfig(
        iterations=12,
        warmup=4,
        sims=3,
        proposer="llm",
        llm=llm,
        sim=SimConfig.with_population(
            "empowerment:2,stochastic:3", params=AgentParams(empowerment=EmpowermentModel(beta=0.1))
        ),
        executor=ExecutorConfig("serial"),
    )
    config.save(tmp_path / "c.yaml")
    assert SearchConfig.load(tmp_path / "c.yaml") == config
    assert "api_key" not in (tmp_path / "c.yaml").read_text().replace("api_key_env", "")


def test_yaml_errors_are_one_line(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("iterations: 5\nbogus: 1\n")
    with pytest.raises(ConfigError, match="bogus"):
        SearchConfig.load(path)
    path.write_text("iterations: [\n")
    with pytest.raises(ConfigError, match="cannot read"):
        SearchConfig.load(path)


def test_nested_errors_name_the_setting(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("sim:\n  params:\n    empowerment:\n      beta: high\n")
    with pytest.raises(
        ConfigError, match=r"c.yaml: sim.params.empowerment.beta: expected a number"
    ):
        SearchConfig.load(path)
    path.write_text("sim:\n  variant:\n    name: tiny\n")
    with pytest.raises(ConfigError, match="unknown variant 'tiny'"):
        SearchConfig.load(path)


def test_a_file_of_the_flat_format_is_read_into_the_tree(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "iterations: 4\nn_agents: 4\nn_steps: 8\nagent_type: stochastic\nvariant: 3-item\n"
        "prior_seed: 2\ntime_limit: 5.0\nllm: null\n"
    )
    config = SearchConfig.load(path)
    assert config.sim == SimConfig(
        n_agents=4,
        n_steps=8,
        agent_type="stochastic",
        params=AgentParams(empowerment=replace(named_model("previous"), prior=PriorChoice(seed=2))),
        variant=VariantSpec("3-item"),
    )
    assert config.sandbox.time_limit == 5.0


def test_resumed_run_may_extend_but_not_change_fitness_settings() -> None:
    config = SearchConfig(iterations=10, warmup=3, sims=5, sim=SimConfig(agent_type="stochastic"))
    longer = config.resumed_with({"iterations": 20, "sims": None, "warmup": 3})
    assert longer.iterations == 20 and longer.sims == 5
    with pytest.raises(ConfigError, match="sims=5"):
        config.resumed_with({"sims": 6})
    with pytest.raises(
        ConfigError, match=r"sim.params.empowerment.beta=4.0; .* cannot change it to 0.1"
    ):
        config.resumed_with({"sim": {"params": {"empowerment": {"beta": 0.1}}}})
    elsewhere = config.resumed_with({"executor": ExecutorConfig("serial")})
    assert elsewhere.executor.kind == "serial" and elsewhere.sim == config.sim


def given(**values: object) -> Options:
    """The search's LLM options, as the command line gives them."""
    return Options(values, frozenset(values), SEARCH_LLM_OPTIONS)


def test_llm_options_set_the_llm_section_and_its_proposer(tmp_path) -> None:
    options = given(base_url="http://x/v1", model="m", price_input=2.0, max_cost=1.0)
    config, resumed = resolve_config(tmp_path / "run", options, write=False)
    assert not resumed and config.proposer == "llm"
    assert config.llm == LLMConfig(
        "http://x/v1", "m", max_cost=1.0, prices={"m": ModelPrice(2.0, 0.0)}
    )
    offline, _ = resolve_config(tmp_path / "run", given(), write=False)
    assert offline.proposer == "offline" and offline.llm is None
    with pytest.raises(ConfigError, match="an LLM needs both --base-url and --model"):
        resolve_config(tmp_path / "run", given(model="m"), write=False)


def test_a_resumed_run_prices_its_own_model(tmp_path) -> None:
    llm = LLMConfig("http://x/v1", "m", prices={"m": ModelPrice(1.0, 4.0)})
    run = tmp_path / "run"
    run.mkdir()
    SearchConfig(proposer="llm", llm=llm).save(run / CONFIG_FILE)
    config, resumed = resolve_config(run, given(price_input=2.0), write=False)
    assert resumed and config.llm == replace(llm, prices={"m": ModelPrice(2.0, 4.0)})
    moved, _ = resolve_config(run, given(base_url="http://y/v1"), write=False)
    assert moved.llm == replace(llm, base_url="http://y/v1")
    offline = tmp_path / "offline"
    offline.mkdir()
    SearchConfig().save(offline / CONFIG_FILE)
    with pytest.raises(ConfigError, match="an LLM cannot join it"):
        resolve_config(offline, given(base_url="http://x/v1", model="m"), write=False)


def test_a_price_is_for_the_whole_model_name_dots_and_all(tmp_path) -> None:
    options = given(base_url="http://x/v1", model="gpt-4.1", price_output=8.0)
    config, _ = resolve_config(tmp_path / "run", options, write=False)
    assert config.llm is not None and config.llm.prices == {"gpt-4.1": ModelPrice(0.0, 8.0)}


def test_a_stored_run_begun_before_racing_and_the_surrogate_goes_on_without_them(
    tmp_path,
) -> None:
    path = tmp_path / "config.yaml"
    SearchConfig().save(path)
    fresh = SearchConfig.load(path)
    assert fresh.races and fresh.surrogate_screen == SearchConfig().surrogate_screen
    lines = path.read_text().splitlines()
    path.write_text(
        "\n".join(line for line in lines if not line.startswith(("racing", "surrogate")))
    )
    old = SearchConfig.load(path)
    assert old.racing is False and not old.races and old.surrogate_screen == 1
