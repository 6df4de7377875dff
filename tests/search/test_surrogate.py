"""The surrogate: a model of fitness over designs that ranks unscored children."""

from __future__ import annotations

import numpy as np

from tpdisc.search import blocks
from tpdisc.search.surrogate import Surrogate, design_features


def test_features_name_every_choice_and_number() -> None:
    g = blocks.Genome(route="everyone", filters=("rare",), weights=(("success", 2.0),))
    features = design_features(g)
    assert features["route=everyone"] == 1.0 and features["filter=rare"] == 1.0
    assert features["weight=success"] == 2.0 and "route=groups" not in features
    assert features["horizon"] == np.log(g.horizon) and features["n_memories"] == g.n_memories


def test_it_learns_what_pays_and_rates_the_unknown_up() -> None:
    """Fitness that grows with n_memories and drops with a filter: the model ranks unseen
    designs by it, and its ratings are the trees' mean plus their spread."""
    rng = np.random.default_rng(0)
    designs = [blocks.random_genome(rng) for _ in range(120)]
    fitness = [g.n_memories - 5.0 * ("rare" in g.filters) for g in designs]
    model = Surrogate(designs, fitness, seed=1)
    base = blocks.Genome(route="everyone")
    many, few = (blocks.Genome(route="everyone", n_memories=n) for n in (20, 2))
    rare = blocks.Genome(route="everyone", n_memories=20, filters=("rare",))
    ratings = model.rate([many, few, rare, base])
    assert ratings[0] > ratings[3] > ratings[1] and ratings[0] > ratings[2]
    x = model.vectorizer.transform([design_features(many)])
    per_tree = np.array([t.predict(x)[0] for t in model.model.estimators_])
    assert ratings[0] == per_tree.mean() + per_tree.std()


def test_same_seed_same_model() -> None:
    rng = np.random.default_rng(3)
    designs = [blocks.random_genome(rng) for _ in range(40)]
    fitness = list(rng.normal(70, 5, 40))
    probe = [blocks.random_genome(rng) for _ in range(10)]
    a, b = Surrogate(designs, fitness, 7).rate(probe), Surrogate(designs, fitness, 7).rate(probe)
    assert np.array_equal(a, b)
