from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import TOY
from tpdisc.domain.recipes import RecipeGraph, load_recipes, parse_wordcraft
from tpdisc.errors import RecipeDataError


def test_toy_graph_structure(toy_graph: RecipeGraph) -> None:
    g = toy_graph
    assert g.n_elements == 16
    assert [g.names[b] for b in g.base] == ["air", "earth", "fire", "water"]
    water, lava = g.id_of("water"), g.id_of("lava")
    assert {g.names[r] for r in g.combine(lava, water)} == {"stone", "obsidian"}
    assert g.combine(water, lava) == g.combine(lava, water)
    assert g.combine(g.id_of("air"), g.id_of("earth")) == ()
    # lava helps make stone and obsidian: two distinct children
    assert g.children_count[lava] == 2
    # island needs itself: never reachable from the base elements
    assert g.id_of("island") not in g.reachable(g.base)
    assert len(g.reachable(g.base)) == 15


def test_depths(toy_graph: RecipeGraph) -> None:
    d = toy_graph.depths(toy_graph.base)
    name = {toy_graph.names[e]: v for e, v in d.items()}
    assert name["water"] == 0 and name["steam"] == 1 and name["stone"] == 2
    assert name["brick"] == 2  # mud + fire, both within one step
    assert name["wall"] == 3 and name["house"] == 4


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["entities"]["mud"].update(recipes=[["earth"]]),
            "entity 'mud', recipe 0: expected 2 ingredients",
        ),
        (
            lambda d: d["entities"]["mud"].update(recipes=[["earth", "sand"]]),
            "ingredient 'sand' is not an entity",
        ),
        (lambda d: d["entities"].pop("fire"), "ingredient 'fire' is not an entity"),
        (lambda d: d.pop("entities"), "top level must be an object"),
        (lambda d: d["entities"]["mud"].update(recipes="earth+water"), "'recipes' must be a list"),
        (
            lambda d: d["entities"]["mud"].update(recipes=["ew"]),
            "entity 'mud', recipe 0: expected 2 ingredients, got 'ew'",
        ),
        (
            lambda d: d["entities"]["mud"].update(recipes=[["earth", ["water"]]]),
            "entity 'mud', recipe 0: ingredient ['water'] is not an entity",
        ),
        (
            lambda d: d["entities"]["mud"].update(recipes=[[{"name": "earth"}, "water"]]),
            "entity 'mud', recipe 0: ingredient {'name': 'earth'} is not an entity",
        ),
        (lambda d: d["entities"].update(mud=["earth", "water"]), "entity 'mud' must be an object"),
        (lambda d: d.update(entities={}), "'entities' is empty"),
    ],
)
def test_malformed_data_names_the_entry(mutate, message: str) -> None:
    data = json.loads(json.dumps(TOY))
    mutate(data)
    with pytest.raises(RecipeDataError, match=re.escape(message)):
        parse_wordcraft(data, "toy.json")


def test_missing_base_element(tmp_path: Path) -> None:
    data = {"entities": {"air": {"id": 0, "recipes": []}, "earth": {"id": 1, "recipes": []}}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecipeDataError, match=r"base element\(s\) missing: fire, water"):
        load_recipes(path)


def test_bad_json_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(RecipeDataError, match=r"bad\.json: not valid JSON"):
        load_recipes(path)
    with pytest.raises(RecipeDataError, match="cannot read"):
        load_recipes(tmp_path / "nope.json")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"entities": {"caf\xe9": {}}}')
    with pytest.raises(RecipeDataError, match=r"latin\.json: not valid JSON"):
        load_recipes(latin)


def test_real_graph_counts(real_graph: RecipeGraph) -> None:
    assert real_graph.n_elements == 700
    assert len(real_graph.recipes) == 3285
    assert sum(len(r) > 1 for r in real_graph.recipes.values()) == 134
    assert len(real_graph.reachable(real_graph.base)) == 697
    assert real_graph.sha256 == "757422df36f8805b1a56c418e613c6418c905b0956e6f2fb3dff78569933d25d"


def level_closure(graph: RecipeGraph, start: tuple[int, ...]) -> dict[int, int]:
    """Reference depths: level L holds what pairs of levels < L make, and nothing earlier."""
    depth = dict.fromkeys(start, 0)
    level = 0
    while True:
        level += 1
        new = {
            r: level
            for (a, b), results in graph.recipes.items()
            if a in depth and b in depth
            for r in results
            if r not in depth
        }
        if not new:
            return depth
        depth.update(new)


def test_depth_is_shallowest_recipe_whatever_the_visiting_order() -> None:
    # Visiting p (depth 1) finds f = p + p (depth 2) before q (depth 1) is visited, and the
    # recipe p + f -> r comes before p + q -> r: r must still get depth 2, not 3.
    names = ("a", "b", "f", "p", "q", "r")
    a, b, f, p, q, r = range(6)
    recipes = {(a, a): (p,), (b, b): (q,), (p, p): (f,), (f, p): (r,), (p, q): (r,)}
    graph = RecipeGraph(names, recipes, (a, b))
    assert graph.depths(graph.base) == {a: 0, b: 0, p: 1, q: 1, f: 2, r: 2}
    assert graph.depths(graph.base) == level_closure(graph, graph.base)


def test_real_graph_depths_match_level_closure(real_graph: RecipeGraph) -> None:
    assert real_graph.depths(real_graph.base) == level_closure(real_graph, real_graph.base)
