"""A protocol's portrait: what it does over a game, as numbers a page can draw.

``tpdisc inspect`` (and the reports) simulate a protocol with its transmission log, its
schedule-replay ablation and asocial play on the same seeds, and reduce each simulation
here to small arrays (:class:`SimPortrait`, made in the worker that ran it, so logs never
travel), then pool them over seeds (:class:`Portrait`):

- **flow**: delivered memories (those that passed the attention bottleneck) per sender ×
  recipient, successes and failures apart, and all of them per third of the game (the
  thirds of :func:`tpdisc.sim.transmissions.window_of`); means per simulation;
- **content** per step: memories delivered, the share that are successes, the rarity of
  their results (1 − share of agents owning it, as ``rarity_bias``), the share of successes
  whose result the recipient lacks (``item_novelty``), the shares where the recipient owns
  0, 1 or 2 of the ingredients (``has_k_fraction``), and re-sends (a recipe the recipient
  had been delivered before, or twice in one step). Ratios pool the events of all seeds, so
  their whole-game values are the behavioural features of :mod:`tpdisc.analysis.features`;
- **agents** per step: each agent's inventory, the group's union, the mean inventory and
  the mean pairwise Jaccard distance between inventories without start elements (as
  :mod:`tpdisc.sim.mechanism`, over all agents whatever their type), and the share of
  attempts re-making a pair received earlier as a success (``remake_fraction``); for the
  protocol, its ablation and asocial play;
- **coverage** of the three, and the protocol's ``get_logs()`` metrics after every step;
- **accounting** of the three (:mod:`tpdisc.sim.accounting`): per way of choosing an
  attempt, the attempts, what came of them (means per simulation) and the way's
  contribution to the gain over asocial play on the same seeds.

Curves over steps have ``T + 1`` points (before the first step, then after each) where
they describe states, ``T`` where they describe what happened at a step.
"""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tpdisc.domain.variants import Domain
from tpdisc.errors import excerpt
from tpdisc.executors.base import Executor
from tpdisc.protocols.ablation import ReplayProtocol
from tpdisc.protocols.baselines import BASELINES, BaselineProtocol
from tpdisc.protocols.interface import AgentStates, ProtocolRunner, ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.python_source import PARSING, parse
from tpdisc.sim.accounting import (
    OUTCOMES,
    WAYS,
    Accounting,
    asocial_rate,
    contributions,
    mean_accounting,
    pooled,
)
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import prepare_simulation, sem
from tpdisc.sim.game import SimResult, run_simulation
from tpdisc.sim.log import AttemptHistory, TransmissionLog
from tpdisc.sim.mechanism import NUMBERS, Mechanism, mean_mechanism
from tpdisc.sim.transmissions import acquisition_steps, events_of, window_of

CONDITIONS = ("protocol", "ablation", "asocial")
THIRDS = ("early", "middle", "late")
CONTENT = (
    "delivered",
    "success_share",
    "rarity",
    "lacks_result",
    "has_0",
    "has_1",
    "has_2",
    "resend_share",
)


# --- get_logs() after every step ------------------------------------------------------

# What the host does with a protocol's get_logs() is bounded whatever it returns: the
# entries of one reply read, the distinct metrics kept per simulation (in the order the
# protocol first reported them), the length of a name or description kept.
MAX_LOG_ENTRIES = 1_000
MAX_METRICS = 100
MAX_METRIC_TEXT = 200


@dataclass(eq=False)
class StepLogs:
    """What a protocol's ``get_logs()`` said after each step of one simulation, reduced
    as each reply arrives to the numbers a portrait draws (see :data:`MAX_METRICS`)."""

    described: dict[str, str] = field(default_factory=dict)  # name -> description
    steps: list[dict[str, float | None]] = field(default_factory=list)
    dropped: bool = False  # the protocol reported more distinct metrics than are kept

    def add(self, logs: object) -> None:
        """One step's reply: each kept metric's first numeric value in it (None when
        it gave none); linear in the entries read."""
        values: dict[str, float | None] = {}
        for entry in logs[:MAX_LOG_ENTRIES] if isinstance(logs, list) else []:
            if not isinstance(entry, Mapping):
                continue
            name = _text(entry.get("metric_name", ""))
            if name not in self.described:
                if len(self.described) >= MAX_METRICS:
                    self.dropped = True
                    continue
                self.described[name] = _text(entry.get("metric_description", ""))
            if values.get(name) is None:
                values[name] = _number(entry.get("metric_value"))
        self.steps.append(values)


def _text(value: object) -> str:
    # Only short strings are turned into text whole: str() of a big container costs more.
    return value[:MAX_METRIC_TEXT] if isinstance(value, str) else repr(value)[:MAX_METRIC_TEXT]


def _number(value: object) -> float | None:
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if not numeric:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int of hundreds of digits
        return None
    return number if math.isfinite(number) else None


class _MeteredRunner(ProtocolRunner):
    """Asks the protocol for its logs after every ``share``; otherwise the runner itself
    (the game reads ``canonical`` and an optional ``limit_exchanges`` from it)."""

    def __init__(self, inner: ProtocolRunner, record: StepLogs) -> None:
        self.inner, self.record = inner, record
        self.canonical = inner.canonical

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def share(self, step: int, agent_states: AgentStates) -> object:
        answer = self.inner.share(step, agent_states)
        self.record.add(self.inner.logs())
        return answer

    def logs(self) -> list[dict[str, Any]]:
        return self.inner.logs()

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True, eq=False)
class MeteredProtocol(ProtocolSpec):
    """``inner`` with its ``get_logs()`` recorded after every step into ``record`` (one
    simulation's; lives in the process that runs it)."""

    inner: ProtocolSpec
    record: StepLogs

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def label(self) -> str:
        return self.inner.label

    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        return _MeteredRunner(self.inner.open(n_agents, n_steps, seed), self.record)


# --- one simulation ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AgentCurves:
    """One condition's agents over the game (one simulation, or the mean of several)."""

    coverage: np.ndarray  # T + 1
    mean_inventory: np.ndarray  # T + 1, start elements included
    jaccard: np.ndarray  # T + 1; NaN with one agent
    remake_share: np.ndarray  # T
    attempts: int  # per simulation, to pool the remake share


@dataclass(frozen=True, eq=False)
class ContentCounts:
    """Per step, the counts the content ratios are made of (summed over simulations)."""

    delivered: np.ndarray
    successes: np.ndarray
    rarity_sum: np.ndarray  # over successes: 1 - share of agents owning the result
    lacks: np.ndarray  # successes whose result the recipient lacks
    has: np.ndarray  # (3, T): events where the recipient owns k ingredients
    resends: np.ndarray

    def __add__(self, other: ContentCounts) -> ContentCounts:
        return ContentCounts(
            *(getattr(self, n) + getattr(other, n) for n in self.__dataclass_fields__)
        )

    def ratios(self, sims: int) -> dict[str, list[float | None]]:
        """Per step: delivered per simulation, and the pooled ratios (None: no event)."""
        out: dict[str, list[float | None]] = {"delivered": _list(self.delivered / sims)}
        out["success_share"] = _ratio(self.successes, self.delivered)
        out["rarity"] = _ratio(self.rarity_sum, self.successes)
        out["lacks_result"] = _ratio(self.lacks, self.successes)
        for k in range(3):
            out[f"has_{k}"] = _ratio(self.has[k], self.delivered)
        out["resend_share"] = _ratio(self.resends, self.delivered)
        return out

    def whole_game(self, sims: int) -> dict[str, float | None]:
        """The same pooled over every step: the behavioural features' values."""
        total = ContentCounts(
            *(np.atleast_1d(getattr(self, n).sum(axis=-1)) for n in self.__dataclass_fields__)
        )
        return {k: v[0] for k, v in total.ratios(sims).items()}


@dataclass(frozen=True, eq=False)
class SimPortrait:
    """What one seed contributes: the protocol's flow and content, and the agents of the
    protocol, its ablation and asocial play."""

    seed: int
    flow_successes: np.ndarray  # (N, N) sender x recipient
    flow_failures: np.ndarray
    flow_thirds: np.ndarray  # (3, N, N), all delivered memories
    content: ContentCounts
    ablation_content: ContentCounts
    inventories: np.ndarray  # (N, T + 1) the protocol's agents
    agents: Mapping[str, AgentCurves]
    metrics: Mapping[str, tuple[str, tuple[float | None, ...]]]  # name -> (description, T)
    mechanism: Mechanism  # the protocol's, as evaluate reports it
    accounting: Mapping[str, Accounting]  # per condition


def owned_over_steps(history: AttemptHistory) -> tuple[np.ndarray, np.ndarray]:
    """``(T + 1, N, E)`` elements owned before the first step and after each, and the
    same without each agent's start elements."""
    acquired = acquisition_steps(history)
    points = np.arange(-1, history.n_steps)[:, None, None]
    owned = acquired[None, :, :] <= points
    return owned, owned & (acquired[None, :, :] >= 0)


def jaccard_over_steps(gained: np.ndarray) -> np.ndarray:
    """Mean pairwise Jaccard distance per point of ``(points, N, E)`` sets; two empty sets
    are at distance 0 (as :func:`tpdisc.sim.mechanism.jaccard_distance`); NaN for N < 2."""
    n = gained.shape[1]
    if n < 2:
        return np.full(gained.shape[0], np.nan)
    as_float = gained.astype(np.float64)  # float32 sums drift from the game's numbers
    inter = np.einsum("tie,tje->tij", as_float, as_float)
    sizes = as_float.sum(axis=2)
    union = sizes[:, :, None] + sizes[:, None, :] - inter
    distance = np.where(union > 0, 1.0 - inter / np.maximum(union, 1), 0.0)
    upper = np.triu_indices(n, 1)
    return distance[:, upper[0], upper[1]].mean(axis=1).astype(float)


def remakes_per_step(log: TransmissionLog, history: AttemptHistory) -> np.ndarray:
    """Per step, attempts of a pair the agent had received, at an earlier step, in a
    delivered memory of a success (the game's ``remake_fraction`` counter)."""
    cols = log.columns()
    first: dict[tuple[int, int, int], int] = {}
    rows = zip(
        cols["step"], cols["learner"], cols["e1"], cols["e2"], cols["result"], cols["survived"],
        strict=True,
    )  # fmt: skip
    for step, learner, a, b, result, survived in rows:
        if survived and result >= 0:
            key = (int(learner), int(min(a, b)), int(max(a, b)))
            first.setdefault(key, int(step))
    out = np.zeros(history.n_steps)
    for agent, memories in enumerate(history.memories):
        for step, (a, b, _) in enumerate(memories):
            got = first.get((agent, min(a, b), max(a, b)))
            if got is not None and got < step:
                out[step] += 1
    return out


def agent_curves(result: SimResult) -> AgentCurves:
    assert result.history is not None and result.log is not None
    history = result.history
    owned, gained = owned_over_steps(history)
    return AgentCurves(
        coverage=np.asarray(result.curve, dtype=float),
        mean_inventory=owned.sum(axis=2).mean(axis=1).astype(float),
        jaccard=jaccard_over_steps(gained),
        remake_share=remakes_per_step(result.log, history) / max(history.n_agents, 1),
        attempts=history.n_agents * history.n_steps,
    )


def content_counts(result: SimResult) -> ContentCounts:
    assert result.history is not None and result.log is not None
    history, n_steps = result.history, result.history.n_steps
    events = events_of(result.log, history)
    success = events.success

    def per_step(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        w = None if weights is None else weights[mask]
        return np.bincount(events.step[mask], weights=w, minlength=n_steps).astype(float)

    every = np.ones(len(events), dtype=bool)
    seen: set[tuple[int, int, int, int]] = set()
    resent = np.zeros(len(events), dtype=bool)
    recipes = zip(events.learner, events.e1, events.e2, events.result, strict=True)
    for k, (learner, a, b, r) in enumerate(recipes):
        key = (int(learner), int(min(a, b)), int(max(a, b)), int(r))
        resent[k] = key in seen
        seen.add(key)
    return ContentCounts(
        delivered=per_step(every),
        successes=per_step(success),
        rarity_sum=per_step(success, 1.0 - events.owner_fraction),
        lacks=per_step(success & events.lacks_result),
        has=np.stack([per_step(events.has == k) for k in range(3)]),
        resends=per_step(resent),
    )


def flow_matrices(log: TransmissionLog, n_agents: int, n_steps: int) -> tuple[np.ndarray, ...]:
    """Delivered memories sender x recipient: successes, failures, and all per third."""
    cols = log.columns()
    keep = cols["survived"]
    teacher, learner = cols["teacher"][keep], cols["learner"][keep]
    success, step = cols["result"][keep] >= 0, cols["step"][keep]
    shape = (n_agents, n_agents)

    def count(mask: np.ndarray) -> np.ndarray:
        out = np.zeros(shape)
        np.add.at(out, (teacher[mask], learner[mask]), 1)
        return out

    window = window_of(step, n_steps)
    thirds = np.stack([count(window == w) for w in range(3)])
    return count(success), count(~success), thirds


def step_metrics(record: StepLogs) -> dict[str, tuple[str, tuple[float | None, ...]]]:
    """Each kept metric's numeric value after every step (None where it gave none)."""
    return {
        name: (text, tuple(step.get(name) for step in record.steps))
        for name, text in record.described.items()
    }


@dataclass(frozen=True)
class PortraitTask:
    """One seed of a portrait: the protocol (logged, its metrics after every step), the
    replay of its schedule with random content, and asocial play. Picklable."""

    domain: Domain
    config: SimConfig
    protocol: ProtocolSpec
    seed: int

    def __call__(self) -> SimPortrait:
        record = StepLogs()
        metered = MeteredProtocol(self.protocol, record)
        run = run_simulation
        original = run(self.domain, self.config, metered, self.seed, record_log=True)
        replay = ReplayProtocol(f"{self.protocol.name} (ablated)", original.schedule)
        ablated = run(self.domain, self.config, replay, self.seed, record_log=True)
        asocial = run(
            self.domain, self.config, BaselineProtocol("asocial"), self.seed, record_log=True
        )
        assert original.log is not None and original.history is not None
        n, t = self.config.n_agents, self.config.n_steps
        successes, failures, thirds = flow_matrices(original.log, n, t)
        owned, _ = owned_over_steps(original.history)
        return SimPortrait(
            seed=self.seed,
            flow_successes=successes,
            flow_failures=failures,
            flow_thirds=thirds,
            content=content_counts(original),
            ablation_content=content_counts(ablated),
            inventories=owned.sum(axis=2).T.astype(float),
            agents={
                "protocol": agent_curves(original),
                "ablation": agent_curves(ablated),
                "asocial": agent_curves(asocial),
            },
            metrics=step_metrics(record),
            mechanism=original.mechanism,
            accounting={
                "protocol": original.accounting,
                "ablation": ablated.accounting,
                "asocial": asocial.accounting,
            },
        )


# --- pooled over seeds ------------------------------------------------------------------


@dataclass(frozen=True)
class Portrait:
    """A protocol's portrait over its seeds: plain data, as ``inspect --json`` writes it.
    Matrices are lists of rows (sender) of columns (recipient); means per simulation."""

    name: str
    origin: str  # its file, or "baseline"
    source: str
    docstring: str
    n_agents: int
    n_steps: int
    seeds: tuple[int, ...]
    flow: dict[str, Any]
    content: dict[str, Any]
    agents: dict[str, Any]
    coverage: dict[str, Any]
    metrics: dict[str, Any]
    mechanism: Mechanism
    settings: dict[str, Any] = field(default_factory=dict)
    # {condition: {way: {attempts, group, self, failure, nothing, contribution}}}; None in
    # portraits stored before tpdisc kept it
    accounting: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        extra = {} if self.accounting is None else {"accounting": self.accounting}
        return {
            "name": self.name,
            "origin": self.origin,
            "docstring": self.docstring,
            "source": self.source,
            "n_agents": self.n_agents,
            "n_steps": self.n_steps,
            "seeds": list(self.seeds),
            "settings": self.settings,
            "flow": self.flow,
            "content": self.content,
            "agents": self.agents,
            "coverage": self.coverage,
            "metrics": self.metrics,
            "mechanism": self.mechanism,
            **extra,
        }

    @classmethod
    def from_json(cls, data: Any) -> Portrait:
        """From what :meth:`to_json` wrote. A stored portrait may come from anyone, and a
        report trusts what it reuses: anything else than what a simulation of its own
        settings gives (its numbers finite and in range, every curve and matrix the size
        its agents and steps make) is a ValueError naming the field."""
        _check_portrait(data)
        return cls(
            name=data["name"],
            origin=data["origin"],
            source=data["source"],
            docstring=data["docstring"],
            n_agents=data["n_agents"],
            n_steps=data["n_steps"],
            seeds=tuple(data["seeds"]),
            flow=data["flow"],
            content=data["content"],
            agents=data["agents"],
            coverage=data["coverage"],
            metrics=data["metrics"],
            mechanism=data["mechanism"],
            settings=dict(data["settings"]),
            accounting=data.get("accounting"),
        )


# What a stored portrait may hold: texts of a protocol's size, numbers a game can make.
MAX_PORTRAIT_TEXT = 1_000_000
MAX_PORTRAIT_NUMBER = 1e12
MAX_PORTRAIT_SEEDS = 10_000


def _check_portrait(data: Any) -> None:
    """Raise ValueError unless ``data`` has the shape :meth:`Portrait.to_json` gives."""
    optional = ("accounting",) if isinstance(data, dict) and "accounting" in data else ()
    top = _fields(data, "portrait", (*PORTRAIT_FIELDS, *optional))
    for key in ("name", "origin", "source", "docstring"):
        _check_text(top[key], key, MAX_PORTRAIT_TEXT)
    settings = top["settings"]
    if not isinstance(settings, dict):
        raise ValueError(f"settings: expected an object, got {excerpt(settings)}")
    n, t = top["n_agents"], top["n_steps"]
    for key, value in (("n_agents", n), ("n_steps", t)):
        if not _whole(value) or value < 1 or settings.get(key) != value:
            raise ValueError(f"{key}: expected the settings' own, got {excerpt(value)}")
    seeds = top["seeds"]
    if not (isinstance(seeds, list) and 0 < len(seeds) <= MAX_PORTRAIT_SEEDS):
        raise ValueError(f"seeds: expected a list of seeds, got {excerpt(seeds)}")
    for seed in seeds:
        if not _whole(seed) or seed < 0:
            raise ValueError(f"seeds: expected whole numbers, got {excerpt(seed)}")
    flow = _fields(
        top["flow"], "flow", ("successes", "failures", "thirds", "early_late_similarity")
    )
    _matrix(flow["successes"], "flow.successes", n, n)
    _matrix(flow["failures"], "flow.failures", n, n)
    for label, rows in _fields(flow["thirds"], "flow.thirds", THIRDS).items():
        _matrix(rows, f"flow.thirds.{label}", n, n)
    _numbers([flow["early_late_similarity"]], "flow.early_late_similarity", 1)
    content = _fields(top["content"], "content", CONTENT_PARTS)
    for part, values in content.items():
        series = _fields(values, f"content.{part}", CONTENT)
        for key, value in series.items():
            where = f"content.{part}.{key}"
            _numbers(
                value if part.endswith("per_step") else [value],
                where,
                t if part.endswith("per_step") else 1,
            )
    agents = _fields(top["agents"], "agents", ("inventory_by_agent", *CONDITIONS, "union"))
    _matrix(agents["inventory_by_agent"], "agents.inventory_by_agent", n, t + 1)
    _numbers(agents["union"], "agents.union", t + 1)
    coverage = _fields(top["coverage"], "coverage", CONDITIONS)
    for condition in CONDITIONS:
        where = f"agents.{condition}"
        curves = _fields(agents[condition], where, AGENT_CURVES)
        for key, length in (("mean_inventory", t + 1), ("jaccard", t + 1), ("remake_share", t)):
            _numbers(curves[key], f"{where}.{key}", length)
        _numbers([curves["remake_fraction"]], f"{where}.remake_fraction", 1)
        cover = _fields(coverage[condition], f"coverage.{condition}", ("mean", "sem", "final"))
        _numbers(cover["mean"], f"coverage.{condition}.mean", t + 1)
        _numbers(cover["sem"], f"coverage.{condition}.sem", t + 1)
        _numbers(cover["final"], f"coverage.{condition}.final", len(seeds))
    metrics = top["metrics"]
    if not isinstance(metrics, dict) or len(metrics) > MAX_METRICS:
        raise ValueError(f"metrics: expected at most {MAX_METRICS} metrics, got {excerpt(metrics)}")
    for name, metric in metrics.items():
        _check_text(name, "metrics: a name", MAX_METRIC_TEXT)
        where = f"metrics.{excerpt(name, 40)}"
        fields = _fields(metric, where, ("description", "mean_per_step"))
        _check_text(fields["description"], f"{where}.description", MAX_METRIC_TEXT)
        _numbers(fields["mean_per_step"], f"{where}.mean_per_step", t)
    mechanism = top["mechanism"]
    if not isinstance(mechanism, dict) or len(mechanism) > n:
        raise ValueError(f"mechanism: expected numbers per agent type, got {excerpt(mechanism)}")
    for kind, numbers in mechanism.items():
        _check_text(kind, "mechanism: a type", MAX_METRIC_TEXT)
        values = _fields(numbers, f"mechanism.{excerpt(kind, 40)}", NUMBERS)
        _numbers(list(values.values()), f"mechanism.{excerpt(kind, 40)}", len(NUMBERS))
    if optional:
        ledger = _fields(top["accounting"], "accounting", CONDITIONS)
        for condition in CONDITIONS:
            ways = _fields(ledger[condition], f"accounting.{condition}", WAYS)
            for way in WAYS:
                where = f"accounting.{condition}.{way}"
                cells = _fields(ways[way], where, ACCOUNT_CELLS)
                _numbers(list(cells.values()), where, len(ACCOUNT_CELLS))


PORTRAIT_FIELDS = (
    "name", "origin", "docstring", "source", "n_agents", "n_steps", "seeds", "settings",
    "flow", "content", "agents", "coverage", "metrics", "mechanism",
)  # fmt: skip
CONTENT_PARTS = ("per_step", "whole_game", "ablation_per_step", "ablation_whole_game")
AGENT_CURVES = ("mean_inventory", "jaccard", "remake_share", "remake_fraction")
ACCOUNT_CELLS = ("attempts", *OUTCOMES, "contribution")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fields(value: Any, where: str, names: Sequence[str]) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != set(names):
        raise ValueError(f"{where}: expected the fields {', '.join(names)}, got {excerpt(value)}")
    return value


def _check_text(value: Any, where: str, limit: int) -> None:
    if not isinstance(value, str) or len(value) > limit:
        raise ValueError(f"{where}: expected text of at most {limit:,} characters")


def _numbers(values: Any, where: str, length: int) -> None:
    """``values``: a list of ``length`` finite numbers (or None) a game can make."""
    if not isinstance(values, list) or len(values) != length:
        raise ValueError(f"{where}: expected {length} numbers, got {excerpt(values)}")
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}: expected numbers, got {excerpt(value)}")
        if not -MAX_PORTRAIT_NUMBER <= value <= MAX_PORTRAIT_NUMBER:  # inf, NaN, 10**400
            raise ValueError(f"{where}: {excerpt(value)} is out of range")


def _matrix(rows: Any, where: str, n_rows: int, n_columns: int) -> None:
    if not isinstance(rows, list) or len(rows) != n_rows:
        raise ValueError(f"{where}: expected {n_rows} rows, got {excerpt(rows)}")
    for row in rows:
        _numbers(row, where, n_columns)


def pattern_similarity(a: np.ndarray, b: np.ndarray) -> float | None:
    """Cosine similarity of two flow matrices: 1 when the same pairs carry the same shares
    of the traffic, whatever its volume; None when either carries nothing."""
    x, y = np.ravel(a), np.ravel(b)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm > 0 else None


def _list(values: np.ndarray) -> list[float | None]:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(values, dtype=float)]


def _ratio(num: np.ndarray, den: np.ndarray) -> list[float | None]:
    num, den = np.atleast_1d(num), np.atleast_1d(den)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _list(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan))


def _rows(matrix: np.ndarray) -> list[list[float]]:
    return [[float(v) for v in row] for row in matrix]


def _mean_sem(curves: np.ndarray) -> dict[str, Any]:
    return {
        "mean": _list(curves.mean(axis=0)),
        "sem": _list(np.array([sem(col) for col in curves.T])),
        "final": _list(curves[:, -1]),
    }


def protocol_source(spec: ProtocolSpec) -> tuple[str, str, str]:
    """``(origin, source, docstring)`` of a protocol: its file's text, or a baseline's
    class; the docstring of the module, else of the protocol class."""
    if isinstance(spec, SourceProtocol):
        origin, source = spec.origin, spec.source
    elif isinstance(spec, BaselineProtocol):
        cls = BASELINES[spec.name]
        with PARSING:  # finding a class's source parses its module
            origin, source = "baseline", inspect.getsource(cls)
    else:
        return spec.label, "", ""
    try:
        tree = parse(source)
    except SyntaxError:
        return origin, source, ""
    text = ast.get_docstring(tree)
    if not text:
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        shares = [
            c
            for c in classes
            if any(isinstance(f, ast.FunctionDef) and f.name == "share_memories" for f in c.body)
        ]
        for node in shares or classes:
            text = ast.get_docstring(node)
            if text:
                break
    return origin, source, text or ""


def pool(name: str, spec: ProtocolSpec, config: SimConfig, sims: Sequence[SimPortrait]) -> Portrait:
    """The portrait of ``name`` from its seeds' contributions."""
    k = len(sims)
    origin, source, docstring = protocol_source(spec)
    thirds = np.mean([s.flow_thirds for s in sims], axis=0)
    flow = {
        "successes": _rows(np.mean([s.flow_successes for s in sims], axis=0)),
        "failures": _rows(np.mean([s.flow_failures for s in sims], axis=0)),
        "thirds": {label: _rows(thirds[w]) for w, label in enumerate(THIRDS)},
        "early_late_similarity": pattern_similarity(thirds[0], thirds[2]),
    }
    content_sum = sims[0].content
    ablation_sum = sims[0].ablation_content
    for s in sims[1:]:
        content_sum = content_sum + s.content
        ablation_sum = ablation_sum + s.ablation_content
    content = {
        "per_step": content_sum.ratios(k),
        "whole_game": content_sum.whole_game(k),
        "ablation_per_step": ablation_sum.ratios(k),
        "ablation_whole_game": ablation_sum.whole_game(k),
    }
    agents: dict[str, Any] = {
        "inventory_by_agent": _rows(np.mean([s.inventories for s in sims], axis=0)),
    }
    coverage: dict[str, Any] = {}
    for condition in CONDITIONS:
        curves = [s.agents[condition] for s in sims]
        remakes = np.array([c.remake_share for c in curves])
        jaccard = np.array([c.jaccard for c in curves])
        agents[condition] = {
            "mean_inventory": _list(np.mean([c.mean_inventory for c in curves], axis=0)),
            "jaccard": _list(jaccard.mean(axis=0)),
            "remake_share": _list(remakes.mean(axis=0)),
            # the game's remake_fraction, averaged over simulations as evaluate does
            "remake_fraction": float(remakes.mean()),
        }
        coverage[condition] = _mean_sem(np.array([c.coverage for c in curves]))
    agents["union"] = coverage["protocol"]["mean"]
    metrics: dict[str, Any] = {}
    for metric in dict.fromkeys(m for s in sims for m in s.metrics):
        got = [s.metrics[metric] for s in sims if metric in s.metrics]
        series = np.array(
            [[np.nan if v is None else v for v in values] for _, values in got], dtype=float
        )
        with np.errstate(invalid="ignore"):
            defined = ~np.isnan(series)
            total = np.where(defined, series, 0.0).sum(axis=0)
            count = defined.sum(axis=0)
            mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        metrics[metric] = {"description": got[0][0], "mean_per_step": _list(mean)}
    return Portrait(
        name=name,
        origin=origin,
        source=source,
        docstring=docstring,
        n_agents=config.n_agents,
        n_steps=config.n_steps,
        seeds=tuple(s.seed for s in sims),
        flow=flow,
        content=content,
        agents=agents,
        coverage=coverage,
        metrics=metrics,
        mechanism=mean_mechanism(s.mechanism for s in sims),
        settings=config.to_dict(),
        accounting=accounting_by_condition(sims, coverage["asocial"]["mean"], config.n_agents),
    )


def accounting_by_condition(
    sims: Sequence[SimPortrait], asocial_curve: Sequence[float], n_agents: int
) -> dict[str, Any]:
    """Per condition and way: attempts, outcomes (means per simulation, all agent types
    together) and the way's contribution to the gain over asocial play, whose mean curve
    over the same seeds is ``asocial_curve``."""
    rate = asocial_rate(asocial_curve, n_agents)
    out: dict[str, Any] = {}
    for condition in CONDITIONS:
        accounting = mean_accounting(s.accounting[condition] for s in sims)
        whole = pooled(accounting)
        parts = contributions(accounting, rate)
        out[condition] = {
            way: {
                "attempts": float(sum(whole["attempts_by_step"][way])),
                **{o: float(whole["counts"][way][o]) for o in OUTCOMES},
                "contribution": parts[way],
            }
            for way in WAYS
        }
    return out


def build_portraits(
    domain: Domain,
    config: SimConfig,
    protocols: Sequence[tuple[str, ProtocolSpec]],
    seeds: Sequence[int],
    executor: Executor,
    on_simulation: Callable[[str], None] | None = None,
) -> list[Portrait]:
    """One portrait per ``(name, spec)``, all seeds of all protocols in one batch
    (``on_simulation`` gets the protocol's name as each seed's three games finish)."""
    prepare_simulation(domain, config)
    tasks = [PortraitTask(domain, config, spec, s) for _, spec in protocols for s in seeds]
    # Results come back in task order; progress only needs a label per finished task.
    done = iter([name for name, _ in protocols for _ in seeds])

    def arrived(_: SimPortrait) -> None:
        if on_simulation is not None:
            on_simulation(next(done, ""))

    results = executor.run(tasks, arrived)
    n = len(seeds)
    return [
        pool(name, spec, config, results[k * n : (k + 1) * n])
        for k, (name, spec) in enumerate(protocols)
    ]
