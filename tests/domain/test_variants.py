"""Domain variants and their reachable-element counts (counted by hand on the toy graph)."""

from __future__ import annotations

import pytest

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import VARIANTS, VariantSpec, make_domain
from tpdisc.errors import ConfigError


def names(graph: RecipeGraph, ids: frozenset[int] | set[int]) -> set[str]:
    return {graph.names[e] for e in ids}


def test_full(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph)
    assert domain.name == "full"
    assert domain.graph is toy_graph
    assert domain.start_sets == (toy_graph.base,)
    # every element but island, which needs itself
    assert len(domain.reachable) == 15
    assert domain.reachable_per_start() == [15]


@pytest.mark.parametrize(
    ("max_depth", "expected"),
    [
        (1, {"steam", "mud", "lava", "pressure", "energy"}),
        (2, {"steam", "mud", "lava", "pressure", "energy", "stone", "obsidian", "brick", "geyser"}),
        (
            3,
            {
                *("steam", "mud", "lava", "pressure", "energy"),
                *("stone", "obsidian", "brick", "geyser", "wall"),
            },
        ),
    ],
)
def test_depth_limited(toy_graph: RecipeGraph, max_depth: int, expected: set[str]) -> None:
    domain = make_domain(toy_graph, VariantSpec("depth-limited", max_depth=max_depth))
    base = {"air", "earth", "fire", "water"}
    assert names(toy_graph, domain.reachable) == base | expected
    # the graph itself is cut: nothing beyond the limit can be made, even by a lucky agent
    made = {r for results in domain.graph.recipes.values() for r in results}
    assert names(toy_graph, made) <= expected
    # ids are kept, so logs stay comparable across variants
    assert domain.graph.names == toy_graph.names


def test_depth_limited_default_is_three(toy_graph: RecipeGraph) -> None:
    assert VariantSpec("depth-limited").max_depth == 3
    assert len(make_domain(toy_graph, VariantSpec("depth-limited")).reachable) == 14


def test_three_item_starts(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph, VariantSpec("3-item"))
    g = toy_graph
    # agent i lacks base element i mod 4
    assert [names(g, set(domain.start_inventory(i))) for i in range(5)] == [
        {"earth", "fire", "water"},
        {"air", "fire", "water"},
        {"air", "earth", "water"},
        {"air", "earth", "fire"},
        {"earth", "fire", "water"},
    ]
    # without air: no pressure, and nothing else is lost (lava + water makes stone)
    # without earth: steam, pressure, energy; without fire: steam, mud, pressure, geyser;
    # without water: lava, pressure, energy, stone (air + lava)
    assert domain.reachable_per_start() == [3 + 10, 3 + 3, 3 + 4, 3 + 4]
    assert len(domain.reachable) == 15
    assert domain.graph is g


def test_heterogeneous_starts(toy_graph: RecipeGraph) -> None:
    domain = make_domain(toy_graph, VariantSpec("heterogeneous"))
    g = toy_graph
    starts = [tuple(sorted(names(g, set(s)))) for s in domain.start_sets]
    assert starts == [
        ("air", "earth"),
        ("air", "fire"),
        ("air", "water"),
        ("earth", "fire"),
        ("earth", "water"),
        ("fire", "water"),
    ]
    # air+earth: pressure; air+fire: pressure, energy; air+water: steam, pressure;
    # earth+fire: lava, energy; earth+water: mud; fire+water: steam, energy
    assert domain.reachable_per_start() == [3, 4, 4, 4, 3, 4]
    assert len(domain.reachable) == 15
    assert domain.start_inventory(7) == domain.start_inventory(1)


@pytest.mark.parametrize("target", [6, 10, 13])
def test_dropout_stops_just_under_target(toy_graph: RecipeGraph, target: int) -> None:
    spec = VariantSpec("dropout", dropout_target=target, dropout_seed=3)
    domain = make_domain(toy_graph, spec)
    reachable = len(domain.reachable)
    assert int(0.9 * target) <= reachable < target
    # a sub-game: only recipes of the full game, base elements untouched
    for pair, results in domain.graph.recipes.items():
        assert set(results) <= set(toy_graph.combine(*pair))
    assert set(toy_graph.base) <= domain.reachable
    assert domain.start_sets == (toy_graph.base,)


def test_dropout_is_seeded(toy_graph: RecipeGraph) -> None:
    def removed(seed: int) -> frozenset[int]:
        domain = make_domain(
            toy_graph, VariantSpec("dropout", dropout_target=10, dropout_seed=seed)
        )
        return toy_graph.reachable(toy_graph.base) - domain.reachable

    assert removed(0) == removed(0)
    assert len({removed(s) for s in range(10)}) > 1


def test_spec_validation() -> None:
    with pytest.raises(ConfigError, match="unknown variant 'deep'; choose from full, "):
        VariantSpec("deep")
    with pytest.raises(ConfigError, match="max_depth must be at least 1, got 0"):
        VariantSpec("depth-limited", max_depth=0)
    with pytest.raises(ConfigError, match="dropout_target must be at least 5, got 2"):
        VariantSpec("dropout", dropout_target=2)
    assert set(VARIANTS) == {"full", "depth-limited", "3-item", "heterogeneous", "dropout"}


def test_real_graph_variants(real_graph: RecipeGraph) -> None:
    full = make_domain(real_graph)
    assert len(full.reachable) == 697
    depths = real_graph.depths(real_graph.base)
    limited = make_domain(real_graph, VariantSpec("depth-limited"))
    assert len(limited.reachable) == sum(d <= 3 for d in depths.values())
    assert len(limited.reachable) < len(full.reachable)
    dropout = make_domain(real_graph, VariantSpec("dropout"))
    assert 270 <= len(dropout.reachable) < 300
