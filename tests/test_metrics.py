"""GLUE metrics checked against scikit-learn and SciPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.stats import accuracy, average_ranks, f1_binary, pearson, spearman
from attnbook.data.glue_metrics import (
    TABLE1_METRIC,
    constant_baselines,
    glue_metrics,
    predictions_from_logits,
    table1_scores,
    task_score,
)

labels = st.lists(st.integers(0, 1), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_accuracy_and_f1_match_sklearn(data):
    gold = np.array(data.draw(labels))
    pred = np.array(data.draw(st.lists(st.integers(0, 1), min_size=len(gold), max_size=len(gold))))
    assert accuracy(pred, gold) == pytest.approx(accuracy_score(gold, pred))
    assert f1_binary(pred, gold) == pytest.approx(f1_score(gold, pred, zero_division=0))
    assert f1_binary(pred, gold, positive=0) == pytest.approx(f1_score(gold, pred, pos_label=0, zero_division=0))


def test_f1_is_zero_when_nothing_is_predicted_positive():
    gold = np.array([1, 1, 0, 1])
    assert f1_binary(np.zeros(4, int), gold) == 0.0
    assert accuracy(np.zeros(4, int), gold) == 0.25


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(-5, 5)), min_size=3, max_size=50))
def test_correlations_match_scipy_with_ties(pairs):
    x = np.array([p[0] for p in pairs], float) / 2.0  # few distinct values: many ties
    y = np.array([p[1] for p in pairs], float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert np.isnan(pearson(x, y)) and np.isnan(spearman(x, y))
        return
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-9)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-9)


def test_average_ranks_match_scipy():
    x = np.random.default_rng(0).integers(0, 6, size=200).astype(float)
    np.testing.assert_allclose(average_ranks(x), stats.rankdata(x))


def test_continuous_scores():
    rng = np.random.default_rng(1)
    gold = rng.uniform(0, 5, 300)
    pred = gold + rng.normal(0, 1.5, 300)
    assert pearson(pred, gold) == pytest.approx(stats.pearsonr(pred, gold)[0])
    assert spearman(pred, gold) == pytest.approx(stats.spearmanr(pred, gold)[0])
    assert 0.3 < pearson(pred, gold) < 0.95


def test_glue_metrics_per_task():
    gold = np.array([1, 0, 1, 1])
    pred = np.array([1, 1, 1, 0])
    assert set(glue_metrics("MRPC", pred, gold)) == {"accuracy", "f1"}
    assert set(glue_metrics("QQP", pred, gold)) == {"accuracy", "f1"}
    assert set(glue_metrics("SST-2", pred, gold)) == {"accuracy"}
    assert set(glue_metrics("STS-B", pred.astype(float), gold.astype(float))) == {"pearson", "spearman"}
    m = glue_metrics("MRPC", pred, gold)
    assert task_score("MRPC", m) == pytest.approx(100 * f1_score(gold, pred))
    assert task_score("RTE", glue_metrics("RTE", pred, gold)) == pytest.approx(50.0)


def test_task_score_uses_pearson_for_stsb():
    assert TABLE1_METRIC["STS-B"] == "pearson"
    assert task_score("STS-B", {"pearson": 0.827, "spearman": 0.1}) == pytest.approx(82.7)
    with pytest.raises(ParameterError):
        task_score("MRPC", {"accuracy": 0.5})


def test_predictions_from_logits():
    logits = np.array([[0.1, 2.0], [3.0, -1.0]])
    assert predictions_from_logits("SST-2", logits).tolist() == [1, 0]
    assert predictions_from_logits("STS-B", np.array([[1.5], [2.5]])).tolist() == [1.5, 2.5]
    assert predictions_from_logits("MNLI-m", np.eye(3)).tolist() == [0, 1, 2]
    with pytest.raises(ParameterError):
        predictions_from_logits("MNLI-m", logits)


def test_bad_inputs():
    with pytest.raises(ParameterError):
        accuracy(np.array([1, 0]), np.array([1]))
    with pytest.raises(EmptyDataError):
        accuracy(np.array([]), np.array([]))


def test_constant_baselines_reproduce_table1_cells():
    mrpc = np.array([0] * 129 + [1] * 279)  # MRPC dev label counts
    base = constant_baselines("MRPC", mrpc)
    assert base["0"] == 0.0 and base["1"] == pytest.approx(81.2, abs=0.05)  # paper: random init + FT, 81.2
    assert accuracy(np.zeros(408, int), mrpc) == pytest.approx(0.316, abs=5e-4)  # paper: pre-trained 0/31.6
    sst = np.array([0] * 428 + [1] * 444)
    assert constant_baselines("SST-2", sst)["0"] == pytest.approx(49.1, abs=0.05)
    rte = np.array([0] * 146 + [1] * 131)
    assert constant_baselines("RTE", rte)["entailment"] == pytest.approx(52.7, abs=0.05)
    assert constant_baselines("STS-B", np.array([1.0, 2.0])) == {}


@pytest.mark.parametrize("task", ["SST-2", "MRPC", "STS-B", "RTE"])
def test_table1_scores_of_many_resamples_are_each_resamples_task_score(task):
    """The vectorised bootstrap score equals task_score(glue_metrics(...)) row by row, degenerate rows included
    (no positive predicted: F1 0; a constant row: Pearson undefined)."""
    from attnbook.data.glue import task_spec
    from attnbook.stats import bootstrap_indices

    rng = np.random.default_rng(3)
    n = 40
    if task_spec(task).is_regression:
        labels, pred = rng.uniform(0, 5, n), rng.uniform(0, 5, n)
        pred[:5] = labels[:5]
    else:
        labels, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    idx = next(iter(bootstrap_indices(n, 300, seed=1)))
    P, G = pred[idx], labels[idx]
    P[0] = 0 if not task_spec(task).is_regression else 1.5  # nothing positive / a constant prediction
    got = table1_scores(task, P, G)
    want = []
    for p_row, g_row in zip(P, G):
        m = glue_metrics(task, p_row, g_row)
        want.append(task_score(task, m) if not np.isnan(list(m.values())[0]) else np.nan)
    np.testing.assert_allclose(got, np.asarray(want, dtype=float), rtol=1e-12, atol=1e-9, equal_nan=True)
    if task == "STS-B":
        assert np.isnan(got[0])
    if task == "MRPC":
        assert got[0] == 0.0
    with pytest.raises(ParameterError):
        table1_scores(task, P[:, :3], G)
