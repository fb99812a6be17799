"""GloVe word vectors (Pennington et al., 2014) for the probing classifiers of Clark et al. §5.

Clark et al.'s attention-and-words probe and their distances + GloVe baseline
read GloVe vectors of the dependent and the candidate head. The book ships the
50-dimensional GloVe 6B vectors, filtered to the words of its corpora
(``data_path("glove", "glove.6B.50d.filtered.txt")``, see that folder's SOURCE.md).

Format (GloVe's text format): one word per line, then its ``dim`` values, all
separated by single spaces, no header. The dimension is taken from the first
line; a later line with another number of values, or a value that is not a
number, raises :class:`~attnbook.core.errors.MalformedInputError` with the 1-based line.

Lookup policy (stated once, used everywhere):

* words are **lowercased** before lookup (GloVe 6B is uncased);
* a word not in the vocabulary (out-of-vocabulary, OOV) gets the **zero vector**,
  so it contributes nothing through a linear layer; the probes that use vectors
  also have a per-head bias, so an OOV word falls back to word-independent weights;
* :meth:`GloVe.lookup` returns the OOV mask and :func:`oov_rate` the share of
  tokens that were OOV, which a chapter reports next to the probe's accuracy.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from attnbook.core.errors import EmptyDataError, MalformedInputError
from attnbook.data.registry import data_path

GLOVE_FILE = "glove.6B.50d.filtered.txt"


@dataclass
class GloVe:
    """A word -> vector table: ``vectors[index[word]]`` (float32 ``[vocab, dim]``)."""

    words: list[str]
    vectors: np.ndarray
    index: dict[str, int]
    source: str = ""

    def __digest__(self) -> tuple:
        return (self.words, self.vectors)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word.lower() in self.index

    def lookup(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vectors ``[len(words), dim]`` of the lowercased words and the OOV mask ``[len(words)]`` (zero rows)."""
        out = np.zeros((len(words), self.dim), dtype=np.float32)
        oov = np.ones(len(words), dtype=bool)
        for n, w in enumerate(words):
            i = self.index.get(w.lower())
            if i is not None:
                out[n] = self.vectors[i]
                oov[n] = False
        return out, oov


def parse_glove(lines: Iterable[str], path: Path | str = "<string>", max_words: int | None = None) -> GloVe:
    """Parse GloVe text lines (see the module doc); ``max_words`` keeps the first (most frequent) words."""
    path = Path(path)
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim: int | None = None
    for lineno, raw in enumerate(lines, start=1):
        if max_words is not None and len(words) >= max_words:
            break
        line = raw.rstrip("\r\n")
        if not line.strip():
            raise MalformedInputError(path, lineno, "empty line in a GloVe file (one word and its values per line)")
        parts = line.rstrip(" ").split(" ")
        if dim is None:
            dim = len(parts) - 1
            if dim < 1:
                raise MalformedInputError(path, lineno, "a GloVe line is a word followed by its values")
        if len(parts) < dim + 1:
            raise MalformedInputError(path, lineno, f"expected a word and {dim} values, got {len(parts) - 1} values")
        # words may contain spaces in some GloVe releases: the values are the last `dim` fields
        word = " ".join(parts[:-dim])
        try:
            values = np.array(parts[-dim:], dtype=np.float32)
        except ValueError:
            bad = next(p for p in parts[-dim:] if not _is_float(p))
            raise MalformedInputError(path, lineno, f"value {bad!r} is not a number") from None
        if len(parts) > dim + 1 and _is_float(parts[-dim - 1]):
            # a number before the last `dim` values: too many values, not a word with a space
            raise MalformedInputError(path, lineno, f"expected a word and {dim} values, got {len(parts) - 1} values")
        if not word:
            raise MalformedInputError(path, lineno, "a GloVe line starts with its word; this one starts with a space")
        words.append(word)
        rows.append(values)
    if not words:
        raise EmptyDataError(f"{path} holds no GloVe vectors")
    vectors = np.stack(rows)
    index: dict[str, int] = {}
    for i, w in enumerate(words):
        index.setdefault(w, i)  # the first (most frequent) entry wins on duplicates
    return GloVe(words=words, vectors=vectors, index=index, source=str(path))


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_glove(path: Path | str, max_words: int | None = None) -> GloVe:
    """Read a GloVe text file (UTF-8); see :func:`parse_glove`."""
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        return parse_glove(fh, path, max_words)


def load_glove(max_words: int | None = None) -> GloVe:
    """The book's GloVe 6B 50d vectors from the data directory (``data_path("glove", GLOVE_FILE)``)."""

    return read_glove(data_path("glove", GLOVE_FILE), max_words)


def oov_rate(glove: GloVe, sentences: Iterable[Sequence[str]]) -> float:
    """Share of word tokens in ``sentences`` (lists of words) that are not in ``glove`` (after lowercasing)."""
    total = oov = 0
    for words in sentences:
        for w in words:
            total += 1
            oov += w.lower() not in glove.index
    if total == 0:
        raise EmptyDataError("no words to look up")
    return oov / total
