"""The ``tpdisc`` command line."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tpdisc.agents.base import AgentParams
from tpdisc.agents.population import AGENT_TYPES, parse_population
from tpdisc.domain.data import default_graph
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import VARIANTS, Domain, VariantSpec, make_domain
from tpdisc.errors import ConfigError, TpdiscError
from tpdisc.protocols.baselines import STANDARD_BASELINES
from tpdisc.protocols.resolve import resolve_protocol, unique_names
from tpdisc.sandbox import DEFAULT_TIME_LIMIT, UNSAFE_FLAG, SandboxConfig, sandbox_untrusted
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate, evaluate_ablated
from tpdisc.sim.executors import EXECUTORS, Executor, make_executor

if TYPE_CHECKING:
    from tpdisc.agents.llm_config import LLMAgentConfig

app = typer.Typer(
    help="Discover transmission protocols for groups that innovate together "
    "(Collective Little Alchemy).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Report :class:`TpdiscError` as one line on stderr and exit 1, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TpdiscError as err:
            # Messages quote user input and code (``tpdisc[ray]``, ``x[0]``): not rich markup.
            err_console.print(
                f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True
            )
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


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
    float, typer.Option("--beta", min=1e-9, help="Softmax temperature of empowerment agents.")
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
ChoicesOpt = Annotated[
    str,
    typer.Option(
        "--empowerment-choices",
        help="Open modelling choices of empowerment agents, e.g. 'owned=zero,zscore=no' "
        "(zscore, received, owned, fallback; docs/empowerment.md). Default: the calibrated ones.",
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
        "ray: a Ray cluster, needs Ray: pip install 'tpdisc\\[ray]').",
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
        help="Ray cluster to join, e.g. 'auto' or 'ray://HOST:10001' (default: start a local "
        "Ray instance). Only with --executor ray.",
        show_default=False,
    ),
]
LLMBaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--llm-base-url",
        help="OpenAI-compatible endpoint of LLM agents (--agent-type llm, or llm in "
        "--population), e.g. http://localhost:8000/v1.",
        show_default=False,
    ),
]
LLMModelOpt = Annotated[
    str | None, typer.Option("--llm-model", help="Chat model of LLM agents.", show_default=False)
]
LLMKeyEnvOpt = Annotated[
    str,
    typer.Option(
        "--llm-api-key-env",
        help="Environment variable holding the LLM agents' API key; the key itself is never "
        "stored or logged.",
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
LLMPriceInOpt = Annotated[
    float | None,
    typer.Option(
        "--llm-price-input",
        min=0.0,
        help="Dollars per million prompt tokens of --llm-model (for the cost in the results).",
        show_default=False,
    ),
]
LLMPriceOutOpt = Annotated[
    float | None,
    typer.Option(
        "--llm-price-output",
        min=0.0,
        help="Dollars per million completion tokens of --llm-model.",
        show_default=False,
    ),
]


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
    from tpdisc.agents.llm_config import LLMAgentConfig
    from tpdisc.search.llm import LLMConfig, ModelPrice

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
) -> SimConfig:
    from tpdisc.agents.choices import EmpowermentChoices

    groups = parse_population(population) if population else ((agent_type, agents),)
    uses_llm = any(kind == "llm" for kind, _ in groups)
    params = AgentParams(
        p_social=p_social,
        beta=beta,
        prior=prior,
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


@contextmanager
def progress_bar(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """A rich progress bar; yields ``advance(label)``."""
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(description, total=total)

        def advance(label: str) -> None:
            progress.update(task, advance=1, description=label)

        yield advance


def results_table(evaluations: list[Evaluation], title: str) -> Table:
    table = Table(title=title)
    table.add_column("protocol")
    table.add_column("final coverage (mean ± sem)", justify="right")
    table.add_column("min–max", justify="right")
    for ev in sorted(evaluations, key=lambda e: -e.mean):
        table.add_row(
            ev.protocol, f"{ev.mean:.2f} ± {ev.sem:.2f}", f"{min(ev.final)}–{max(ev.final)}"
        )
    return table


def run_evaluations(
    protocol_texts: list[str],
    domain: Domain,
    config: SimConfig,
    seeds: list[int],
    *,
    ablate: bool,
    trusted: bool,
    executor: Executor,
    log_dir: Path | None = None,
    sandbox: SandboxConfig | None = None,
) -> list[Evaluation]:
    specs = sandbox_untrusted(
        [resolve_protocol(p, trusted=trusted) for p in protocol_texts],
        sandbox or SandboxConfig(),
    )
    names = unique_names(specs)
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    evaluations: list[Evaluation] = []
    with progress_bar(len(specs) * len(seeds), "simulating") as advance:
        for spec, name in zip(specs, names, strict=True):
            label = f"{name}{' + ablation' if ablate else ''}"

            def tick(result: object, label: str = label, name: str = name) -> None:
                if log_dir:
                    runs = result if isinstance(result, tuple) else (result,)
                    for run, suffix in zip(runs, ("", "-ablated"), strict=False):
                        path = log_dir / f"{name}{suffix}-seed{run.seed}.parquet"
                        run.log.to_parquet(path, domain.graph.names)
                advance(label)

            record = log_dir is not None
            if ablate:
                original, ablated = evaluate_ablated(
                    domain,
                    config,
                    spec,
                    seeds,
                    executor=executor,
                    on_result=tick,
                    record_log=record,
                )
                evaluations += [original, ablated]
            else:
                evaluations.append(
                    evaluate(
                        domain,
                        config,
                        spec,
                        seeds,
                        executor=executor,
                        on_result=tick,
                        record_log=record,
                    )
                )
            for ev in evaluations[-2 if ablate else -1 :]:
                ev.protocol = ev.protocol.replace(spec.name, name, 1)
    return evaluations


def llm_usage(evaluations: list[Evaluation]) -> list[str]:
    """One line per protocol with LLM agents: requests, cache hits, tokens, cost, fallbacks."""
    lines = []
    for ev in evaluations:
        s = ev.agent_stats
        if s.get("llm_choices"):
            lines.append(
                f"{ev.protocol}: LLM agents made {s['llm_requests']:.0f} requests "
                f"({s['llm_cache_hits']:.0f} answers from the cache), "
                f"{s['llm_prompt_tokens']:.0f} + {s['llm_completion_tokens']:.0f} tokens, "
                f"${s['llm_cost']:.4f}; {s['llm_reasks']:.0f} re-asks, "
                f"{s['llm_fallbacks']:.0f} fallbacks in {s['llm_choices']:.0f} choices"
            )
    return lines


def describe_run(
    config: SimConfig, domain: Domain, graph: RecipeGraph, seeds: list[int]
) -> dict[str, Any]:
    return {
        **config.to_dict(),
        "seeds": seeds,
        "recipes_sha256": graph.sha256,
        "reachable": len(domain.reachable),
        "coverage_counts_start_elements": True,
    }


def write_figures(evaluations: list[Evaluation], out: Path, title: str) -> list[Path]:
    from tpdisc.analysis.plots import coverage_figure, pairwise_figure
    from tpdisc.analysis.stats import pairwise

    ranked = sorted(evaluations, key=lambda e: -e.mean)
    comparison = pairwise([e.protocol for e in ranked], [e.final for e in ranked])
    paths = [coverage_figure(evaluations, out / "coverage.png", title)]
    if len(evaluations) > 1:
        paths.append(pairwise_figure(comparison, out / "pairwise.png"))
    (out / "pairwise.json").write_text(json.dumps(comparison.to_json(), indent=2))
    return paths


@app.command("evaluate")
@user_errors
def evaluate_cmd(
    protocols: Annotated[
        list[str] | None,
        typer.Argument(
            help="Baseline names or protocol .py files. Default: the five standard baselines "
            f"({', '.join(STANDARD_BASELINES)}).",
            show_default=False,
        ),
    ] = None,
    agents: AgentsOpt = 10,
    steps: StepsOpt = 150,
    sims: SimsOpt = 30,
    seed: SeedOpt = 0,
    agent_type: AgentTypeOpt = SimConfig.agent_type,
    population: PopulationOpt = None,
    beta: BetaOpt = 0.05,
    p_social: PSocialOpt = 0.5,
    prior: PriorOpt = "ngram",
    empowerment_choices: ChoicesOpt = "",
    llm_base_url: LLMBaseUrlOpt = None,
    llm_model: LLMModelOpt = None,
    llm_api_key_env: LLMKeyEnvOpt = "OPENAI_API_KEY",
    llm_concurrency: LLMConcurrencyOpt = 8,
    llm_temperature: LLMTemperatureOpt = None,
    llm_cache: LLMCacheOpt = None,
    llm_no_cache: LLMNoCacheOpt = False,
    llm_price_input: LLMPriceInOpt = None,
    llm_price_output: LLMPriceOutOpt = None,
    variant: VariantOpt = "full",
    max_depth: MaxDepthOpt = 3,
    dropout_seed: DropoutSeedOpt = 0,
    ablate: Annotated[
        bool,
        typer.Option(
            "--ablate",
            help="Also run each protocol's state-agnostic ablation: its schedule replayed "
            "with memories chosen at random.",
        ),
    ] = False,
    trusted: Annotated[
        bool,
        typer.Option(
            "--trusted",
            help="Run protocol files in this process instead of the sandbox. UNSAFE: only "
            "for code you wrote or have read.",
        ),
    ] = False,
    unsafe_no_sandbox: UnsafeOpt = False,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT,
    recipes: RecipesOpt = None,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", help="Write config and per-protocol results to this JSON file."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Save coverage.png (mean ± sem over steps) and pairwise.png (Welch tests) here.",
        ),
    ] = None,
    log_dir: Annotated[
        Path | None,
        typer.Option(
            "--log-dir",
            help="Write each simulation's transmission log (step, teacher, learner, memory, "
            "recipe, survived bottleneck) as PROTOCOL-seedN.parquet here.",
        ),
    ] = None,
    executor: ExecutorOpt = "processes",
    workers: WorkersOpt = None,
    address: AddressOpt = None,
) -> None:
    """Evaluate protocols: final coverage (mean ± sem) over seeded simulations."""
    spec = VariantSpec(variant, max_depth=max_depth, dropout_seed=dropout_seed)
    graph = default_graph(recipes)
    domain = make_domain(graph, spec)
    llm = make_llm_config(
        llm_base_url,
        llm_model,
        llm_api_key_env,
        llm_concurrency,
        llm_temperature,
        llm_cache,
        llm_no_cache,
        llm_price_input,
        llm_price_output,
    )
    config = make_config(
        agents, steps, agent_type, population, beta, p_social, spec, llm, prior, empowerment_choices
    )
    seeds = list(range(seed, seed + sims))
    with make_executor(executor, workers, address) as pool:
        evaluations = run_evaluations(
            list(protocols or STANDARD_BASELINES),
            domain,
            config,
            seeds,
            ablate=ablate,
            trusted=trusted,
            executor=pool,
            log_dir=log_dir,
            sandbox=SandboxConfig(time_limit=time_limit, allow_without_seccomp=unsafe_no_sandbox),
        )
    title = (
        f"{config.n_agents} agents ({', '.join(f'{k}×{n}' for k, n in config.agents)}), "
        f"{config.n_steps} steps, {sims} sims, variant {domain.name}"
    )
    console.print(results_table(evaluations, title))
    for line in llm_usage(evaluations):
        console.print(line, highlight=False)
    if json_out:
        payload = {
            "config": describe_run(config, domain, graph, seeds),
            "results": [ev.to_json() for ev in evaluations],
        }
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(payload, indent=2))
        console.print(f"results written to {json_out}")
    if plot:
        for path in write_figures(evaluations, plot, title):
            console.print(f"figure saved to {path}")


@app.command("compare")
@user_errors
def compare_cmd(
    protocols: Annotated[
        list[str] | None,
        typer.Argument(
            help="Baseline names or protocol .py files. Default: the five standard baselines.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for results.json and the figures.")
    ] = Path("results/compare"),
    agents: AgentsOpt = 10,
    steps: StepsOpt = 150,
    sims: SimsOpt = 30,
    seed: SeedOpt = 0,
    agent_type: AgentTypeOpt = SimConfig.agent_type,
    population: PopulationOpt = None,
    beta: BetaOpt = 0.05,
    p_social: PSocialOpt = 0.5,
    prior: PriorOpt = "ngram",
    empowerment_choices: ChoicesOpt = "",
    llm_base_url: LLMBaseUrlOpt = None,
    llm_model: LLMModelOpt = None,
    llm_api_key_env: LLMKeyEnvOpt = "OPENAI_API_KEY",
    llm_concurrency: LLMConcurrencyOpt = 8,
    llm_temperature: LLMTemperatureOpt = None,
    llm_cache: LLMCacheOpt = None,
    llm_no_cache: LLMNoCacheOpt = False,
    llm_price_input: LLMPriceInOpt = None,
    llm_price_output: LLMPriceOutOpt = None,
    variant: VariantOpt = "full",
    max_depth: MaxDepthOpt = 3,
    dropout_seed: DropoutSeedOpt = 0,
    trusted: Annotated[
        bool, typer.Option("--trusted", help="Run protocol files in-process (UNSAFE).")
    ] = False,
    unsafe_no_sandbox: UnsafeOpt = False,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT,
    recipes: RecipesOpt = None,
    executor: ExecutorOpt = "processes",
    workers: WorkersOpt = None,
    address: AddressOpt = None,
) -> None:
    """Evaluate protocols and save the comparison figures: coverage curves and the pairwise
    matrix with significance stars (the README's main job)."""
    evaluate_cmd(
        protocols,
        agents=agents,
        steps=steps,
        sims=sims,
        seed=seed,
        agent_type=agent_type,
        population=population,
        beta=beta,
        p_social=p_social,
        prior=prior,
        empowerment_choices=empowerment_choices,
        llm_base_url=llm_base_url,
        llm_model=llm_model,
        llm_api_key_env=llm_api_key_env,
        llm_concurrency=llm_concurrency,
        llm_temperature=llm_temperature,
        llm_cache=llm_cache,
        llm_no_cache=llm_no_cache,
        llm_price_input=llm_price_input,
        llm_price_output=llm_price_output,
        variant=variant,
        max_depth=max_depth,
        dropout_seed=dropout_seed,
        ablate=False,
        trusted=trusted,
        unsafe_no_sandbox=unsafe_no_sandbox,
        time_limit=time_limit,
        recipes=recipes,
        json_out=out / "results.json",
        plot=out,
        executor=executor,
        workers=workers,
        address=address,
    )


@app.command("variants")
@user_errors
def variants_cmd(
    recipes: RecipesOpt = None,
    max_depth: MaxDepthOpt = 3,
    dropout_seed: DropoutSeedOpt = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Reachable-element count of every domain variant."""
    graph = default_graph(recipes)
    rows: list[dict[str, Any]] = []
    for name in VARIANTS:
        domain = make_domain(
            graph, VariantSpec(name, max_depth=max_depth, dropout_seed=dropout_seed)
        )
        per_start = domain.reachable_per_start()
        rows.append(
            {
                "variant": name,
                "reachable": len(domain.reachable),
                "start_sets": [[graph.names[e] for e in s] for s in domain.start_sets],
                "reachable_per_start_set": per_start,
                "recipes": len(domain.graph.recipes),
            }
        )
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title=f"Domain variants ({graph.n_elements} elements in the file)")
    for col in ("variant", "reachable (all starts pooled)", "reachable per start set", "recipes"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for row in rows:
        per = row["reachable_per_start_set"]
        table.add_row(
            row["variant"],
            str(row["reachable"]),
            str(per[0]) if len(per) == 1 else f"{min(per)}–{max(per)} over {len(per)} sets",
            str(row["recipes"]),
        )
    console.print(table)


@app.command("evolve")
@user_errors
def evolve_cmd(
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir",
            help="Run directory (archive.sqlite, config.yaml, best_fitness.png). An existing "
            "one is resumed. Default: a new runs/evolve-DATE-TIME.",
            show_default=False,
        ),
    ] = None,
    iterations: Annotated[
        int | None,
        typer.Option(min=1, help="Iterations in total (default: 200); a resumed run may raise it."),
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(
            min=0, help="Warm-up iterations, shown the baselines (default: a quarter of all)."
        ),
    ] = None,
    sims: Annotated[
        int | None,
        typer.Option(min=1, help="Simulations per protocol, seeds 0..SIMS-1 (default: 30)."),
    ] = None,
    steps: Annotated[
        int | None, typer.Option("--steps", "-t", min=1, help="Steps per game (default: 150).")
    ] = None,
    agents: Annotated[
        int | None, typer.Option("--agents", "-n", min=1, help="Agents per game (default: 10).")
    ] = None,
    agent_type: Annotated[
        str | None,
        typer.Option(
            "--agent-type",
            help=f"Agent model: {', '.join(AGENT_TYPES)} (default: {SimConfig.agent_type}).",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(min=0, help="Seed of the search's own choices (default: 0).")
    ] = None,
    generation_only: Annotated[
        bool,
        typer.Option(
            "--generation-only",
            help="Every iteration in warm-up style: independent protocols, no evolution.",
        ),
    ] = False,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1. Without it (and "
            "--model) the offline proposer runs.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Chat model name.", show_default=False)] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Environment variable holding the API key (default: OPENAI_API_KEY); the "
            "key itself is never stored or logged.",
            show_default=False,
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            min=0.0, help="Stop when the run has spent this many US dollars.", show_default=False
        ),
    ] = None,
    price_input: Annotated[
        float | None,
        typer.Option(
            min=0.0, help="Price of --model: dollars per million prompt tokens.", show_default=False
        ),
    ] = None,
    price_output: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            help="Price of --model: dollars per million completion tokens.",
            show_default=False,
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config", help="Search settings as YAML (a new run only).", show_default=False
        ),
    ] = None,
    executor: ExecutorOpt = "processes",
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    recipes: RecipesOpt = None,
) -> None:
    """Search for protocols: LLM-guided evolution, or the offline proposer without an LLM."""
    from tpdisc.search.archive import Archive
    from tpdisc.search.progress import SearchProgress
    from tpdisc.search.report import table
    from tpdisc.search.run import FIGURE_NAME, LLMOptions, default_run_dir, evolve, resolve_config

    run_dir = run_dir or default_run_dir()
    options = {
        "iterations": iterations,
        "warmup": warmup,
        "sims": sims,
        "n_steps": steps,
        "n_agents": agents,
        "agent_type": agent_type,
        "seed": seed,
        "generation_only": generation_only or None,
    }
    llm = LLMOptions(base_url, model, api_key_env, max_cost, price_input, price_output)
    config, resumed = resolve_config(run_dir, options, llm, config_file)
    with Archive(run_dir / Archive.FILE_NAME) as archive:
        done = archive.last_iteration()
    err_console.print(
        f"{'resuming' if resumed else 'starting'} {run_dir}: {config.proposer} proposer, "
        f"{config.n_agents} {config.agent_type} agents × {config.n_steps} steps × "
        f"{config.sims} sims, iteration {done + 1} of {config.iterations}"
    )
    with (
        make_executor(executor, workers, address) as pool,
        SearchProgress(err_console, config.iterations, done, config.sims) as progress,
    ):
        summary = evolve(
            run_dir,
            config,
            pool,
            recipes=recipes,
            on_event=progress.event,
            on_simulation=progress.simulation,
        )
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        console.print(table(archive, limit=10))
    console.print(f"figure saved to {run_dir / FIGURE_NAME}")
    if summary.stopped:
        err_console.print(f"[bold yellow]stopped:[/] {summary.stopped}", highlight=False)
        raise typer.Exit(1 if "endpoint" in summary.stopped else 0)


@app.command("archive")
@user_errors
def archive_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of tpdisc evolve.")],
    show: Annotated[
        int | None,
        typer.Option(
            "--show",
            help="Print this protocol's code, description and history.",
            show_default=False,
        ),
    ] = None,
    export: Annotated[
        tuple[int, Path] | None,
        typer.Option(
            "--export",
            help="Write protocol ID's code to FILE, a runnable .py.",
            metavar="ID FILE",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (with --show: that protocol in full).")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Save the best-fitness-over-iterations figure here (PNG).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List a search's protocols by fitness; show, export or plot them."""
    from tpdisc.search import report
    from tpdisc.search.plots import best_fitness_figure

    with report.open_archive(run_dir) as archive:
        if export is not None:
            path = report.export(archive, export[0], export[1])
            console.print(f"protocol {export[0]} written to {path}")
        if plot is not None:
            console.print(f"figure saved to {best_fitness_figure(archive, plot)}")
        if as_json:
            sys.stdout.write(json.dumps(report.as_json(archive, show), indent=2) + "\n")
        elif show is not None:
            console.print(report.show(archive, show))
        elif export is None and plot is None:
            console.print(report.table(archive))


prior_app = typer.Typer(
    help="The empowerment agents' prior: cross-validated P(success) and P(result) per pair.",
    no_args_is_help=True,
)
app.add_typer(prior_app, name="prior")


@prior_app.command("build")
@user_errors
def prior_build_cmd(
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Element vectors: 'ngram' (character n-grams, no download), "
            "'fasttext:PATH' (.vec or .bin), 'minilm' (needs the extra tpdisc[sentence]).",
        ),
    ] = "ngram",
    recipes: RecipesOpt = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Build again even if a sound cached prior exists.")
    ] = False,
) -> None:
    """Build the prior of the recipe graph (or find it in the cache) and show its quality."""
    from tpdisc.agents.prior.report import quality_table
    from tpdisc.agents.prior.store import ensure_prior

    prior, path = ensure_prior(default_graph(recipes), backend, rebuild=rebuild)
    console.print(quality_table([{**prior.meta, "path": str(path)}], "Prior (held-out quality)"))


@prior_app.command("show")
@user_errors
def prior_show_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the priors in the cache with their held-out quality and build time."""
    from tpdisc.agents.prior.report import quality_table
    from tpdisc.agents.prior.store import cached_priors, prior_dir

    rows = cached_priors()
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif rows:
        console.print(quality_table(rows))
    else:
        console.print(f"no prior in {prior_dir()}; build one with: tpdisc prior build")


if __name__ == "__main__":
    app()
