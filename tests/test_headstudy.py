"""What chapters 5 and 6 share about switched-off heads: paired statistics, halves and subsets, cached sweeps,
constant predictors."""
from __future__ import annotations


import numpy as np
import pytest

from attnbook import stats
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.glue import Example, GlueSplit, task_spec
from attnbook.data.glue_metrics import f1_binary, pearson
from attnbook.engine.inputs import Batch
from attnbook.core import cache
from attnbook.engine.sweeps import SweepResult, accuracy, accuracy_points, sweep_layers, sweep_single_heads
from attnbook.studies.heads_off import effects as hs
from tiny_models import Named


def make_sweep(outputs, base, gold, names=None):
    outputs = np.asarray(outputs, dtype=np.float64)
    return SweepResult(
        kind="configs", mode="mask", scores=np.zeros(len(outputs)), baseline_score=0.0, outputs=outputs,
        baseline_outputs=np.asarray(base, dtype=np.float64), gold=np.asarray(gold),
        names=names or [str(i) for i in range(len(outputs))],
    )


def one_hot(pred, k=2):
    return np.eye(k)[np.asarray(pred)]


def test_weighted_scores_equal_the_metric_of_the_resample():
    rng = np.random.default_rng(0)
    n = 40
    gold_c = rng.integers(0, 2, n)
    logits = rng.normal(size=(n, 2))
    gold_r = rng.normal(size=n)
    scores = rng.normal(size=(n, 1)) + gold_r[:, None]
    idx = rng.integers(0, n, size=n)
    w = np.bincount(idx, minlength=n)[None].astype(float)
    pred = logits.argmax(1)
    assert hs.weighted_scores("SST-2", logits, gold_c, w)[0] == pytest.approx(100 * np.mean(pred[idx] == gold_c[idx]))
    assert hs.weighted_scores("MRPC", logits, gold_c, w)[0] == pytest.approx(100 * f1_binary(pred[idx], gold_c[idx]))
    assert hs.weighted_scores("STS-B", scores, gold_r, w)[0] == pytest.approx(100 * pearson(scores[idx, 0], gold_r[idx]))


def test_paired_bootstrap_finds_a_real_gain_and_not_a_null_one():
    n = 200
    gold = np.zeros(n, dtype=int)
    base = one_hot(np.r_[np.zeros(120, int), np.ones(80, int)])  # 60% right
    better = one_hot(np.r_[np.zeros(180, int), np.ones(20, int)])  # 90% right, fixes 60 and breaks none
    same = base.copy()
    table = hs.paired_bootstrap(make_sweep([better, same], base, gold, ["better", "same"]), "SST-2", n_resamples=300)
    assert table.loc[0, "delta"] == pytest.approx(30.0)
    assert table.loc[0, "ci_low"] > 0 and table.loc[0, "p_normal"] < 1e-6 and table.loc[0, "p_mcnemar"] < 1e-6
    assert (table.loc[0, "b"], table.loc[0, "c"]) == (0, 60)
    assert table.loc[1, "delta"] == 0 and table.loc[1, "p_normal"] == 1.0 and table.loc[1, "p_mcnemar"] == 1.0
    held = hs.holm_table(table)
    assert held["test"].iloc[0] == "McNemar"
    assert list(held["significant"]) == [True, False]
    # the same seed gives the same intervals
    again = hs.paired_bootstrap(make_sweep([better, same], base, gold), "SST-2", n_resamples=300)
    assert np.allclose(again["ci_low"], table["ci_low"])


def test_paired_bootstrap_on_a_regression_task_has_no_mcnemar():
    rng = np.random.default_rng(1)
    gold = rng.normal(size=80)
    base = (gold + rng.normal(scale=1.0, size=80))[:, None]
    good = (gold + rng.normal(scale=0.1, size=80))[:, None]
    table = hs.paired_bootstrap(make_sweep([good], base, gold), "STS-B", n_resamples=200)
    assert "p_mcnemar" not in table
    assert table.loc[0, "delta"] == pytest.approx(100 * (pearson(good[:, 0], gold) - pearson(base[:, 0], gold)))
    assert table.loc[0, "delta"] > 0 and table.loc[0, "ci_low"] > 0
    assert hs.holm_table(table)["test"].iloc[0] == "bootstrap (normal)"


def test_random_head_effect_and_extremes():
    d = np.array([[1.0, -2.0], [0.0, 3.0]])
    eff = hs.random_head_effect(d)
    assert eff["mean"] == pytest.approx(0.5) and eff["share_better"] == 0.5 and eff["share_worse"] == 0.25
    assert hs.extreme_heads(d, 2, largest=True) == [(1, 1), (0, 0)]
    assert hs.extreme_heads(d, 1, largest=False) == [(0, 1)]
    with pytest.raises(EmptyDataError):
        hs.random_head_effect(np.array([]))


def test_rank_agreement():
    a = np.arange(12.0).reshape(3, 4)
    agree = stats.rank_agreement(a, a * 2 + 1, k=3)
    assert agree["spearman"] == pytest.approx(1.0) and agree["top_k_overlap"] == 1.0
    assert stats.rank_agreement(a, -a, k=3)["spearman"] == pytest.approx(-1.0)
    assert np.isnan(stats.rank_agreement(a, np.ones_like(a))["spearman"])
    with pytest.raises(ParameterError):
        stats.rank_agreement(a, a[:2])


def test_halves():
    a, b = hs.halves(11, 0)
    assert len(a) == 5 and len(b) == 6 and not set(a) & set(b) and set(a) | set(b) == set(range(11))
    assert np.array_equal(hs.halves(11, 0)[0], a)
    with pytest.raises(ParameterError):
        hs.halves(1, 0)


def test_subset_batches_and_subset_sweep_match_running_on_the_subset():
    from test_sweeps import dev_batches, tiny_classifier

    model = tiny_classifier(n_layers=2, n_heads=2)
    data = [Batch.from_mapping(b) for b in dev_batches(n_batches=2, batch_size=4)]
    keep = np.array([0, 3, 5, 6])
    full = sweep_single_heads(model, data, "mask", accuracy)
    part = sweep_single_heads(model, hs.subset_batches(data, keep), "mask", accuracy)
    derived = hs.subset_sweep(full, keep, accuracy)
    assert np.array_equal(derived.gold, part.gold)
    assert np.allclose(derived.outputs, part.outputs, atol=1e-5)
    assert np.allclose(derived.scores, part.scores) and derived.baseline_score == pytest.approx(part.baseline_score)


def test_dev_batches_keep_labels_with_their_examples(tokenizer):
    exs = [Example("a long positive sentence here", None, 1, 2), Example("bad", None, 0, 3),
           Example("fine movie", None, 1, 4)]
    split = GlueSplit(task_spec("SST-2"), "dev", __import__("pathlib").Path("x"), exs, 3)
    batches = hs.dev_batches(tokenizer, split, batch_size=2)
    texts = [tokenizer.decode(row[row > 0][1:-1]) for b in batches for row in b.inputs["input_ids"]]
    labels = [int(x) for b in batches for x in b.labels]
    assert dict(zip(texts, labels)) == {"bad": 0, "fine movie": 1, "a long positive sentence here": 1}
    assert texts[0] == "bad"  # shortest first


CALLS: list = []


@cache.memoized("test-sweeps")
def _stored_sweep(seed: int) -> SweepResult:
    CALLS.append(seed)
    rng = np.random.default_rng(seed)
    return make_sweep(rng.normal(size=(2, 5, 2)), np.zeros((5, 2)), np.zeros(5, int), ["x", "y"])


def test_a_sweep_result_round_trips_through_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    CALLS.clear()
    first = _stored_sweep(0)
    second = _stored_sweep(0)
    assert CALLS == [0] and isinstance(second, SweepResult) and second.meta.get("cached")
    assert np.allclose(second.outputs, first.outputs) and second.names == ["x", "y"] and second.mode == "mask"




def test_trivial_score_is_the_constant_predictors_metric():
    gold = np.array([1, 1, 1, 0])
    assert hs.trivial_score("SST-2", gold) == pytest.approx(75.0)
    assert hs.trivial_score("MRPC", gold) == pytest.approx(100 * f1_binary(np.ones(4, int), gold))
    assert hs.trivial_score("STS-B", np.array([0.5, 2.0])) == 0.0
    with pytest.raises(EmptyDataError):
        hs.trivial_score("RTE", np.array([]))


def test_switched_off_caches_each_sweep_under_the_classifier_key(tmp_path, monkeypatch):
    from test_sweeps import dev_batches, tiny_classifier

    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    clf = Named(key="clf", model=tiny_classifier(n_layers=2, n_heads=2))
    data = [Batch.from_mapping(b) for b in dev_batches(n_batches=1, batch_size=4)]
    single = hs.switched_off(clf, data, "single_heads", "mask", accuracy)
    direct = sweep_single_heads(clf.model, data, "mask", accuracy)
    assert np.allclose(single.outputs, direct.outputs) and single.kind == "single_heads"
    assert not single.meta.get("cached")
    assert hs.switched_off(clf, data, "single_heads", "mask", accuracy).meta.get("cached")
    # the sweep, the mode, the score and the weights are in the key
    assert not hs.switched_off(clf, data, "single_heads", "disable", accuracy).meta.get("cached")
    layers = hs.switched_off(clf, data, "layers", "mask", accuracy)
    assert not layers.meta.get("cached") and np.allclose(layers.scores, sweep_layers(clf.model, data, "mask").scores)
    assert not hs.switched_off(clf, data, "single_heads", "mask", accuracy_points).meta.get("cached")
    other = Named(key="other", model=clf.model)
    assert not hs.switched_off(other, data, "single_heads", "mask", accuracy).meta.get("cached")
    with pytest.raises(ParameterError):
        hs.switched_off(clf, data, "pairs", "mask", accuracy)

