"""Domain variants used to test how protocols generalise beyond the full game."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import ConfigError, unknown

VARIANTS: tuple[str, ...] = ("full", "depth-limited", "3-item", "heterogeneous", "dropout")
# What the reference's game version reached (SPEC §1, §7): its depth-3 game had 86 elements,
# and each of its 3-item start sets reached 587–684. The open graph differs on both.
REFERENCE_DEPTH_REACHABLE = 86
REFERENCE_THREE_ITEM_REACHABLE = (587, 684)


@dataclass(frozen=True)
class VariantSpec:
    """Which variant to play and its parameters (plain data, part of a run's config)."""

    name: str = "full"
    max_depth: int = 3
    dropout_target: int = 300
    dropout_seed: int = 0

    def __post_init__(self) -> None:
        if self.name not in VARIANTS:
            raise ConfigError(unknown("variant", self.name, VARIANTS))
        if self.max_depth < 1:
            raise ConfigError(f"max_depth must be at least 1, got {self.max_depth}")
        if self.dropout_target < 5:
            raise ConfigError(f"dropout_target must be at least 5, got {self.dropout_target}")


@dataclass(frozen=True)
class Domain:
    """A graph to play on and the start inventories, cycled over agents."""

    name: str
    graph: RecipeGraph
    start_sets: tuple[tuple[int, ...], ...]
    # The full game a restricted variant was cut from (None when ``graph`` is the full game):
    # agents' priors learn from it, while ground truth comes from ``graph``.
    source: RecipeGraph | None = None

    def start_inventory(self, agent: int) -> tuple[int, ...]:
        return self.start_sets[agent % len(self.start_sets)]

    @property
    def reachable(self) -> frozenset[int]:
        """Elements the population could reach together, pooling every start set."""
        return self.graph.reachable(set(itertools.chain(*self.start_sets)))

    def reachable_per_start(self) -> list[int]:
        return [len(self.graph.reachable(s)) for s in self.start_sets]


def depth_closest_to(
    graph: RecipeGraph, target: int = REFERENCE_DEPTH_REACHABLE
) -> tuple[int, int]:
    """The depth limit whose game reaches the number of elements closest to ``target``
    (the shallower on a tie), and that number."""
    depths = graph.depths(graph.base)
    best: tuple[int, int] | None = None
    for limit in range(1, max(depths.values()) + 1):
        keep = [e for e, d in depths.items() if d <= limit]
        count = len(graph.restricted_to(keep).reachable(graph.base))
        if best is None or abs(count - target) < abs(best[1] - target):
            best = (limit, count)
    assert best is not None
    return best


def short_start_sets(domain: Domain, graph: RecipeGraph) -> list[tuple[list[str], int]]:
    """Start sets of the 3-item variant reaching far fewer elements than the reference's
    (under half of its least, 587): their names and reachable counts."""
    floor = REFERENCE_THREE_ITEM_REACHABLE[0] // 2
    return [
        ([graph.names[e] for e in start], count)
        for start, count in zip(domain.start_sets, domain.reachable_per_start(), strict=True)
        if count < floor
    ]


def make_domain(graph: RecipeGraph, spec: VariantSpec | None = None) -> Domain:
    """Build the domain of ``spec`` from the full graph."""
    spec = spec or VariantSpec()
    base = graph.base
    if spec.name == "full":
        return Domain("full", graph, (base,))
    if spec.name == "depth-limited":
        depths = graph.depths(base)
        keep = [e for e, d in depths.items() if d <= spec.max_depth]
        return Domain("depth-limited", graph.restricted_to(keep), (base,), source=graph)
    if spec.name == "3-item":
        # Agent i lacks base element i mod 4, so the group holds all four between them
        # while each member needs the others for part of the game.
        starts = tuple(tuple(b for b in base if b != dropped) for dropped in base)
        return Domain("3-item", graph, starts)
    if spec.name == "heterogeneous":
        return Domain("heterogeneous", graph, tuple(itertools.combinations(base, 2)))
    return Domain("dropout", _dropout(graph, spec), (base,), source=graph)


def _dropout(graph: RecipeGraph, spec: VariantSpec) -> RecipeGraph:
    """Remove random non-base elements until fewer than ``dropout_target`` stay reachable.

    Removing one key element (say, stone) can cut hundreds of others off at once, so a
    removal that would leave fewer than 90% of the target is skipped: the variant ends just
    under the target instead of far below it.
    """
    rng = np.random.default_rng(spec.dropout_seed)
    floor = int(0.9 * spec.dropout_target)
    kept = set(range(graph.n_elements))
    reduced = graph
    candidates = [e for e in range(graph.n_elements) if e not in graph.base]
    for e in rng.permutation(candidates):
        trial = graph.restricted_to(kept - {int(e)})
        reachable = len(trial.reachable(graph.base))
        if reachable < floor:
            continue
        kept.discard(int(e))
        reduced = trial
        if reachable < spec.dropout_target:
            break
    return reduced
