"""Fitness of a protocol: the coverage it reaches over many seeded simulations."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tpdisc.agents.population import prepare_agents
from tpdisc.domain.variants import Domain
from tpdisc.executors.base import Executor, Task
from tpdisc.executors.process import ProcessExecutor
from tpdisc.protocols.ablation import ReplayProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.schedule import PackedSchedule
from tpdisc.sim.accounting import Accounting, mean_accounting
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation
from tpdisc.sim.log import log_file
from tpdisc.sim.mechanism import Mechanism, mean_mechanism

R = TypeVar("R")


def sem(values: Sequence[float]) -> float:
    """Standard error of the mean (0 for fewer than two values)."""
    arr = np.asarray(values, dtype=float)
    return float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else 0.0


@dataclass
class Evaluation:
    """One protocol's simulations under one configuration."""

    protocol: str
    seeds: list[int]
    final: list[int]
    curves: list[list[int]]
    received: list[int] = field(default_factory=list)
    novel_received: list[int] = field(default_factory=list)
    agent_stats: dict[str, float] = field(default_factory=dict)
    n_agents: int = 1  # to turn the per-simulation totals above into per-agent figures
    # per agent type, each mechanism number's mean over the simulations (tpdisc.sim.mechanism)
    mechanism: Mechanism = field(default_factory=dict)
    # per simulation (in the order of ``seeds``), the mechanism numbers it gave
    mechanism_runs: list[Mechanism] = field(default_factory=list)
    # per simulation, each attempt's way and outcome (tpdisc.sim.accounting); the results
    # JSON keeps their mean and each simulation's counts
    accounting_runs: list[Accounting] = field(default_factory=list)
    # per simulation, what the protocol's get_logs() returned
    protocol_logs: list[list[dict[str, Any]]] = field(default_factory=list)

    @classmethod
    def from_results(
        cls, protocol: str, results: Sequence[SimResult], n_agents: int = 1
    ) -> Evaluation:
        stats: dict[str, float] = {}
        for r in results:
            for key, value in r.agent_stats.items():
                stats[key] = stats.get(key, 0.0) + value
        return cls(
            protocol=protocol,
            seeds=[r.seed for r in results],
            final=[r.final for r in results],
            curves=[r.curve for r in results],
            received=[r.received for r in results],
            novel_received=[r.novel_received for r in results],
            agent_stats=stats,
            n_agents=n_agents,
            mechanism=mean_mechanism(r.mechanism for r in results),
            mechanism_runs=[r.mechanism for r in results],
            accounting_runs=[r.accounting for r in results],
            protocol_logs=[r.protocol_logs for r in results],
        )

    @classmethod
    def concat(cls, parts: Sequence[Evaluation]) -> Evaluation:
        """One protocol's evaluations on further seeds, as one evaluation over all of
        them, in order."""
        first = parts[0]
        stats: dict[str, float] = {}
        for part in parts:
            for key, value in part.agent_stats.items():
                stats[key] = stats.get(key, 0.0) + value
        runs = [m for part in parts for m in part.mechanism_runs]
        return cls(
            protocol=first.protocol,
            seeds=[s for part in parts for s in part.seeds],
            final=[v for part in parts for v in part.final],
            curves=[c for part in parts for c in part.curves],
            received=[v for part in parts for v in part.received],
            novel_received=[v for part in parts for v in part.novel_received],
            agent_stats=stats,
            n_agents=first.n_agents,
            mechanism=mean_mechanism(runs),
            mechanism_runs=runs,
            accounting_runs=[a for part in parts for a in part.accounting_runs],
            protocol_logs=[g for part in parts for g in part.protocol_logs],
        )

    @property
    def mean(self) -> float:
        return float(np.mean(self.final))

    @property
    def sem(self) -> float:
        return sem(self.final)

    @property
    def accounting(self) -> Accounting:
        """Each attempt's way and outcome, means over the simulations."""
        return mean_accounting(self.accounting_runs)

    def curve_mean(self) -> list[float]:
        return [float(v) for v in np.asarray(self.curves, dtype=float).mean(axis=0)]

    def curve_sem(self) -> list[float]:
        arr = np.asarray(self.curves, dtype=float)
        if arr.shape[0] < 2:
            return [0.0] * arr.shape[1]
        return [float(v) for v in arr.std(axis=0, ddof=1) / np.sqrt(arr.shape[0])]

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "mean": self.mean,
            "sem": self.sem,
            "seeds": self.seeds,
            "final": self.final,
            "curve_mean": self.curve_mean(),
            "curve_sem": self.curve_sem(),
            "curves": self.curves,
            "received_per_agent": [float(x) / self.n_agents for x in self.received],
            "agent_stats": self.agent_stats,
            "mechanism": self.mechanism,
            "mechanism_per_simulation": self.mechanism_runs,
            "accounting": self.accounting,
            "accounting_per_simulation": [
                {kind: part["counts"] for kind, part in run.items()} for run in self.accounting_runs
            ],
            "protocol_metrics": self.protocol_metrics(),
            "protocol_logs": self.protocol_logs,
        }

    def protocol_metrics(self) -> dict[str, dict[str, Any]]:
        """Each metric of the protocol's ``get_logs()``: its description and, where its
        values are numbers, their mean over the simulations that reported it."""
        values: dict[str, list[float]] = {}
        described: dict[str, str] = {}
        for logs in self.protocol_logs:
            for entry in logs:
                name = str(entry.get("metric_name", ""))
                described.setdefault(name, str(entry.get("metric_description", "")))
                value = entry.get("metric_value")
                if isinstance(value, int | float) and not isinstance(value, bool):
                    values.setdefault(name, []).append(float(value))
        return {
            name: {
                "description": text,
                "mean": float(np.mean(values[name])) if name in values else None,
                "sims": len(values.get(name, [])),
            }
            for name, text in described.items()
        }


def run_tasks(
    tasks: Sequence[Task[R]], executor: Executor | None, on_result: Callable[[R], None] | None
) -> list[R]:
    """Run on ``executor``; by default on a pool of all cores, closed afterwards.

    Callers running many evaluations should pass one executor to all of them, so the pool
    starts once.
    """
    if executor is not None:
        return executor.run(tasks, on_result)
    with ProcessExecutor() as own:
        return own.run(tasks, on_result)


@dataclass(frozen=True)
class SimTask:
    """One simulation to run: everything a worker process needs, picklable."""

    domain: Domain
    config: SimConfig
    protocol: ProtocolSpec
    seed: int
    record_log: bool = False
    log_to: Path | None = None  # stream the log to log_file(log_to, seed) where it runs
    tally: bool = False  # SimResult.tally: what the behavioural features need

    def __call__(self) -> SimResult:
        path = None if self.log_to is None else log_file(self.log_to, self.seed)
        return run_simulation(
            self.domain,
            self.config,
            self.protocol,
            self.seed,
            record_log=self.record_log,
            log_path=path,
            tally=self.tally,
        )


def prepare_simulation(domain: Domain, config: SimConfig) -> None:
    """Build what the agents of ``config`` need on ``domain`` before simulating (the
    empowerment prior: a minute the first time, then read from the cache, once per
    process), so that its build does not happen inside a progress bar or a worker."""
    prepare_agents(domain.graph, domain.source, (kind for kind, _ in config.agents), config.params)


def evaluate(
    domain: Domain,
    config: SimConfig,
    protocol: ProtocolSpec,
    seeds: Sequence[int],
    *,
    executor: Executor | None = None,
    on_result: Callable[[SimResult], None] | None = None,
    record_log: bool = False,
    log_to: Path | None = None,
    tally_seeds: Collection[int] = (),
) -> Evaluation:
    """Run ``protocol`` once per seed and gather the final coverages and curves.

    With ``record_log``, each :class:`SimResult` passed to ``on_result`` carries its
    transmission log (the returned :class:`Evaluation` keeps only summaries). With
    ``log_to``, each simulation streams its log to ``log_to``-seedN.parquet instead, from
    the process that runs it (a Ray cluster's nodes need that folder shared). The results
    of ``tally_seeds`` carry their tally (:mod:`tpdisc.sim.transmissions`).
    """
    prepare_simulation(domain, config)
    tasks = [
        SimTask(domain, config, protocol, s, record_log, log_to, tally=s in tally_seeds)
        for s in seeds
    ]
    results = run_tasks(tasks, executor, on_result)
    return Evaluation.from_results(protocol.name, results, config.n_agents)


@dataclass(frozen=True)
class AblatedTask:
    """Run a protocol, then replay its schedule with random content, under one seed."""

    domain: Domain
    config: SimConfig
    protocol: ProtocolSpec
    seed: int
    record_log: bool = False
    log_to: Path | None = None  # as SimTask's; the replay's log gets "-ablated"
    tally: bool = False  # as SimTask's, for both

    def __call__(self) -> tuple[SimResult, SimResult]:
        log = self.record_log
        paths: tuple[Path | None, Path | None] = (None, None)
        if self.log_to is not None:
            paths = (log_file(self.log_to, self.seed), log_file(self.log_to, self.seed, True))
        original = run_simulation(
            self.domain,
            self.config,
            self.protocol,
            self.seed,
            record_log=log,
            log_path=paths[0],
            tally=self.tally,
        )
        replay = ReplayProtocol(replay_name(self.protocol.name), original.schedule)
        ablated = run_simulation(
            self.domain,
            self.config,
            replay,
            self.seed,
            record_log=log,
            log_path=paths[1],
            tally=self.tally,
        )
        return original, ablated


def replay_name(name: str) -> str:
    return f"{name} (ablated)"


@dataclass(frozen=True)
class ReplayTask:
    """The schedule replay of a simulation whose outcome is known already (recorded by the
    search that scored it: :mod:`tpdisc.sim.records`), alone: the second half of an
    :class:`AblatedTask`, the same simulation."""

    domain: Domain
    config: SimConfig
    name: str  # the protocol's
    schedule: PackedSchedule  # unpacked where it runs: a few kB to send, not tens
    seed: int
    tally: bool = False

    def __call__(self) -> SimResult:
        replay = ReplayProtocol(replay_name(self.name), self.schedule.unpacked())
        return run_simulation(self.domain, self.config, replay, self.seed, tally=self.tally)


def evaluate_ablated(
    domain: Domain,
    config: SimConfig,
    protocol: ProtocolSpec,
    seeds: Sequence[int],
    *,
    executor: Executor | None = None,
    on_result: Callable[[tuple[SimResult, SimResult]], None] | None = None,
    record_log: bool = False,
    log_to: Path | None = None,
) -> tuple[Evaluation, Evaluation]:
    """A protocol and its state-agnostic ablation (SPEC §5), seed by seed.

    Each seed's ablated run replays the schedule of the original run under the same seed.
    """
    prepare_simulation(domain, config)
    tasks = [AblatedTask(domain, config, protocol, s, record_log, log_to) for s in seeds]
    pairs = run_tasks(tasks, executor, on_result)
    return (
        Evaluation.from_results(protocol.name, [o for o, _ in pairs], config.n_agents),
        Evaluation.from_results(
            f"{protocol.name} (ablated)", [a for _, a in pairs], config.n_agents
        ),
    )
