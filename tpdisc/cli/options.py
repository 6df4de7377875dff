"""The command-line options, each declared once: its help, and where it sets the config.

Commands take groups of them (:func:`tpdisc.cli.settings.with_options`); a value given on the
command line overrides the ``--config`` file, which overrides the defaults of the config
classes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from tpdisc.agents.empowerment.model import model_names
from tpdisc.agents.population import AGENT_TYPES
from tpdisc.domain.variants import VARIANTS
from tpdisc.executors.make import EXECUTORS
from tpdisc.sandbox import UNSAFE_FLAG

RecipesOpt = Annotated[
    Path | None,
    typer.Option(
        "--recipes",
        help="Little Alchemy 2 recipe file (wordcraft JSON). Default: $TPDISC_RECIPES, then "
        "the user cache, then a checked download of the public copy.",
        show_default=False,
    ),
]
AgentsOpt = Annotated[int, typer.Option("--agents", "-n", min=1, help="Number of agents.")]
StepsOpt = Annotated[int, typer.Option("--steps", "-t", min=1, help="Steps per simulation.")]
SimsOpt = Annotated[
    int, typer.Option("--sims", min=1, help="Simulations per protocol (seeds SEED..SEED+SIMS-1).")
]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="First seed.")]
AgentTypeOpt = Annotated[
    str, typer.Option("--agent-type", help=f"Agent model: {', '.join(AGENT_TYPES)}.")
]
PopulationOpt = Annotated[
    str | None,
    typer.Option(
        "--population",
        help="Mixed population, e.g. 'empowerment:4,stochastic:3,llm:3' "
        "(overrides --agents and --agent-type).",
        show_default=False,
    ),
]
BetaOpt = Annotated[
    float,
    typer.Option(
        "--beta",
        min=1e-9,
        help="Softmax temperature of empowerment agents (on z-scored values unless the "
        "model says zscore=no). Default: the --empowerment-model's (docs/fidelity.md).",
    ),
]
PSocialOpt = Annotated[
    float,
    typer.Option(
        "--p-social",
        min=0.0,
        max=1.0,
        help="Probability that an agent with social items restricts itself to pairs using one.",
    ),
]
PriorOpt = Annotated[
    str,
    typer.Option(
        "--prior",
        help="Element vectors of the empowerment agents' prior: ngram, fasttext:PATH or minilm "
        "(built and cached on first use; see 'tpdisc prior build').",
    ),
]
PriorSeedOpt = Annotated[
    int,
    typer.Option(
        "--prior-seed",
        min=0,
        help="Seed of the empowerment agents' prior (its cross-validation folds and model "
        "initialisation): each seed is a different, equally good prior, built once and cached.",
    ),
]
ChoicesOpt = Annotated[
    str,
    typer.Option(
        "--empowerment-choices",
        help="Open modelling choices of empowerment agents over the --empowerment-model's, "
        "e.g. 'owned=zero,zscore=no' (zscore, received, received_worth, remember, failures, "
        "owns, owned, bias, noise, noise_sd, success, fallback; docs/empowerment.md).",
    ),
]
StochasticReceivedOpt = Annotated[
    str,
    typer.Option(
        "--stochastic-received",
        help="How long a memory a stochastic agent receives counts its pair as tried: always, "
        "step (for its next choice only) or never (untried = not tried by the agent itself); "
        "docs/empowerment.md.",
    ),
]
ModelOpt = Annotated[
    str,
    typer.Option(
        "--empowerment-model",
        help="Named set of the empowerment agents' modelling choices: "
        f"{', '.join(model_names())} ('calibrated-text': the default: the reference's text "
        "on received memories (a received success a certain one, worth its result; the "
        "social bias on received elements the agent lacks) on the scale identified from "
        "its published protocols, a received failure known for one choice; "
        "'calibrated-step': a received success's pair marked as tried instead, the bias on "
        "any received element, the default before; "
        "'calibrated': received failures also known for good; "
        "'paper-literal': the reference's text read literally, beta 0.05; "
        "'previous': tpdisc's default before 'calibrated'; "
        "docs/fidelity.md). --beta and --empowerment-choices change it further.",
    ),
]
VariantOpt = Annotated[str, typer.Option("--variant", help=f"Domain: {', '.join(VARIANTS)}.")]
MaxDepthOpt = Annotated[
    int, typer.Option("--max-depth", min=1, help="Depth limit of the depth-limited variant.")
]
DropoutSeedOpt = Annotated[
    int, typer.Option("--dropout-seed", min=0, help="Seed of the item-dropout variant.")
]
ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help=f"Where simulations run: {', '.join(EXECUTORS)} (processes: all cores here; "
        "ray: a Ray cluster, needs Ray: pip install 'tpdisc[ray]').",
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        help="Worker processes (default: all cores); with Ray, tasks in flight at once.",
        show_default=False,
    ),
]
UnsafeOpt = Annotated[
    bool,
    typer.Option(
        UNSAFE_FLAG,
        help="Where this kernel or platform lacks seccomp, run untrusted protocol files with "
        "the remaining sandbox layers (own process, limits, no secrets) instead of refusing "
        "them. UNSAFE: they can then read and write files and use the network. Changes "
        "nothing where seccomp works.",
    ),
]
TimeLimitOpt = Annotated[
    float,
    typer.Option(
        "--time-limit",
        min=0.001,
        help="CPU seconds a sandboxed protocol may use per simulation (loading, __init__ and "
        "every call; whole seconds, rounded up); the wall-clock limit is 3 times that.",
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address",
        help="Ray cluster to join: HOST:PORT of its head node, 'ray://HOST:10001' or 'auto' "
        "(default: start a local Ray instance). Only with --executor ray.",
        show_default=False,
    ),
]
ConnectTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--connect-timeout",
        min=0.1,
        help="Seconds to wait for the Ray cluster at --address to answer before giving up.",
    ),
]
LLMConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--llm-concurrency",
        min=1,
        help="Most requests in flight at once per simulation (the LLM agents of a step ask "
        "together); each worker process runs its own simulation.",
    ),
]
LLMTemperatureOpt = Annotated[
    float | None,
    typer.Option(
        "--llm-temperature",
        min=0.0,
        help="Sampling temperature of LLM agents (default: the endpoint's).",
        show_default=False,
    ),
]
LLMCacheOpt = Annotated[
    Path | None,
    typer.Option(
        "--llm-cache",
        help="SQLite file of cached LLM answers, so that a rerun of the same seeded "
        "experiment asks nothing (default: llm-agent-responses.sqlite in the user cache).",
        show_default=False,
    ),
]
LLMNoCacheOpt = Annotated[
    bool, typer.Option("--llm-no-cache", help="Ask the endpoint every time; cache nothing.")
]
MaxCostOpt = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0.0,
        help="Stop when the run has spent this many US dollars.",
        show_default=False,
    ),
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        help="Longest answer the model may write, in tokens (default: the endpoint's own "
        "limit). Raise it when answers are cut off: a reasoning model spends tokens on its "
        "reasoning before it writes the code.",
        show_default=False,
    ),
]
ConfigFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Read the settings from this YAML file (see --print-config and examples/); "
        "options given on the command line override it.",
        show_default=False,
    ),
]
PrintConfigOpt = Annotated[
    bool,
    typer.Option(
        "--print-config",
        help="Print the effective settings (defaults, --config file and options merged) as "
        "YAML that --config reads back, and stop.",
    ),
]


TrustedOpt = Annotated[
    bool,
    typer.Option(
        "--trusted",
        help="Run protocol files in this process instead of the sandbox. UNSAFE: only "
        "for code you wrote or have read.",
    ),
]


@dataclass(frozen=True)
class Opt:
    """One command-line option, declared once: its typer declaration, and the place in the
    config tree (a dotted path, as in the YAML file) that its value sets when given.

    A part of the path in braces is the value of the setting it names (prices are per
    model: ``llm.prices.{llm.model}.input``); ``setting`` makes the value set from the
    option's (a flag that turns a setting off)."""

    name: str
    annotation: Any
    path: str | None = None
    default: Any = None  # shown in --help when the path has no value in the default tree
    setting: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Needs:
    """Settings that any option of ``options`` cannot do without: when one is given, the
    settings (the file's and the options') must hold every path of ``paths``."""

    options: tuple[str, ...]
    paths: tuple[str, ...]
    message: str


def _sim(name: str, annotation: Any, path: str, default: Any = None) -> Opt:
    return Opt(name, annotation, f"sim.{path}", default)


SIM_OPTIONS: tuple[Opt, ...] = (
    _sim("agents", AgentsOpt, "n_agents"),
    _sim("steps", StepsOpt, "n_steps"),
    _sim("agent_type", AgentTypeOpt, "agent_type"),
    _sim("population", PopulationOpt, "population"),
    _sim("empowerment_model", ModelOpt, "params.empowerment.name"),
    _sim("beta", BetaOpt, "params.empowerment.beta"),
    _sim("p_social", PSocialOpt, "params.p_social"),
    _sim("prior", PriorOpt, "params.empowerment.prior.backend"),
    _sim("prior_seed", PriorSeedOpt, "params.empowerment.prior.seed"),
    _sim("empowerment_choices", ChoicesOpt, "params.empowerment.choices", ""),
    _sim("stochastic_received", StochasticReceivedOpt, "params.stochastic.received"),
    _sim("variant", VariantOpt, "variant.name"),
    _sim("max_depth", MaxDepthOpt, "variant.max_depth"),
    _sim("dropout_seed", DropoutSeedOpt, "variant.dropout_seed"),
)
LLM_AGENT = "sim.params.llm"
LLM_MODEL = f"{LLM_AGENT}.client.model"


def endpoint_options(
    prefix: str, path: str, user: str, key_default: str | None, base_url_note: str
) -> tuple[tuple[Opt, ...], tuple[Opt, ...]]:
    """The options that point one user of a chat model at its endpoint, declared once for
    both users (the LLM agents, ``--llm-…``, and the search's author, no prefix): the
    endpoint, model and key variable, then the model's prices. ``path`` is the user's
    client section in the config tree."""
    name = prefix.replace("-", "_")
    model_path = f"{path}.model"
    model_flag = f"--{prefix}model"

    def option(kind: Any, flag: str, help: str, **extra: Any) -> Any:
        return Annotated[kind, typer.Option(f"--{prefix}{flag}", help=help, **extra)]

    unshown = {"show_default": False}
    connection = (
        Opt(
            f"{name}base_url",
            option(
                str | None,
                "base-url",
                f"OpenAI-compatible endpoint of {user}, e.g. http://localhost:8000/v1."
                f"{base_url_note}",
                **unshown,
            ),
            f"{path}.base_url",
        ),
        Opt(
            f"{name}model",
            option(str | None, "model", f"Chat model of {user}.", **unshown),
            model_path,
        ),
        Opt(
            f"{name}api_key_env",
            option(
                str | None,
                "api-key-env",
                f"Environment variable holding the API key of {user}; the key itself is "
                "never stored or logged.",
            ),
            f"{path}.api_key_env",
            key_default,
        ),
    )
    prices = tuple(
        Opt(
            f"{name}price_{side}",
            option(
                float | None,
                f"price-{side}",
                f"Price of {model_flag}: dollars per million {tokens} tokens (for the cost "
                "in the results).",
                min=0.0,
                **unshown,
            ),
            f"{path}.prices.{{{model_path}}}.{side}",
        )
        for side, tokens in (("input", "prompt"), ("output", "completion"))
    )
    return connection, prices


_AGENT_CONNECTION, _AGENT_PRICES = endpoint_options(
    "llm-",
    f"{LLM_AGENT}.client",
    "LLM agents",
    "OPENAI_API_KEY",
    " Used with --agent-type llm, or llm in --population.",
)
LLM_AGENT_OPTIONS: tuple[Opt, ...] = (
    *_AGENT_CONNECTION,
    Opt("llm_concurrency", LLMConcurrencyOpt, f"{LLM_AGENT}.concurrency", 8),
    Opt("llm_temperature", LLMTemperatureOpt, f"{LLM_AGENT}.client.temperature"),
    Opt("llm_cache", LLMCacheOpt, f"{LLM_AGENT}.cache_path"),
    Opt("llm_no_cache", LLMNoCacheOpt, f"{LLM_AGENT}.cache", False, operator.not_),
    *_AGENT_PRICES,
)
# The search's own model, which writes protocols (``tpdisc evolve``).
_SEARCH_CONNECTION, _SEARCH_PRICES = endpoint_options(
    "",
    "llm",
    "the protocol author (the search's LLM)",
    "OPENAI_API_KEY",
    " Without it (and --model) the offline proposer runs.",
)
SEARCH_LLM_OPTIONS: tuple[Opt, ...] = (
    *_SEARCH_CONNECTION,
    Opt("max_cost", MaxCostOpt, "llm.max_cost"),
    Opt("max_tokens", MaxTokensOpt, "llm.max_tokens"),
    *_SEARCH_PRICES,
)
NEEDS: tuple[Needs, ...] = (
    Needs(
        tuple(spec.name for spec in LLM_AGENT_OPTIONS),
        (f"{LLM_AGENT}.client.base_url", LLM_MODEL),
        "LLM agents need both --llm-base-url and --llm-model",
    ),
    Needs(
        tuple(spec.name for spec in SEARCH_LLM_OPTIONS),
        ("llm.base_url", "llm.model"),
        "an LLM needs both --base-url and --model",
    ),
)
EXECUTOR_OPTIONS: tuple[Opt, ...] = (
    Opt("executor", ExecutorOpt, "executor.kind"),
    Opt("workers", WorkersOpt, "executor.workers"),
    Opt("address", AddressOpt, "executor.address"),
    Opt("connect_timeout", ConnectTimeoutOpt, "executor.connect_timeout"),
)
SANDBOX_OPTIONS: tuple[Opt, ...] = (
    Opt("time_limit", TimeLimitOpt, "sandbox.time_limit"),
    Opt("unsafe_no_sandbox", UnsafeOpt, "sandbox.allow_without_seccomp"),
)
CONFIG_OPTIONS: tuple[Opt, ...] = (
    Opt("config_file", ConfigFileOpt),
    Opt("print_config", PrintConfigOpt, None, False),
)
# Every option of a simulation: what the commands that simulate take (evaluate, compare,
# inspect, evolve and the analyses).
SIMULATION_GROUPS: tuple[tuple[Opt, ...], ...] = (
    SIM_OPTIONS,
    LLM_AGENT_OPTIONS,
    SANDBOX_OPTIONS,
    EXECUTOR_OPTIONS,
)
# What the commands that simulate given protocols (evaluate, compare, inspect, and the
# analyses features, volume and generalize) take besides their own options.
PROTOCOL_OPTIONS: tuple[Opt, ...] = (
    Opt("seed", SeedOpt, "seed"),
    Opt("trusted", TrustedOpt, "trusted"),
)
PROTOCOL_GROUPS: tuple[tuple[Opt, ...], ...] = (PROTOCOL_OPTIONS, *SIMULATION_GROUPS)
