"""Evaluating protocols from the command line, with a progress bar and optional logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpdisc.cli.output import progress_bar
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain
from tpdisc.executors.base import Executor
from tpdisc.sim.config import EvaluationConfig, SimConfig
from tpdisc.sim.evaluate import Evaluation
from tpdisc.sim.run import prepare_evaluation


def run_evaluations(
    config: EvaluationConfig, domain: Domain, pool: Executor, log_dir: Path | None = None
) -> list[Evaluation]:
    """The evaluation of ``config`` on ``domain`` with a progress bar, on ``pool``; each
    simulation's transmission log saved in ``log_dir`` as PROTOCOL[-ablated]-seedN.parquet,
    streamed there by the process that runs it (no log is held whole in memory)."""
    # Before the bar: a first run builds the empowerment prior here, with its own display.
    prepared = prepare_evaluation(config, domain)
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    suffix = " + ablation" if config.ablate else ""
    with progress_bar(prepared.n_simulations, "simulating") as advance:

        def tick(name: str, result: Any) -> None:
            advance(name + suffix)

        return prepared.run(pool, tick, log_dir=log_dir.absolute() if log_dir else None)


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
