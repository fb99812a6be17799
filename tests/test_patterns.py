"""Kovaleva §4.1 pattern classes: synthetic maps, per-map features and the rule set."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.studies.kovaleva import patterns as PT


@pytest.mark.parametrize("kind", PT.CLASSES)
def test_synthetic_maps_are_distributions(kind):
    rng = np.random.default_rng(3)
    for n in (7, 20, 63):
        m, seg = PT.synthetic_map(kind, n, rng, noise=0.1)
        assert m.shape == (n, n) and seg.shape == (n,)
        np.testing.assert_allclose(m.sum(1), 1.0, rtol=1e-5)
        assert (m >= 0).all()
        if kind == "Block":
            assert set(seg.tolist()) == {0, 1}  # Block maps are always two-sentence inputs


@pytest.mark.parametrize("kind", PT.CLASSES)
def test_rules_recognise_each_synthetic_class(kind):
    rng = np.random.default_rng(11)
    preds = []
    for _ in range(25):
        n = int(rng.integers(12, 60))
        m, seg = PT.synthetic_map(kind, n, rng, noise=float(rng.uniform(0, 0.2)))
        preds.append(PT.classify_rules(m, seg))
    share = np.mean([p == kind for p in preds])
    assert share >= 0.8, (kind, preds)


def _layout(n: int, first_sep: int | None = None) -> np.ndarray:
    seg = np.zeros(n, dtype=np.int64)
    if first_sep is not None:
        seg[first_sep + 1 :] = 1
    return seg


def test_features_of_hand_built_maps():
    n = 20
    seg = _layout(n)
    cls_only = np.zeros((n, n))
    cls_only[:, 0] = 1
    f = PT.map_features(cls_only, seg)
    assert f["special"] == pytest.approx(1) and f["cls"] == pytest.approx(1) and f["sep"] == pytest.approx(0)
    assert f["diag"] == pytest.approx(0) and f["entropy"] == pytest.approx(0, abs=1e-4)
    assert f["pair"] == 0 and f["block"] == 0

    prev = np.zeros((n, n))
    prev[0, 0] = 1  # [CLS] looks at itself (a special column)
    for i in range(1, n):
        prev[i, i - 1] = 1
    f = PT.map_features(prev, seg)
    # rows 2..n-1 put all their weight on an ordinary previous token; row 1 on [CLS]; row 0 on itself ([CLS])
    assert f["prev"] == pytest.approx((n - 2) / n)
    assert f["special"] == pytest.approx(2 / n)
    assert f["next"] == pytest.approx(0) and f["self"] == pytest.approx(0)
    assert PT.classify_rules(prev, seg) == "Diagonal"

    uniform = np.full((n, n), 1 / n)
    f = PT.map_features(uniform, seg)
    assert f["entropy"] == pytest.approx(1, abs=1e-5)
    assert f["special"] == pytest.approx(2 / n)
    assert f["diag_lift"] == pytest.approx(1, rel=1e-4)


def test_block_feature_needs_a_pair():
    n, first_sep = 40, 18  # long enough that neither [CLS]/[SEP] nor the diagonal stand out
    seg = _layout(n, first_sep)
    block = (seg[:, None] == seg[None, :]).astype(float)
    block /= block.sum(1, keepdims=True)
    f = PT.map_features(block, seg)
    assert f["pair"] == 1
    assert f["block"] == pytest.approx(1)
    assert 0 < f["block_chance"] < 1
    assert PT.classify_rules(block, seg) == "Block"
    # the same picture on a one-sentence input is not a Block
    assert PT.map_features(block, _layout(n))["block"] == 0


def test_batched_features_ignore_padding():
    rng = np.random.default_rng(0)
    maps = [PT.synthetic_map(k, n, rng)[0] for k, n in (("Vertical", 9), ("Block", 14))]
    segs = [_layout(9), _layout(14, 6)]
    width = 14
    attn = torch.zeros(2, width, width)
    qm = torch.zeros(2, width)
    sm = torch.zeros(2, width)
    sg = torch.zeros(2, width, dtype=torch.long)
    for b, (m, s) in enumerate(zip(maps, segs)):
        n = len(s)
        attn[b, :n, :n] = torch.tensor(m)
        attn[b, n:, :n] = 1.0 / n  # padded query rows hold garbage, as a real model's do
        qm[b, :n] = 1
        sm[b, PT.special_positions(s)] = 1
        sg[b, :n] = torch.tensor(s)
    batched = PT.map_features_batch(attn, qm, sm, sg)
    for b, (m, s) in enumerate(zip(maps, segs)):
        single = PT.map_features(m, s)
        np.testing.assert_allclose(batched[b].numpy(), [single[k] for k in PT.FEATURES], rtol=1e-4, atol=1e-6)


def test_bad_inputs_raise():
    with pytest.raises(ParameterError):
        PT.synthetic_map("Spiral", 10, np.random.default_rng(0))
    with pytest.raises(ParameterError):
        PT.map_features(np.ones((3, 4)), np.zeros(3))
    with pytest.raises(ParameterError):
        PT.synthetic_map("Block", 4, np.random.default_rng(0))
