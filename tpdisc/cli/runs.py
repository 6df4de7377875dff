"""Evaluating protocols from the command line, with a progress bar and optional logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpdisc.agents.population import prepare_agents
from tpdisc.cli.output import progress_bar
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain
from tpdisc.protocols.resolve import resolve_protocol, unique_names
from tpdisc.sandbox import SandboxConfig, sandbox_untrusted
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate, evaluate_ablated
from tpdisc.sim.executor_base import Executor


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
    # Before the bar: a first run builds the empowerment prior here, with its own display.
    prepare_agents(domain.graph, domain.source, (k for k, _ in config.agents), config.params)
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

            evaluate_spec = evaluate_ablated if ablate else evaluate
            done = evaluate_spec(
                domain,
                config,
                spec,
                seeds,
                executor=executor,
                on_result=tick,
                record_log=log_dir is not None,
            )
            evaluations += done if isinstance(done, tuple) else [done]
            for ev in evaluations[-2 if ablate else -1 :]:
                ev.protocol = ev.protocol.replace(spec.name, name, 1)
    return evaluations


def describe_run(
    config: SimConfig, domain: Domain, graph: RecipeGraph, seeds: list[int]
) -> dict[str, Any]:
    from tpdisc.agents.population import describe_agents

    kinds = (kind for kind, _ in config.agents)
    return {
        **config.to_dict(),
        "population": [list(group) for group in config.agents],
        "seeds": seeds,
        "recipes_sha256": graph.sha256,
        "reachable": len(domain.reachable),
        "coverage_counts_start_elements": True,
        "agent_models": describe_agents(domain.graph, domain.source, kinds, config.params),
    }
