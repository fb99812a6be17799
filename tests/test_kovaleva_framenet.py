"""Kovaleva §4.2 frame heads (attnbook.studies.kovaleva.framenet): the paper's filter and scoring heads."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.data import framenet as FD
from attnbook.engine.extract import make_batches
from attnbook.studies.kovaleva import framenet as FN

from test_framenet import fn_dir  # noqa: F401  (the fixture: a frame file and one full-text document)


def test_filter_follows_the_paper(fn_dir):  # noqa: F811
    inst = FD.load_fulltext(files=[fn_dir / "fulltext" / "Test__doc.xml"], frame_dir=fn_dir / "frame")
    kept, counts = FN.FrameFilter().apply(inst)
    assert [k.sentence_id for k in kept] == ["1", "6"]
    assert counts == {"total": 5, "too_long": 1, "long_element": 1, "close_link": 1, "kept": 2}
    kept, counts = FN.FrameFilter(drop="link").apply(inst)
    assert [k.sentence_id for k in kept] == ["1", "4", "6"]
    assert kept[1].core == {"Stimulus": [5]}  # the adjacent "she" link is dropped, the far one kept
    kept, _ = FN.FrameFilter(max_words=14, max_element_words=4).apply(inst)
    assert [k.sentence_id for k in kept] == ["1", "2", "3", "6"]
    with pytest.raises(ParameterError):
        FN.FrameFilter(drop="sentence")


def _instance(words, target, core, other=None):
    return FD.FrameInstance("doc", "1", words, "F", "lu", target, core, other or {})


def test_link_scores_on_hand_built_maps(tokenizer):
    # every word is one word piece, so word-level maps equal token-level maps
    words = ["he", "was", "very", "agitated", "today"]
    inst = _instance(words, [3], {"Experiencer": [0]}, {"Time": [4]})
    enc = FN.encode_instances(tokenizer, [inst])
    assert enc[0].tokens == ["[CLS]", *words, "[SEP]"]
    n = len(enc[0].tokens)
    attn = torch.full((1, 2, 1, n, n), 1.0 / n)
    # head (layer 0): "agitated" (pos 4) -> "he" (pos 1) gets 0.6; "he" -> "agitated" 0.3
    a = attn[0, 0, 0]
    a[4] = 0.4 / (n - 1)
    a[4, 1] = 0.6
    a[1] = 0.7 / (n - 1)
    a[1, 4] = 0.3
    # layer 1: "agitated" -> "was" (pos 2, not an element, distance 2 from the target) 0.9
    b = attn[0, 1, 0]
    b[4] = 0.1 / (n - 1)
    b[4, 2] = 0.9
    batch = next(make_batches(enc, 1))
    results = {}
    for direction in FN.DIRECTIONS:
        red = FN.FrameLinkScores([inst], direction)
        red.update(attn, batch)
        results[direction] = red.result()
    assert results["both"]["scores"][0, 0, 0] == pytest.approx(0.6)
    assert results["target_to_element"]["scores"][0, 0, 0] == pytest.approx(0.6)
    assert results["element_to_target"]["scores"][0, 0, 0] == pytest.approx(0.3)
    # control: target vs words that are neither target nor element and >= 2 away: only "was" (today is an element)
    assert results["target_to_element"]["control"][0, 1, 0] == pytest.approx(0.9)
    assert results["target_to_element"]["scores"][0, 1, 0] == pytest.approx(0.1 / (n - 1))


def test_frame_heads_percentiles():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.0, 0.1, size=(30, 12, 12))
    scores[:, 3, 4] += 0.3
    scores[:, 7, 0] += 0.25
    control = np.full_like(scores, 0.05)
    control[::2] = np.nan  # half the instances have no control word
    out = FN.frame_heads(scores, 99.0, control)
    assert [(l, h) for l, h, _ in out["heads"]] == [(3, 4), (7, 0)]
    assert out["threshold"] == pytest.approx(np.percentile(scores.mean(0), 99))
    assert out["n_with_control"] == 15
    np.testing.assert_allclose(out["lift"], scores[1::2].mean(0) / 0.05, rtol=1e-6)


def test_frame_link_scores_with_a_tiny_bert(tiny_bert):
    insts = [_instance(["he", "was", "agitated"], [2], {"Experiencer": [0]}),
             _instance(["she", "sold", "the", "very", "old", "car"], [1], {"Goods": [4, 5]})]
    res = FN.frame_link_scores(tiny_bert, insts, batch_size=2)
    assert res["scores"].shape == (2, tiny_bert.n_layers, tiny_bert.n_heads)
    assert ((res["scores"] > 0) & (res["scores"] <= 1)).all()
    assert np.isnan(res["control"][0]).all()  # "he was agitated": "was" is next to the target, no control word
    assert not np.isnan(res["control"][1]).any()  # "very" is two words from "sold" and not an element


def test_filter_and_top_heads_tables():
    counts = {"total": 5, "too_long": 1, "long_element": 1, "close_link": 1, "kept": 2}
    t = FN.filter_table(counts)
    assert list(t.columns) == ["instances", "> 12 words", "element > 3 words", "element < 2 words away", "kept"]
    assert t.iloc[0].tolist() == [5, 1, 1, 1, 2]
    heads = {"heads": [(1, 2, 0.30123), (0, 0, 0.2)], "control_mean": np.full((2, 3), 0.1),
             "lift": np.full((2, 3), 2.0)}
    top = FN.top_heads_table(heads)
    assert top["head"].tolist() == ["2-3", "1-1"] and top["mean score"].tolist() == [0.301, 0.2]
    assert top["frame elements / other words"].tolist() == [2.0, 2.0]


def test_top_head_estimates_intervals_over_instances():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0, 0.1, (200, 2, 3))
    scores[:, 1, 2] += 0.3  # the top head
    control = scores - 0.05
    control[::2] = np.nan  # half the instances have no equally distant other word
    est = FN.top_head_estimates(scores, control, n_resamples=500, seed=0)
    assert est["head"] == (1, 2) and est["label"] == "2-3"
    m = est["mean"]
    assert m.n == 200 and m.low < m.value < m.high and m.value == pytest.approx(scores[:, 1, 2].mean())
    d = est["difference"]
    assert est["n_with_control"] == 100 and d.n == 100 and d.value == pytest.approx(0.05) and d.low > 0
    other = FN.top_head_estimates(scores, None, (0, 0), n_resamples=200)
    assert other["label"] == "1-1" and "difference" not in other


def test_framenet_numbers_keep_1_based_labels_and_the_threshold_sentence():
    import numpy as np

    from attnbook.stats import Estimate
    from attnbook.studies.kovaleva import framenet as F

    fheads = {"mean": np.array([[0.1, 0.2], [0.3, 0.9]]), "heads": [(1, 1, 0.9)], "threshold": 0.5,
              "n_with_control": 7}
    ftop = {"label": "2-2", "mean": Estimate(0.9, 0.8, 1.0)}
    nums = F.framenet_numbers({"kept": 3}, fheads, ftop, 3)
    assert nums["framenet_heads"] == [["2-2", 0.9]] and nums["framenet_top"]["instances"] == 3
    text = F.threshold_markdown(fheads, 99.0, 4)
    assert text.startswith("99th percentile") and "**0.500**" in text and "(1 of 4)" in text and "7 instances" in text
