"""Statistics shared by the chapters (attnbook.stats): intervals checked against known cases."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook import stats


def test_bootstrap_interval_of_a_proportion_is_near_the_exact_one():
    rng = np.random.default_rng(0)
    x = (rng.random(400) < 0.3).astype(float)
    est = stats.ratio_estimate(x, unit="examples", n_resamples=4000, seed=1)
    exact = stats.proportion_interval(int(x.sum()), x.size)
    assert est.value == pytest.approx(x.mean())
    assert est.low == pytest.approx(exact[0], abs=0.012) and est.high == pytest.approx(exact[1], abs=0.012)
    assert est.n == 400 and est.unit == "examples"


def test_proportion_interval_edges_and_errors():
    lo, hi = stats.proportion_interval(0, 10)
    assert lo == 0.0 and 0.25 < hi < 0.35  # 1 - 0.025 ** (1 / 10) = 0.308
    assert stats.proportion_interval(10, 10)[1] == 1.0
    with pytest.raises(Exception):
        stats.proportion_interval(11, 10)


def test_ratio_of_sums_resamples_units_not_items():
    num = np.array([[1.0, 0.0], [3.0, 2.0], [2.0, 2.0]])  # per-unit totals of two statistics
    den = np.array([2.0, 4.0, 4.0])
    r = stats.resampled_ratio(num, den, n_resamples=50, seed=0)
    assert r.shape == (50, 2)
    assert np.all(r >= 0) and np.all(r[:, 0] <= 1.0) and np.all(r[:, 0] >= 0.5)


def test_mean_interval_over_seeds():
    e = stats.mean_interval([0.70, 0.72, 0.74])
    assert e.value == pytest.approx(0.72) and e.low < 0.70 and e.high > 0.74 and e.n == 3
    assert not stats.mean_interval([0.7]).has_interval
    assert stats.Estimate(0.5, 0.4, 0.6).scaled(100).text(".0f") == "50 [40, 60]"


def test_mean_interval_bounds():
    e = stats.mean_interval([0.97, 0.99, 1.0], bounds=(0.0, 1.0))
    assert e.high == 1.0 and e.low < 0.97
    same = stats.mean_interval([0.5, 0.5, 0.5])
    assert same.low == same.high == 0.5  # no spread between seeds: a zero-width interval (documented)


def test_estimate_bounds_fall_back_to_the_value():
    from attnbook.stats import Estimate

    assert Estimate(0.5).bounds == (0.5, 0.5) and Estimate(0.5, 0.4, 0.6).bounds == (0.4, 0.6)
