"""The book's metrics, ranks, resamplers and p-value corrections against scikit-learn, SciPy and their definitions
(issue 33): the same numbers where the libraries define them, and the edge cases where ours answers and theirs
refuses (kept as they were). The speed side is `make bench` (benchmarks/libraries.py)."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sp
from sklearn.metrics import accuracy_score, f1_score

from attnbook import stats
from attnbook.core.errors import EmptyDataError, ParameterError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import libraries  # noqa: E402

binary = st.lists(st.integers(0, 1), min_size=1, max_size=80)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_accuracy_and_f1_equal_sklearn_exactly(data):
    """Bit for bit, also with nothing positive predicted or in the gold labels (F1 0: ours by definition, sklearn's
    ``zero_division=0``)."""
    gold = np.array(data.draw(binary))
    pred = np.array(data.draw(st.lists(st.integers(0, 1), min_size=len(gold), max_size=len(gold))))
    assert stats.accuracy(pred, gold) == accuracy_score(gold, pred)
    for positive in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = f1_score(gold, pred, pos_label=positive, zero_division=0)
        assert stats.f1_binary(pred, gold, positive) == want


def test_edge_cases_ours_answers_and_sklearn_refuses():
    none = np.zeros(5, int)
    assert stats.f1_binary(none, none) == 0.0 and f1_score(none, none, zero_division=0) == 0.0  # no positives
    assert stats.f1_binary(none, np.ones(5, int), positive=7) == 0.0  # a class nobody uses: 0
    with pytest.raises(ValueError):
        f1_score(np.ones(5, int), none, pos_label=7)
    three = np.array([0, 1, 2, 1])
    assert stats.f1_binary(three, np.array([0, 1, 1, 2])) == 0.5  # F1 of class 1 among three classes
    with pytest.raises(ValueError):
        f1_score(np.array([0, 1, 1, 2]), three)
    with pytest.raises(EmptyDataError):  # sklearn: a plain ValueError
        stats.accuracy(np.array([]), np.array([]))
    with pytest.raises(ParameterError):
        stats.f1_binary(np.array([1, 0]), np.array([1]))


pairs = st.lists(st.tuples(st.integers(-4, 4), st.integers(-4, 4)), min_size=2, max_size=60)


@settings(max_examples=80, deadline=None)
@given(pairs)
def test_correlations_equal_scipy_to_rounding_and_nan_when_constant(p):
    x = np.array([a for a, _ in p], float) / 3.0  # few values: many ties
    y = np.array([b for _, b in p], float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:  # undefined: NaN from both (SciPy adds a ConstantInputWarning)
        assert np.isnan(stats.pearson(x, y)) and np.isnan(libraries.sp_pearson(x, y))
        assert np.isnan(stats.spearman(x, y)) and np.isnan(libraries.sp_spearman(x, y))
        return
    # not bit for bit: SciPy normalises before the dot product, ours after (a few units in the last place)
    assert stats.pearson(x, y) == pytest.approx(libraries.sp_pearson(x, y), abs=1e-12)
    assert stats.spearman(x, y) == pytest.approx(libraries.sp_spearman(x, y), abs=1e-12)


def test_correlation_edge_cases_kept():
    assert np.isnan(stats.pearson([1.0], [2.0]))  # one pair: NaN (SciPy raises)
    with pytest.raises(ValueError):
        sp.pearsonr([1.0], [2.0])
    assert stats.pearson([1.0, 2.0], [2.0, 1.0]) == -1.0
    assert np.isnan(stats.pearson([1e-200, 2e-200, 3e-200], [1, 2, 3]))  # the spread underflows: NaN (SciPy: 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=0, max_size=80))
def test_average_ranks_equal_rankdata_exactly(values):
    x = np.array(values, float)
    np.testing.assert_array_equal(stats.average_ranks(x), sp.rankdata(x))


def test_average_ranks_ravel_and_nan_kept():
    m = np.array([[3.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(stats.average_ranks(m), sp.rankdata(m))  # flattened, like rankdata(axis=None)
    np.testing.assert_array_equal(stats.average_ranks([1.0, np.nan, 2.0]), [1.0, 3.0, 2.0])  # NaN last
    assert np.isnan(sp.rankdata([1.0, np.nan, 2.0])).all()  # SciPy: NaN everywhere


def test_bootstrap_draws_are_scipys_for_the_same_seed():
    assert libraries.same_draws_as_scipy(n=40, n_resamples=450, seed=3)
    assert libraries.same_draws_as_scipy(n=7, n_resamples=200, seed=0)


@pytest.mark.parametrize("shape", [(60,), (60, 5)])
def test_resampled_ratio_equals_scipy_bootstrap_to_rounding(shape):
    rng = np.random.default_rng(2)
    num, den = rng.uniform(0, 1, shape), rng.uniform(1, 2, shape[0])
    ours = stats.resampled_ratio(num, den, n_resamples=300, seed=5)
    theirs, (lo, hi) = libraries.scipy_resampled_ratio(num, den, n_resamples=300, seed=5)
    assert ours.shape == theirs.shape == (300, *shape[1:])
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-14)  # same draws, sums in another order
    lo_ours, hi_ours = stats.percentile_interval(ours)
    np.testing.assert_allclose(lo_ours, lo, rtol=0, atol=1e-14)
    np.testing.assert_allclose(hi_ours, hi, rtol=0, atol=1e-14)


def _by_definition(p: np.ndarray, method: str) -> np.ndarray:
    """Holm (1979), Bonferroni and Benjamini-Hochberg (1995) adjusted p-values, one loop per definition."""
    m, order = len(p), np.argsort(p, kind="stable")
    s = p[order]
    if method == "bonferroni":
        adj = [min(1.0, m * s[i]) for i in range(m)]
    elif method == "holm":
        adj = [min(1.0, max(s[j] * (m - j) for j in range(i + 1))) for i in range(m)]
    else:
        adj = [min(1.0, min(s[j] * m / (j + 1) for j in range(i, m))) for i in range(m)]
    out = np.empty(m)
    out[order] = adj
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.001, 0.01, 0.02, 0.04, 0.2, 0.5, 1.0]) | st.floats(0, 1), max_size=30))
def test_adjust_pvalues_equal_their_definitions_exactly(values):
    p = np.array(values, float)
    for method in ("holm", "bonferroni", "fdr_bh"):
        np.testing.assert_array_equal(stats.adjust_pvalues(p, method), _by_definition(p, method))


def test_library_bench_runs_small_and_renders_rows():
    report = {"metrics": libraries.bench_metrics(calls=2, repeats=1),
              "bootstrap": {**libraries.bench_bootstrap(repeats=1, quick=True, units=100), "same_draws": True},
              "multitest": {"error": "statsmodels is not installed"},
              "conllu": [{"file": "x.conllu", "mib": 1.0, "sentences": 3, "ours_s": 0.1, "library_s": 0.3,
                          "library_default_s": 0.6, "ratio": 3.0, "ratio_default": 6.0, "same_trees": True}]}
    assert report["metrics"]["accuracy_408"]["identical"] and report["metrics"]["ranks_1500"]["identical"]
    assert report["metrics"]["pearson_1500"]["max_diff"] < 1e-12
    rows = libraries.rows(report)
    assert len(rows) == 1 + 7 + 2 + 1
    assert any("3.00x" in m and "ours kept" in m for _, m, _ in rows)
    assert libraries.rows(None) == []
