"""Token-to-word conversion (Clark §4.1): to a word = sum over pieces, from a word = mean."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook.engine.wordlevel import membership_matrix, token_to_word_attention


def test_known_conversion():
    # tokens: [CLS] un ##believ ##able cat [SEP]; words: [CLS] | unbelievable | cat | [SEP]
    words = [[0], [1, 2, 3], [4], [5]]
    n = 6
    attn = np.zeros((n, n), dtype=np.float32)
    attn[0, 1] = 0.5; attn[0, 2] = 0.25; attn[0, 4] = 0.25  # [CLS] -> pieces of "unbelievable" + cat
    attn[1, 4] = 1.0  # un -> cat
    attn[2, 0] = 1.0  # ##believ -> [CLS]
    attn[3, 5] = 1.0  # ##able -> [SEP]
    attn[4, 4] = 1.0
    attn[5, 5] = 1.0
    w = token_to_word_attention(attn, words)
    np.testing.assert_allclose(w[0], [0, 0.75, 0.25, 0], atol=1e-7)  # TO a split word: summed
    np.testing.assert_allclose(w[1], [1 / 3, 0, 1 / 3, 1 / 3], atol=1e-7)  # FROM a split word: averaged
    first = token_to_word_attention(attn, words, from_reduce="first")
    np.testing.assert_allclose(first[1], [0, 0, 1, 0], atol=1e-7)  # Clark's released code: first piece


def test_leading_dimensions_are_kept():
    rng = np.random.default_rng(0)
    attn = rng.dirichlet(np.ones(5), size=(2, 3, 5)).astype(np.float32)
    w = token_to_word_attention(attn, [[0], [1, 2], [3], [4]])
    assert w.shape == (2, 3, 4, 4)
    np.testing.assert_allclose(w[1, 2], token_to_word_attention(attn[1, 2], [[0], [1, 2], [3], [4]]), atol=1e-6)


def test_bad_groups_are_rejected():
    with pytest.raises(ValueError, match="two words"):
        membership_matrix([[0, 1], [1]], 3)
    with pytest.raises(ValueError, match="outside"):
        membership_matrix([[0], [5]], 3)
    with pytest.raises(ValueError, match="no word pieces"):
        membership_matrix([[0], []], 3)
    with pytest.raises(ValueError, match="mean"):
        token_to_word_attention(np.eye(2), [[0], [1]], from_reduce="max")


@st.composite
def maps_and_words(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=8))
    n = sum(sizes)
    words, start = [], 0
    for size in sizes:
        words.append(list(range(start, start + size)))
        start += size
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    attn = rng.dirichlet(np.full(n, draw(st.sampled_from([0.1, 1.0, 10.0]))), size=(2, n)).astype(np.float32)
    return attn, words


@settings(max_examples=60, deadline=None)
@given(maps_and_words())
def test_rows_sum_to_one_before_and_after(case):
    attn, words = case
    np.testing.assert_allclose(attn.sum(-1), 1.0, rtol=1e-5)
    for mode in ("mean", "first"):
        w = token_to_word_attention(attn, words, from_reduce=mode)
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
        assert (w >= 0).all()
