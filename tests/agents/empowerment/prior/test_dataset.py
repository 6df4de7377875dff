from __future__ import annotations

import numpy as np
import pytest

from tpdisc.agents.empowerment.prior.dataset import make_folds, n_pairs, pair_data, pair_index_table
from tpdisc.domain.recipes import RecipeGraph


def test_pair_index_table_numbers_unordered_pairs() -> None:
    table = pair_index_table(5)
    assert (table == table.T).all()
    lo, hi = np.triu_indices(5)
    assert (table[lo, hi] == np.arange(n_pairs(5))).all()
    assert not table.flags.writeable


def test_pair_data_labels(toy_graph: RecipeGraph) -> None:
    data = pair_data(toy_graph)
    n = toy_graph.n_elements
    assert data.n_pairs == n * (n + 1) // 2 == 136
    assert data.success.sum() == len(toy_graph.recipes)
    assert data.result_pair.size == sum(len(r) for r in toy_graph.recipes.values())
    lava, water = toy_graph.id_of("lava"), toy_graph.id_of("water")
    p = pair_index_table(n)[lava, water]
    results = {toy_graph.names[r] for r in data.result_element[data.result_pair == p]}
    assert results == {"stone", "obsidian"}


def test_folds_partition_and_are_seeded() -> None:
    folds = make_folds(1000, 10, seed=3, validation=0.2)
    tests = np.concatenate([f.test for f in folds])
    assert np.array_equal(np.sort(tests), np.arange(1000))
    for f in folds:
        assert not set(f.train) & set(f.test)
        assert not set(f.validation) & set(f.test)
        assert not set(f.train) & set(f.validation)
        assert f.train.size + f.validation.size + f.test.size == 1000
        assert f.validation.size == round(0.2 * (1000 - f.test.size))
    again = make_folds(1000, 10, seed=3, validation=0.2)
    assert all(np.array_equal(a.test, b.test) for a, b in zip(folds, again, strict=True))
    other = make_folds(1000, 10, seed=4, validation=0.2)
    assert not np.array_equal(folds[0].test, other[0].test)


def test_hiding_removes_labels(toy_graph: RecipeGraph) -> None:
    data = pair_data(toy_graph)
    hidden = np.flatnonzero(data.success)[:3]
    visible = data.hiding(hidden)
    assert not visible.success[hidden].any()
    assert not np.isin(visible.result_pair, hidden).any()
    assert data.success[hidden].all()  # the original is untouched
    visible.check_visible(np.setdiff1d(np.arange(data.n_pairs), hidden))
    with pytest.raises(RuntimeError, match="hidden"):
        visible.check_visible(hidden[:1])
