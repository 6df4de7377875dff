"""The arrays empowerment agents share, and their per-process memo."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import TOY
from tpdisc.agents.empowerment.prior.build import Prior
from tpdisc.agents.empowerment.tables import EmpowermentTables, install_tables, shared_tables
from tpdisc.domain.recipes import parse_wordcraft
from tpdisc.domain.variants import VariantSpec, make_domain

GRAPH = parse_wordcraft(TOY, "toy")
N = GRAPH.n_elements


def handmade_prior(n: int = N, k: int = 3) -> Prior:
    """A prior of the right shapes and types, without training one."""
    pairs = n * (n + 1) // 2
    rng = np.random.default_rng(0)
    return Prior(
        n,
        rng.random(pairs).astype(np.float32),
        rng.random(pairs).astype(np.float32),
        GRAPH.children_count.astype(np.float32),
        rng.integers(n, size=(pairs, k)).astype(np.uint16),
        rng.random((pairs, k)).astype(np.float32) / k,
        np.full(pairs, 0.01, dtype=np.float32),
        {},
    )


def test_tables_keep_the_large_arrays_compact_and_widen_the_rest() -> None:
    prior = handmade_prior()
    limited = make_domain(GRAPH, VariantSpec("depth-limited", max_depth=1)).graph
    tables = EmpowermentTables.build(prior, limited)
    assert tables.top_idx is prior.top_idx and tables.top_p is prior.top_p
    for column in (tables.p_success, tables.expect, tables.resid, tables.children_prior):
        assert column.dtype == np.float64
    assert tables.p_success.tolist() == prior.p_success.astype(np.float64).tolist()
    # ground truth from the graph played, the prior's children from the graph it learnt
    assert tables.children_played.tolist() == limited.children_count.tolist()
    assert tables.children_prior.tolist() == GRAPH.children_count.tolist()
    assert tables.pair_lo.size == tables.pair_id.max() + 1 == prior.p_success.size
    assert tables.fingerprint == {}  # a prior not from the store has none


def test_tables_need_a_prior_of_the_same_game() -> None:
    with pytest.raises(ValueError, match="prior covers 3 elements"):
        EmpowermentTables.build(handmade_prior(n=3), GRAPH)


def test_shared_tables_use_the_prior_of_the_current_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toy = parse_wordcraft(TOY, "toy")
    for name in ("first", "second"):
        monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / name))
        tables = shared_tables(toy, toy, "ngram", seed=5)
        assert len(list((tmp_path / name / "priors").glob("prior-*.npz"))) == 1
        # a graph with the same content, another object: the memo's answer
        assert shared_tables(parse_wordcraft(TOY, "toy"), toy, "ngram", seed=5) is tables


def test_installed_tables_are_handed_out_without_building_a_prior(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What benchmarks/fidelity.py swap does: agents of a made-up seed play a modified
    prior (its memo key once lacked the cache folder, and the seed built a real prior)."""
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path))
    tables = EmpowermentTables.build(handmade_prior(), GRAPH)
    install_tables(tables, GRAPH, GRAPH, "ngram", 1234)
    assert shared_tables(GRAPH, GRAPH, "ngram", seed=1234) is tables
    assert not (tmp_path / "priors").exists()


def test_base_rate_success_undoes_the_balanced_training() -> None:
    """success=base-rate: the odds of P(success) scaled by π / (1 − π), π the share of the
    prior's graph's pairs that succeed (not of the graph played)."""
    limited = make_domain(GRAPH, VariantSpec("depth-limited", max_depth=1)).graph
    tables = EmpowermentTables.build(handmade_prior(), limited, GRAPH)
    rate = len(GRAPH.recipes) / (N * (N + 1) // 2)
    assert tables.base_rate == pytest.approx(rate)
    assert len(limited.recipes) != len(GRAPH.recipes)
    p, q = tables.p_success, tables.p_success_base_rate
    np.testing.assert_allclose(q / (1 - q), p / (1 - p) * rate / (1 - rate), rtol=1e-12)
    assert tables.p_success_base_rate is q  # computed once per tables
    # a prior of balanced classes (π = 0.5) would be left as it is
    assert EmpowermentTables.build(handmade_prior(), GRAPH).base_rate == pytest.approx(
        len(GRAPH.recipes) / (N * (N + 1) // 2)
    )
