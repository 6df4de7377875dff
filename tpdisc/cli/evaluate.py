"""The ``evaluate``, ``compare`` and ``variants`` commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tpdisc.agents.base import AgentParams
from tpdisc.cli.config import make_config, make_llm_config
from tpdisc.cli.options import (
    AddressOpt,
    AgentsOpt,
    AgentTypeOpt,
    BetaOpt,
    ChoicesOpt,
    DropoutSeedOpt,
    ExecutorOpt,
    LLMBaseUrlOpt,
    LLMCacheOpt,
    LLMConcurrencyOpt,
    LLMKeyEnvOpt,
    LLMModelOpt,
    LLMNoCacheOpt,
    LLMPriceInOpt,
    LLMPriceOutOpt,
    LLMTemperatureOpt,
    MaxDepthOpt,
    PopulationOpt,
    PriorOpt,
    PriorSeedOpt,
    PSocialOpt,
    RecipesOpt,
    SeedOpt,
    SimsOpt,
    StepsOpt,
    TimeLimitOpt,
    UnsafeOpt,
    VariantOpt,
    WorkersOpt,
)
from tpdisc.cli.output import console, user_errors
from tpdisc.cli.report import llm_usage, mechanism_table, results_table, write_figures
from tpdisc.cli.runs import describe_run, run_evaluations
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import VARIANTS, VariantSpec, make_domain
from tpdisc.protocols.baselines import STANDARD_BASELINES
from tpdisc.sandbox import DEFAULT_TIME_LIMIT, SandboxConfig
from tpdisc.sim.config import SimConfig
from tpdisc.sim.executors import make_executor

# Here rather than in cli/options.py: only these two commands take it.
DetailsOpt = Annotated[
    bool,
    typer.Option(
        "--details",
        help="Also print a table, per protocol and agent type, of the mechanism numbers "
        "(means over sims): inventory size and gain, success rate, fractions of attempts "
        "re-making a received recipe or result, Jaccard distance between inventories, size "
        "of their union. The --json results always hold them, under 'mechanism'.",
    ),
]


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
    beta: BetaOpt = AgentParams.beta,
    p_social: PSocialOpt = 0.5,
    prior: PriorOpt = "ngram",
    prior_seed: PriorSeedOpt = 0,
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
    details: DetailsOpt = False,
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
        agents,
        steps,
        agent_type,
        population,
        beta,
        p_social,
        spec,
        llm,
        prior,
        empowerment_choices,
        prior_seed,
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
    if details:
        console.print(mechanism_table(evaluations, "Mechanism per agent type (means over sims)"))
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
    beta: BetaOpt = AgentParams.beta,
    p_social: PSocialOpt = 0.5,
    prior: PriorOpt = "ngram",
    prior_seed: PriorSeedOpt = 0,
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
    details: DetailsOpt = False,
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
        prior_seed=prior_seed,
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
        details=details,
    )


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
