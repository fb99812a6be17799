"""Kovaleva §5: word pieces attending to their copies in the other sentence, run through the engine."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.extract import stream_attention, stream_batches
from attnbook.engine.inputs import Batch, make_batches
from attnbook.engine.models import wrap_model
from attnbook.studies.kovaleva import word_match as wm


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
    red.add(attn, match, mask)
    out = red.result()
    assert out["n_queries"] == 4
    assert out["share"][0, 0] == pytest.approx(1.0 / L)
    assert out["share"][0, 1] == pytest.approx(1.0)
    assert out["chance"] == pytest.approx(1.0 / L)
    with pytest.raises(EmptyDataError):
        wm.WordMatchShare().result()
    # as an engine reducer it finds the copies in the batch itself
    engine = wm.WordMatchShare(skip_ids=(101, 102))
    engine.update(attn, Batch(ids, mask, types))
    np.testing.assert_allclose(engine.result()["share"], out["share"])
    with pytest.raises(ParameterError, match="sentence pairs"):
        wm.WordMatchShare().update(attn, Batch(ids, mask, None))


def test_word_match_shares_runs_a_model(tokenizer):
    from conftest import make_tiny_bert

    model = make_tiny_bert(tokenizer, n_layers=2, n_heads=2)
    enc = tokenizer(["the cat sat"], ["the cat ran"], return_tensors="pt")
    batch = Batch.from_mapping(enc)
    out = wm.word_match_shares(model, [batch], wm.skip_token_ids(tokenizer))
    assert out["share"].shape == (2, 2) and out["n_queries"] == 4  # "the" and "cat" in each sentence
    assert np.all((out["share"] >= 0) & (out["share"] <= 1))
    # a LoadedModel works too, and gives the same numbers
    again = wm.word_match_shares(wrap_model(model, tokenizer, "tiny"), [batch], wm.skip_token_ids(tokenizer))
    np.testing.assert_array_equal(again["share"], out["share"])


class _Sum:
    def __init__(self):
        self.total = 0.0

    def update(self, attn, batch):
        self.total += float((attn * batch.query_mask[:, None, None, :, None]).sum())

    def result(self):
        return self.total


def test_stream_batches_feeds_the_same_maps_as_stream_attention(tiny_bert):
    from attnbook.studies.kovaleva.inputs import encode_text

    examples = [encode_text(tiny_bert.tokenizer, a, b) for a, b in
                (("The cat sat.", "A cat ran."), ("Dogs bark loudly at night.", "Cats do not."))]
    batches = list(make_batches(examples, 2, tiny_bert.tokenizer.pad_token_id))
    was = tiny_bert.model.training
    tiny_bert.model.train()
    try:
        via_batches = stream_batches(tiny_bert, batches, {"sum": _Sum()})
        assert tiny_bert.model.training  # the mode is restored
    finally:
        tiny_bert.model.train(was)
    via_examples = stream_attention(tiny_bert, examples, {"sum": _Sum()}, batch_size=2, progress=False)
    assert via_batches["sum"] == pytest.approx(via_examples["sum"], rel=1e-6)
    n_rows = sum(len(e) for e in examples) * tiny_bert.n_layers * tiny_bert.n_heads
    assert via_batches["sum"] == pytest.approx(n_rows, rel=1e-5)  # every real row sums to 1
    assert isinstance(stream_batches(tiny_bert, batches, [_Sum()]), list)


def test_hurting_heads_match_places_the_most_harmful_heads(tokenizer, tiny_bert):
    from transformers import BertForSequenceClassification

    clf = BertForSequenceClassification(tiny_bert.model.config)
    clf.bert.load_state_dict(tiny_bert.model.state_dict())
    clf.eval()
    loaded = wrap_model(clf, tokenizer, "clf")
    enc = tokenizer(["the cat sat on the mat", "a dog barks"], ["the cat ran", "a dog sleeps"], padding=True,
                    return_tensors="pt")
    batches = [Batch.from_mapping(enc)]
    delta = np.zeros((tiny_bert.n_layers, tiny_bert.n_heads))
    delta[1, 2], delta[0, 3] = -5.0, -2.0
    out = wm.hurting_heads_match(loaded, batches, delta, 2)
    assert out["hurting"] == [(1, 2), (0, 3)]
    share = out["share"]
    np.testing.assert_allclose(share, wm.word_match_shares(clf, batches, wm.skip_token_ids(tokenizer))["share"])
    assert list(out["percentiles"]) == ["2-3", "1-4"]
    assert out["percentiles"]["2-3"] == pytest.approx(np.mean(share <= share[1, 2]))
    assert share[out["top_matching"]] == share.max()
    rec = wm.match_numbers(out)
    assert rec["hurting_heads"] == ["1-4", "2-3"] and rec["n_queries"] == out["n_queries"]
    assert rec["top_matching_head"] == "%d-%d" % (out["top_matching"][0] + 1, out["top_matching"][1] + 1)
    rows = wm.word_match_rows("RTE", out, delta)
    assert [r["head"] for r in rows] == ["2-3", "1-4"] and rows[0]["change when disabled"] == -5.0
    assert rows[1]["word-matching share"] == share[0, 3]
