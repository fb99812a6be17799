"""Clark §5 probes: the formulas, planted signals they must find, baselines, random-init copy, Table 3."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from toy_clark import CAT, STORY, planted_data

from attnbook.data.glove import read_glove
from attnbook.studies.clark import paper, syntax
from attnbook.studies.clark import probe_data as D
from attnbook.studies.clark import probes as P


@pytest.fixture(autouse=True)
def one_thread():
    """Many tiny optimiser steps: one thread avoids thread start-up costs on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def fit(probe, train, lr, epochs=15):
    P.train_probe(probe, train, epochs=epochs, lr=lr, batch_size=16, seed=0, progress=False)
    return probe


def test_attention_only_probe_finds_the_planted_head():
    train, dev = planted_data(200, seed=1), planted_data(60, seed=2)
    torch.manual_seed(0)
    probe = fit(P.AttentionOnlyProbe(4, D.attention_scale(train)), train, P.LEARNING_RATES["attn"])
    assert P.uas(P.predict_heads(probe, dev), dev) > 0.95
    weights = P.attention_weights_table(probe, 1, 4)
    assert weights.loc[0, "label"] == "1-3"  # map 2, 1-based
    assert weights.loc[0, "u_dep_to_head"] > weights.loc[0, "w_head_to_dep"]  # the dependent attends to its head
    raw_w, raw_u = probe.raw_weights()
    assert np.argmax(np.concatenate([raw_w, raw_u])) == 4 + 2


def test_words_probe_uses_the_words_where_attention_alone_cannot():
    train, dev = planted_data(300, seed=3, word_switch=True), planted_data(80, seed=4, word_switch=True)
    std = D.vector_standardizer(train)
    train, dev = std(train), std(dev)
    scale = D.attention_scale(train)
    torch.manual_seed(0)
    words = fit(P.AttentionWordsProbe(4, train.dim, scale), train, P.LEARNING_RATES["attn_words"], epochs=20)
    attn = fit(P.AttentionOnlyProbe(4, scale), train, P.LEARNING_RATES["attn"])
    uas_words = P.uas(P.predict_heads(words, dev), dev)
    uas_attn = P.uas(P.predict_heads(attn, dev), dev)
    assert uas_words > 0.9
    assert uas_words > uas_attn + 0.2


def test_distance_mlp_learns_a_distance_rule():
    data = planted_data(150, seed=5)
    for h in data.heads:  # the head is two to the right, else one to the left
        n = len(h)
        h[:] = [j + 2 if j + 2 < n else j - 1 for j in range(n)]
    torch.manual_seed(0)
    mlp = fit(P.DistanceMLP(data.dim, 16), data, P.LEARNING_RATES["distances_words"])
    assert P.uas(P.predict_heads(mlp, data), data) > 0.95


def test_scores_follow_the_papers_formulas():
    rng = np.random.default_rng(0)
    data = planted_data(3, n_maps=3, dim=2, seed=6)
    (batch,) = D.make_probe_batches(data, 8)
    a, v = batch.alpha.float().numpy(), batch.vectors.numpy()
    only = P.AttentionOnlyProbe(3, alpha_scale=np.array([1.0, 2.0, 0.5]))
    words = P.AttentionWordsProbe(3, 2, alpha_scale=np.array([1.0, 2.0, 0.5]))
    with torch.no_grad():
        for p in list(only.parameters()) + list(words.parameters()):
            p.copy_(torch.from_numpy(rng.normal(size=tuple(p.shape)).astype(np.float32)))
        s_only, s_words = only(batch).numpy(), words(batch).numpy()
    w, u = only.raw_weights()
    sc = np.array([1.0, 2.0, 0.5])
    W, U = words.W.detach().numpy() * sc[:, None], words.U.detach().numpy() * sc[:, None]
    B, _, n, _ = a.shape
    for b in range(B):
        for j in range(n):  # dependent
            for i in range(n):  # candidate head
                x = np.concatenate([v[b, i], v[b, j], [1.0]])
                expect_only = sum(w[k] * a[b, k, i, j] + u[k] * a[b, k, j, i] for k in range(3))
                expect_words = sum((W[k] @ x) * a[b, k, i, j] + (U[k] @ x) * a[b, k, j, i] for k in range(3))
                assert s_only[b, j, i] == pytest.approx(expect_only, rel=1e-4, abs=1e-5)
                assert s_words[b, j, i] == pytest.approx(expect_words, rel=1e-4, abs=1e-5)


def test_right_branching_and_gold_heads():
    heads = D.gold_heads(CAT, 7)
    assert heads.tolist() == [1, 2, -1, 5, 5, 2, 2]
    assert D.gold_heads(CAT, 4).tolist() == [1, 2, -1, -1]  # on's head (mat) was cut
    assert D.gold_heads(CAT, 7, exclude_punct=True)[6] == -1
    data = D.ProbeData([np.zeros((1, 7, 7), np.float16)], [heads], [np.zeros((7, 2), np.float32)], [CAT.words], 1, 1)
    pred = P.right_branching_predictions(data)
    assert pred[0].tolist() == [1, 2, 3, 4, 5, 6, -1]
    assert P.uas(pred, data) == pytest.approx(3 / 6) == pytest.approx(syntax.right_branching_uas([CAT]))


def test_random_init_copy_keeps_embeddings_only(tiny_bert):
    a = P.random_init_copy(tiny_bert, seed=1)
    b = P.random_init_copy(tiny_bert, seed=1)
    c = P.random_init_copy(tiny_bert, seed=2)
    orig = tiny_bert.model.state_dict()
    sa, sb, sc = a.model.state_dict(), b.model.state_dict(), c.model.state_dict()
    for name, tensor in orig.items():
        if name.startswith("embeddings."):
            assert torch.equal(sa[name], tensor)
        elif name.endswith("query.weight"):
            assert not torch.equal(sa[name], tensor)
            assert torch.equal(sa[name], sb[name])
            assert not torch.equal(sa[name], sc[name])
    assert a.fingerprint != tiny_bert.fingerprint
    assert a.model is not tiny_bert.model and a.n_heads == tiny_bert.n_heads


def test_run_probes_end_to_end(tiny_bert, glove):
    train = [CAT, STORY] * 4
    res = P.run_probes(tiny_bert, train, [CAT, STORY], glove=glove, epochs=2, hidden=8, progress=False)
    assert list(res["uas"]) == list(P.TABLE3_NAMES) == list(paper.TABLE3)
    assert all(0.0 <= v <= 100.0 for v in res["uas"].values())
    assert res["uas"]["right_branching"] == pytest.approx(100 * syntax.right_branching_uas([CAT, STORY]))
    # per dev sentence: the same scored words for every probe, right heads adding up to each UAS
    per = res["per_sentence"]
    assert per["scored"].tolist() == [6, 3] and set(per) == {"scored", *res["uas"]}
    for k, v in res["uas"].items():
        assert per[k].shape == (2,) and (per[k] <= per["scored"]).all()
        assert 100 * per[k].sum() / per["scored"].sum() == pytest.approx(v)
    assert per["right_branching"].tolist() == [3, 2]
    assert len(res["weights"]) == tiny_bert.n_layers * tiny_bert.n_heads
    assert all(len(res["losses"][k]) == 2 for k in res["uas"] if k != "right_branching")
    t = paper.table3_frame(res)
    assert list(t.paper_uas) == [26.0, 58.0, 30.0, 61.0, 77.0]
    assert list(P.table3(res).uas) == list(res["uas"].values())
    with pytest.raises(Exception, match="GloVe"):
        P.run_probes(tiny_bert, train, [CAT], epochs=1, progress=False)


@pytest.fixture
def glove(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 1 0 0\ncat 0 1 0\nsat 0 0 1\nmat 1 1 0\nstory 0 1 1\n", encoding="utf-8")
    return read_glove(path)


def test_cached_run_probes_round_trips(tiny_bert, glove, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    train = [CAT, STORY] * 3
    kw = dict(glove=glove, epochs=2, hidden=8, random_init=False, progress=False)
    first = P.cached_run_probes(tiny_bert, train, [CAT, STORY], **kw)
    again = P.cached_run_probes(tiny_bert, train, [CAT, STORY], **kw)
    assert list((tmp_path / "cache" / "probe_results").glob("*.npz"))
    assert first["uas"] == pytest.approx(again["uas"]) and list(again["uas"]) == list(first["uas"])
    assert first["losses"] == again["losses"] and first["info"] == again["info"]
    assert first["weights"].equals(again["weights"])
    assert set(again["per_sentence"]) == set(first["per_sentence"]) == {"scored", *first["uas"]}
    for k, v in first["per_sentence"].items():
        np.testing.assert_array_equal(again["per_sentence"][k], v)
    other = P.cached_run_probes(tiny_bert, train, [CAT, STORY], **{**kw, "epochs": 1})
    assert all(len(v) == 1 for k, v in other["losses"].items() if k != "right_branching")


def test_table3_info_and_top_heads(tiny_bert):
    res = {"uas": {"right_branching": 31.6, "attn": 55.9},
           "info": {"train": {"n_sentences": 60}, "dev": {}, "n_scored_dev": 500, "epochs": 2}}
    t = P.table3(res)
    assert list(t.key) == list(P.TABLE3_NAMES) and list(t.columns) == ["model", "key", "uas"]
    assert P.probe_info(res) == {"train_sentences": 60, "dev_scored_words": 500, "epochs": 2, "glove_oov_dev": None}
    assert P.describe(res) == "trained on 60 sentences for 2 epochs; scored 500 dev words"
    probe = P.AttentionOnlyProbe(4)
    with torch.no_grad():
        probe.u.copy_(torch.tensor([0.0, 3.0, 1.0, 2.0]))
    weights = P.attention_weights_table(probe, 2, 2)
    correct = np.zeros((2, 2, 2, 2), dtype=np.int64)
    correct[0, 0, 1, 0] = 5  # det: head 1-2
    correct[1, 1, 1, 0] = 5  # nsubj: head 2-2
    acc = syntax.HeadAccuracy(["det", "nsubj"], correct, np.array([10, 10]), np.zeros((2, 6), dtype=np.int64))
    top = P.top_heads(weights, acc, n=3)
    assert list(top.label) == ["1-2", "2-2", "2-1"]
    assert list(top["best head at (Table 1)"]) == ["det", "nsubj", ""]
    assert list(top.columns) == ["label", "w_head_to_dep", "u_dep_to_head", "best head at (Table 1)"]


def test_row_peaks_compare_trained_and_random_init_maps(tiny_bert):
    from attnbook.studies.clark.wordmaps import word_map_example

    example = word_map_example(tiny_bert, [CAT], max_tokens=32, deprels=["det"])
    peaks = P.row_peaks(tiny_bert, example, seed=0)
    assert peaks["trained"] == pytest.approx(float(example.word_maps.max(-1).mean()))
    assert set(peaks) == {"trained", "random init"} and 1 / len(example.labels) <= peaks["random init"] <= 1
    assert peaks == P.row_peaks(tiny_bert, example, seed=0)  # seeded
