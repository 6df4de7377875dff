"""The simulation config (and the LLM agents' settings) from command-line options."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tpdisc.agents.base import AgentParams
from tpdisc.agents.population import parse_population
from tpdisc.domain.variants import VariantSpec
from tpdisc.errors import ConfigError
from tpdisc.sim.config import SimConfig

if TYPE_CHECKING:
    from tpdisc.agents.llm.config import LLMAgentConfig


def make_llm_config(
    base_url: str | None,
    model: str | None,
    api_key_env: str = "OPENAI_API_KEY",
    concurrency: int = 8,
    temperature: float | None = None,
    cache: Path | None = None,
    no_cache: bool = False,
    price_input: float | None = None,
    price_output: float | None = None,
) -> LLMAgentConfig | None:
    """LLM agents' settings from the options; None when no endpoint is given."""
    if base_url is None and model is None:
        return None
    if base_url is None or model is None:
        raise ConfigError("LLM agents need both --llm-base-url and --llm-model")
    # Imported here: it loads the openai client, which only LLM runs need.
    from tpdisc.agents.llm.config import LLMAgentConfig
    from tpdisc.llm.client import LLMConfig, ModelPrice

    prices = {}
    if price_input is not None or price_output is not None:
        prices[model] = ModelPrice(price_input or 0.0, price_output or 0.0)
    client = LLMConfig(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        temperature=temperature,
        prices=prices,
    )
    return LLMAgentConfig(
        client,
        concurrency=concurrency,
        cache=not no_cache,
        cache_path=str(cache) if cache is not None else None,
    )


def make_config(
    agents: int,
    steps: int,
    agent_type: str,
    population: str | None,
    beta: float,
    p_social: float,
    variant: VariantSpec,
    llm: LLMAgentConfig | None = None,
    prior: str = "ngram",
    choices: str = "",
    prior_seed: int = 0,
) -> SimConfig:
    from tpdisc.agents.choices import EmpowermentChoices

    groups = parse_population(population) if population else ((agent_type, agents),)
    uses_llm = any(kind == "llm" for kind, _ in groups)
    params = AgentParams(
        p_social=p_social,
        beta=beta,
        prior=prior,
        prior_seed=prior_seed,
        empowerment=EmpowermentChoices.parse(choices),
        llm=llm if uses_llm else None,
    )
    return SimConfig(
        n_agents=agents,
        n_steps=steps,
        agent_type=agent_type,
        population=groups if population else None,
        params=params,
        variant=variant,
    )
