"""The transmission events of one simulation (SPEC §5, §6) and what they add up to.

A *transmission event* is one delivered memory ``(t, teacher, learner, recipe)``: a memory
a protocol sent that survived the learner's attention bottleneck. The states an event is
judged against are read at the moment of transmission, after step ``t``'s attempts and
before delivery; they are rebuilt from the simulation's
:class:`~tpdisc.sim.log.AttemptHistory`. :func:`tally` reduces one simulation's events to
the sums and counts the behavioural features pool over a protocol's simulations
(:mod:`tpdisc.analysis.features`): small, so a worker sends back a :class:`Tally` instead
of the log, and a search keeps one per simulation it scores (:mod:`tpdisc.sim.records`).

Choices made where §6 leaves room:

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
  inventory grows), new to the population or not. The burst ratio of an agent is ``mean
  outgoing events on discovery steps / mean on other steps``, undefined for an agent with
  no step of either kind or none sent on other steps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from itertools import chain

import numpy as np

from tpdisc.sim.log import AttemptHistory, TransmissionLog


@dataclass(frozen=True, eq=False)
class Deliveries:
    """The delivered memories of one simulation, in the order delivered: one entry per
    memory that passed the bottleneck."""

    step: np.ndarray
    teacher: np.ndarray
    learner: np.ndarray
    made: np.ndarray  # the memory's index in its teacher's list: the step it was made

    @classmethod
    def of_log(cls, log: TransmissionLog) -> Deliveries:
        cols = log.columns()
        keep = cols["survived"]
        return cls(
            *(
                cols[c][keep].astype(np.int64)
                for c in ("step", "teacher", "learner", "memory_index")
            )
        )


@dataclass(frozen=True, eq=False)
class Events:
    """The transmission events of one simulation, one array entry per delivered memory,
    with what the states said at the moment of transmission."""

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


def window_of(step: np.ndarray | int, n_steps: int) -> np.ndarray:
    """The third (0, 1, 2) each 0-based step falls in."""
    return (3 * np.asarray(step)) // max(n_steps, 1)


def attempts_array(history: AttemptHistory) -> np.ndarray:
    """``(agents, steps, 3)``: every agent's attempts ``(e1, e2, result)`` as one array."""
    flat = chain.from_iterable(chain.from_iterable(history.memories))
    count = 3 * history.n_agents * history.n_steps
    return np.fromiter(flat, dtype=np.int64, count=count).reshape(
        history.n_agents, history.n_steps, 3
    )


def acquisition_steps(history: AttemptHistory, attempts: np.ndarray | None = None) -> np.ndarray:
    """``(agents, elements)``: the step each agent first owned each element, -1 for its
    start elements and ``n_steps`` (never, within the game) for the rest. An agent owns
    ``e`` after step ``t``'s attempts exactly when the entry is ``<= t``."""
    if attempts is None:
        attempts = attempts_array(history)
    n_agents, n_steps, n_elements = history.n_agents, history.n_steps, history.n_elements
    out = np.full((n_agents, n_elements), n_steps, dtype=np.int64)
    results = attempts[:, :, 2]
    agent, step = np.nonzero(results >= 0)  # agent by agent, each in step order
    if agent.size:
        # an element entered an inventory at the first success that made it
        owned, first = np.unique(agent * n_elements + results[agent, step], return_index=True)
        out.reshape(-1)[owned] = step[first]
    for i, start in enumerate(history.starts):
        out[i, list(start)] = -1
    return out


def events_of(
    log: TransmissionLog, history: AttemptHistory, acquired: np.ndarray | None = None
) -> Events:
    """The delivered memories of a simulation's log, with the states at transmission."""
    return _events(Deliveries.of_log(log), history, attempts_array(history), acquired)


def _events(
    sent: Deliveries,
    history: AttemptHistory,
    attempts: np.ndarray,
    acquired: np.ndarray | None = None,
) -> Events:
    step, teacher, learner, made = sent.step, sent.teacher, sent.learner, sent.made
    memories = attempts[teacher, made]  # what each delivered memory says
    e1, e2, result = memories[:, 0], memories[:, 1], memories[:, 2]
    if acquired is None:
        acquired = acquisition_steps(history, attempts)
    n_agents, n_steps = history.n_agents, history.n_steps
    has = (acquired[learner, e1] <= step).astype(np.int64) + (acquired[learner, e2] <= step)
    success = result >= 0
    r = np.where(success, result, 0)  # a harmless index for failures, masked below
    lacks = success & (acquired[learner, r] > step)
    owners = (acquired[:, r] <= step[None, :]).sum(axis=0) if n_agents else np.zeros_like(r)
    owner_fraction = np.where(success, owners / max(n_agents, 1), 0.0)
    counts = np.cumsum(attempts[:, :, 2] >= 0, axis=1)  # successes so far, per agent and step
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


def personalization_groups(
    events: Events,
    n_elements: int,
    n_agents: int,
    recipes: tuple[np.ndarray, int] | None = None,
) -> np.ndarray:
    """Per (teacher, step) with at least two learners, the mean pairwise Jaccard distance
    between the sets of recipes the teacher sent each learner.

    Vectorised, as a strong router sends hundreds of thousands of memories per protocol:
    rows are coded as integers, each (sender, learner, recipe) kept once; the pairs of
    learners that share a recipe are found in the rows sorted by (sender, recipe,
    learner); a pair sharing nothing is at distance 1 and needs no row."""
    if not len(events):
        return np.zeros(0)
    n = max(n_agents, 1)
    recipe, k = recipes or _recipe_ids(events, n_elements)
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


def exclusive_groups(
    events: Events,
    n_elements: int,
    n_agents: int,
    recipes: tuple[np.ndarray, int] | None = None,
) -> np.ndarray:
    """Per (recipe, step), 1 / the number of distinct learners that received it."""
    if not len(events):
        return np.zeros(0)
    n = max(n_agents, 1)
    recipe, k = recipes or _recipe_ids(events, n_elements)
    distinct = np.unique((events.step * k + recipe) * n + events.learner)
    _, learners = np.unique(distinct // n, return_counts=True)
    return 1.0 / learners


def synergy_at(acquired: np.ndarray, step: int) -> float | None:
    """Mean pairwise Jaccard distance between inventories after ``step``, start elements
    left out; None with fewer than two agents or a step outside the game. (The numbers of
    :func:`tpdisc.sim.mechanism.jaccard_distance`, pair by pair and added in its order,
    without a set per agent.)"""
    n = acquired.shape[0]
    if step < 0 or n < 2:
        return None
    owned = ((acquired >= 0) & (acquired <= step)).astype(np.int64)
    inter = owned @ owned.T
    sizes = owned.sum(axis=1)
    first, second = np.triu_indices(n, 1)
    union = sizes[first] + sizes[second] - inter[first, second]
    total = 0.0
    for a, b in zip(inter[first, second].tolist(), union.tolist(), strict=True):
        if b:  # two empty sets are the same set: distance 0
            total += 1.0 - a / b
    return total / first.size


def burst_ratios(events: Events, attempts: np.ndarray, acquired: np.ndarray) -> np.ndarray:
    """Per agent: mean outgoing events on steps it gained an element ÷ mean on other
    steps; only the defined ratios (both kinds of step present, a non-zero denominator)."""
    n_agents, n_steps = attempts.shape[:2]
    results = attempts[:, :, 2]
    made = acquired[np.arange(n_agents)[:, None], np.maximum(results, 0)]
    gained = (results >= 0) & (made == np.arange(n_steps)[None, :])
    sent = np.bincount(
        events.teacher * n_steps + events.step, minlength=n_agents * n_steps
    ).reshape(n_agents, n_steps)
    n_gained = gained.sum(axis=1)
    n_other = n_steps - n_gained
    both = (n_gained > 0) & (n_other > 0)
    # means of whole numbers: their sums are exact, as np.mean's of the same numbers
    on_gained = np.where(gained, sent, 0).sum(axis=1)[both] / n_gained[both]
    other = np.where(gained, 0, sent).sum(axis=1)[both] / n_other[both]
    return (on_gained[other > 0] / other[other > 0]).astype(float)


@dataclass(frozen=True)
class Tally:
    """What one simulation's transmission events add up to: every sum and count the 23
    behavioural features take a ratio of when pooled over a protocol's simulations
    (:func:`tpdisc.analysis.features.pool`). Counts are over events unless named
    otherwise; ``k`` indexes the ingredients the learner owns (0, 1, 2); *early* and
    *late* are the first and last third of the steps."""

    events: int
    successes: int
    novel: int  # successes whose result the learner lacks
    targeted: int  # failures of a pair whose two ingredients the learner owns
    has_0: int
    has_1: int
    has_2: int
    actionable_0: int  # owns k ingredients, and the result is a success it lacks
    actionable_1: int
    actionable_2: int
    early: int
    late: int
    early_has_0: int
    early_has_1: int
    early_has_2: int
    late_has_0: int
    late_has_1: int
    late_has_2: int
    personalization_groups: int  # (teacher, step) with two learners or more
    exclusive_groups: int  # (recipe, step)
    burst_agents: int  # agents with a defined burst ratio
    recency: float  # sum of the events' recency
    recency_has_0: float
    recency_has_1: float
    recency_has_2: float
    early_recency: float
    late_recency: float
    rarity: float  # sum over successes of 1 - the fraction of agents owning the result
    success_bias: float  # sum of (1 if a success else 0) - the teacher's success rate
    personalization: float  # sum over the groups above
    exclusive: float
    burst: float  # sum of the defined burst ratios
    synergy_early: float | None  # one simulation's value, None where undefined
    synergy_late: float | None

    @classmethod
    def counts(cls) -> tuple[str, ...]:
        """The whole-number fields, in order."""
        return tuple(f.name for f in fields(cls) if f.type == "int")

    @classmethod
    def sums(cls) -> tuple[str, ...]:
        """The fields that are sums of real numbers, in order."""
        return tuple(f.name for f in fields(cls) if f.type == "float")

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The fields that are one simulation's value, undefined or not."""
        return tuple(f.name for f in fields(cls) if f.type == "float | None")


def _sum(values: np.ndarray) -> float:
    return float(np.sum(values))


def _by_k(mask: np.ndarray, has: np.ndarray) -> Iterator[int]:
    return (int(np.count_nonzero(mask & (has == k))) for k in (0, 1, 2))


def tally(sent: Deliveries, history: AttemptHistory) -> Tally:
    """One simulation's :class:`Tally`, from its deliveries and attempts."""
    attempts = attempts_array(history)
    acquired = acquisition_steps(history, attempts)
    ev = _events(sent, history, attempts, acquired)
    n_steps, n_agents, n_elements = history.n_steps, history.n_agents, history.n_elements
    windows = window_of(np.arange(n_steps), n_steps)
    early_end = int(np.flatnonzero(windows == 0).max(initial=-1))
    late_steps = np.flatnonzero(windows == 2)
    success = ev.success
    recency = ev.recency
    everything = np.ones(len(ev), dtype=bool)
    early, late = ev.window == 0, ev.window == 2
    recipes = _recipe_ids(ev, n_elements) if len(ev) else None
    personal = personalization_groups(ev, n_elements, n_agents, recipes)
    exclusive = exclusive_groups(ev, n_elements, n_agents, recipes)
    burst = burst_ratios(ev, attempts, acquired)
    has_0, has_1, has_2 = _by_k(everything, ev.has)
    actionable_0, actionable_1, actionable_2 = _by_k(ev.lacks_result, ev.has)
    early_has_0, early_has_1, early_has_2 = _by_k(early, ev.has)
    late_has_0, late_has_1, late_has_2 = _by_k(late, ev.has)
    return Tally(
        events=len(ev),
        successes=int(np.count_nonzero(success)),
        novel=int(np.count_nonzero(ev.lacks_result)),
        targeted=int(np.count_nonzero(~success & (ev.has == 2))),
        has_0=has_0,
        has_1=has_1,
        has_2=has_2,
        actionable_0=actionable_0,
        actionable_1=actionable_1,
        actionable_2=actionable_2,
        early=int(np.count_nonzero(early)),
        late=int(np.count_nonzero(late)),
        early_has_0=early_has_0,
        early_has_1=early_has_1,
        early_has_2=early_has_2,
        late_has_0=late_has_0,
        late_has_1=late_has_1,
        late_has_2=late_has_2,
        personalization_groups=int(personal.size),
        exclusive_groups=int(exclusive.size),
        burst_agents=int(burst.size),
        recency=_sum(recency),
        recency_has_0=_sum(recency[ev.has == 0]),
        recency_has_1=_sum(recency[ev.has == 1]),
        recency_has_2=_sum(recency[ev.has == 2]),
        early_recency=_sum(recency[early]),
        late_recency=_sum(recency[late]),
        rarity=_sum(1.0 - ev.owner_fraction[success]),
        success_bias=_sum(success - ev.teacher_success_rate),
        personalization=_sum(personal),
        exclusive=_sum(exclusive),
        burst=_sum(burst),
        synergy_early=synergy_at(acquired, early_end),
        synergy_late=synergy_at(acquired, int(late_steps.max()) if late_steps.size else -1),
    )


def tally_of_log(log: TransmissionLog, history: AttemptHistory) -> Tally:
    """:func:`tally` of a simulation whose whole log was kept."""
    return tally(Deliveries.of_log(log), history)


def deliveries(
    rows: Sequence[tuple[int, int, int]], entries: Sequence[tuple[int, int]]
) -> Deliveries:
    """Deliveries from ``rows`` of (step, learner, memories delivered) and the delivered
    ``(teacher, memory index)`` entries, all of them in order."""
    shape = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=3 * len(rows))
    shape = shape.reshape(-1, 3)
    pairs = np.fromiter(chain.from_iterable(entries), dtype=np.int64, count=2 * len(entries))
    pairs = pairs.reshape(-1, 2)
    return Deliveries(
        step=np.repeat(shape[:, 0], shape[:, 2]),
        teacher=pairs[:, 0],
        learner=np.repeat(shape[:, 1], shape[:, 2]),
        made=pairs[:, 1],
    )
