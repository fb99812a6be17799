"""Clark §3 statistics: the streaming reducer equals a slow loop over full maps."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.engine.extract import Encoded, collect_maps, stream_attention
from attnbook.studies.clark.segments import encode_pair
from attnbook.studies.clark.surface import (
    STAT_NAMES,
    SurfaceStats,
    pick_example_heads,
    positional_heads,
    positional_table,
    sink_token,
    surface_statistics,
    surface_stats_reference,
)

TEXTS = [
    ("The cat sat on the mat.", "It was happy, very happy."),
    ("A longer first paragraph, with commas, and a period.", "Short."),
    ("Paris is the capital of France.", "Berlin is the capital of Germany, and it is large."),
    ("One.", "Two, three, four, five, six, seven, eight, nine, ten."),
    ("Unbelievably tokenised words appear here.", "Another sentence follows it."),
]


@pytest.fixture(scope="module")
def examples(tokenizer):
    return [encode_pair(tokenizer, a, b, max_tokens=40) for a, b in TEXTS]


def test_streaming_equals_reference(tiny_bert, examples):
    # batch size 2 forces padding inside batches
    stats = stream_attention(tiny_bert, examples, [SurfaceStats.for_tokenizer(tiny_bert.tokenizer)],
                             batch_size=2, progress=False)[0]
    maps = collect_maps(tiny_bert, examples)
    ref = surface_stats_reference(maps, [e.tokens for e in examples], tiny_bert.tokenizer)
    for name in STAT_NAMES:
        np.testing.assert_allclose(stats[name], ref[name], rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(stats["uniform_entropy"], ref["uniform_entropy"], rtol=1e-6)
    assert int(stats["n_segments"]) == len(examples)
    # the per-segment values behind every mean, in input order (the bootstrap over segments resamples them)
    per = stats["per_segment"]
    assert per.shape == (len(examples), len(STAT_NAMES)) + stats["sep"].shape and per.dtype == np.float32
    for k, name in enumerate(STAT_NAMES):
        np.testing.assert_allclose(per[:, k].mean(0), stats[name], rtol=1e-5, atol=1e-6, err_msg=name)
        one = surface_stats_reference([maps[3]], [examples[3].tokens], tiny_bert.tokenizer)[name]
        np.testing.assert_allclose(per[3, k], one, rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(stats["per_segment_uniform_entropy"], [np.log(len(e.tokens)) for e in examples])


def test_batching_does_not_change_results(tiny_bert, examples):
    a = stream_attention(tiny_bert, examples, [SurfaceStats.for_tokenizer(tiny_bert.tokenizer)], batch_size=1, progress=False)[0]
    b = stream_attention(tiny_bert, examples, [SurfaceStats.for_tokenizer(tiny_bert.tokenizer)], batch_size=5, progress=False)[0]
    for name in STAT_NAMES:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(a["per_segment"], b["per_segment"], rtol=1e-5, atol=1e-6)


def _one_example_stats(attn: np.ndarray, tokens: list[str]) -> dict:
    import torch

    from attnbook.engine.inputs import Batch

    ids = {"[CLS]": 101, "[SEP]": 102, ".": 1012, ",": 1010}
    input_ids = torch.tensor([[ids.get(t, 2000 + i) for i, t in enumerate(tokens)]])
    batch = Batch(input_ids, torch.ones_like(input_ids), torch.zeros_like(input_ids),
                  examples=[Encoded(input_ids[0].tolist(), [0] * len(tokens), tokens)], index=[0])
    red = SurfaceStats(101, 102, [1012, 1010])
    red.update(torch.tensor(attn, dtype=torch.float32)[None], batch)
    return red.result()


def test_planted_previous_token_head():
    tokens = ["[CLS]", "a", "b", ".", "[SEP]", "c", ",", "[SEP]"]
    n = len(tokens)
    attn = np.zeros((1, 2, n, n), dtype=np.float32)
    for q in range(n):  # head 0: previous token (the first token attends to itself)
        attn[0, 0, q, max(q - 1, 0)] = 1.0
    attn[0, 1] = 1.0 / n  # head 1: uniform
    s = _one_example_stats(attn, tokens)
    assert s["prev"][0, 0] == pytest.approx((n - 1) / n)
    assert s["prev"][0, 1] == pytest.approx((n - 1) / n / n)
    assert s["entropy"][0, 1] == pytest.approx(np.log(n), rel=1e-5)
    assert s["entropy"][0, 0] == pytest.approx(0.0, abs=1e-6)
    assert s["sep"][0, 1] == pytest.approx(2 / n)
    assert s["punct"][0, 1] == pytest.approx(2 / n)
    heads = positional_heads(s)
    assert heads.previous == [(0, 0)] and heads.next == []
    picks = pick_example_heads(s)
    assert picks["broad"] == (0, 1)


def test_sep_to_sep_statistics():
    tokens = ["[CLS]", "a", "[SEP]", "b", "[SEP]"]
    n = len(tokens)
    attn = np.zeros((1, 1, n, n), dtype=np.float32)
    attn[0, 0, :, 0] = 1.0  # everything to [CLS] ...
    attn[0, 0, 2] = 0
    attn[0, 0, 2, 4] = 1.0  # ... except the first [SEP], which attends to the other [SEP]
    attn[0, 0, 4] = 0
    attn[0, 0, 4, 4] = 1.0  # and the last [SEP] attends to itself
    s = _one_example_stats(attn, tokens)
    assert s["sep_sep"][0, 0] == pytest.approx(1.0)
    assert s["rest_sep"][0, 0] == pytest.approx(0.0)
    assert s["cls"][0, 0] == pytest.approx(3 / 5)
    assert s["cls_cls"][0, 0] == pytest.approx(1.0)  # from [CLS], everything stays on [CLS] (issue 32)
    attn[0, 0, 0] = 0
    attn[0, 0, 0, 1] = 1.0  # now [CLS] attends to "a"
    assert _one_example_stats(attn, tokens)["cls_cls"][0, 0] == pytest.approx(0.0)


def test_positional_table_and_sink_token():
    stats = {k: np.zeros((2, 3)) for k in STAT_NAMES}
    stats["prev"][1, 2] = 0.61234
    stats["next"][0, 0] = 0.7
    stats["cls"][:] = 0.3
    table = positional_table(stats)
    assert table.to_dict(orient="records") == [
        {"direction": "previous", "head": "2-3", "avg. attention": 0.612},
        {"direction": "next", "head": "1-1", "avg. attention": 0.7},
    ]
    assert sink_token(stats) == "cls"
    stats["sep"][:] = 0.3
    assert sink_token(stats) == "sep"  # a tie goes to [SEP], the paper's sink
    stats["prev"][:] = stats["next"][:] = 0.0
    assert len(positional_table(stats)) == 0


def test_surface_statistics_are_cached_whatever_the_batch_size(tiny_bert, examples, tmp_path, monkeypatch):
    """Chapter 3 calls the same function on chapter 1's segments and gets chapter 1's numbers back."""
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    first = surface_statistics(tiny_bert, examples, batch_size=2, progress=False)
    assert list((tmp_path / "surface").glob("*.npz"))
    again = surface_statistics(tiny_bert, examples, batch_size=5, progress=False)
    for name in STAT_NAMES:
        np.testing.assert_array_equal(again[name], first[name])
    direct = stream_attention(tiny_bert, examples, [SurfaceStats.for_tokenizer(tiny_bert.tokenizer)], batch_size=2,
                              progress=False)[0]
    for name in STAT_NAMES:
        np.testing.assert_allclose(first[name], direct[name], rtol=1e-6, atol=1e-9)
