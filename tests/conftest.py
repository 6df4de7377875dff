"""Shared fixtures: small hand-made recipe graphs, and the real one where configured."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tpdisc.domain.recipes import RecipeGraph, load_recipes, parse_wordcraft

# A toy game: base elements make a few things, which make a few more.
TOY = {
    "entities": {
        "air": {"id": 0, "recipes": []},
        "earth": {"id": 1, "recipes": []},
        "fire": {"id": 2, "recipes": []},
        "water": {"id": 3, "recipes": []},
        "steam": {"id": 4, "recipes": [["fire", "water"], ["air", "water"]]},
        "mud": {"id": 5, "recipes": [["earth", "water"]]},
        "lava": {"id": 6, "recipes": [["earth", "fire"]]},
        "pressure": {"id": 7, "recipes": [["air", "air"]]},
        "energy": {"id": 8, "recipes": [["fire", "fire"], ["air", "fire"]]},
        "stone": {"id": 9, "recipes": [["lava", "water"], ["air", "lava"]]},
        "obsidian": {"id": 10, "recipes": [["lava", "water"]]},
        "brick": {"id": 11, "recipes": [["mud", "fire"], ["stone", "mud"]]},
        "geyser": {"id": 12, "recipes": [["steam", "earth"]]},
        "wall": {"id": 13, "recipes": [["brick", "brick"]]},
        "house": {"id": 14, "recipes": [["wall", "wall"]]},
        "island": {"id": 15, "recipes": [["island", "water"]]},
    }
}


@pytest.fixture
def toy_graph() -> RecipeGraph:
    return parse_wordcraft(TOY, "toy")


@pytest.fixture(scope="session")
def real_graph() -> RecipeGraph:
    path = os.environ.get("TPDISC_RECIPES")
    if not path or not Path(path).is_file():
        pytest.skip(
            "TPDISC_RECIPES is not set to the Little Alchemy 2 file; this test needs the real graph"
        )
    return load_recipes(path)
