"""GloVe text reader: vectors, lowercase lookup, OOV policy, malformed lines with file and line."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.core.errors import EmptyDataError, MalformedInputError
from attnbook.data.glove import oov_rate, read_glove

TEXT = "the 0.1 0.2 -0.3\ncat 1 2 3\n, -6.1652e-05 0 1.5\nthe 9 9 9\n"


def write(tmp_path, text: str):
    path = tmp_path / "vectors.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_words_and_vectors(tmp_path):
    g = read_glove(write(tmp_path, TEXT))
    assert g.dim == 3 and len(g) == 4
    assert g.vectors.dtype == np.float32
    np.testing.assert_allclose(g.vectors[g.index["cat"]], [1, 2, 3])
    np.testing.assert_allclose(g.vectors[g.index[","]], [-6.1652e-05, 0, 1.5], rtol=1e-6)
    np.testing.assert_allclose(g.vectors[g.index["the"]], [0.1, 0.2, -0.3], rtol=1e-6)  # first entry wins


def test_lookup_lowercases_and_zeroes_oov(tmp_path):
    g = read_glove(write(tmp_path, TEXT))
    vecs, oov = g.lookup(["The", "CAT", "dog"])
    np.testing.assert_allclose(vecs[1], [1, 2, 3])
    np.testing.assert_allclose(vecs[2], 0.0)
    assert oov.tolist() == [False, False, True]
    assert "Cat" in g and "dog" not in g
    assert oov_rate(g, [["The", "dog"], ["cat", "fish", ","]]) == pytest.approx(2 / 5)


def test_max_words_keeps_the_first(tmp_path):
    g = read_glove(write(tmp_path, TEXT), max_words=2)
    assert g.words == ["the", "cat"]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("a 1 2 3\nb 1 2\n", 2, "3 values"),
        ("a 1 2 3\nb 1 x 3\n", 2, "not a number"),
        ("a 1 2 3\nb 1 2 3 4\n", 2, "3 values"),
        ("a 1 2 3\n\nb 1 2 3\n", 2, "empty line"),
        ("a 1 2 3\n 1 2 3\n", 2, "starts with a space"),
    ],
)
def test_malformed_lines(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(MalformedInputError) as info:
        read_glove(path)
    assert info.value.line == line and info.value.path == path
    assert message in str(info.value)


def test_empty_file(tmp_path):
    with pytest.raises(EmptyDataError):
        read_glove(write(tmp_path, ""))
    g = read_glove(write(tmp_path, "a 1 2\n"))
    with pytest.raises(EmptyDataError):
        oov_rate(g, [[]])
