"""Analyses of switched-off heads: paired statistics, word matching, agreement, pruning helpers."""
from __future__ import annotations

import numpy as np

from attnbook.studies.kovaleva import word_match as wm
from attnbook.studies.michel import pruning as mp

from attnbook import stats
import pandas as pd
import pytest
import torch

from attnbook.studies.heads_off import effects as hs
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.glue import GlueSplit, Example, task_spec
from attnbook.data.glue_metrics import f1_binary, pearson
from attnbook.engine.inputs import Batch
from attnbook.engine.sweeps import SweepResult, accuracy, cached_sweep, sweep_single_heads


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


def test_cross_sentence_matches_by_hand():
    #          [CLS] a  b  [SEP] b  a  c  [SEP] pad
    ids = torch.tensor([[101, 5, 6, 102, 6, 5, 7, 102, 0]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1, 0]])
    m = wm.cross_sentence_matches(ids, types, mask, skip_ids=[101, 102, 0])
    expected = {(1, 5), (5, 1), (2, 4), (4, 2)}
    assert {tuple(x) for x in torch.nonzero(m[0]).tolist()} == expected
    # without skipping, [SEP] matches [SEP] across segments
    assert bool(wm.cross_sentence_matches(ids, types, mask)[0, 3, 7])


def test_word_match_share_reducer():
    ids = torch.tensor([[101, 5, 6, 102, 6, 5, 7, 102]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1]])
    mask = torch.ones_like(ids)
    match = wm.cross_sentence_matches(ids, types, mask, skip_ids=[101, 102])
    L = ids.shape[1]
    attn = torch.full((1, 1, 2, L, L), 1.0 / L)  # head 0: uniform
    exact = torch.zeros(L, L)
    for q, k in ((1, 5), (5, 1), (2, 4), (4, 2)):
        exact[q, k] = 1.0
    exact[[0, 3, 6, 7], 0] = 1.0
    attn[0, 0, 1] = exact  # head 1: all attention to the copy
    red = wm.WordMatchShare()
    red.update(attn, match, mask)
    out = red.result()
    assert out["n_queries"] == 4
    assert out["share"][0, 0] == pytest.approx(1.0 / L)
    assert out["share"][0, 1] == pytest.approx(1.0)
    assert out["chance"] == pytest.approx(1.0 / L)
    with pytest.raises(EmptyDataError):
        wm.WordMatchShare().result()


def test_word_match_shares_runs_a_model(tokenizer):
    from conftest import make_tiny_bert

    model = make_tiny_bert(tokenizer, n_layers=2, n_heads=2)
    enc = tokenizer(["the cat sat"], ["the cat ran"], return_tensors="pt")
    batch = Batch.from_mapping(enc)
    out = wm.word_match_shares(model, [batch], wm.skip_token_ids(tokenizer))
    assert out["share"].shape == (2, 2) and out["n_queries"] == 4  # "the" and "cat" in each sentence
    assert np.all((out["share"] >= 0) & (out["share"] <= 1))


def test_rank_agreement_and_safe_share():
    a = np.arange(12.0).reshape(3, 4)
    agree = stats.rank_agreement(a, a * 2 + 1, k=3)
    assert agree["spearman"] == pytest.approx(1.0) and agree["top_k_overlap"] == 1.0
    assert stats.rank_agreement(a, -a, k=3)["spearman"] == pytest.approx(-1.0)
    assert np.isnan(stats.rank_agreement(a, np.ones_like(a))["spearman"])
    with pytest.raises(ParameterError):
        stats.rank_agreement(a, a[:2])
    curve = pd.DataFrame({"share_pruned": [0, 0.1, 0.2, 0.3, 0.4], "score": [90, 89.5, 89.2, 88.0, 89.9]})
    assert mp.largest_safe_share(curve, 90, 1.0) == pytest.approx(0.2)  # stops at the first step beyond tolerance
    assert mp.largest_safe_share(curve, 95, 1.0) == 0.0
    assert mp.curve_area(curve, 0.2) == pytest.approx((90 + 89.5 + 89.2) / 3)


def test_halves_subsets_and_one_head_masks():
    a, b = hs.halves(11, 0)
    assert len(a) == 5 and len(b) == 6 and not set(a) & set(b) and set(a) | set(b) == set(range(11))
    assert np.array_equal(hs.halves(11, 0)[0], a)
    mask = mp.one_head_per_layer_mask([2, 0], 3)
    assert mask.tolist() == [[0, 0, 1], [1, 0, 0]]
    with pytest.raises(ParameterError):
        mp.one_head_per_layer_mask([3], 3)


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


def test_cached_sweep_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    sw = make_sweep(np.random.default_rng(0).normal(size=(2, 5, 2)), np.zeros((5, 2)), np.zeros(5, int), ["x", "y"])
    calls = []

    def compute():
        calls.append(1)
        return sw

    first = cached_sweep({"k": 1}, compute)
    second = cached_sweep({"k": 1}, compute)
    assert len(calls) == 1 and first is sw
    assert np.allclose(second.outputs, sw.outputs) and second.names == ["x", "y"] and second.mode == "mask"


def test_throughput_pool_pads_to_the_longest():
    b = Batch(torch.tensor([[1, 2, 0], [3, 4, 5]]), torch.tensor([[1, 1, 0], [1, 1, 1]]))
    pool = mp.throughput_pool([b, b], 3)
    assert pool["input_ids"].shape == (3, 3)
    assert pool["attention_mask"].sum().item() == 2 + 3 + 2


def test_trivial_score_is_the_constant_predictors_metric():
    gold = np.array([1, 1, 1, 0])
    assert hs.trivial_score("SST-2", gold) == pytest.approx(75.0)
    assert hs.trivial_score("MRPC", gold) == pytest.approx(100 * f1_binary(np.ones(4, int), gold))
    assert hs.trivial_score("STS-B", np.array([0.5, 2.0])) == 0.0
    with pytest.raises(EmptyDataError):
        hs.trivial_score("RTE", np.array([]))
