"""Candidate pairs over inventory plus social items, and the social bias."""

from __future__ import annotations

import numpy as np

from tpdisc.agents.base import AgentState
from tpdisc.agents.candidates import candidate_pairs, choose_biased


def pairs_of(c) -> list[tuple[int, int]]:
    return list(zip(c.lo.tolist(), c.hi.tolist(), strict=True))


def test_every_unordered_pair_with_self_pairs() -> None:
    state = AgentState.start(10, [4, 0, 7])
    c = candidate_pairs(state, [])
    assert sorted(pairs_of(c)) == [(0, 0), (0, 4), (0, 7), (4, 4), (4, 7), (7, 7)]
    assert c.size == 6 and (c.lo <= c.hi).all()
    assert not c.social.any()


def test_social_items_join_the_pool_once_and_mark_their_pairs() -> None:
    state = AgentState.start(10, [0, 1])
    c = candidate_pairs(state, [5, 1])  # 1 is owned already, 5 is new
    pairs = pairs_of(c)
    assert sorted(pairs) == [(0, 0), (0, 1), (0, 5), (1, 1), (1, 5), (5, 5)]
    social = {p for p, s in zip(pairs, c.social.tolist(), strict=True) if s}
    # a pair is social when it uses a received element, owned or not
    assert social == {(0, 1), (0, 5), (1, 1), (1, 5), (5, 5)}


def test_restricted_keeps_aligned_rows() -> None:
    c = candidate_pairs(AgentState.start(10, [2, 3]), [8])
    mask = c.social
    r = c.restricted(mask)
    assert pairs_of(r) == [p for p, m in zip(pairs_of(c), mask.tolist(), strict=True) if m]
    assert r.social.all()


def test_choose_biased() -> None:
    c = candidate_pairs(AgentState.start(10, [0, 1]), [5])  # 6 pairs, 3 of them social
    everything = np.ones(c.size, dtype=bool)
    social = np.flatnonzero(c.social)
    rng = np.random.default_rng(0)
    assert set(choose_biased(c, everything, 1.0, rng)) == set(social)
    assert set(choose_biased(c, everything, 0.0, rng)) == set(range(c.size))
    # nothing social left to try: every allowed pair
    allowed = ~c.social
    assert set(choose_biased(c, allowed, 1.0, rng)) == set(np.flatnonzero(allowed))
    # nothing allowed at all: every pair
    nothing = np.zeros(c.size, dtype=bool)
    assert set(choose_biased(c, nothing, 1.0, rng)) == set(range(c.size))
    # no social item: the bias does not apply
    plain = candidate_pairs(AgentState.start(10, [0, 1]), [])
    assert set(choose_biased(plain, np.ones(3, dtype=bool), 1.0, rng)) == {0, 1, 2}
