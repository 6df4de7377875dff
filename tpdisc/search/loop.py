"""The search controller: seed the archive, then iterate propose → validate → repair → score.

Every random choice of iteration ``i`` draws from a generator seeded with ``(seed, i)``, so
a resumed run makes the same choices an uninterrupted one would have made from the same
archive. An iteration is written to the archive in one transaction at its end: a run killed
at any moment loses at most the iteration in progress, which the next run redoes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import numpy as np

from tpdisc.domain.variants import Domain
from tpdisc.errors import ConfigError
from tpdisc.executors.base import Executor
from tpdisc.llm_client import BudgetExceededError, LLMError
from tpdisc.protocols.baselines import DESCRIPTIONS, STANDARD_BASELINES
from tpdisc.safefiles import hold_folder
from tpdisc.search.archive import Archive, Candidate, RecordRow
from tpdisc.search.config import SearchConfig
from tpdisc.search.prompts import baseline_source
from tpdisc.search.proposers import (
    CUT_OFF,
    CUT_OFF_REQUEST,
    Proposal,
    ProposalRequest,
    Proposer,
)
from tpdisc.search.selection import contrasts, lineage_of, thompson_parent
from tpdisc.search.validation import CandidateEvaluator, Race, Scored
from tpdisc.sim import records

CONFIG_FILE = "config.yaml"


@dataclass(frozen=True)
class Event:
    """Progress of a run, for a progress bar: one per seed protocol and per iteration."""

    kind: str  # "seed" or "iteration"
    iteration: int
    total: int
    mode: str
    outcome: str  # valid, invalid, duplicate
    name: str
    fitness: float | None
    best: float
    cost: float
    # what the user should hear about the iteration: answers cut off at the token limit
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSummary:
    completed: int  # iterations finished over the run's whole life
    total: int
    stopped: str | None  # why the run ended early, if it did


def open_run_dir(run_dir: Path, config: SearchConfig | None, requested: dict) -> SearchConfig:
    """The config of the run in ``run_dir``: stored (resumed) or ``config`` (new run).

    On resumption, ``requested`` holds the options given now (None for those not given);
    see :meth:`SearchConfig.resumed_with` for what may change.
    """
    stored = run_dir / CONFIG_FILE
    run_dir.mkdir(parents=True, exist_ok=True)
    # Not while a search runs here: it would find its config changed under it.
    with _hold_run_dir(run_dir):
        if os.path.lexists(stored):  # a link there is refused by load, not taken for no file
            resolved = SearchConfig.load(stored).resumed_with(requested)
        elif config is None:
            raise ConfigError(f"{run_dir}: no {CONFIG_FILE}, and no settings to start a run with")
        else:
            resolved = config
        resolved.save(stored)
    return resolved


LOCK_FILE = ".lock"


def candidate_name(iteration: int, attempt: int) -> str:
    """``i0012`` for an iteration's proposal, ``i0012r1`` for its first repair."""
    return f"i{iteration:04d}" + (f"r{attempt}" if attempt else "")


def _hold_run_dir(run_dir: Path) -> IO[str]:
    """An exclusive lock on the run folder while a search runs in it: two searches writing
    one archive would redo each other's iterations."""
    return hold_folder(
        run_dir,
        "another search is running in this folder ({holder}); wait for it to end, or give "
        "another --run-dir",
        LOCK_FILE,
    )


@dataclass(frozen=True)
class _Plan:
    """An iteration proposed but not yet scored."""

    iteration: int
    rng: np.random.Generator
    request: ProposalRequest
    proposal: Proposal


class SearchLoop:
    """One run of the search in ``run_dir``; :meth:`run` starts or resumes it."""

    def __init__(
        self,
        run_dir: Path,
        config: SearchConfig,
        domain: Domain,
        proposer: Proposer,
        executor: Executor,
        *,
        on_event: Callable[[Event], None] | None = None,
        on_simulation: Callable[[], None] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self._lock = _hold_run_dir(self.run_dir)
        self.config = config
        self.domain = domain
        self.proposer = proposer
        try:
            self.archive = Archive(self.run_dir / Archive.FILE_NAME)
        except BaseException:
            self._lock.close()
            raise
        self.evaluator = CandidateEvaluator(domain, config, executor, on_simulation)
        sim = config.sim_config()
        self.record_settings = records.settings_hash(
            records.simulation_settings(sim, domain.graph.sha256)
        )
        self.on_event = on_event
        try:
            self._check_recipes()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.archive.close()
        self._lock.close()  # releases the run folder

    def __enter__(self) -> SearchLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_recipes(self) -> None:
        digest = self.domain.graph.sha256 or f"{self.domain.graph.n_elements} elements"
        stored = self.archive.meta("recipes")
        if stored is None:
            self.archive.set_meta("recipes", digest)
        elif stored != digest:
            raise ConfigError(
                f"{self.run_dir}: this run used recipes {stored}, not the data given now "
                f"({digest}); pass the same --recipes file to resume it"
            )

    def _emit(
        self,
        kind: str,
        iteration: int,
        mode: str,
        row: Candidate | None,
        notes: tuple[str, ...] = (),
    ) -> None:
        if self.on_event is None:
            return
        stats = self.archive.stats()
        self.on_event(
            Event(
                kind=kind,
                iteration=iteration,
                total=self.config.iterations,
                mode=mode,
                outcome=row.status if row is not None else "none",
                name=row.name if row is not None else "",
                fitness=row.fitness_mean if row is not None else None,
                best=stats.best_fitness,
                cost=self.archive.spent(),
                notes=notes,
            )
        )

    # --- seeds -----------------------------------------------------------------------------

    def seed(self) -> None:
        """Evaluate and store the standard baselines not yet in the archive."""
        present = self.archive.seed_names()
        for name in STANDARD_BASELINES:
            if name in present:
                continue
            scored = self.evaluator.score_baseline(name)
            row = Candidate(
                name=name,
                iteration=0,
                attempt=0,
                mode="seed",
                status="valid",
                proposer="baseline",
                code=baseline_source(name),
                description=DESCRIPTIONS[name],
                logging="The baselines keep no logs.",
            )
            self._fill_fitness(row, scored)
            self.archive.add_seed(row)
            self._emit("seed", 0, "seed", row)

    @staticmethod
    def _fill_fitness(row: Candidate, scored: Scored) -> None:
        ev = scored.evaluation
        if ev is None:
            return
        row.fitness_mean = ev.mean
        row.fitness_sem = ev.sem
        row.fitness_values = [float(v) for v in ev.final]
        row.seeds = list(ev.seeds)
        row.curve_mean = ev.curve_mean()
        row.logs = scored.logs
        row.evaluated_at = datetime.now(UTC).isoformat(timespec="seconds")

    # --- iterations ------------------------------------------------------------------------

    def request_for(self, iteration: int, rng: np.random.Generator) -> ProposalRequest:
        """Mode, parent and contrasts of ``iteration`` (SPEC §4)."""
        stats = self.archive.stats()
        if self.config.is_warmup(iteration):
            seeds = tuple(self.archive.candidates(valid_only=True, mode="seed"))
            return ProposalRequest(
                iteration,
                "warm-up",
                stats,
                baselines=seeds,
                is_known=self._is_known,
                scored=self.archive.scored_designs,
            )
        pool = self.archive.summaries(valid_only=True)
        chosen = thompson_parent(pool, rng, self.config.thompson_lambda)
        picked = contrasts(
            pool, chosen, rng, self.config.n_contrasts, self.config.contrast_temperature
        )
        mode = "improve" if rng.random() < self.config.p_improve else "diversify"
        # Only the protocols the prompt quotes are read whole.
        parent, *others = self.archive.get_many([chosen.id, *(c.id for c in picked)])
        return ProposalRequest(
            iteration,
            mode,
            stats,
            parent=parent,
            contrasts=tuple(others),
            is_known=self._is_known,
            scored=self.archive.scored_designs,
        )

    def race(self) -> Race | None:
        """What a candidate's first round is held against (the ``race_rank``-th best valid
        protocol's fitness, the first-round results of every protocol scored), or None
        when candidates are not raced."""
        if not self.config.races:
            return None
        return Race(
            self.archive.fitness_at_rank(self.config.race_rank),
            self.archive.first_results(self.config.race_sims),
        )

    def _is_known(self, code: str) -> bool:
        return self.archive.find_code(code) is not None

    def _record_call(self, iteration: int, purpose: str, proposal: Proposal) -> None:
        reply = proposal.reply
        if reply is None:
            return
        self.archive.record_call(
            iteration,
            purpose,
            model=reply.model,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost=reply.cost,
            requests=reply.requests,
            seconds=reply.seconds,
            usage_estimated=reply.usage_estimated,
        )

    def _row(
        self, request: ProposalRequest, attempt: int, proposal: Proposal, status: str
    ) -> Candidate:
        reply = proposal.reply
        return Candidate(
            name=candidate_name(request.iteration, attempt),
            iteration=request.iteration,
            attempt=attempt,
            mode=request.mode if attempt == 0 else "repair",
            status=status,
            proposer=self.proposer.name,
            code=proposal.code,
            description=proposal.description,
            logging=proposal.logging,
            reasoning=proposal.reasoning,
            parent_id=request.parent.id if request.parent is not None else None,
            lineage=lineage_of(request.parent),
            contrast_ids=[c.id for c in request.contrasts if c.id is not None],
            genome=proposal.genome,
            model=reply.model if reply is not None else None,
            prompt_tokens=reply.prompt_tokens if reply is not None else 0,
            completion_tokens=reply.completion_tokens if reply is not None else 0,
            cost=reply.cost if reply is not None else 0.0,
            prompt=proposal.prompt,
            answer=proposal.answer,
        )

    def _plan(self, iteration: int) -> _Plan:
        """Iteration ``iteration``'s request and first proposal."""
        rng = np.random.default_rng([self.config.seed, iteration])
        request = self.request_for(iteration, rng)
        proposal = self.proposer.propose(request, rng)
        self._record_call(iteration, request.mode, proposal)
        return _Plan(iteration, rng, request, proposal)

    def _kept(self, scored: Scored) -> RecordRow | None:
        """What the archive keeps of a valid protocol's simulations for the analyses."""
        if not scored.records:
            return None
        sim = self.config.sim
        data = records.encode(scored.records, sim.n_agents, sim.n_steps)
        return RecordRow(self.record_settings, tuple(r.seed for r in scored.records), data)

    def _attempts(
        self, plan: _Plan, first: Scored | None = None
    ) -> tuple[list[Candidate], dict[str, RecordRow]]:
        """The plan's proposal and its repairs, until one is valid or a duplicate, or the
        repairs run out, with the records of the valid one; ``first``: the first
        proposal's score, if already computed."""
        request, proposal, rng = plan.request, plan.proposal, plan.rng
        rows: list[Candidate] = []
        kept: dict[str, RecordRow] = {}
        for attempt in range(self.config.max_repairs + 1):
            row = self._row(request, attempt, proposal, "invalid")
            rows.append(row)
            if proposal.code is None:
                row.error = proposal.format_error or "the answer contained no code"
            elif (known := self.archive.find_code(proposal.code)) is not None:
                row.status, row.duplicate_of = "duplicate", known
                break
            else:
                if attempt == 0 and first is not None:
                    scored = first
                else:
                    scored = self.evaluator.score(row.name, proposal.code, self.race())
                if scored.twin is not None:  # behaves as an archived protocol does
                    row.status, row.duplicate_of = "duplicate", scored.twin
                    self._fill_fitness(row, scored)
                    break
                if scored.error is None:
                    row.status = "raced" if scored.raced else "valid"
                    self._fill_fitness(row, scored)
                    record = self._kept(scored) if row.status == "valid" else None
                    if record is not None:
                        kept[row.name] = record
                    break
                row.error = scored.error
            if attempt == self.config.max_repairs:
                break
            proposal = self.proposer.repair(request, proposal, row.error, rng)
            self._record_call(request.iteration, "repair", proposal)
        return rows, kept

    def _finish(
        self, plan: _Plan, attempts: tuple[list[Candidate], dict[str, RecordRow]]
    ) -> Candidate:
        rows, kept = attempts
        self.archive.finish_iteration(plan.iteration, plan.request.mode, rows, records=kept)
        cut_off = tuple(
            f"{row.name}: {row.error.removesuffix(CUT_OFF_REQUEST)}; raise --max-tokens "
            "(llm.max_tokens) if answers keep being cut off"
            for row in rows
            if row.error is not None and row.error.startswith(CUT_OFF)
        )
        self._emit("iteration", plan.iteration, plan.request.mode, rows[-1], cut_off)
        return rows[-1]

    def iteration(self, iteration: int) -> Candidate | None:
        """Run one iteration to its end and store it; returns its final candidate."""
        plan = self._plan(iteration)
        return self._finish(plan, self._attempts(plan))

    def batch(self, iterations: range) -> None:
        """Iterations proposed from the same archive, their first proposals scored at once,
        then each finished (repaired if need be) and stored in order, one transaction
        each. If the model fails while proposing, the iterations proposed so far are still
        run and stored before the error goes on."""
        plans: list[_Plan] = []
        failure: Exception | None = None
        for iteration in iterations:
            try:
                plans.append(self._plan(iteration))
            except (BudgetExceededError, LLMError) as err:
                failure = err
                break
        # Score a proposal now only if nothing archived or earlier in the batch has its
        # code; a repeat is found in the archive when its turn comes.
        seen: set[str] = set()
        todo: list[_Plan] = []
        for plan in plans:
            code = plan.proposal.code
            if code is None or code in seen or self.archive.find_code(code) is not None:
                continue
            seen.add(code)
            todo.append(plan)
        race = self.race()
        scores = self.evaluator.score_many(
            [(candidate_name(p.iteration, 0), p.proposal.code or "", race) for p in todo]
        )
        first = {p.iteration: scored for p, scored in zip(todo, scores, strict=True)}
        for plan in plans:
            self._finish(plan, self._attempts(plan, first.get(plan.iteration)))
        if failure is not None:
            raise failure

    def run(self) -> RunSummary:
        """Seed the archive if needed, then run the iterations not done yet, ``batch`` at a
        time."""
        self.seed()
        stopped: str | None = None
        start = self.archive.last_iteration() + 1
        step = self.config.batch
        for first in range(start, self.config.iterations + 1, step):
            try:
                if step == 1:
                    self.iteration(first)
                else:
                    self.batch(range(first, min(first + step, self.config.iterations + 1)))
            except BudgetExceededError as err:
                stopped = str(err)
                break
            except LLMError as err:
                stopped = (
                    f"the model endpoint keeps failing ({err}); the archive is intact, run "
                    "the same command again to resume"
                )
                break
        return RunSummary(self.archive.last_iteration(), self.config.iterations, stopped)
