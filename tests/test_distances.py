"""Clark §6 head distances: the JS divergence, the streaming reducer against a slow reference, caching."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.extract import Encoded, collect_maps, make_batches
from attnbook.studies.clark import distances


def random_distributions(rng, shape, zeros: bool = True):
    x = rng.gamma(0.3, size=shape)
    if zeros:
        x[rng.random(shape) < 0.2] = 0.0
        x[..., 0] += 1e-3  # no all-zero rows
    return x / x.sum(-1, keepdims=True)


def examples_of_lengths(lengths, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for n in lengths:
        ids = [101] + list(rng.integers(2000, 3000, size=n - 2)) + [102]
        out.append(Encoded([int(i) for i in ids], [0] * n, ["w"] * n))
    return out


def synthetic_attn(batch, n_layers, n_heads, rng, duplicate=None):
    """attn[batch, layer, head, query, key] with zero padded keys and *garbage* padded query rows."""
    b, width = batch.input_ids.shape
    logits = torch.from_numpy(rng.normal(scale=2.0, size=(b, n_layers, n_heads, width, width))).float()
    mask = batch.attention_mask[:, None, None, None, :].bool()
    attn = torch.softmax(logits.masked_fill(~mask, -torch.inf), dim=-1)
    qpad = ~batch.attention_mask.bool()[:, None, None, :, None].expand_as(attn)
    attn = torch.where(qpad, torch.full_like(attn, 7.0), attn)  # padded queries must be ignored
    if duplicate is not None:
        (l1, h1), (l2, h2) = duplicate
        attn[:, l2, h2] = attn[:, l1, h1]
    return attn


def reference_js_sums(maps, smoothing=0.0, queries=None):
    """Slow reference: sum over query tokens of scipy's JS between every pair of heads."""
    n_layers, n_heads = maps[0].shape[:2]
    n = n_layers * n_heads
    out = np.zeros((n, n))
    for e, m in enumerate(maps):
        m = m.reshape(n, m.shape[2], m.shape[3]).astype(np.float64)
        if smoothing:
            m = smoothing / m.shape[-1] + (1 - smoothing) * m
        rows = range(m.shape[1]) if queries is None else queries[e]
        for i, j in itertools.combinations(range(n), 2):
            s = sum(jensenshannon(m[i, t], m[j, t]) ** 2 for t in rows)
            out[i, j] += s
            out[j, i] += s
    return out


def test_js_divergence_matches_scipy_squared_jensenshannon():
    rng = np.random.default_rng(1)
    p = random_distributions(rng, (50, 17))
    q = random_distributions(rng, (50, 17))
    ours = distances.js_divergence(p, q)
    ref = np.array([jensenshannon(a, b) ** 2 for a, b in zip(p, q)])
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-12)
    assert np.all(ours <= np.log(2) + 1e-12)
    np.testing.assert_allclose(distances.js_divergence(p, p), 0.0, atol=1e-12)
    np.testing.assert_allclose(distances.js_divergence(p, q), distances.js_divergence(q, p), atol=1e-12)


def test_pairwise_xlogx_sums_match_a_naive_double_loop_across_chunk_borders():
    rng = np.random.default_rng(2)
    a = rng.random((6, 53))
    a[rng.random(a.shape) < 0.3] = 0.0
    a[:, :5] = 0.0  # columns where both heads are exactly 0 (0 log 0 = 0)
    got = distances.pairwise_xlogx_sums(torch.from_numpy(a).float(), chunk=7, workers=1).numpy()
    threaded = distances.pairwise_xlogx_sums(torch.from_numpy(a).float(), chunk=7, workers=3).numpy()
    np.testing.assert_array_equal(got, threaded)  # same sums, in the same order, whatever the threads
    ref = []
    for i, j in itertools.combinations(range(6), 2):
        s = a[i] + a[j]
        ref.append(np.sum(np.where(s > 0, s * np.log(np.where(s > 0, s, 1.0)), 0.0)))
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    assert np.all(np.isfinite(got))


def test_head_distances_streaming_with_padding_equals_full_maps(tiny_bert):
    examples = examples_of_lengths([5, 9, 7, 12, 3, 8, 10])
    maps = collect_maps(tiny_bert, examples)
    ref = reference_js_sums(maps)
    red = distances.HeadDistances(tiny_bert.n_layers, tiny_bert.n_heads)
    from attnbook.engine.extract import stream_attention

    (res,) = stream_attention(tiny_bert, examples, [red], batch_size=3, progress=False)
    np.testing.assert_allclose(res["js_sum"], ref, rtol=2e-4, atol=1e-5)
    n_tokens = sum(len(e) for e in examples)
    assert int(res["n_tokens"]) == n_tokens
    np.testing.assert_allclose(res["js_mean"], ref / n_tokens, rtol=2e-4, atol=1e-6)
    # the two half-sample estimates recombine into the whole
    w = res["n_tokens_halves"] / n_tokens
    np.testing.assert_allclose(w[0] * res["js_mean_halves"][0] + w[1] * res["js_mean_halves"][1],
                               res["js_mean"], rtol=1e-9, atol=1e-12)
    # so do the groups the bootstrap resamples
    assert res["js_sum_groups"].shape == (distances.N_GROUPS, tiny_bert.n_layers * tiny_bert.n_heads
                                          * (tiny_bert.n_layers * tiny_bert.n_heads - 1) // 2)
    np.testing.assert_allclose(distances.condensed_to_square(res["js_sum_groups"].sum(0), res["js_sum"].shape[0]),
                               res["js_sum"], rtol=1e-9, atol=1e-9)
    assert int(res["n_tokens_groups"].sum()) == n_tokens
    # per-head entropy equals the mean entropy over all query tokens
    ent = np.concatenate([-(m * np.log(np.clip(m, 1e-30, None))).sum(-1).reshape(m.shape[0] * m.shape[1], -1)
                          for m in maps], axis=1).mean(1)
    np.testing.assert_allclose(res["entropy"], ent, rtol=1e-4)


def test_head_distances_smoothing_matches_smoothed_reference():
    rng = np.random.default_rng(3)
    examples = examples_of_lengths([4, 6, 6, 9])
    red = distances.HeadDistances(2, 3, smoothing=0.001)
    maps = [None] * len(examples)
    for batch in make_batches(examples, 3, bucket=True):
        attn = synthetic_attn(batch, 2, 3, rng)
        red.update(attn, batch)
        for b, i in enumerate(batch.index):
            n = int(batch.lengths[b])
            maps[i] = attn[b, :, :, :n, :n].numpy()
    res = red.result()
    np.testing.assert_allclose(res["js_sum"], reference_js_sums(maps, smoothing=0.001), rtol=1e-4, atol=1e-6)
    # smoothing moves every distribution towards uniform, so the divergences shrink
    plain_ref = reference_js_sums(maps)
    off = ~np.eye(6, dtype=bool)
    assert np.all(res["js_sum"][off] < plain_ref[off])


def test_head_distance_properties_zero_self_symmetric_non_negative():
    rng = np.random.default_rng(4)
    examples = examples_of_lengths([6, 11, 3, 8, 8])
    red = distances.HeadDistances(2, 3)
    for batch in make_batches(examples, 2, bucket=True):
        red.update(synthetic_attn(batch, 2, 3, rng, duplicate=((0, 1), (1, 2))), batch)
    d = red.result()["js_mean"]
    assert d.shape == (6, 6)
    np.testing.assert_array_equal(np.diag(d), 0.0)
    np.testing.assert_array_equal(d, d.T)
    assert np.all(d >= 0)
    # head 1-2 (index 1) and head 2-3 (index 5) have identical maps: distance 0
    assert d[1, 5] == pytest.approx(0.0, abs=1e-6)
    others = d[~np.eye(6, dtype=bool)]
    assert np.sort(others)[2] > 1e-2  # every other pair is really apart
    assert np.all(d <= np.log(2) + 1e-6)


def test_query_fraction_is_independent_of_batching_and_uses_the_chosen_queries():
    rng = np.random.default_rng(5)
    examples = examples_of_lengths([10, 7, 12, 9, 5, 11])
    attn_by_example = {}
    for batch in make_batches(examples, len(examples), bucket=False):
        full = synthetic_attn(batch, 1, 3, rng)
        for b, i in enumerate(batch.index):
            n = int(batch.lengths[b])
            attn_by_example[i] = full[b, :, :, :n, :n]

    def run(batch_size):
        red = distances.HeadDistances(1, 3, query_fraction=0.5, seed=9)
        for batch in make_batches(examples, batch_size, bucket=True):
            width = batch.input_ids.shape[1]
            attn = torch.zeros(len(batch.index), 1, 3, width, width)
            for b, i in enumerate(batch.index):
                n = int(batch.lengths[b])
                attn[b, :, :, :n, :n] = attn_by_example[i]
            red.update(attn, batch)
        return red, red.result()

    red2, r2 = run(2)
    _, r4 = run(4)
    np.testing.assert_allclose(r2["js_sum"], r4["js_sum"], rtol=1e-6)
    queries = [red2.query_positions(i, len(e)) for i, e in enumerate(examples)]
    assert int(r2["n_tokens"]) == sum(len(q) for q in queries) < sum(len(e) for e in examples)
    maps = [attn_by_example[i].numpy() for i in range(len(examples))]
    np.testing.assert_allclose(r2["js_sum"], reference_js_sums(maps, queries=queries), rtol=1e-4, atol=1e-6)


def test_head_distances_rejects_bad_parameters_and_empty_input():
    with pytest.raises(ParameterError):
        distances.HeadDistances(2, 2, query_fraction=0.0)
    with pytest.raises(ParameterError):
        distances.HeadDistances(2, 2, smoothing=1.0)
    with pytest.raises(EmptyDataError):
        distances.HeadDistances(2, 2).result()
    batch = next(make_batches(examples_of_lengths([4]), 1))
    with pytest.raises(ValueError, match="expected attn"):
        distances.HeadDistances(2, 2).update(torch.zeros(1, 3, 2, 4, 4), batch)


def test_measure_head_distances_and_cache(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    examples = examples_of_lengths([5, 8, 6])
    first = distances.measure_head_distances(tiny_bert, examples, batch_size=2, progress=False)
    assert first["js_mean"].shape == (8, 8)
    assert not [k for k in first if k.startswith("surface/")]  # chapter 1's statistics are surface's own
    assert list(tmp_path.rglob("*.npz"))
    second = distances.measure_head_distances(tiny_bert, examples, batch_size=3, progress=False)
    np.testing.assert_array_equal(first["js_sum"], second["js_sum"])
    with pytest.raises(EmptyDataError):
        distances.measure_head_distances(tiny_bert, [], progress=False)


def test_summary_and_description_of_the_distances():
    d = np.array([[0.0, 0.1, 0.3], [0.1, 0.0, 0.2], [0.3, 0.2, 0.0]])
    arrays = {"js_mean": d + 1e-5 * (1 - np.eye(3)), "n_tokens": np.array(1234)}
    s = distances.summary(arrays)
    assert s["n_tokens_compared"] == 1234
    assert s["js_mean_range"] == pytest.approx([0.10001, 0.30001])
    assert s["js_mean_median"] == pytest.approx(0.20001)
    assert s["distances"] == d.round(4).tolist()  # the matrix rounded to 4 decimals
    assert sorted(distances.off_diagonal(d)) == [0.1, 0.1, 0.2, 0.2, 0.3, 0.3]
    assert distances.describe(arrays) == ("heads compared on 1,234 query tokens; mean JS between two heads: median "
                                          "0.200, from 0.100 to 0.300 nats (ln 2 = 0.693)")


def test_condensed_checks_the_matrix():
    d = np.array([[0.0, 0.1, 0.3], [0.1, 0.0, 0.2], [0.3, 0.2, 0.0]])
    np.testing.assert_array_equal(distances.condensed(d), [0.1, 0.3, 0.2])
    np.testing.assert_array_equal(distances.condensed_to_square(distances.condensed(d), 3), d)
    with pytest.raises(ValueError, match="square"):
        distances.condensed(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        distances.condensed(np.array([[0.0, 1.0], [2.0, 0.0]]))
