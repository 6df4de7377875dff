"""Checking and scoring candidates: a quick sandboxed trial, then the full fitness.

A candidate is valid when it passes the sandbox's pre-check, survives a short simulation
and then the full evaluation (a protocol may fail late, at a step the short run did not
reach, or run out of time on long games). Any failure comes back as one readable text for
the repair prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tpdisc.domain.variants import Domain
from tpdisc.errors import ProtocolError
from tpdisc.executors.base import Executor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sandbox import SandboxedSource, precheck
from tpdisc.search.config import RACE_Z, SearchConfig
from tpdisc.sim.evaluate import Evaluation, evaluate
from tpdisc.sim.game import SimResult, run_simulation
from tpdisc.sim.records import SimRecord

CHECK_SEED = 0


def error_text(err: ProtocolError) -> str:
    """The error as the model will read it, with the sandbox's failure kind when known."""
    kind = getattr(err, "kind", None)
    return f"[{kind}] {err}" if kind else str(err)


def precheck_problems(code: str) -> list[str]:
    """Problems the sandbox's static pre-check finds, in words a model can act on.

    The pre-check bounds its own work and reports what it refuses; should it still fail on
    some source (a bug, or memory running out), that is this candidate's failure, in one
    line, and never the end of the search.
    """
    try:
        return list(precheck(code))
    except Exception as err:
        reason = " ".join(str(err).split()) or "no message"
        return [f"the pre-check could not read this source ({type(err).__name__}: {reason})"]


@dataclass
class Scored:
    """The outcome of validating and scoring one candidate."""

    error: str | None = None
    evaluation: Evaluation | None = None
    logs: list[list[dict[str, Any]]] = field(default_factory=list)  # get_logs, per seed
    raced: bool = False  # stopped after the first round of a race: ``evaluation`` is partial
    # stopped there too, as this protocol's twin: it gave the same results on those seeds
    twin: int | None = None
    # its simulations on the seeds the run records for the analyses, in seed order
    records: tuple[SimRecord, ...] = ()


@dataclass(frozen=True)
class Race:
    """What a raced candidate's first round is held against: the fitness it must be able
    to reach (None: no bar yet), and the first-round results of the protocols scored
    before, by their ids. A candidate whose first-round results repeat one of them
    exactly behaves as that one does (a neutral change: a weight alone rescaled, a cap that
    never binds); scoring it further would repeat that protocol's fitness."""

    bar: float | None
    twins: Mapping[tuple[int, ...], int] = field(default_factory=dict)


class CandidateEvaluator:
    """Runs candidates and baselines under the search's settings, on the same seeds."""

    def __init__(
        self,
        domain: Domain,
        config: SearchConfig,
        executor: Executor,
        on_simulation: Callable[[], None] | None = None,
    ) -> None:
        self.domain = domain
        self.config = config
        self.executor = executor
        self.on_simulation = on_simulation

    @staticmethod
    def source_spec(config: SearchConfig, name: str, code: str) -> SourceProtocol:
        """Candidate code as the search runs it: sandboxed unless ``config.sandboxed`` is
        false."""
        source = SourceProtocol(name, code, origin=name, trusted=not config.sandboxed)
        return SandboxedSource.of(source, config.sandbox)

    def spec(self, name: str, code: str) -> SourceProtocol:
        return self.source_spec(self.config, name, code)

    def _evaluate(
        self, spec: ProtocolSpec, race: Race | None = None, record: bool = False
    ) -> Scored:
        """``spec``'s fitness on every seed; in a ``race``, first on the race's first
        seeds, stopping there when clearly below its bar (``raced``) or a twin of a
        protocol scored before (``twin``). With ``record``, its simulations on the seeds
        the run records come back too (``records``)."""
        logs: dict[int, list[dict[str, Any]]] = {}
        records: dict[int, SimRecord] = {}
        tally_seeds = frozenset(self.config.recorded_seeds if record else ())

        def collect(result: SimResult) -> None:
            logs[result.seed] = result.protocol_logs
            if result.tally is not None:
                records[result.seed] = SimRecord.of(result)
            if self.on_simulation is not None:
                self.on_simulation()

        def run(seeds: list[int]) -> Evaluation:
            return evaluate(
                self.domain,
                self.config.sim_config(),
                spec,
                seeds,
                executor=self.executor,
                on_result=collect,
                tally_seeds=tally_seeds,
            )

        seeds = self.config.seeds
        first = seeds[: self.config.race_sims] if race is not None else seeds
        evaluation = run(first)
        partial = len(first) < len(seeds)
        twin = race.twins.get(tuple(evaluation.final)) if race is not None else None
        bar = race.bar if race is not None else None
        raced = partial and bar is not None and raced_out(evaluation, bar)
        if partial and not raced and twin is None:
            evaluation = Evaluation.concat([evaluation, run(seeds[len(first) :])])
        logs_seen = [logs.get(s, []) for s in evaluation.seeds]
        kept = tuple(records[s] for s in sorted(records))
        return Scored(evaluation=evaluation, logs=logs_seen, raced=raced, twin=twin, records=kept)

    def check(self, name: str, code: str) -> str | None:
        """The reason ``code`` cannot be a protocol, or None if a short game runs fine."""
        problems = precheck_problems(code)
        if problems:
            return "The pre-check found problems:\n" + "\n".join(f"- {p}" for p in problems)
        steps = min(self.config.check_steps, self.config.sim.n_steps)
        config = self.config.sim_config(n_steps=steps)
        try:
            run_simulation(self.domain, config, self.spec(name, code), CHECK_SEED)
        except ProtocolError as err:
            return error_text(err)
        return None

    def score(self, name: str, code: str, race: Race | None = None) -> Scored:
        """Check ``code`` and, if it passes, compute its fitness on every seed (in a
        ``race``, if given: see :class:`~tpdisc.search.config.SearchConfig`)."""
        error = self.check(name, code)
        if error is not None:
            return Scored(error=error)
        try:
            return self._evaluate(self.spec(name, code), race, record=True)
        except ProtocolError as err:
            return Scored(error=error_text(err))

    def score_many(self, candidates: Sequence[tuple[str, str, Race | None]]) -> list[Scored]:
        """:meth:`score` for each ``(name, code)``, at once where the executor allows: each
        candidate's check and simulations run in a thread of their own, the simulations of
        all of them sharing the workers (more in flight than one candidate has, for an
        executor with many workers). Each candidate still stops at its first failure, as
        alone."""
        if len(candidates) <= 1 or not self.executor.concurrent:
            return [self.score(name, code, race) for name, code, race in candidates]
        with ThreadPoolExecutor(len(candidates), thread_name_prefix="candidate") as threads:
            return list(threads.map(lambda item: self.score(*item), candidates))

    def score_baseline(self, name: str) -> Scored:
        """A built-in baseline, run in-process (project code, which imports networkx)."""
        return self._evaluate(BaselineProtocol(name))


def raced_out(first_round: Evaluation, bar: float) -> bool:
    """Whether a race stops after ``first_round``: its mean plus ``RACE_Z`` standard errors
    is under ``bar``."""
    return first_round.mean + RACE_Z * first_round.sem < bar
