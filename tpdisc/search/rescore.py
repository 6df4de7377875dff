"""Re-scoring a search's best protocols on fresh seeds: the check on the winner's curse.

The search keeps the protocol that scored best on its own seeds, so that score is biased
upwards: among many protocols, the best on seeds 0..29 is partly the luckiest there.
Simulating the top protocols again on seeds the search never used gives scores free of
that selection, stored in the archive (table ``rescores``) beside the search's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError, ProtocolError
from tpdisc.executors.base import Executor
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.search.archive import Archive, Candidate, Rescore
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import CONFIG_FILE
from tpdisc.search.pick import found
from tpdisc.search.validation import CandidateEvaluator
from tpdisc.sim.evaluate import evaluate


def fresh_seeds(config: SearchConfig, first: int | None = None) -> list[int]:
    """As many seeds as the search used, from ``first`` (default: the block right after
    the search's); refused if any of them is one the search scored protocols on."""
    start = len(config.seeds) if first is None else first
    seeds = list(range(start, start + config.sims))
    used = set(config.seeds) & set(seeds)
    if used:
        raise ConfigError(
            f"seeds {seeds[0]}..{seeds[-1]} are not fresh: the search scored its protocols on "
            f"seeds {config.seeds[0]}..{config.seeds[-1]}; start at {config.seeds[-1] + 1} "
            "or later"
        )
    return seeds


@dataclass
class RescoreResult:
    """What a re-scoring did: the top protocols (best on the search's seeds first), their
    re-evaluations, and the protocols that failed on the fresh seeds."""

    seeds: list[int]
    top: list[Candidate]
    rescored: dict[int, Rescore] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)

    def best_fresh(self) -> Candidate | None:
        """The top protocol that scored best on the fresh seeds."""
        scored = [c for c in self.top if c.id in self.rescored]
        return max(scored, key=lambda c: self.rescored[c.id or 0].mean, default=None)

    def verdict(self) -> str | None:
        """One sentence: whether the search's best stays best on the fresh seeds."""
        best_fresh = self.best_fresh()
        if best_fresh is None or not self.top:
            return None
        best = self.top[0]
        first, last = self.seeds[0], self.seeds[-1]
        fresh = self.rescored[best_fresh.id or 0]
        if best_fresh.id == best.id:
            return (
                f"{best.name} stays the best of these {len(self.rescored)} on fresh seeds "
                f"{first}..{last}: {fresh.mean:.2f} ± {fresh.sem:.2f} "
                f"(fitness {best.fitness:.2f} on the search's seeds)"
            )
        own = self.rescored.get(best.id or 0)
        own_text = f"{own.mean:.2f} there" if own is not None else "it failed there"
        return (
            f"on fresh seeds {first}..{last} the best of these {len(self.rescored)} is "
            f"{best_fresh.name} ({fresh.mean:.2f} ± {fresh.sem:.2f}), not {best.name}, the "
            f"best on the search's seeds ({best.fitness:.2f}; {own_text})"
        )


def protocol_spec(config: SearchConfig, candidate: Candidate) -> ProtocolSpec:
    """The protocol as the search ran it: its code sandboxed (unless the run was made with
    ``sandboxed: false``)."""
    if candidate.code is None:
        raise ConfigError(f"protocol {candidate.name} has no code")
    return CandidateEvaluator.source_spec(config, candidate.name, candidate.code)


def rescore(
    run_dir: Path,
    top: int,
    executor: Executor,
    *,
    first_seed: int | None = None,
    recipes: str | Path | None = None,
    on_start: Callable[[int], None] | None = None,
    on_simulation: Callable[[str], None] | None = None,
) -> RescoreResult:
    """Re-evaluate the ``top`` protocols the run in ``run_dir`` found (by the search's
    fitness; its seeded baselines are not selected, so not re-scored) on fresh seeds, under
    the run's own simulation, and store the results.

    Protocols stored already on the same seeds are not simulated again. ``on_start`` gets
    the number of simulations to run, ``on_simulation`` a protocol name after each.
    """
    config = SearchConfig.load(Path(run_dir) / CONFIG_FILE)
    seeds = fresh_seeds(config, first_seed)
    with Archive(Path(run_dir) / Archive.FILE_NAME) as archive:
        ids = [c.id for c in found(archive)[:top]]
        result = RescoreResult(seeds, archive.get_many(ids))
        stored = archive.rescores()
        todo = []
        for c in result.top:
            done = stored.get(c.id or 0)
            if done is not None and done.seeds == seeds:
                result.rescored[c.id or 0] = done
            else:
                todo.append(c)
        if on_start is not None:
            on_start(len(todo) * len(seeds))
        if not todo:
            return result
        graph = default_graph(recipes)
        recorded = archive.meta("recipes")
        if recorded is not None and graph.sha256 and recorded != graph.sha256:
            raise ConfigError(
                f"{run_dir}: this run used recipes {recorded}, not the data given now "
                f"({graph.sha256}); pass the same --recipes file"
            )
        domain = make_domain(graph, config.sim.variant)
        for c in todo:

            def tick(_: object, name: str = c.name) -> None:
                if on_simulation is not None:
                    on_simulation(name)

            try:
                evaluation = evaluate(
                    domain,
                    config.sim_config(),
                    protocol_spec(config, c),
                    seeds,
                    executor=executor,
                    on_result=tick,
                )
            except ProtocolError as err:
                result.failed[c.id or 0] = str(err)
                continue
            rescored = Rescore(
                protocol_id=c.id or 0,
                seeds=list(evaluation.seeds),
                fitness_values=[float(v) for v in evaluation.final],
                mean=evaluation.mean,
                sem=evaluation.sem,
            )
            archive.add_rescore(rescored)
            result.rescored[rescored.protocol_id] = rescored
    return result
