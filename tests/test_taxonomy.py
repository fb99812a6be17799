"""Kovaleva §4.1 Fig. 2: counting the pattern classes over a corpus, and the cached pattern shares."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.engine.models import ClassifierInfo, wrap_model
from attnbook.studies.kovaleva import cnn as C
from attnbook.studies.kovaleva import inputs as I
from attnbook.studies.kovaleva import patterns as PT
from attnbook.studies.kovaleva import taxonomy as T


TEXTS = [("The cat sat on the mat.", "It was happy."), ("A short one.", None),
         ("Paris is the capital of France.", "Berlin is the capital of Germany, and it is large.")]


def test_pattern_counter_counts_every_map(tiny_bert):
    tok = tiny_bert.tokenizer
    examples = [I.encode_text(tok, a, b) for a, b in TEXTS]
    classify = T.rule_classifier(tok.cls_token_id, tok.sep_token_id)
    res = T.pattern_proportions(tiny_bert, examples, classify, batch_size=2)
    assert res["counts"].shape == (tiny_bert.n_layers, tiny_bert.n_heads, len(PT.CLASSES))
    assert res["counts"].sum() == len(examples) * tiny_bert.n_layers * tiny_bert.n_heads
    assert res["fractions"].sum() == pytest.approx(1)
    # the batched rule classifier agrees with classifying each unpadded map on its own
    from attnbook.engine.extract import collect_maps

    maps = collect_maps(tiny_bert, examples)
    expected = np.zeros_like(res["counts"])
    for ex, m in zip(examples, maps):
        for layer in range(m.shape[0]):
            for head in range(m.shape[1]):
                expected[layer, head, PT.CLASS_INDEX[PT.classify_rules(m[layer, head], np.array(ex.token_type_ids))]] += 1
    np.testing.assert_array_equal(res["counts"], expected)


def test_cnn_classifier_in_counter(tiny_bert):
    tok = tiny_bert.tokenizer
    examples = [I.encode_text(tok, a, b) for a, b in TEXTS]
    model = C.PatternCNN(size=16)
    res = T.pattern_proportions(tiny_bert, examples, T.cnn_classifier(model, size=16), batch_size=3)
    assert res["counts"].sum() == len(examples) * tiny_bert.n_layers * tiny_bert.n_heads


def test_flatten_round_trip_and_errors():
    nested = {"cnn": {"counts": np.arange(3), "fractions": np.ones(2)}, "rules": {"counts": np.zeros(1)}}
    back = T.unflatten(T.flatten(nested))
    assert set(back) == {"cnn", "rules"} and np.array_equal(back["cnn"]["counts"], np.arange(3))
    with pytest.raises(ParameterError):
        T.flatten({"a::b": {"x": np.ones(1)}})
    with pytest.raises(ParameterError):
        T.unflatten({"plain": np.ones(1)})


def _finetuned_copy(base):
    """A stand-in for a classifier fine-tuned from ``base``: other weights, a checkpoint key, the base's fingerprint."""
    model = copy.deepcopy(base.model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn_like(p))
    clf = wrap_model(model, base.tokenizer, "tiny / fine-tuned")
    clf.fingerprint = base.fingerprint
    clf.classifier = ClassifierInfo("SST-2", "pretrained_ft", 0, 128, clf.fingerprint, "0123456789abcdef01234567")
    return clf


def test_two_models_never_share_a_pattern_share_entry(tiny_bert):
    """Regression (issue 17, defect 1): chapter 4's pattern-share key let the base fingerprint overwrite the
    fine-tuned checkpoint's key, so the pre-trained shares were a copy of the fine-tuned ones."""
    examples = [I.encode_text(tiny_bert.tokenizer, a, b) for a, b in TEXTS]
    cnn = C.PatternCNN(size=16)
    clf = _finetuned_copy(tiny_bert)
    sp = (int(tiny_bert.tokenizer.cls_token_id), int(tiny_bert.tokenizer.sep_token_id))
    key = lambda m, ex=examples, c=cnn, r=PT.DEFAULT_RULES: T.pattern_share_arrays.key(m, ex, c, r, sp)  # noqa: E731
    assert key(tiny_bert) != key(clf)
    other = _finetuned_copy(tiny_bert)
    # another checkpoint of the same base
    other.classifier = ClassifierInfo("SST-2", "pretrained_ft", 1, 128, other.fingerprint, "fedcba9876543210fedcba98")
    assert key(other) != key(clf)
    # inputs, the CNN's weights and the rules are in the key too
    assert key(clf, ex=examples[:2]) != key(clf)
    torch.manual_seed(3)
    assert key(clf, c=C.PatternCNN(size=16)) != key(clf)
    assert key(clf, r=PT.PatternRules(vertical=0.6)) != key(clf)


def test_pretrained_and_finetuned_shares_are_two_computations(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    examples = [I.encode_text(tiny_bert.tokenizer, a, b) for a, b in TEXTS]
    cnn = C.PatternCNN(size=16)
    clf = _finetuned_copy(tiny_bert)
    seen = []
    real = T.pattern_proportions

    def counted(loaded, *args, **kwargs):
        seen.append(loaded.name)
        return real(loaded, *args, **kwargs)

    monkeypatch.setattr(T, "pattern_proportions", counted)
    ft = T.pattern_shares(clf, examples, cnn, batch_size=2)  # the chapter runs the fine-tuned model first
    pre = T.pattern_shares(tiny_bert, examples, cnn, batch_size=2)
    assert seen == [clf.name, tiny_bert.name]
    assert not np.array_equal(ft["rules"]["counts"], pre["rules"]["counts"])
    direct = real(tiny_bert, examples, {"rules": T.rule_classifier(tiny_bert.tokenizer.cls_token_id,
                                                                    tiny_bert.tokenizer.sep_token_id)})
    np.testing.assert_array_equal(pre["rules"]["counts"], direct["rules"]["counts"])
    again = T.pattern_shares(tiny_bert, examples, cnn, batch_size=3)  # from the cache
    assert seen == [clf.name, tiny_bert.name]
    np.testing.assert_array_equal(again["cnn"]["counts"], pre["cnn"]["counts"])
    assert set(again) == {"cnn", "rules"} and set(again["cnn"]) == {"counts", "fractions", "per_input", "n_examples"}


def test_share_numbers_name_model_and_task():
    shares = {("fine-tuned", "RTE"): {"cnn": {"fractions": np.array([0.123456, 0.876544])}},
              ("pre-trained", "RTE"): {"cnn": {"fractions": np.array([1.0, 0.0])}}}
    assert T.share_numbers(shares) == {"fine-tuned/RTE": {"cnn": [0.1235, 0.8765]},
                                       "pre-trained/RTE": {"cnn": [1.0, 0.0]}}
