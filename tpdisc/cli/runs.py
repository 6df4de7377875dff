"""Evaluating protocols from the command line, with a progress bar and optional logs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tpdisc.cli.output import err_console, progress_bar
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain
from tpdisc.executors.base import Executor
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.sim.config import EvaluationConfig, SimConfig
from tpdisc.sim.evaluate import Evaluation
from tpdisc.sim.run import prepare_evaluation


def run_references(
    protocols: tuple[str, ...], trusted: bool, *, say: bool = True
) -> dict[str, ProtocolSpec]:
    """The protocols named by run, ``RUN_DIR:NAME`` or ``RUN_DIR`` (its pick), by their
    text; for a run directory alone, a line on stderr says which protocol it stands for
    (unless not ``say``)."""
    if not any(map(_may_name_run, protocols)):
        return {}
    from tpdisc.search.listing import open_archive
    from tpdisc.search.pick import run_pick, run_references, split_reference

    found = run_references(protocols, trusted=trusted)
    for text in found if say else ():
        reference = split_reference(text)
        if reference is not None and reference[1] is None:
            with open_archive(reference[0]) as archive:
                pick = run_pick(archive)
            err_console.print(
                f"{text}: its pick, {pick.name} ({pick.why()})", highlight=False, soft_wrap=True
            )
    return found


def _may_name_run(text: str) -> bool:
    """Whether ``text`` may name a run as :func:`tpdisc.search.pick.split_reference` reads
    it (a folder, or ``FOLDER:NAME`` with a folder before the colon): when no protocol
    does, a command does not load the search's modules (SQLite, the archive)."""
    folder, colon, _ = text.rpartition(":")
    return Path(text).is_dir() or bool(colon and folder and Path(folder).is_dir())


def run_evaluations(
    config: EvaluationConfig,
    domain: Domain,
    pool: Executor,
    log_dir: Path | None = None,
    resolved: Mapping[str, ProtocolSpec] | None = None,
) -> list[Evaluation]:
    """The evaluation of ``config`` on ``domain`` with a progress bar, on ``pool``; each
    simulation's transmission log saved in ``log_dir`` as PROTOCOL[-ablated]-seedN.parquet,
    streamed there by the process that runs it (no log is held whole in memory).
    ``resolved``: the protocols named by run (:func:`run_references`)."""
    # Before the bar: a first run builds the empowerment prior here, with its own display.
    prepared = prepare_evaluation(config, domain, resolved)
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
