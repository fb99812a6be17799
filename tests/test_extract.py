"""The extraction engine: batching, padding, and refusing bad input."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.extract import Encoded, collect_maps, make_batches, stream_attention
from attnbook.studies.clark.segments import encode_pair


def _examples(tokenizer, n=5):
    return [encode_pair(tokenizer, "word " * (3 + 4 * i), "other " * (2 + i), max_tokens=64) for i in range(n)]


def test_batches_pad_and_bucket(tokenizer):
    exs = _examples(tokenizer)[::-1]
    batches = list(make_batches(exs, 2, pad_id=0))
    assert sorted(i for b in batches for i in b.index) == list(range(len(exs)))
    for b in batches:
        lengths = [len(exs[i]) for i in b.index]
        assert b.input_ids.shape[1] == max(lengths)
        assert b.lengths.tolist() == lengths
        assert b.attention_mask.sum().item() == sum(lengths)
    # bucketed, longest first (so the allocator reuses the first batch's memory)
    assert [len(exs[i]) for b in batches for i in b.index] == sorted((len(e) for e in exs), reverse=True)


def test_maps_do_not_depend_on_padding(tiny_bert):
    exs = _examples(tiny_bert.tokenizer)
    alone = [collect_maps(tiny_bert, [e])[0] for e in exs]
    together = collect_maps(tiny_bert, exs, batch_size=5)
    for a, b in zip(alone, together):
        np.testing.assert_allclose(a, b, atol=1e-5)
        np.testing.assert_allclose(b.sum(-1), 1.0, rtol=1e-5)  # every row a distribution


def test_empty_and_too_long_inputs(tiny_bert):
    with pytest.raises(EmptyDataError):
        stream_attention(tiny_bert, [], [], progress=False)
    n = tiny_bert.max_length + 1
    long = Encoded([101] + [1000] * (n - 2) + [102], [0] * n, ["x"] * n)
    with pytest.raises(ParameterError, match="reads at most"):
        stream_attention(tiny_bert, [long], [], progress=False)
    with pytest.raises(ValueError):
        list(make_batches([long], 0))
