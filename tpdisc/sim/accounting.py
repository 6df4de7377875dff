"""Where a protocol's elements come from: every attempt classified by how it was chosen
and by what came of it.

An agent's attempt at a step falls in one of five **ways**, the first that applies:

- ``remake``: the pair is one the agent received earlier in a memory of a success (it
  re-makes a recipe it was sent);
- ``alone``: nothing was usable from others this step (no memory was delivered to it last
  step, so its social inventory is empty): the attempt is the one asocial play would make;
- ``borrowed``: the pair uses an element the agent does not own (which can only come from
  its social inventory);
- ``steered``: the social bias restricted this choice to pairs using a social element, and
  the pair uses one the agent owns (a received memory steered it to its own elements);
- ``anyway``: elements received this step, but a pair of its own elements chosen without
  the bias (what it would have chosen anyway, up to what received memories taught it).

and has one of four **outcomes**: ``group`` (an element nobody in the group had: it adds
one to the coverage), ``self`` (new to the agent only), ``failure``, ``nothing`` (a
success whose result the agent owned). Within a step the game applies the attempts in
agent order, so when two agents make the same new element at once, the first is credited.

Per simulation and agent type the counts sum over the type's agents; the ``group``
outcomes of all ways add up to the coverage gained over the start elements.

**Against asocial play.** The same attempts would have found, at asocial play's rate on the
same seeds, ``Σ_t rate_asocial(t) · attempts_way(t)`` elements, where ``rate_asocial(t)`` is
asocial play's new elements per agent at step ``t`` (from its mean coverage curve). A way's
**contribution** is its ``group`` count minus that; since every agent attempts once a step
in both games, the contributions add up to the protocol's coverage gain over asocial play.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

WAYS = ("remake", "alone", "borrowed", "steered", "anyway")
OUTCOMES = ("group", "self", "failure", "nothing")
REMAKE, ALONE, BORROWED, STEERED, ANYWAY = range(len(WAYS))
GROUP, SELF, FAILURE, NOTHING = range(len(OUTCOMES))

# {agent type: {"counts": {way: {outcome: n}}, "attempts_by_step": {way: [n per step]}}}:
# one simulation's (whole numbers) or the mean over simulations (floats).
Accounting = dict[str, dict[str, Any]]


def summarise(
    kinds: Sequence[str], counts: Sequence[Sequence[int]], by_step: Sequence[Sequence[int]]
) -> Accounting:
    """Per agent type, from per-agent counts (``counts[i][way * 4 + outcome]``) and per-way
    attempts per step (``by_step[t][i]``: agent ``i``'s way at step ``t``)."""
    groups: dict[str, list[int]] = {}
    for i, kind in enumerate(kinds):
        groups.setdefault(kind, []).append(i)
    out: Accounting = {}
    n_outcomes = len(OUTCOMES)
    for kind, ids in groups.items():
        table = {
            way: {
                outcome: sum(counts[i][w * n_outcomes + o] for i in ids)
                for o, outcome in enumerate(OUTCOMES)
            }
            for w, way in enumerate(WAYS)
        }
        steps: dict[str, list[int]] = {way: [0] * len(by_step) for way in WAYS}
        for t, ways in enumerate(by_step):
            for i in ids:
                steps[WAYS[ways[i]]][t] += 1
        out[kind] = {"counts": table, "attempts_by_step": steps}
    return out


def mean_accounting(runs: Iterable[Accounting]) -> Accounting:
    """Each count's mean over simulations, per type (a type absent from a simulation is
    averaged over the simulations that have it)."""
    sums: dict[str, list[Accounting]] = {}
    for run in runs:
        for kind, part in run.items():
            sums.setdefault(kind, []).append(part)
    out: Accounting = {}
    for kind, parts in sums.items():
        n = len(parts)
        counts = {
            way: {o: sum(p["counts"][way][o] for p in parts) / n for o in OUTCOMES} for way in WAYS
        }
        steps = {way: _step_sums([p["attempts_by_step"][way] for p in parts], n) for way in WAYS}
        out[kind] = {"counts": counts, "attempts_by_step": steps}
    return out


def pooled(accounting: Accounting) -> dict[str, Any]:
    """All agent types together: {"counts": …, "attempts_by_step": …}."""
    parts = list(accounting.values())
    if len(parts) == 1:
        return parts[0]
    counts = {way: {o: sum(p["counts"][way][o] for p in parts) for o in OUTCOMES} for way in WAYS}
    steps = {way: _step_sums([p["attempts_by_step"][way] for p in parts], 1) for way in WAYS}
    return {"counts": counts, "attempts_by_step": steps}


def _step_sums(series: Sequence[Sequence[float]], divide: int) -> list[float]:
    """Step by step, the sum of ``series`` (shorter ones end early) over ``divide``."""
    length = max((len(s) for s in series), default=0)
    return [sum(s[t] for s in series if t < len(s)) / divide for t in range(length)]


def asocial_rate(curve_mean: Sequence[float], n_agents: int) -> list[float]:
    """New elements per agent at each step of asocial play, from its mean coverage curve
    (``T + 1`` points)."""
    return [(curve_mean[t + 1] - curve_mean[t]) / n_agents for t in range(len(curve_mean) - 1)]


def contributions(accounting: Accounting, rate: Sequence[float]) -> dict[str, float]:
    """Per way, its new elements for the group minus what its attempts would have found at
    asocial play's ``rate`` (see the module's docstring); they add up to the gain."""
    whole = pooled(accounting)
    out = {}
    for way in WAYS:
        attempts = whole["attempts_by_step"][way]
        expected = sum(r * a for r, a in zip(rate, attempts, strict=False))
        out[way] = float(whole["counts"][way]["group"]) - expected
    return out


def check(data: Any, where: str) -> Accounting:
    """``data`` read back from a file as an :data:`Accounting`, or ValueError naming the
    first part that is not."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a mapping of agent types")
    for kind, part in data.items():
        here = f"{where}.{kind}"
        if not isinstance(part, Mapping) or set(part) != {"counts", "attempts_by_step"}:
            raise ValueError(f"{here}: expected 'counts' and 'attempts_by_step'")
        counts, steps = part["counts"], part["attempts_by_step"]
        if not isinstance(counts, Mapping) or set(counts) != set(WAYS):
            raise ValueError(f"{here}.counts: expected the ways {', '.join(WAYS)}")
        if not isinstance(steps, Mapping) or set(steps) != set(WAYS):
            raise ValueError(f"{here}.attempts_by_step: expected the ways {', '.join(WAYS)}")
        for way in WAYS:
            row = counts[way]
            if not isinstance(row, Mapping) or set(row) != set(OUTCOMES):
                raise ValueError(f"{here}.counts.{way}: expected {', '.join(OUTCOMES)}")
            for value in (*row.values(), *steps[way]):
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise ValueError(f"{here}.{way}: expected counts >= 0, got {value!r}")
    return dict(data)
