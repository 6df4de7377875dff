"""The recipe graph of Little Alchemy 2: which unordered pairs of elements yield what."""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tpdisc.errors import RecipeDataError

BASE_ELEMENTS: tuple[str, ...] = ("air", "earth", "fire", "water")

Pair = tuple[int, int]


def pair_key(a: int, b: int) -> Pair:
    """Canonical key of an unordered pair: the smaller id first."""
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class RecipeGraph:
    """Immutable recipe graph over integer element ids ``0..n_elements-1``.

    Ids follow the alphabetical order of element names, so that the same file always
    gives the same ids whatever the order of its entries.
    """

    names: tuple[str, ...]
    recipes: Mapping[Pair, tuple[int, ...]]
    base: tuple[int, ...]
    sha256: str = ""
    index: Mapping[str, int] = field(init=False, repr=False, compare=False)
    children_count: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {name: i for i, name in enumerate(self.names)})
        helps: list[set[int]] = [set() for _ in self.names]
        for (a, b), results in self.recipes.items():
            helps[a].update(results)
            helps[b].update(results)
        counts = np.array([len(s) for s in helps], dtype=np.int64)
        counts.setflags(write=False)
        object.__setattr__(self, "children_count", counts)

    @property
    def n_elements(self) -> int:
        return len(self.names)

    def id_of(self, name: str) -> int:
        try:
            return self.index[name]
        except KeyError:
            raise KeyError(f"unknown element {name!r}") from None

    def combine(self, a: int, b: int) -> tuple[int, ...]:
        """Results of combining ``a`` and ``b`` (empty tuple on failure)."""
        return self.recipes.get(pair_key(a, b), ())

    def depths(self, start: Iterable[int]) -> dict[int, int]:
        """Combination depth of every element reachable from ``start``.

        Depth 0 for the start elements; otherwise one more than the deeper ingredient of
        the shallowest recipe that makes it (a level-by-level closure).
        """
        depth = {e: 0 for e in start}
        by_ingredient: dict[int, list[tuple[Pair, tuple[int, ...]]]] = {}
        for pair, results in self.recipes.items():
            for e in set(pair):
                by_ingredient.setdefault(e, []).append((pair, results))
        frontier = deque(sorted(depth))
        while frontier:
            e = frontier.popleft()
            for (a, b), results in by_ingredient.get(e, ()):
                if a not in depth or b not in depth:
                    continue
                if max(depth[a], depth[b]) > depth[e]:
                    # The other ingredient is deeper and not visited yet: this recipe is
                    # seen again when it is, after every shallower recipe had its turn.
                    continue
                d = depth[e] + 1
                for r in results:
                    if r not in depth:
                        depth[r] = d
                        frontier.append(r)
        return depth

    def reachable(self, start: Iterable[int]) -> frozenset[int]:
        """Every element that can be produced from ``start`` (start included)."""
        return frozenset(self.depths(start))

    def restricted_to(self, keep: Iterable[int]) -> RecipeGraph:
        """The graph with only recipes whose ingredients and results all lie in ``keep``.

        Element ids are kept, so agents, priors and logs stay comparable across variants.
        """
        kept = frozenset(keep)
        recipes: dict[Pair, tuple[int, ...]] = {}
        for pair, results in self.recipes.items():
            if pair[0] in kept and pair[1] in kept:
                inside = tuple(r for r in results if r in kept)
                if inside:
                    recipes[pair] = inside
        return RecipeGraph(self.names, recipes, self.base, self.sha256)


def parse_wordcraft(data: Any, source: str = "<data>", sha256: str = "") -> RecipeGraph:
    """Build a graph from wordcraft JSON: ``{"entities": {name: {"id", "recipes"}}}``."""
    if not isinstance(data, dict) or not isinstance(data.get("entities"), dict):
        raise RecipeDataError(f"{source}: top level must be an object with an 'entities' object")
    entities: dict[str, Any] = data["entities"]
    if not entities:
        raise RecipeDataError(f"{source}: 'entities' is empty")
    names = tuple(sorted(entities))
    index = {name: i for i, name in enumerate(names)}
    recipes: dict[Pair, list[int]] = {}
    for name, entry in entities.items():
        if not isinstance(entry, dict):
            raise RecipeDataError(f"{source}: entity {name!r} must be an object")
        entry_recipes = entry.get("recipes", [])
        if not isinstance(entry_recipes, list):
            raise RecipeDataError(f"{source}: entity {name!r}: 'recipes' must be a list")
        for k, recipe in enumerate(entry_recipes):
            where = f"{source}: entity {name!r}, recipe {k}"
            if not isinstance(recipe, list | tuple) or len(recipe) != 2:
                raise RecipeDataError(f"{where}: expected 2 ingredients, got {recipe!r}")
            for ingredient in recipe:
                if not isinstance(ingredient, str) or ingredient not in index:
                    raise RecipeDataError(f"{where}: ingredient {ingredient!r} is not an entity")
            results = recipes.setdefault(pair_key(index[recipe[0]], index[recipe[1]]), [])
            if index[name] not in results:
                results.append(index[name])
    missing = [b for b in BASE_ELEMENTS if b not in index]
    if missing:
        raise RecipeDataError(f"{source}: base element(s) missing: {', '.join(missing)}")
    frozen = {pair: tuple(sorted(results)) for pair, results in sorted(recipes.items())}
    return RecipeGraph(names, frozen, tuple(index[b] for b in BASE_ELEMENTS), sha256)


def load_recipes(path: str | Path) -> RecipeGraph:
    """Load a wordcraft-format recipe file, with one-line errors for malformed data."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise RecipeDataError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RecipeDataError(f"{path}: not valid JSON ({err})") from None
    return parse_wordcraft(data, str(path), hashlib.sha256(raw).hexdigest())
