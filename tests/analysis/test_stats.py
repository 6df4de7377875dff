"""Pairwise one-sided Welch tests between protocols, and significance stars."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from tpdisc.analysis.stats import mean_above, pairwise, stars, versus_reference, welch_greater


@pytest.mark.parametrize(
    ("p", "expected"),
    [(0.0001, "***"), (0.001, "**"), (0.009, "**"), (0.01, "*"), (0.049, "*"), (0.05, "")],
)
def test_stars(p: float, expected: str) -> None:
    assert stars(p) == expected
    assert stars(float("nan")) == ""


def test_welch_greater_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(70, 3, 30), rng.normal(68, 6, 25)
    p = welch_greater(a, b)
    assert p == pytest.approx(
        scipy_stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    )
    assert p + welch_greater(b, a) == pytest.approx(1.0)
    assert welch_greater(a + 10, b) < 1e-6


def test_mean_above_takes_the_protocol_as_the_unit() -> None:
    means = [80.0, 84.0, 77.0, 90.0, 83.0]
    p = mean_above(means, 75.0)
    assert p == pytest.approx(scipy_stats.ttest_1samp(means, 75.0, alternative="greater").pvalue)
    assert mean_above(means, 95.0) > 0.99
    assert np.isnan(mean_above([80.0], 75.0))
    assert (mean_above([80.0, 80.0], 75.0), mean_above([70.0, 70.0], 75.0)) == (0.0, 1.0)


def test_welch_greater_degenerate_samples() -> None:
    # no spread at all: the difference of means decides
    assert welch_greater([9, 9, 9], [4, 4]) == 0.0
    assert welch_greater([4, 4], [9, 9, 9]) == 1.0
    assert welch_greater([4, 4], [4, 4, 4]) == 1.0
    # a single simulation per protocol says nothing about significance
    assert math.isnan(welch_greater([5], [3]))
    assert math.isnan(welch_greater([5, 6, 7], [3]))
    assert math.isnan(welch_greater([], [3, 4]))


def test_pairwise_matrix() -> None:
    rng = np.random.default_rng(1)
    samples = [rng.normal(m, 2, 20).tolist() for m in (60, 65, 75)]
    result = pairwise(["a", "b", "c"], samples)
    assert result.names == ("a", "b", "c")
    assert np.isnan(np.diag(result.p)).all() and np.isnan(np.diag(result.difference)).all()
    off = ~np.eye(3, dtype=bool)
    assert np.allclose(result.difference[off], -result.difference.T[off])
    assert result.difference[2, 0] == pytest.approx(np.mean(samples[2]) - np.mean(samples[0]))
    assert result.p[2, 0] == pytest.approx(welch_greater(samples[2], samples[0]))
    # Benjamini-Hochberg never makes a p-value smaller
    assert (result.p_adjusted[off] >= result.p[off] - 1e-12).all()
    assert stars(result.p_adjusted[2, 0]) == "***" and stars(result.p_adjusted[0, 2]) == ""
    data = json.loads(json.dumps(result.to_json()))
    assert data["names"] == ["a", "b", "c"]
    assert data["p"][0][0] is None and data["p"][2][0] == pytest.approx(result.p[2, 0])


def test_pairwise_with_single_simulations_has_no_p_values() -> None:
    result = pairwise(["a", "b"], [[5.0], [3.0]])
    assert np.isnan(result.p).all() and np.isnan(result.p_adjusted).all()
    assert result.difference[0, 1] == 2.0


def test_versus_reference_reads_the_adjusted_column_of_the_matrix() -> None:
    rng = np.random.default_rng(2)
    samples = [rng.normal(m, 2, 15).tolist() for m in (70, 60, 61)]
    matrix = pairwise(["new", "paired", "asocial"], samples)
    against = versus_reference(matrix, "paired")
    assert against.reference == "paired" and set(against.difference) == {"new", "asocial"}
    assert against.difference["new"] == pytest.approx(np.mean(samples[0]) - np.mean(samples[1]))
    assert against.p["new"] == pytest.approx(welch_greater(samples[0], samples[1]))
    # the same adjustment as pairwise.json: over all six ordered pairs, not these two
    assert against.p_adjusted["new"] == matrix.p_adjusted[0, 1]
    assert against.p_adjusted["new"] > against.p["new"]
    data = json.loads(json.dumps(against.to_json()))
    assert data["protocols"]["new"]["stars"] == "***" and data["reference"] == "paired"
