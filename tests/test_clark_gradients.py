"""Clark §3.2 gradient statistics: the key categories, the cached measurement, the MLM head on disjoint text."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.engine.gradients import fit_mlm_head
from attnbook.engine.inputs import Batch
from attnbook.studies.clark import gradients
from attnbook.studies.clark.gradients import AttentionGradientStats
from attnbook.studies.clark.segments import encode_pair

TEXTS = [("The cat sat on the mat.", "It was happy."), ("Dogs bark, cats purr.", "Birds sing at dawn."),
         ("A short one.", "And another, longer, sentence here.")] * 3


def test_gradient_stats_categories():
    ids = torch.tensor([[101, 5, 1012, 102, 6, 102]])
    real = torch.ones_like(ids)
    targets = torch.full_like(ids, -100)
    targets[0, 4] = 6  # position 4 was masked
    g = torch.zeros(1, 1, 1, 6, 6)
    g[..., 3] = 2.0  # to [SEP] at 3
    g[..., 5] = 4.0  # to [SEP] at 5
    g[..., 2] = 1.0  # to "."
    g[..., 1] = 3.0  # to an unmasked word
    g[..., 4] = 100.0  # to the masked word: excluded from "other"
    g[..., 0] = 7.0  # to [CLS]
    stats = AttentionGradientStats(102, [1012, 1010], 103, 101)
    stats.update(g, Batch(ids, real), targets)
    r = stats.result()
    assert r["grad_sep"][0, 0] == pytest.approx(3.0)
    assert r["grad_punct"][0, 0] == pytest.approx(1.0)
    assert r["grad_other"][0, 0] == pytest.approx(3.0)
    assert r["grad_cls"][0, 0] == pytest.approx(7.0)


def test_gradients_run_and_are_cached(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    tok = tiny_bert.tokenizer
    exs = [encode_pair(tok, a, b, max_tokens=24) for a, b in TEXTS]
    fit = fit_mlm_head(tiny_bert, exs, exs, steps=60, batch_size=4, lr=1e-2, progress=False)
    grads = gradients.attention_gradients(tiny_bert, fit.head, exs[:4], batch_size=2, progress=False)
    assert set(grads) == {"grad_sep", "grad_cls", "grad_punct", "grad_other"}
    for v in grads.values():
        assert v.shape == (2, 4) and np.isfinite(v).all() and (v >= 0).all()
    cached = gradients.cached_attention_gradients(tiny_bert, fit.head, exs[:4], batch_size=2, progress=False)
    assert list((tmp_path / "attention_gradients").glob("*.npz"))
    again = gradients.cached_attention_gradients(tiny_bert, fit.head, exs[:4], batch_size=4, progress=False)
    for k, v in grads.items():
        np.testing.assert_allclose(cached[k], v, rtol=1e-5, atol=1e-9)
        np.testing.assert_array_equal(again[k], cached[k])  # a cache hit, whatever the batch size


def test_mlm_head_is_fitted_on_segments_after_the_analysed_ones(tiny_bert, monkeypatch):
    seen = {}

    def fake_get(loaded, train, heldout, **kw):
        seen.update(train=train, heldout=heldout, **kw)
        return "head"

    monkeypatch.setattr(gradients, "get_mlm_head", fake_get)
    monkeypatch.setattr(gradients, "clark_segments",
                        lambda tok, n, max_tokens, seed, exclude: list(range(exclude, exclude + n)))
    assert gradients.mlm_head(tiny_bert, 12, steps=5, batch_size=4, max_tokens=64, seed=1) == "head"
    assert seen["train"] == list(range(12, 312)) and seen["heldout"] == list(range(312, 372))
    assert seen["steps"] == 5 and seen["batch_size"] == 4 and seen["seed"] == 1
    gradients.mlm_head(tiny_bert, 12, steps=0, batch_size=4)  # no fitting: only the held-out segments are drawn
    assert seen["train"] == seen["heldout"] == list(range(12, 72))
