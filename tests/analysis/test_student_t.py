"""The t tail and the BH adjustment computed without scipy agree with scipy and statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from tpdisc.analysis.stats import mean_above, welch_greater
from tpdisc.analysis.student_t import benjamini_hochberg, t_sf


@pytest.mark.parametrize("df", [0.5, 1.0, 2.0, 3.7, 9.0, 29.0, 57.3, 400.0, 1e5])
def test_t_tail_matches_scipy_over_the_range_of_t(df: float) -> None:
    for t in np.concatenate([np.linspace(-40, 40, 161), [-1e-9, 0.0, 1e-9, 1e3]]):
        want = float(stats.t.sf(t, df))
        got = t_sf(float(t), df)
        # relative where the tail is small, absolute near the middle
        assert got == pytest.approx(want, rel=1e-9, abs=1e-14), (t, df)


def test_t_tail_edges() -> None:
    assert t_sf(math.inf, 5) == 0.0
    assert t_sf(-math.inf, 5) == 1.0
    assert math.isnan(t_sf(math.nan, 5))
    assert math.isnan(t_sf(1.0, 0.0))
    assert t_sf(0.0, 7.0) == pytest.approx(0.5, abs=1e-15)


def test_welch_and_one_sample_tests_match_scipy() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n, m = rng.integers(2, 40, size=2)
        a = rng.normal(rng.normal(), rng.uniform(0.1, 3), n)
        b = rng.normal(rng.normal(), rng.uniform(0.1, 3), m)
        want = stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
        assert welch_greater(a, b) == pytest.approx(want, rel=1e-8, abs=1e-14)
        value = float(rng.normal())
        want1 = stats.ttest_1samp(a, value, alternative="greater").pvalue
        assert mean_above(a, value) == pytest.approx(want1, rel=1e-8, abs=1e-14)


def test_welch_with_one_constant_sample_matches_scipy() -> None:
    a = np.array([70.0, 71.0, 69.0, 73.0, 72.0])
    b = np.full(6, 70.0)
    want = stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    assert welch_greater(a, b) == pytest.approx(want, rel=1e-9)


def test_benjamini_hochberg_matches_statsmodels() -> None:
    rng = np.random.default_rng(5)
    for size in (1, 2, 7, 56):
        p = rng.uniform(size=size) ** 3
        p[: size // 3] = p[0]  # ties
        want = multipletests(p, method="fdr_bh")[1]
        np.testing.assert_allclose(benjamini_hochberg(p), want, rtol=1e-12)
    assert benjamini_hochberg(np.array([])).size == 0
