"""Behavioural features of a protocol's transmissions (SPEC §5, §6): what it sends, to
whom, and when, read from the transmission logs of its simulations.

A *transmission event* is one delivered memory ``(t, teacher, learner, recipe)``: a row of
the :class:`~tpdisc.sim.log.TransmissionLog` that survived the learner's attention
bottleneck. The states an event is judged against are read at the moment of transmission,
after step ``t``'s attempts and before delivery; they are rebuilt from the simulation's
:class:`~tpdisc.sim.log.AttemptHistory` (both are recorded by ``run_simulation(...,
record_log=True)``). Choices this module makes where §6 leaves room:

- Steps are 0-based in the game. *Recency* counts them from 1, ``(s + 1) / (t + 1)`` for
  a memory made at step ``s`` and sent at step ``t``: a memory made at the step it is sent
  scores 1, the first memory of a long game close to 0, and step 0 divides by 1, not 0.
  A memory's index in its teacher's memory list is the step it was made (one memory per
  attempt, one attempt per step, received memories never join the learner's own).
- Ownership at step ``t`` includes what the step's own attempts just produced. A learner
  "owns k ingredients" counting slots: a self-pair ``(a, a)`` counts 2 when ``a`` is owned.
  Rarity divides by all ``N`` agents, the teacher (who owns what it made) included, so it
  is at most ``1 - 1/N``. Actionable has-k is a fraction of *all* events, failures
  included, as the has-k fractions are. The teacher's success rate is over its memories
  0..t, the attempt it made at step ``t`` included (its memory list at transmission).
- Only delivered memories count everywhere, personalisation's recipe sets included
  (what each learner got from the teacher, not what the protocol asked to send).
- A *recipe* (personalisation, exclusive routing) is the unordered pair and its recorded
  result: ``(a, b, r)`` and ``(b, a, r)`` are the same recipe.
- *Windows*: step ``t`` of ``T`` is in third ``3t // T`` (0 early, 1 mid, 2 late; 50/50/50
  for 150 steps). Events fall in the window of their transmission step. Knowledge synergy
  reads the inventories after the last step of the early / late window (the late one is
  the end of the game), without each agent's start elements, and a pair of two empty sets
  is at distance 0 (as :func:`tpdisc.sim.mechanism.jaccard_distance`).
- A *discovery* is an attempt that gives its agent an element it did not own (its
  inventory grows), new to the population or not. The burst rate is computed per agent of
  each simulation, ``mean outgoing events on discovery steps / mean on other steps``,
  undefined for an agent with no step of either kind or none sent on other steps; the
  feature is the mean of the defined ratios.
- Pooling over seeds: event features are means over the events of all simulations
  together (slopes: pooled late mean − pooled early mean); personalisation and exclusive
  routing means over all (teacher, step) / (recipe, step) groups of all simulations;
  synergy the mean over simulations (undefined with one agent).

A feature with no qualifying event is ``None`` (undefined), never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tpdisc.sim.game import SimResult
from tpdisc.sim.log import AttemptHistory, TransmissionLog
from tpdisc.sim.mechanism import jaccard_distance


@dataclass(frozen=True)
class Feature:
    """One behavioural feature: its snake-case name, group and a one-line definition."""

    name: str
    group: str  # content, routing, synergy or temporal
    description: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "group": self.group, "description": self.description}


KS = (0, 1, 2)
GROUPS = ("content", "routing", "synergy", "temporal")
OWNED = "the learner owns exactly {k} of the two ingredients (a self-pair counts twice)"

FEATURES: tuple[Feature, ...] = (
    Feature(
        "recency_bias",
        "content",
        "(step the teacher made the memory + 1) / (transmission step + 1); 1 = just made",
    ),
    Feature("rarity_bias", "content", "successes: 1 - fraction of agents owning the result"),
    Feature("item_novelty", "content", "successes: fraction whose result the learner lacks"),
    *(
        Feature(
            f"actionable_has_{k}",
            "content",
            f"fraction of events where {OWNED.format(k=k)} and the result is a success "
            "the learner lacks",
        )
        for k in KS
    ),
    Feature(
        "success_bias",
        "content",
        "1 if a success else 0, minus the teacher's success rate over its memories then",
    ),
    *(
        Feature(f"has_{k}_fraction", "routing", f"fraction of events where {OWNED.format(k=k)}")
        for k in KS
    ),
    *(
        Feature(
            f"cond_recency_has_{k}",
            "routing",
            f"recency bias of the events where {OWNED.format(k=k)}",
        )
        for k in KS
    ),
    Feature(
        "targeted_failure_rate",
        "routing",
        "failures: fraction where the learner owns both ingredients",
    ),
    Feature(
        "personalization",
        "routing",
        "per (teacher, step) with >= 2 learners: mean pairwise Jaccard distance between "
        "the recipe sets each learner got; averaged",
    ),
    Feature(
        "exclusive_routing",
        "routing",
        "per (recipe, step): 1 / number of learners receiving it; averaged",
    ),
    Feature(
        "knowledge_synergy_early",
        "synergy",
        "mean pairwise Jaccard distance between inventories (start elements left out) "
        "at the end of the first third of the steps",
    ),
    Feature(
        "knowledge_synergy_late",
        "synergy",
        "the same at the end of the last third (the end of the game)",
    ),
    Feature(
        "discovery_burst_rate",
        "temporal",
        "an agent's mean outgoing events on steps it gained an element / on other steps",
    ),
    Feature("slope_recency", "temporal", "recency bias, last third - first third"),
    *(
        Feature(f"slope_has_{k}", "temporal", f"has-{k} fraction, last third - first third")
        for k in KS
    ),
)
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
FEATURE_GROUPS: dict[str, str] = {f.name: f.group for f in FEATURES}

FeatureValues = dict[str, float | None]


@dataclass(frozen=True, eq=False)
class Events:
    """The transmission events of one simulation (or several pooled), one array entry per
    delivered memory, with what the states said at the moment of transmission."""

    step: np.ndarray  # transmission step t (0-based)
    teacher: np.ndarray
    learner: np.ndarray
    made: np.ndarray  # the step the teacher made the memory (0-based, <= t)
    e1: np.ndarray
    e2: np.ndarray
    result: np.ndarray  # -1 for a failure
    window: np.ndarray  # 0 early, 1 mid, 2 late (third of the transmission step)
    has: np.ndarray  # ingredients the learner owns, 0..2, counting slots
    lacks_result: np.ndarray  # a success whose result the learner does not own
    owner_fraction: np.ndarray  # fraction of agents owning the result (0 for a failure)
    teacher_success_rate: np.ndarray  # over the teacher's memories 0..t

    def __len__(self) -> int:
        return int(self.step.size)

    @property
    def success(self) -> np.ndarray:
        return self.result >= 0

    @property
    def recency(self) -> np.ndarray:
        return (self.made + 1) / (self.step + 1)

    @classmethod
    def concatenate(cls, parts: Sequence[Events]) -> Events:
        names = cls.__dataclass_fields__
        if not parts:
            empty = {n: np.zeros(0, dtype=float if n.endswith("rate") else int) for n in names}
            empty["lacks_result"] = np.zeros(0, dtype=bool)
            empty["owner_fraction"] = np.zeros(0)
            return cls(**empty)
        return cls(**{n: np.concatenate([getattr(p, n) for p in parts]) for n in names})


@dataclass(frozen=True, eq=False)
class SimulationFeatures:
    """What one simulation contributes to its protocol's features: its events and the
    per-group values that do not pool as events. Small and picklable, so a worker process
    can extract it and send it back instead of the whole log."""

    events: Events
    personalization: np.ndarray  # one value per (teacher, step) with >= 2 learners
    exclusive: np.ndarray  # one value per (recipe, step)
    synergy_early: float | None
    synergy_late: float | None
    burst: np.ndarray  # the defined per-agent burst ratios


def window_of(step: np.ndarray | int, n_steps: int) -> np.ndarray:
    """The third (0, 1, 2) each 0-based step falls in."""
    return (3 * np.asarray(step)) // max(n_steps, 1)


def acquisition_steps(history: AttemptHistory) -> np.ndarray:
    """``(agents, elements)``: the step each agent first owned each element, -1 for its
    start elements and ``n_steps`` (never, within the game) for the rest. An agent owns
    ``e`` after step ``t``'s attempts exactly when the entry is ``<= t``."""
    n_steps = history.n_steps
    out = np.full((history.n_agents, history.n_elements), n_steps, dtype=np.int64)
    for i, (start, memories) in enumerate(zip(history.starts, history.memories, strict=True)):
        if memories:
            results = np.asarray(memories, dtype=np.int64).reshape(-1, 3)[:, 2]
            made = np.flatnonzero(results >= 0)
            # the first success with a result is when it entered the inventory
            elements, first = np.unique(results[made], return_index=True)
            out[i, elements] = made[first]
        out[i, list(start)] = -1
    return out


def success_counts(history: AttemptHistory) -> np.ndarray:
    """``(agents, steps)``: each agent's successes over its attempts up to each step."""
    if history.n_steps == 0:
        return np.zeros((history.n_agents, 0), dtype=np.int64)
    results = np.asarray(history.memories, dtype=np.int64).reshape(
        history.n_agents, history.n_steps, 3
    )[:, :, 2]
    return np.cumsum(results >= 0, axis=1)


def events_of(
    log: TransmissionLog, history: AttemptHistory, acquired: np.ndarray | None = None
) -> Events:
    """The delivered memories of one simulation, with the states at transmission."""
    cols = log.columns()
    keep = cols["survived"]
    step, teacher, learner, made, e1, e2, result = (
        cols[c][keep].astype(np.int64)
        for c in ("step", "teacher", "learner", "memory_index", "e1", "e2", "result")
    )
    if acquired is None:
        acquired = acquisition_steps(history)
    n_agents, n_steps = history.n_agents, history.n_steps
    has = (acquired[learner, e1] <= step).astype(np.int64) + (acquired[learner, e2] <= step)
    success = result >= 0
    r = np.where(success, result, 0)  # a harmless index for failures, masked below
    lacks = success & (acquired[learner, r] > step)
    owners = (acquired[:, r] <= step[None, :]).sum(axis=0) if n_agents else np.zeros_like(r)
    owner_fraction = np.where(success, owners / max(n_agents, 1), 0.0)
    counts = success_counts(history)
    rate = counts[teacher, step] / (step + 1) if step.size else np.zeros(0)
    return Events(
        step=step,
        teacher=teacher,
        learner=learner,
        made=made,
        e1=e1,
        e2=e2,
        result=result,
        window=window_of(step, n_steps),
        has=has,
        lacks_result=lacks,
        owner_fraction=owner_fraction,
        teacher_success_rate=rate.astype(float),
    )


def _recipe_ids(events: Events, n_elements: int) -> tuple[np.ndarray, int]:
    """One small integer per unordered recipe ``({a, b}, r)`` of ``events``, and how many."""
    lo, hi = np.minimum(events.e1, events.e2), np.maximum(events.e1, events.e2)
    keys = (lo * n_elements + hi) * (n_elements + 1) + events.result + 1
    distinct, ids = np.unique(keys, return_inverse=True)
    return ids.reshape(-1), int(distinct.size)


def personalization_groups(events: Events, n_elements: int, n_agents: int) -> np.ndarray:
    """Per (teacher, step) with at least two learners, the mean pairwise Jaccard distance
    between the sets of recipes the teacher sent each learner.

    Vectorised, as a strong router sends hundreds of thousands of memories per protocol:
    rows are coded as integers, each (sender, learner, recipe) kept once; the pairs of
    learners that share a recipe are found in the rows sorted by (sender, recipe,
    learner); a pair sharing nothing is at distance 1 and needs no row."""
    if not len(events):
        return np.zeros(0)
    n = max(n_agents, 1)
    recipe, k = _recipe_ids(events, n_elements)
    sender = events.step * n + events.teacher  # one id per (step, teacher)
    rows = np.unique((sender * n + events.learner) * k + recipe)
    sender_learner, recipe = rows // k, rows % k
    # |S| per (sender, learner), and the learners of each sender
    owners, sizes = np.unique(sender_learner, return_counts=True)
    senders, learners = np.unique(owners // n, return_counts=True)
    shared_by = np.sort(((sender_learner // n) * k + recipe) * n + sender_learner % n)
    run = shared_by // n  # (sender, recipe): rows of one run name one recipe of one sender
    pairs = []
    for d in range(1, n):
        same = run[d:] == run[:-d]
        if not same.any():
            break  # no run is longer than d
        a, b = shared_by[:-d][same], shared_by[d:][same]
        pairs.append((run[:-d][same] // k * n + a % n) * n + b % n)
    total = np.zeros(senders.size)
    if pairs:
        pair, inter = np.unique(np.concatenate(pairs), return_counts=True)
        first, second = pair // n, (pair // (n * n)) * n + pair % n  # (sender, learner) ids
        union = sizes[np.searchsorted(owners, first)] + sizes[np.searchsorted(owners, second)]
        at = np.searchsorted(senders, pair // (n * n))
        np.add.at(total, at, inter / (union - inter))  # similarity of the pairs that share
    several = learners >= 2
    n_pairs = learners[several] * (learners[several] - 1) / 2
    return 1.0 - total[several] / n_pairs


def exclusive_groups(events: Events, n_elements: int, n_agents: int) -> np.ndarray:
    """Per (recipe, step), 1 / the number of distinct learners that received it."""
    if not len(events):
        return np.zeros(0)
    n = max(n_agents, 1)
    recipe, k = _recipe_ids(events, n_elements)
    distinct = np.unique((events.step * k + recipe) * n + events.learner)
    _, learners = np.unique(distinct // n, return_counts=True)
    return 1.0 / learners


def synergy_at(acquired: np.ndarray, step: int) -> float | None:
    """Mean pairwise Jaccard distance between inventories after ``step``, start elements
    left out; None with fewer than two agents or a step outside the game."""
    if step < 0:
        return None
    return jaccard_distance([set(np.flatnonzero((row >= 0) & (row <= step))) for row in acquired])


def burst_ratios(events: Events, history: AttemptHistory, acquired: np.ndarray) -> np.ndarray:
    """Per agent: mean outgoing events on steps it gained an element ÷ mean on other
    steps; only the defined ratios (both kinds of step present, a non-zero denominator)."""
    n_steps = history.n_steps
    ratios = []
    for agent, memories in enumerate(history.memories):
        results = np.asarray(memories, dtype=np.int64).reshape(-1, 3)[:, 2]
        steps = np.arange(n_steps)
        gained = (results >= 0) & (acquired[agent, np.maximum(results, 0)] == steps)
        sent = np.bincount(events.step[events.teacher == agent], minlength=n_steps)
        if gained.all() or not gained.any():
            continue
        other = sent[~gained].mean()
        if other > 0:
            ratios.append(sent[gained].mean() / other)
    return np.asarray(ratios, dtype=float)


def extract(log: TransmissionLog, history: AttemptHistory) -> SimulationFeatures:
    """Everything one simulation contributes to its protocol's features."""
    acquired = acquisition_steps(history)
    events = events_of(log, history, acquired)
    n_steps = history.n_steps
    early_end = int(np.flatnonzero(window_of(np.arange(n_steps), n_steps) == 0).max(initial=-1))
    late = np.flatnonzero(window_of(np.arange(n_steps), n_steps) == 2)
    return SimulationFeatures(
        events=events,
        personalization=personalization_groups(events, history.n_elements, history.n_agents),
        exclusive=exclusive_groups(events, history.n_elements, history.n_agents),
        synergy_early=synergy_at(acquired, early_end),
        synergy_late=synergy_at(acquired, int(late.max()) if late.size else -1),
        burst=burst_ratios(events, history, acquired),
    )


def extract_result(result: SimResult) -> SimulationFeatures:
    """:func:`extract` from a simulation run with ``record_log=True``."""
    if result.log is None or result.history is None:
        raise ValueError(
            f"simulation of seed {result.seed} has no transmission log and attempt history: "
            "run it with record_log=True (a log streamed to a file is not enough)"
        )
    return extract(result.log, result.history)


def _mean(values: np.ndarray) -> float | None:
    return float(np.mean(values)) if values.size else None


def _joined(parts: Iterable[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.zeros(0), *parts])


def _difference(late: float | None, early: float | None) -> float | None:
    return None if late is None or early is None else late - early


def _mean_defined(values: Iterable[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def pool(simulations: Sequence[SimulationFeatures]) -> FeatureValues:
    """The 23 features of one protocol from its simulations' extractions (None where no
    event qualifies), in the order of :data:`FEATURES`."""
    ev = Events.concatenate([s.events for s in simulations])
    recency = ev.recency
    success = ev.success
    early, late = ev.window == 0, ev.window == 2
    out: FeatureValues = {
        "recency_bias": _mean(recency),
        "rarity_bias": _mean(1.0 - ev.owner_fraction[success]),
        "item_novelty": _mean(ev.lacks_result[success]),
    }
    for k in KS:
        out[f"actionable_has_{k}"] = _mean((ev.has == k) & ev.lacks_result)
    out["success_bias"] = _mean(success - ev.teacher_success_rate)
    for k in KS:
        out[f"has_{k}_fraction"] = _mean(ev.has == k)
    for k in KS:
        out[f"cond_recency_has_{k}"] = _mean(recency[ev.has == k])
    out["targeted_failure_rate"] = _mean(ev.has[~success] == 2)
    out["personalization"] = _mean(_joined(s.personalization for s in simulations))
    out["exclusive_routing"] = _mean(_joined(s.exclusive for s in simulations))
    out["knowledge_synergy_early"] = _mean_defined(s.synergy_early for s in simulations)
    out["knowledge_synergy_late"] = _mean_defined(s.synergy_late for s in simulations)
    out["discovery_burst_rate"] = _mean(_joined(s.burst for s in simulations))
    out["slope_recency"] = _difference(_mean(recency[late]), _mean(recency[early]))
    for k in KS:
        out[f"slope_has_{k}"] = _difference(_mean(ev.has[late] == k), _mean(ev.has[early] == k))
    return {name: out[name] for name in FEATURE_NAMES}


def feature_values(results: Sequence[SimResult]) -> FeatureValues:
    """The 23 features of one protocol, pooled over its simulations (one per seed), each
    run with ``record_log=True``. ``None`` marks a feature no event defines."""
    return pool([extract_result(r) for r in results])
