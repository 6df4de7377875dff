"""Behavioural features of a protocol's transmissions (SPEC §5, §6): what it sends, to
whom, and when, pooled over its simulations.

Each simulation is reduced to a :class:`~tpdisc.sim.transmissions.Tally` of its
transmission events (the events, and every choice made where §6 leaves room, are defined
in :mod:`tpdisc.sim.transmissions`): in the worker that ran it, or by the search that
scored it (:mod:`tpdisc.sim.records`). :func:`pool` turns a protocol's tallies into its 23
features:

- event features are ratios of sums over the events of all simulations together (a mean
  over all events; slopes: pooled late mean − pooled early mean); personalisation,
  exclusive routing and the burst rate are means over all (teacher, step), (recipe,
  step) and agent groups of all simulations; synergy the mean over simulations
  (undefined with one agent);
- sums of real numbers over simulations are added with :func:`math.fsum` (exactly
  rounded), so a feature does not depend on the order its simulations come in. Before
  the tallies (issue 48) a mean was taken over one array of all the events: the same
  numbers added in another order, so the last bits of some features differ from then
  (docs/analysis.md says by how much).

A feature with no qualifying event is ``None`` (undefined), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tpdisc.sim.game import SimResult
from tpdisc.sim.transmissions import Tally, tally_of_log


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


def extract_result(result: SimResult) -> Tally:
    """The tally of a simulation run with ``tally=True``, or with ``record_log=True``."""
    if result.tally is not None:
        return result.tally
    if result.log is None or result.history is None:
        raise ValueError(
            f"simulation of seed {result.seed} has no tally, nor a transmission log and "
            "attempt history: run it with tally=True or record_log=True (a log streamed "
            "to a file is not enough)"
        )
    return tally_of_log(result.log, result.history)


def _ratio(total: float, count: int) -> float | None:
    return total / count if count else None


def _difference(late: float | None, early: float | None) -> float | None:
    return None if late is None or early is None else late - early


def _mean_defined(values: Iterable[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return math.fsum(defined) / len(defined) if defined else None


def pool(tallies: Sequence[Tally]) -> FeatureValues:
    """The 23 features of one protocol from its simulations' tallies (None where no
    event qualifies), in the order of :data:`FEATURES`."""
    n = {name: sum(getattr(t, name) for t in tallies) for name in Tally.counts()}
    x = {name: math.fsum(getattr(t, name) for t in tallies) for name in Tally.sums()}
    events, successes = n["events"], n["successes"]
    out: FeatureValues = {
        "recency_bias": _ratio(x["recency"], events),
        "rarity_bias": _ratio(x["rarity"], successes),
        "item_novelty": _ratio(n["novel"], successes),
    }
    for k in KS:
        out[f"actionable_has_{k}"] = _ratio(n[f"actionable_{k}"], events)
    out["success_bias"] = _ratio(x["success_bias"], events)
    for k in KS:
        out[f"has_{k}_fraction"] = _ratio(n[f"has_{k}"], events)
    for k in KS:
        out[f"cond_recency_has_{k}"] = _ratio(x[f"recency_has_{k}"], n[f"has_{k}"])
    out["targeted_failure_rate"] = _ratio(n["targeted"], events - successes)
    out["personalization"] = _ratio(x["personalization"], n["personalization_groups"])
    out["exclusive_routing"] = _ratio(x["exclusive"], n["exclusive_groups"])
    out["knowledge_synergy_early"] = _mean_defined(t.synergy_early for t in tallies)
    out["knowledge_synergy_late"] = _mean_defined(t.synergy_late for t in tallies)
    out["discovery_burst_rate"] = _ratio(x["burst"], n["burst_agents"])
    out["slope_recency"] = _difference(
        _ratio(x["late_recency"], n["late"]), _ratio(x["early_recency"], n["early"])
    )
    for k in KS:
        out[f"slope_has_{k}"] = _difference(
            _ratio(n[f"late_has_{k}"], n["late"]), _ratio(n[f"early_has_{k}"], n["early"])
        )
    return {name: out[name] for name in FEATURE_NAMES}


def feature_values(results: Sequence[SimResult]) -> FeatureValues:
    """The 23 features of one protocol, pooled over its simulations (one per seed), each
    run with ``tally=True`` or ``record_log=True``. ``None`` marks a feature no event
    defines."""
    return pool([extract_result(r) for r in results])
