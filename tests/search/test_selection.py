"""Parent selection by Thompson sampling and contrast solutions outside the lineage."""

from __future__ import annotations

import numpy as np
import pytest

from tpdisc.search.archive import Candidate
from tpdisc.search.selection import (
    contrasts,
    lineage_of,
    normalised_fitness,
    rank_softmax,
    thompson_parent,
)


def pool(fitness: list[float]) -> list[Candidate]:
    return [
        Candidate(
            name=f"p{i}",
            iteration=i,
            attempt=0,
            mode="warm-up",
            status="valid",
            proposer="t",
            fitness_mean=f,
            id=i + 1,
        )
        for i, f in enumerate(fitness)
    ]


def test_normalised_fitness() -> None:
    assert normalised_fitness([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]
    assert normalised_fitness([5.0, 5.0]).tolist() == [0.5, 0.5]


def test_thompson_prefers_fitter_parents_but_explores() -> None:
    protocols = pool([60.0, 65.0, 70.0, 90.0])
    rng = np.random.default_rng(0)
    counts = {c.name: 0 for c in protocols}
    for _ in range(4000):
        counts[thompson_parent(protocols, rng, lam=3.0).name] += 1
    assert counts["p3"] > counts["p2"] > counts["p0"] > 0
    # A larger lambda sharpens the preference for the best.
    sharp = sum(thompson_parent(protocols, rng, lam=30.0).name == "p3" for _ in range(4000))
    assert sharp > counts["p3"]


def test_thompson_needs_a_pool() -> None:
    with pytest.raises(ValueError):
        thompson_parent([], np.random.default_rng(0))


def test_rank_softmax() -> None:
    p = rank_softmax([10.0, 30.0, 20.0], temperature=0.4)
    assert p.sum() == pytest.approx(1.0)
    assert p[1] > p[2] > p[0]
    assert p[1] / p[2] == pytest.approx(np.exp(0.5 / 0.4))  # ranks scaled to 0, 0.5, 1
    ties = rank_softmax([5.0, 5.0, 1.0], temperature=0.4)
    assert ties[0] == pytest.approx(ties[1])
    flat = rank_softmax([10.0, 30.0, 20.0], temperature=100.0)
    assert np.allclose(flat, 1 / 3, atol=0.01)


def test_contrasts_come_from_outside_the_lineage() -> None:
    protocols = pool([50.0, 60.0, 70.0, 80.0, 90.0])
    parent = protocols[4]
    parent.lineage = [4, 3]  # ids of p3 and p2
    rng = np.random.default_rng(1)
    for _ in range(200):
        picked = contrasts(protocols, parent, rng, k=2, temperature=0.4)
        ids = {c.id for c in picked}
        assert len(picked) == 2 and ids <= {1, 2}
    assert contrasts(protocols, parent, rng, k=5) != []  # fewer available than asked
    assert len(contrasts(protocols, parent, rng, k=5)) == 2


def test_lineage_of_child() -> None:
    parent = pool([1.0])[0]
    parent.lineage = [7, 3]
    assert lineage_of(parent) == [1, 7, 3]
    assert lineage_of(None) == []
