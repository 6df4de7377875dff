"""Re-simulating a run's protocols for analyses, with every result stored as it comes.

A run directory gives its protocols (the archive), the simulation they were scored on
(``config.yaml``'s ``sim``) and how to run their code (sandboxed, as the search did);
:func:`given_protocols` makes a run of protocol files and baseline names instead, scored on
an evaluation's simulation and seeds, with its store in a folder of the caller's.
:func:`plan` says which simulations an analysis still lacks, given what the run's
:class:`~tpdisc.analysis.store.AnalysisStore` holds; :func:`execute` runs all of them,
for every run at once, in one batch on an executor, and stores each protocol's results in
one transaction as soon as its last simulation is in. :func:`logged_pairs` is the data
path of the behavioural features: full logged results, handed to a callback.
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
from tpdisc.sim.config import EvaluationConfig, SimConfig, with_changes
from tpdisc.sim.evaluate import AblatedTask, SimTask, prepare_simulation
from tpdisc.sim.game import SimResult


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

    @property
    def archive_path(self) -> Path:
        return self.path / Archive.FILE_NAME

    def store(self) -> AnalysisStore:
        return AnalysisStore(self.archive_path)


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
    settings = {"sim": config.sim.to_dict(), "recipes_sha256": graph.sha256}
    search = SearchConfig(sims=config.sims, sim=config.sim, sandbox=config.sandbox)
    return Run(path, search, config.sim, domain, settings, protocols)


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
    settings = {"sim": sim.to_dict(), "recipes_sha256": graph.sha256}
    return Run(path, config, sim, domain, settings, protocols)


def summarise(result: SimResult, n_agents: int) -> SimSummary:
    return SimSummary(
        seed=result.seed,
        final=result.final,
        received=result.received,
        novel_received=result.novel_received,
        n_agents=n_agents,
        curve=tuple(result.curve),
    )


@dataclass(frozen=True)
class Summarised:
    """A simulation task (plain or with its ablated replay) that sends back only the
    summaries, tagged with where they belong; a protocol's failure comes back as text,
    so that one broken protocol does not end an analysis of thousands."""

    run: int
    protocol_id: int
    task: SimTask | AblatedTask

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
    the store holds already, and the seeds still to run."""

    run: Run
    seeds: dict[int, tuple[int, ...]]  # protocol id -> seeds wanted
    ablated: bool  # each simulation with its ablated replay
    key: str  # the run's settings hash
    original: dict[int, dict[int, SimSummary]] = field(default_factory=dict)
    replay: dict[int, dict[int, SimSummary]] = field(default_factory=dict)
    missing: dict[int, list[int]] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)

    @property
    def n_missing(self) -> int:
        return sum(len(s) for s in self.missing.values())

    def complete(self, protocol_id: int) -> bool:
        return protocol_id not in self.errors and not self.missing.get(protocol_id)


def plan(run: Run, seeds: Mapping[int, Sequence[int]], *, ablated: bool) -> Plan:
    """What ``seeds`` (per protocol id) need: the summaries stored, and what to run."""
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
        run, {p: tuple(s) for p, s in seeds.items()}, ablated, key, original, replay, missing
    )


def execute(
    plans: Sequence[Plan],
    executor: Executor,
    on_simulation: Callable[[str], None] | None = None,
) -> None:
    """Run what ``plans`` miss, all in one batch, filling them in as results arrive; a
    protocol's summaries are stored (one transaction) as soon as all its seeds are in.

    ``on_simulation`` gets a label (the protocol's name) after each task.
    """
    for p in plans:
        if p.missing:
            prepare_simulation(p.run.domain, p.run.sim)
    specs = [{q.id: q for q in p.run.protocols} for p in plans]
    tasks: list[Summarised] = []
    for k, p in enumerate(plans):
        make = AblatedTask if p.ablated else SimTask
        for pid, seeds in p.missing.items():
            spec = specs[k][pid].spec
            tasks.extend(Summarised(k, pid, make(p.run.domain, p.run.sim, spec, s)) for s in seeds)
    if not tasks:
        return
    stores = [p.run.store() if p.missing else None for p in plans]
    fresh: dict[tuple[int, int], list[tuple[int, tuple[SimSummary, ...]]]] = {}

    def arrived(out: tuple[int, int, int, tuple[SimSummary, ...] | str]) -> None:
        k, pid, seed, got = out
        p = plans[k]
        if isinstance(got, str):
            p.errors.setdefault(pid, got)
        else:
            fresh.setdefault((k, pid), []).append((seed, got))
        p.missing[pid].remove(seed)
        if not p.missing[pid]:
            del p.missing[pid]
            _finish(p, pid, fresh.pop((k, pid), []), stores[k])
        if on_simulation is not None:
            on_simulation(specs[k][pid].name)

    try:
        executor.run(tasks, arrived)
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


PairCallback = Callable[[Protocol, int, SimResult, SimResult], None]
# Called once a protocol's pairs are all in; may return its features per condition
# ({"original": {...}, "ablated": {...}}), which are then stored with its summaries.
FinishCallback = Callable[[Protocol], Mapping[str, Mapping[str, float | None]] | None]


# Pairs sent to the executor at once by logged_pairs: whole protocols, so that the workers
# wait for the slowest pair once per batch rather than once per protocol, while the logged
# results the executor holds until a batch ends stay bounded (about 200 kB a pair).
LOGGED_BATCH = 120


@dataclass(frozen=True)
class LoggedPair:
    """A logged simulation and its replay, tagged with its protocol's place in the batch;
    a protocol's failure comes back as text, so that it does not end the batch."""

    protocol: int
    task: AblatedTask

    def __call__(self) -> tuple[int, int, tuple[SimResult, SimResult] | str]:
        try:
            return self.protocol, self.task.seed, self.task()
        except ProtocolError as err:
            return self.protocol, self.task.seed, str(err)


def logged_pairs(
    runs: Sequence[Run],
    on_pair: PairCallback,
    executor: Executor,
    *,
    finish: FinishCallback | None = None,
    n_sims: int | None = None,
    on_simulation: Callable[[str], None] | None = None,
) -> dict[tuple[str, int], str]:
    """For every protocol of ``runs``: its original and ablated simulations on its
    evaluation seeds (the first ``n_sims`` of them, if given), transmission logs recorded,
    handed to ``on_pair(protocol, seed, original, ablated)`` seed by seed once the
    protocol's last pair is in.

    This is the data path of ``tpdisc analyze features``: ``on_pair`` accumulates the
    events of a protocol, ``finish`` turns them into feature values per condition, which
    are stored (kind ``features/CONDITION``, seed :data:`ALL_SEEDS`, with the seeds they
    pool) in the same transaction as the protocol's summaries. With ``finish``, protocols
    whose features over the same seeds are stored already are skipped, so an interrupted
    analysis resumes; and an ablation over the same seeds later finds their pairs stored.
    Protocols go to the executor a few at a time (:data:`LOGGED_BATCH` pairs), so that the
    logs held at once stay bounded. Returns the failures, by (run, protocol id): a failing
    protocol is neither handed over nor stored.
    """
    errors: dict[tuple[str, int], str] = {}
    for run in runs:
        errors.update(_logged_run(run, on_pair, executor, finish, n_sims, on_simulation))
    return errors


def _logged_run(
    run: Run,
    on_pair: PairCallback,
    executor: Executor,
    finish: FinishCallback | None,
    n_sims: int | None,
    on_simulation: Callable[[str], None] | None,
) -> dict[tuple[str, int], str]:
    """:func:`logged_pairs` of one run."""
    errors: dict[tuple[str, int], str] = {}
    with run.store() as store:
        key = store.register(run.settings)
        todo: list[tuple[Protocol, tuple[int, ...]]] = []
        for protocol in run.protocols:
            seeds = protocol.seeds[:n_sims] if n_sims else protocol.seeds
            if finish is None or not store.features(key, [protocol.id], seeds):
                todo.append((protocol, tuple(seeds)))
        if todo:
            prepare_simulation(run.domain, run.sim)

        def complete(protocol: Protocol, pairs: list[tuple[SimResult, SimResult]]) -> None:
            rows: list[tuple[str, int, Any]] = []
            for original, ablated in pairs:
                for kind, result in ((ORIGINAL, original), (ABLATED, ablated)):
                    summary = summarise(result, run.sim.n_agents)
                    rows.append((kind, result.seed, summary.to_json()))
                on_pair(protocol, original.seed, original, ablated)
            features = finish(protocol) if finish is not None else None
            for condition, values in (features or {}).items():
                value = {"seeds": [o.seed for o, _ in pairs], "features": dict(values)}
                rows.append((FEATURES + condition, ALL_SEEDS, value))
            store.put(protocol.id, key, rows)

        batch: list[tuple[Protocol, tuple[int, ...]]] = []
        pairs = 0
        for k, (protocol, seeds) in enumerate(todo):
            batch.append((protocol, seeds))
            pairs += len(seeds)
            if pairs >= LOGGED_BATCH or k == len(todo) - 1:
                failed = _logged_batch(run, batch, complete, executor, on_simulation)
                errors.update({(p.run, p.id): error for p, error in failed})
                batch, pairs = [], 0
    return errors


def _logged_batch(
    run: Run,
    batch: Sequence[tuple[Protocol, tuple[int, ...]]],
    complete: Callable[[Protocol, list[tuple[SimResult, SimResult]]], None],
    executor: Executor,
    on_simulation: Callable[[str], None] | None,
) -> list[tuple[Protocol, str]]:
    """The logged pairs of a few protocols in one run of the executor, each protocol's
    handed to ``complete`` in seed order when its last is in; returns the protocols that
    failed, each with the failure of its first failing seed."""
    tasks = [
        LoggedPair(k, AblatedTask(run.domain, run.sim, protocol.spec, seed, record_log=True))
        for k, (protocol, seeds) in enumerate(batch)
        for seed in seeds
    ]
    pairs: list[dict[int, tuple[SimResult, SimResult]]] = [{} for _ in batch]
    failures: list[dict[int, str]] = [{} for _ in batch]

    def arrived(result: tuple[int, int, tuple[SimResult, SimResult] | str]) -> None:
        k, seed, pair = result
        protocol, seeds = batch[k]
        if isinstance(pair, str):
            failures[k][seed] = pair
        else:
            pairs[k][seed] = pair
            if len(pairs[k]) == len(seeds):
                complete(protocol, [pairs[k][s] for s in seeds])
        if on_simulation is not None:
            on_simulation(protocol.name)

    executor.run(tasks, arrived)
    return [
        (protocol, next(failed[s] for s in seeds if s in failed))
        for (protocol, seeds), failed in zip(batch, failures, strict=True)
        if failed
    ]
