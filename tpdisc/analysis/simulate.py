"""Re-simulating a run's protocols for analyses, with every result stored as it comes.

A run directory gives its protocols (the archive), the simulation they were scored on
(``config.yaml``'s ``sim``) and how to run their code (sandboxed, as the search did);
:func:`given_protocols` makes a run of protocol files and baseline names instead, scored on
an evaluation's simulation and seeds, with its store in a folder of the caller's.
:func:`plan` says which simulations an analysis still lacks, given what the run's
:class:`~tpdisc.analysis.store.AnalysisStore` holds; :func:`execute` runs all of them,
for every run at once, in one batch on an executor, and stores each protocol's results in
one transaction as soon as its last simulation is in. :func:`tallied_pairs` is the data
path of the behavioural features: each pair's tallies, handed to a callback.

What the search recorded is not simulated again: a protocol's simulation on a seed the
search kept (:mod:`tpdisc.sim.records`, under the same settings and code) gives its
original outcome, schedule and tally, and only the schedule's replay runs (or nothing,
when no replay is asked for). The numbers are those of a simulation run again: the
records are the same simulations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpdisc.analysis.store import ABLATED, ALL_SEEDS, FEATURES, ORIGINAL, AnalysisStore, SimSummary
from tpdisc.domain.data import default_graph
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.errors import ConfigError, ProtocolError
from tpdisc.executors.base import Executor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.protocols.resolve import unique_names
from tpdisc.sandbox import SandboxedSource, load_protocols
from tpdisc.search.archive import Archive, Candidate
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import CONFIG_FILE
from tpdisc.search.pick import run_references
from tpdisc.sim import records
from tpdisc.sim.config import EvaluationConfig, SimConfig, with_changes
from tpdisc.sim.evaluate import AblatedTask, ReplayTask, SimTask, prepare_simulation
from tpdisc.sim.game import SimResult
from tpdisc.sim.records import SimRecord
from tpdisc.sim.transmissions import Tally


@dataclass(frozen=True)
class Protocol:
    """One valid protocol of a run, as analyses need it."""

    run: str  # the run directory, as given (GIVEN for protocol files and baselines)
    id: int
    name: str
    mode: str
    # the archive's: mean final coverage over ``seeds``; nan for a given protocol, which
    # has no archive: analyses take it from their own simulations of it
    fitness: float
    seeds: tuple[int, ...]  # the seeds its fitness was computed on
    fitness_values: tuple[float, ...]  # per seed, in the order of ``seeds``
    spec: ProtocolSpec = field(repr=False, compare=False)

    def fitness_on(self, seeds: Sequence[int]) -> list[float]:
        """Its stored fitness values on those of ``seeds`` it was scored on."""
        by_seed = dict(zip(self.seeds, self.fitness_values, strict=True))
        return [by_seed[s] for s in seeds if s in by_seed]


@dataclass(frozen=True)
class Run:
    """A run directory opened for analysis."""

    path: Path
    config: SearchConfig
    sim: SimConfig  # the run's own simulation, or it with the analysis' overrides
    domain: Domain = field(repr=False)
    settings: dict[str, Any]  # what, with a protocol and a seed, fixes a simulation
    protocols: tuple[Protocol, ...]
    searched: bool = True  # a search's archive, which may hold its records

    @property
    def archive_path(self) -> Path:
        return self.path / Archive.FILE_NAME

    def store(self) -> AnalysisStore:
        return AnalysisStore(self.archive_path)

    def records(self, wanted: Mapping[int, Sequence[int]]) -> dict[int, dict[int, SimRecord]]:
        """The search's records of ``wanted`` (seeds per protocol id) under this run's
        settings, by protocol and seed; what it did not record is left out."""
        if not self.searched or not wanted:
            return {}
        with Archive(self.archive_path, readonly=True) as archive:
            rows = archive.records(records.settings_hash(self.settings), wanted)
        sim = self.sim
        out: dict[int, dict[int, SimRecord]] = {}
        for pid, row in rows.items():
            seeds = set(wanted[pid])
            if not seeds & set(row.seeds):
                continue
            try:
                decoded = records.decode(row.data, sim.n_agents, sim.n_steps, sim.bottleneck)
            except records.RecordError as err:
                raise ConfigError(
                    f"{self.archive_path}: records row {pid}: column data: {err}"
                ) from None
            if [r.seed for r in decoded] != list(row.seeds):
                raise ConfigError(
                    f"{self.archive_path}: records row {pid}: column seeds: "
                    f"{list(row.seeds)}, not the seeds of its data"
                )
            out[pid] = {r.seed: r for r in decoded if r.seed in seeds}
        return out


GIVEN = "given protocols"  # the run label of protocol files and baselines


def given_protocols(config: EvaluationConfig, graph: RecipeGraph, folder: str | Path) -> Run:
    """The protocol files, baselines and search protocols (``RUN_DIR:NAME``) of ``config``
    as one run: scored on its simulation and seeds, run as ``tpdisc evaluate`` runs them
    (files sandboxed unless ``config.trusted``), their analysis results stored in
    ``folder`` (which must exist)."""
    specs = load_protocols(
        list(config.protocols),
        trusted=config.trusted,
        sandbox=config.sandbox,
        resolved=run_references(config.protocols, trusted=config.trusted),
    )
    names = unique_names(specs)
    path = Path(folder)
    (path / Archive.FILE_NAME).touch()  # an empty file: the store adds its own tables
    domain = make_domain(graph, config.sim.variant)
    protocols = tuple(
        Protocol(
            run=GIVEN,
            id=k + 1,
            name=name,
            mode="given",
            fitness=float("nan"),
            seeds=tuple(config.seeds),
            fitness_values=(),
            spec=spec,
        )
        for k, (spec, name) in enumerate(zip(specs, names, strict=True))
    )
    settings = records.simulation_settings(config.sim, graph.sha256)
    search = SearchConfig(sims=config.sims, sim=config.sim, sandbox=config.sandbox)
    return Run(path, search, config.sim, domain, settings, protocols, searched=False)


def protocol_spec(config: SearchConfig, candidate: Candidate) -> ProtocolSpec:
    """How the search ran this candidate (see ``CandidateEvaluator``): baselines in this
    process (project code, which imports networkx), all else in the sandbox unless the
    run was made with ``sandboxed: false``."""
    if candidate.mode == "seed":
        return BaselineProtocol(candidate.name)
    if candidate.code is None:
        raise ConfigError(f"protocol {candidate.id} ({candidate.name}) has no code")
    source = SourceProtocol(
        candidate.name, candidate.code, origin=candidate.name, trusted=not config.sandboxed
    )
    return SandboxedSource.of(source, config.sandbox)


def load_run(
    run_dir: str | Path,
    *,
    recipes: str | Path | None = None,
    graph: RecipeGraph | None = None,
    n_steps: int | None = None,
    include_baselines: bool = False,
    sim_overrides: Mapping[str, Any] | None = None,
) -> Run:
    """Open a run of ``tpdisc evolve`` for analysis.

    ``n_steps`` overrides the run's steps per simulation, and ``sim_overrides`` any
    setting of its simulation (nested as under ``sim`` in a file), for quick checks and
    other conditions: results are stored apart and do not compare with the archive's
    fitness. The seeded baselines are left out unless ``include_baselines``: the analyses
    study what the search produced.
    """
    path = Path(run_dir)
    if not (path / CONFIG_FILE).is_file() or not (path / Archive.FILE_NAME).is_file():
        raise ConfigError(
            f"{path}: not a run directory of tpdisc evolve (no {CONFIG_FILE} and "
            f"{Archive.FILE_NAME} in {path.absolute()})"
        )
    config = SearchConfig.load(path / CONFIG_FILE)
    sim = config.sim_config(n_steps)
    if sim_overrides:
        sim = SimConfig.from_dict(with_changes(sim.to_dict(), sim_overrides), f"{path}: sim")
    graph = graph if graph is not None else default_graph(recipes)
    domain = make_domain(graph, sim.variant)
    with Archive(path / Archive.FILE_NAME, readonly=True) as archive:
        rows = archive.candidates(valid_only=True)
    protocols = tuple(
        Protocol(
            run=str(run_dir),
            id=int(c.id or 0),
            name=c.name,
            mode=c.mode,
            fitness=c.fitness,
            seeds=tuple(c.seeds or ()),
            fitness_values=tuple(c.fitness_values or ()),
            spec=protocol_spec(config, c),
        )
        for c in rows
        if include_baselines or c.mode != "seed"
    )
    settings = records.simulation_settings(sim, graph.sha256)
    return Run(path, config, sim, domain, settings, protocols)


def summarise(result: SimResult | SimRecord, n_agents: int) -> SimSummary:
    """What an analysis keeps of a simulation, run now or recorded by the search."""
    return SimSummary(
        seed=result.seed,
        final=result.curve[-1],
        received=result.received,
        novel_received=result.novel_received,
        n_agents=n_agents,
        curve=tuple(result.curve),
    )


@dataclass(frozen=True)
class Summarised:
    """A simulation task (plain, with its ablated replay, or a recorded simulation's
    replay alone) that sends back only the summaries, tagged with where they belong; a
    protocol's failure comes back as text, so that one broken protocol does not end an
    analysis of thousands."""

    run: int
    protocol_id: int
    task: SimTask | AblatedTask | ReplayTask

    def __call__(self) -> tuple[int, int, int, tuple[SimSummary, ...] | str]:
        try:
            out = self.task()
        except ProtocolError as err:
            return self.run, self.protocol_id, self.task.seed, str(err)
        results = out if isinstance(out, tuple) else (out,)
        n_agents = self.task.config.n_agents
        return (
            self.run,
            self.protocol_id,
            self.task.seed,
            tuple(summarise(r, n_agents) for r in results),
        )


@dataclass
class Plan:
    """The simulations one analysis needs of one run: per protocol, the seeds wanted, what
    the store holds already, what the search recorded of the rest, and the seeds still
    to run."""

    run: Run
    seeds: dict[int, tuple[int, ...]]  # protocol id -> seeds wanted
    ablated: bool  # each simulation with its ablated replay
    key: str  # the run's settings hash
    original: dict[int, dict[int, SimSummary]] = field(default_factory=dict)
    replay: dict[int, dict[int, SimSummary]] = field(default_factory=dict)
    missing: dict[int, list[int]] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    # of the missing seeds, the search's records: only their replays run
    recorded: dict[int, dict[int, SimRecord]] = field(default_factory=dict)

    @property
    def n_missing(self) -> int:
        """The simulations (or pairs) still to run."""
        if not self.ablated:
            return sum(len(s) - len(self.recorded.get(p, {})) for p, s in self.missing.items())
        return sum(len(s) for s in self.missing.values())

    @property
    def n_recorded(self) -> int:
        """The missing simulations the search's records give."""
        return sum(len(r) for r in self.recorded.values())

    def complete(self, protocol_id: int) -> bool:
        return protocol_id not in self.errors and not self.missing.get(protocol_id)


def plan(run: Run, seeds: Mapping[int, Sequence[int]], *, ablated: bool) -> Plan:
    """What ``seeds`` (per protocol id) need: the summaries stored, the search's records
    of the rest, and what to run."""
    with run.store() as store:
        key = store.register(run.settings)
        shape = (run.sim.n_agents, run.sim.n_steps)  # what the settings say, checked
        original = store.summaries(ORIGINAL, key, seeds, shape)
        replay = store.summaries(ABLATED, key, seeds, shape) if ablated else {}
    missing = {}
    for pid, wanted in seeds.items():
        have = set(original.get(pid, {}))
        if ablated:
            have &= set(replay.get(pid, {}))
        todo = [s for s in wanted if s not in have]
        if todo:
            missing[pid] = todo
    return Plan(
        run,
        {p: tuple(s) for p, s in seeds.items()},
        ablated,
        key,
        original,
        replay,
        missing,
        recorded=run.records(missing),
    )


def _task(p: Plan, pid: int, seed: int, spec: ProtocolSpec) -> SimTask | AblatedTask | ReplayTask:
    record = p.recorded.get(pid, {}).get(seed)
    if record is not None:
        return ReplayTask(p.run.domain, p.run.sim, spec.name, record.schedule, seed)
    if p.ablated:
        return AblatedTask(p.run.domain, p.run.sim, spec, seed)
    return SimTask(p.run.domain, p.run.sim, spec, seed)


def execute(
    plans: Sequence[Plan],
    executor: Executor,
    on_simulation: Callable[[str], None] | None = None,
) -> None:
    """Run what ``plans`` miss, all in one batch, filling them in as results arrive; a
    protocol's summaries are stored (one transaction) as soon as all its seeds are in.
    A seed the search recorded needs its replay only, or nothing without replays.

    ``on_simulation`` gets a label (the protocol's name) after each task.
    """
    specs = [{q.id: q for q in p.run.protocols} for p in plans]
    stores = [p.run.store() if p.missing else None for p in plans]
    fresh: dict[tuple[int, int], list[tuple[int, tuple[SimSummary, ...]]]] = {}

    def arrived(out: tuple[int, int, int, tuple[SimSummary, ...] | str]) -> None:
        k, pid, seed, got = out
        p = plans[k]
        if isinstance(got, str):
            p.errors.setdefault(pid, got)
        else:
            record = p.recorded.get(pid, {}).get(seed)
            if record is not None:  # the search's simulation, then the replay run now
                got = (summarise(record, p.run.sim.n_agents), *got)
            fresh.setdefault((k, pid), []).append((seed, got))
        p.missing[pid].remove(seed)
        if not p.missing[pid]:
            del p.missing[pid]
            _finish(p, pid, fresh.pop((k, pid), []), stores[k])

    tasks: list[Summarised] = []
    try:
        for k, p in enumerate(plans):
            if p.n_missing:
                prepare_simulation(p.run.domain, p.run.sim)
            for pid, seeds in list(p.missing.items()):
                for seed in list(seeds):  # a recorded one leaves ``seeds`` as it arrives
                    if not p.ablated and seed in p.recorded.get(pid, {}):
                        arrived((k, pid, seed, ()))  # the record is the whole simulation
                    else:
                        tasks.append(Summarised(k, pid, _task(p, pid, seed, specs[k][pid].spec)))

        def ran(out: tuple[int, int, int, tuple[SimSummary, ...] | str]) -> None:
            arrived(out)
            if on_simulation is not None:
                on_simulation(specs[out[0]][out[1]].name)

        if tasks:
            executor.run(tasks, ran)
    finally:
        for store in stores:
            if store is not None:
                store.close()


def _finish(
    p: Plan, pid: int, got: list[tuple[int, tuple[SimSummary, ...]]], store: AnalysisStore | None
) -> None:
    """A protocol's last simulation is in: keep its summaries, and store them unless one
    of its simulations failed (a failure is reported, and retried by the next analysis)."""
    rows: list[tuple[str, int, Any]] = []
    for seed, summaries in got:
        p.original.setdefault(pid, {})[seed] = summaries[0]
        rows.append((ORIGINAL, seed, summaries[0].to_json()))
        if p.ablated:
            p.replay.setdefault(pid, {})[seed] = summaries[1]
            rows.append((ABLATED, seed, summaries[1].to_json()))
    if pid not in p.errors and store is not None:
        store.put(pid, p.key, rows)


# Called once a protocol's pairs are all in, with each seed's tallies (original, replay)
# in seed order; may return its features per condition ({"original": {...}, "ablated":
# {...}}), which are then stored with its summaries.
FinishCallback = Callable[
    [Protocol, Sequence[tuple[int, Tally, Tally]]], Mapping[str, Mapping[str, float | None]] | None
]


# Pairs sent to the executor at once by tallied_pairs: whole protocols, so that the workers
# wait for the slowest pair once per batch rather than once per protocol, while the
# records the batch reads stay bounded.
TALLIED_BATCH = 120

Tallied = tuple[SimSummary, Tally]


@dataclass(frozen=True)
class TalliedPair:
    """A simulation and its replay (or, for a recorded simulation, the replay alone) with
    their tallies, tagged with its protocol's place in the batch; a protocol's failure
    comes back as text, so that it does not end the batch."""

    protocol: int
    task: AblatedTask | ReplayTask

    def __call__(self) -> tuple[int, int, tuple[Tallied, ...] | str]:
        try:
            out = self.task()
        except ProtocolError as err:
            return self.protocol, self.task.seed, str(err)
        results = out if isinstance(out, tuple) else (out,)
        n_agents = self.task.config.n_agents
        tallied = []
        for result in results:
            assert result.tally is not None  # the tasks are made with tally=True
            tallied.append((summarise(result, n_agents), result.tally))
        return self.protocol, self.task.seed, tuple(tallied)


def tallied_pairs(
    runs: Sequence[Run],
    finish: FinishCallback,
    executor: Executor,
    *,
    n_sims: int | None = None,
    on_simulation: Callable[[str], None] | None = None,
    on_recorded: Callable[[int], None] | None = None,
) -> dict[tuple[str, int], str]:
    """For every protocol of ``runs`` whose features are not stored yet: its original and
    ablated simulations on its evaluation seeds (the first ``n_sims`` of them, if given),
    each reduced to its tally where it runs, handed to ``finish(protocol, [(seed,
    original, ablated), ...])`` in seed order once the protocol's last pair is in.

    This is the data path of ``tpdisc analyze features``: ``finish`` turns the tallies
    into feature values per condition, which are stored (kind ``features/CONDITION``,
    seed :data:`ALL_SEEDS`, with the seeds they pool) in the same transaction as the
    protocol's summaries; so an interrupted analysis resumes, and an ablation over the
    same seeds later finds their pairs stored. A seed the search recorded runs its replay
    only (``on_recorded`` gets the number of such seeds of each batch). Protocols go to
    the executor a few at a time (:data:`TALLIED_BATCH` pairs). Returns the failures, by
    (run, protocol id): a failing protocol is neither handed over nor stored.
    """
    errors: dict[tuple[str, int], str] = {}
    for run in runs:
        errors.update(_tallied_run(run, finish, executor, n_sims, on_simulation, on_recorded))
    return errors


def _tallied_run(
    run: Run,
    finish: FinishCallback,
    executor: Executor,
    n_sims: int | None,
    on_simulation: Callable[[str], None] | None,
    on_recorded: Callable[[int], None] | None,
) -> dict[tuple[str, int], str]:
    """:func:`tallied_pairs` of one run."""
    errors: dict[tuple[str, int], str] = {}
    with run.store() as store:
        key = store.register(run.settings)
        todo: list[tuple[Protocol, tuple[int, ...]]] = []
        for protocol in run.protocols:
            seeds = protocol.seeds[:n_sims] if n_sims else protocol.seeds
            if not store.features(key, [protocol.id], seeds):
                todo.append((protocol, tuple(seeds)))
        if todo:
            prepare_simulation(run.domain, run.sim)

        def complete(protocol: Protocol, pairs: Sequence[tuple[int, Tallied, Tallied]]) -> None:
            rows: list[tuple[str, int, Any]] = []
            for seed, original, ablated in pairs:
                rows.append((ORIGINAL, seed, original[0].to_json()))
                rows.append((ABLATED, seed, ablated[0].to_json()))
            features = finish(protocol, [(seed, o[1], a[1]) for seed, o, a in pairs])
            for condition, values in (features or {}).items():
                value = {"seeds": [seed for seed, _, _ in pairs], "features": dict(values)}
                rows.append((FEATURES + condition, ALL_SEEDS, value))
            store.put(protocol.id, key, rows)

        batch: list[tuple[Protocol, tuple[int, ...]]] = []
        pairs = 0
        for k, (protocol, seeds) in enumerate(todo):
            batch.append((protocol, seeds))
            pairs += len(seeds)
            if pairs >= TALLIED_BATCH or k == len(todo) - 1:
                failed = _tallied_batch(run, batch, complete, executor, on_simulation, on_recorded)
                errors.update({(p.run, p.id): error for p, error in failed})
                batch, pairs = [], 0
    return errors


def _tallied_batch(
    run: Run,
    batch: Sequence[tuple[Protocol, tuple[int, ...]]],
    complete: Callable[[Protocol, Sequence[tuple[int, Tallied, Tallied]]], None],
    executor: Executor,
    on_simulation: Callable[[str], None] | None,
    on_recorded: Callable[[int], None] | None,
) -> list[tuple[Protocol, str]]:
    """The pairs of a few protocols in one run of the executor, each protocol's handed to
    ``complete`` in seed order when its last is in; returns the protocols that failed,
    each with the failure of its first failing seed."""
    recorded = run.records({protocol.id: seeds for protocol, seeds in batch})
    tasks = []
    for k, (protocol, seeds) in enumerate(batch):
        for seed in seeds:
            record = recorded.get(protocol.id, {}).get(seed)
            task: AblatedTask | ReplayTask = (
                AblatedTask(run.domain, run.sim, protocol.spec, seed, tally=True)
                if record is None
                else ReplayTask(run.domain, run.sim, protocol.name, record.schedule, seed, True)
            )
            tasks.append(TalliedPair(k, task))
    if on_recorded is not None:
        on_recorded(sum(len(r) for r in recorded.values()))
    pairs: list[dict[int, tuple[Tallied, Tallied]]] = [{} for _ in batch]
    failures: list[dict[int, str]] = [{} for _ in batch]

    def arrived(result: tuple[int, int, tuple[Tallied, ...] | str]) -> None:
        k, seed, got = result
        protocol, seeds = batch[k]
        if isinstance(got, str):
            failures[k][seed] = got
        else:
            record = recorded.get(protocol.id, {}).get(seed)
            if record is not None:  # the search's simulation, then the replay run now
                got = ((summarise(record, run.sim.n_agents), record.tally), *got)
            pairs[k][seed] = (got[0], got[1])
            if len(pairs[k]) == len(seeds):
                complete(protocol, [(s, *pairs[k][s]) for s in seeds])
        if on_simulation is not None:
            on_simulation(protocol.name)

    executor.run(tasks, arrived)
    return [
        (protocol, next(failed[s] for s in seeds if s in failed))
        for (protocol, seeds), failed in zip(batch, failures, strict=True)
        if failed
    ]
