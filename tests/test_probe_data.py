"""Clark §5 probe data: word-level maps of every head, gold heads, word vectors, batches, feature scales."""
from __future__ import annotations

import numpy as np
import pytest
from toy_clark import CAT, STORY, planted_data

from attnbook.data.glove import read_glove
from attnbook.engine.extract import collect_maps
from attnbook.engine.wordlevel import token_to_word_attention
from attnbook.studies.clark import probe_data as D


@pytest.fixture
def glove(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 1 0 0\ncat 0 1 0\nsat 0 0 1\nmat 1 1 0\nstory 0 1 1\n", encoding="utf-8")
    return read_glove(path)


def test_vector_standardizer():
    data = planted_data(20, dim=5, seed=7)
    std = D.vector_standardizer(data)(data)
    allv = np.concatenate(std.vectors)
    np.testing.assert_allclose(allv.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(allv.std(0), 1 / np.sqrt(5), rtol=1e-3)


def test_extract_probe_data_matches_the_word_maps(tiny_bert, tokenizer, glove):
    data, info = D.extract_probe_data(tiny_bert, [CAT, STORY], glove=glove, progress=False)
    encoded = D.encode_for_probe(tokenizer, [CAT, STORY])
    full = [token_to_word_attention(m, e.words) for m, e in zip(collect_maps(tiny_bert, encoded), encoded)]
    K = tiny_bert.n_layers * tiny_bert.n_heads
    for m, f, n in zip(data.maps, full, (7, 4)):
        assert m.shape == (K, n, n) and m.dtype == np.float16
        np.testing.assert_allclose(m, f[:, :, 1 : n + 1, 1 : n + 1].reshape(K, n, n), atol=1e-3)
    np.testing.assert_allclose(data.vectors[0][1], [0, 1, 0])  # cat
    np.testing.assert_allclose(data.vectors[0][3], 0)  # "on" is not in the fixture: zero vector
    assert info["oov_rate"] == pytest.approx(5 / 11)  # on . a very gyroscopic
    assert data.heads[1].tolist() == [3, 2, 3, -1]
    model_vecs, _ = D.extract_probe_data(tiny_bert, [STORY], word_vectors="model", progress=False)
    emb = tiny_bert.model.get_input_embeddings().weight.detach().numpy()
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("gyroscopic"))
    assert len(ids) > 1
    np.testing.assert_allclose(model_vecs.vectors[0][2], emb[ids].mean(0), rtol=1e-5, atol=1e-6)


def test_the_maps_are_not_written_to_the_cache_and_a_rerun_reads_only_the_probes_summary(
        tiny_bert, tokenizer, glove, tmp_path, monkeypatch):
    """The maps are the book's largest intermediate (issue 30's cache budget); the probes' summary, cached under
    every input that made them, is all a rerun needs."""
    from attnbook.studies.clark import probes as P

    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    encoded = D.encode_for_probe(tokenizer, [CAT, STORY])
    first = D.extract_word_maps(tiny_bert, encoded, progress=False)
    second = D.extract_word_maps(tiny_bert, encoded, progress=False)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    kw = dict(glove=glove, epochs=1, hidden=8, random_init=False, progress=False)
    before = P.cached_run_probes(tiny_bert, [CAT, STORY] * 2, [CAT, STORY], **kw)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["probe_results"]

    def no_maps(*args, **kwargs):
        raise AssertionError("a cached probe run extracted maps again")

    monkeypatch.setattr(D, "extract_word_maps", no_maps)
    again = P.cached_run_probes(tiny_bert, [CAT, STORY] * 2, [CAT, STORY], **kw)
    assert again["uas"] == before["uas"]
