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
    assert r["per_segment"].shape == (1, 4, 1, 1)
    np.testing.assert_allclose(r["per_segment"][0, :, 0, 0], [3.0, 7.0, 1.0, 3.0])  # CATEGORIES order


def test_gradients_run_and_are_cached(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    tok = tiny_bert.tokenizer
    exs = [encode_pair(tok, a, b, max_tokens=24) for a, b in TEXTS]
    fit = fit_mlm_head(tiny_bert, exs, exs, steps=60, batch_size=4, lr=1e-2, progress=False)
    grads = gradients.attention_gradients(tiny_bert, fit.head, exs[:4], batch_size=2, progress=False)
    assert set(grads) == {"grad_sep", "grad_cls", "grad_punct", "grad_other", "per_segment"}
    for k, v in grads.items():
        if k != "per_segment":
            assert v.shape == (2, 4) and np.isfinite(v).all() and (v >= 0).all()
    per = grads["per_segment"]
    assert per.shape == (4, 4, 2, 4)
    for c, name in enumerate(AttentionGradientStats.CATEGORIES):  # the means are the per-segment values' means
        np.testing.assert_allclose(per[:, c].mean(0), grads[f"grad_{name}"], rtol=1e-6)
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
    assert seen["train"] == list(range(12, 312)) and seen["validation"] == list(range(312, 372))
    assert seen["heldout"] == list(range(372, 432))  # the fit stops on other segments than it is scored on
    assert seen["steps"] == 5 and seen["batch_size"] == 4 and seen["seed"] == 1
    gradients.mlm_head(tiny_bert, 12, steps=5, batch_size=4, fit_segments=20)  # a smaller fit (smoke)
    assert seen["train"] == list(range(12, 32)) and seen["heldout"] == list(range(92, 152))
    gradients.mlm_head(tiny_bert, 12, steps=0, batch_size=4)  # no fitting: only the held-out segments are drawn
    assert seen["train"] == seen["heldout"] == list(range(12, 72))


def test_mlm_quality_sets_the_head_beside_a_constant_predictor(tiny_bert, monkeypatch):
    """A head is usable for the gradients only when its accuracy's exact interval lies above always predicting
    the most frequent masked piece (rows scored on a classifier no better than a constant are not comparable)."""
    from attnbook.engine.gradients import MLMHeadFit, masked_copies

    tok = tiny_bert.tokenizer
    exs = [encode_pair(tok, a, b, max_tokens=24) for a, b in TEXTS] * 8
    monkeypatch.setattr(gradients, "clark_segments", lambda tok, n, max_tokens, seed, exclude: exs[:n])
    held = [t for tgt in masked_copies(exs[-gradients.MLM_HELDOUT_SEGMENTS:], tok, 1)[1] for t in tgt if t != -100]
    good = gradients.mlm_quality(tiny_bert, MLMHeadFit(None, "fitted", 1.0, 0.9, 5), 0, steps=5, seed=0)
    assert good.n_pieces == len(held) and good.accuracy == pytest.approx(0.9, abs=1 / len(held))
    assert good.low < good.accuracy < good.high and good.better_than_constant
    assert 0 < good.constant_accuracy < 0.5 and good.constant_piece in tok.get_vocab()
    poor = gradients.mlm_quality(tiny_bert, MLMHeadFit(None, "fitted", 9.0, 0.002, 5), 0, steps=5, seed=0)
    assert not poor.better_than_constant and "unigram baseline" in poor.text()


def test_mlm_head_fit_stops_when_the_validation_loss_stops_improving(tiny_bert):
    """Issue 18: the MLM head was fitted for a fixed number of steps (its held-out loss rose after the first few
    hundred). Now the one training loop evaluates it on validation segments every ``eval_every`` updates, stops
    after ``patience`` evaluations without a lower loss and keeps the best weights; the curve is returned."""
    tok = tiny_bert.tokenizer
    exs = [encode_pair(tok, a, b, max_tokens=24) for a, b in TEXTS]
    train, valid = exs[:2], exs[3:6]  # two segments: a head with a high learning rate overfits them quickly
    fit = fit_mlm_head(tiny_bert, train, valid, steps=3000, batch_size=2, lr=5e-2,
                       eval_every=10, patience=3, progress=False)
    losses = [c["loss"] for c in fit.curve]
    assert fit.steps < 3000 and fit.curve[-1]["step"] == fit.steps  # stopped early
    best = int(np.argmin(losses))
    assert len(losses) - 1 - best == 3 and fit.best_step == fit.curve[best]["step"]  # patience 3, best kept
    assert fit.heldout_loss == pytest.approx(losses[best], rel=1e-5)  # the kept weights are the best ones
    assert all(0 <= c["top1"] <= 1 for c in fit.curve)
    assert all(p.requires_grad for p in tiny_bert.model.parameters())


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_chapter1_segment_budget_fits_wikitext(profile):
    """Regression: the quick profile asked for 920 fitting + 120 held-out segments after the 1,000 analysed ones,
    more than WikiText-2's paragraph pairs, and chapter 1 stopped with a ParameterError in the quick build."""
    from attnbook.chapters.params import chapter_params
    from attnbook.engine.models import load_encoder
    from attnbook.studies.clark.gradients import MLM_HELDOUT_SEGMENTS, MLM_VALID_SEGMENTS
    from attnbook.studies.clark.segments import clark_segments

    P = chapter_params("01_clark_surface_patterns", profile)
    tok = load_encoder("embedded").tokenizer
    # the whole pool is drawn once; asking for one segment past the budget must still fit
    total = P.n_segments + P.mlm_fit_segments + MLM_VALID_SEGMENTS + MLM_HELDOUT_SEGMENTS
    assert len(clark_segments(tok, 1, P.max_tokens, seed=P.seed, exclude=total - 1)) == 1


def test_chapter1_uses_a_hub_models_own_mlm_head(tmp_path, monkeypatch):
    """Issue 19 regression: for a hub name (the paper profile's bert-base-uncased) chapter 1 used to find no
    local folder, decide the model had no MLM head and stop at ``mlm_fit_steps=0``. A planted hub model with an
    MLM head now gives its own head, with no fitting, and the comparison row names it."""
    from planted import plant_bert

    from attnbook.engine.models import load_encoder
    from attnbook.studies.clark import paper

    plant_bert(tmp_path / "hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    loaded = load_encoder("bert-base-uncased", device="cpu")
    fit = gradients.mlm_head(loaded, 4, steps=0, batch_size=4, max_tokens=32, progress=False)
    assert fit.source == "pretrained" and fit.steps == 0
    quality = gradients.mlm_quality(loaded, fit, 4, steps=0, max_tokens=32)
    (row,) = paper.mlm_head_rows(quality)
    assert "checkpoint's own MLM head" in row.note
