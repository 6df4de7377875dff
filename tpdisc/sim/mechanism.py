"""Mechanism numbers: what the agents of each type did in a game, beyond the coverage.

Per agent type (the type names of the population: ``empowerment``, ``stochastic``,
``llm``), at the end of one simulation:

- ``agents``: how many agents of the type play.
- ``inventory_size``: mean number of elements an agent owns at the end, its start
  elements included; ``inventory_gain``: the same without its start elements.
- ``success_rate``: successful attempts / attempts, over the type's agents pooled. An
  attempt succeeds when the pair has a result, whether or not the agent owned it already.
- ``remake_fraction``: the fraction of attempts whose pair (unordered) the agent had
  received, in an earlier step, in a memory of a success: it re-makes a recipe it was sent.
- ``remake_result_fraction``: the fraction of attempts whose result is an element that had
  been the result of a memory the agent received in an earlier step (by any recipe).
- ``jaccard_distance``: the mean, over pairs of agents of the type, of the Jaccard distance
  ``1 - |A ∩ B| / |A ∪ B|`` between their final inventories *without their start elements*;
  a pair whose two sets are empty contributes 0. ``None`` (JSON null) with fewer than two
  agents of the type.
- ``union_size``: the distinct elements the type's agents own at the end, start elements
  included (with one type only, the final coverage).

"Received" means passed the attention bottleneck (as in ``SimResult.received``); both
remake fractions count over all attempts, failures included, so each is at most the success
rate. An :class:`~tpdisc.sim.evaluate.Evaluation` averages each number over its
simulations (ignoring undefined values).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

# {agent type: {number: value}}; a value is None where it is undefined.
Mechanism = dict[str, dict[str, float | None]]

NUMBERS = (
    "agents",
    "inventory_size",
    "inventory_gain",
    "success_rate",
    "remake_fraction",
    "remake_result_fraction",
    "jaccard_distance",
    "union_size",
)


def jaccard_distance(sets: Sequence[set[int]]) -> float | None:
    """Mean pairwise Jaccard distance of ``sets``; None for fewer than two."""
    if len(sets) < 2:
        return None
    total = 0.0
    pairs = 0
    for a, b in combinations(sets, 2):
        union = len(a | b)
        if union:  # two empty sets are the same set: distance 0
            total += 1.0 - len(a & b) / union
        pairs += 1
    return total / pairs


def summarise(
    kinds: Sequence[str],
    inventories: Sequence[Sequence[int]],
    n_start: Sequence[int],
    attempts: Sequence[int],
    successes: Sequence[int],
    remakes: Sequence[int],
    result_remakes: Sequence[int],
) -> Mechanism:
    """The numbers per type from per-agent end-of-game counts (agent ``i`` is of type
    ``kinds[i]``; its inventory starts with its ``n_start[i]`` start elements)."""
    groups: dict[str, list[int]] = {}
    for i, kind in enumerate(kinds):
        groups.setdefault(kind, []).append(i)
    out: Mechanism = {}
    for kind, ids in groups.items():
        n_attempts = sum(attempts[i] for i in ids)

        def rate(counts: Sequence[int], ids: list[int] = ids, n: int = n_attempts) -> float:
            return sum(counts[i] for i in ids) / n if n else 0.0

        out[kind] = {
            "agents": len(ids),
            "inventory_size": sum(len(inventories[i]) for i in ids) / len(ids),
            "inventory_gain": sum(len(inventories[i]) - n_start[i] for i in ids) / len(ids),
            "success_rate": rate(successes),
            "remake_fraction": rate(remakes),
            "remake_result_fraction": rate(result_remakes),
            "jaccard_distance": jaccard_distance([set(inventories[i][n_start[i] :]) for i in ids]),
            "union_size": len(set().union(*(inventories[i] for i in ids))),
        }
    return out


def mean_mechanism(runs: Iterable[Mechanism]) -> Mechanism:
    """Each number's mean over simulations, per type; None where no simulation defines it."""
    values: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for kind, numbers in run.items():
            per_kind = values.setdefault(kind, {})
            for name, value in numbers.items():
                column = per_kind.setdefault(name, [])
                if value is not None:
                    column.append(value)
    return {
        kind: {name: sum(v) / len(v) if v else None for name, v in numbers.items()}
        for kind, numbers in values.items()
    }
