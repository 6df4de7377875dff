"""Hostile case: reseeding and monkeypatching random and np.random."""

from __future__ import annotations

from tests.sandbox.helpers import asocial, protocol, same_simulation, simulate, source_spec
from tpdisc.domain.recipes import RecipeGraph

RESEED = """
import random
import numpy as np

random.seed(0)
np.random.seed(0)
random.random = lambda: 0.0
random.randrange = lambda *args, **kwargs: 0
np.random.default_rng = lambda *args, **kwargs: None
np.random.seed = lambda *args, **kwargs: None
np.random.SeedSequence = None
"""


def test_the_simulation_is_identical_to_the_asocial_baseline(toy_graph: RecipeGraph) -> None:
    before = [simulate(toy_graph, asocial(), seed) for seed in (0, 1, 2)]
    spec = source_spec(protocol(RESEED, init=RESEED, reach_sys=False))
    for seed, reference in zip((0, 1, 2), before, strict=True):
        assert same_simulation(simulate(toy_graph, spec, seed), reference)
    # This process's generators were never touched: runs after it match runs before it.
    after = [simulate(toy_graph, asocial(), seed) for seed in (0, 1, 2)]
    assert all(same_simulation(a, b) for a, b in zip(before, after, strict=True))
