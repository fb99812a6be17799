"""Reading and writing CoNLL-U dependency treebanks (Universal Dependencies).

Clark et al. §4.2 and §5 evaluate attention heads against gold dependency
trees. The book uses UD English EWT (``data_path("ud_ewt", "en_ewt-ud-dev.conllu")``);
:func:`load_ud` reads one of its splits.

A CoNLL-U sentence is a block of comment lines (``# sent_id = ...``) and word
lines with ten tab-separated columns

    ``ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC``

ended by a blank line. What the reader keeps, per :class:`Sentence`:

* the *syntactic words* (integer ids ``1..n``) with every column; ``head`` is the
  file's 1-based head id, ``0`` for the root (:meth:`Sentence.heads0` gives
  0-based positions with ``-1`` for the root);
* every comment line, raw and in order (``# newdoc``, ``# newpar``, ``# sent_id``,
  ``# text``, ...), with :attr:`Sentence.sent_id` / :attr:`Sentence.text` parsed;
* multiword-token range lines (``16-17``) and empty nodes (``8.1``) are *not*
  words: they are skipped for analysis but kept verbatim in
  :attr:`Sentence.extra` so that :func:`write_conllu` reproduces the file.

Malformed input raises :class:`~attnbook.core.errors.MalformedInputError` naming the
file and the 1-based line: a word line without ten columns, a non-integer id
or head, ids that are not ``1, 2, 3, ...``, a head outside ``0..n`` or a word
that is its own head.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from attnbook.core.errors import EmptyDataError, MalformedInputError
from attnbook.core.io import atomic_path
from attnbook.data.registry import data_path

#: the ten CoNLL-U columns, in file order
COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")

_RANGE = re.compile(r"^\d+-\d+$")
_EMPTY = re.compile(r"^\d+\.\d+$")

#: UD splits of English EWT, by name
UD_SPLITS = ("train", "dev", "test")


@dataclass
class Sentence:
    """One dependency tree: parallel per-word lists, 1-based ``ids`` and ``head`` (0 = root)."""

    ids: list[int]
    words: list[str]
    lemmas: list[str]
    upos: list[str]
    xpos: list[str]
    feats: list[str]
    head: list[int]
    deprel: list[str]
    deps: list[str]
    misc: list[str]
    comments: list[str] = field(default_factory=list)
    #: lines that are not syntactic words, as ``(n_words_before, raw_line)``: ranges ``16-17``, empty nodes ``8.1``
    extra: list[tuple[int, str]] = field(default_factory=list)
    #: where the sentence came from (file, 1-based line of its first line), for messages
    source: tuple[str, int] | None = None

    def __digest__(self) -> tuple:
        """What identifies the tree for a cache key (not where it was read from)."""
        return (self.words, self.upos, self.xpos, self.feats, self.head, self.deprel)

    def __len__(self) -> int:
        return len(self.words)

    def _comment(self, key: str) -> str | None:
        prefix = f"# {key} ="
        for c in self.comments:
            if c.startswith(prefix):
                return c[len(prefix):].strip()
        return None

    @property
    def sent_id(self) -> str | None:
        """The ``# sent_id = ...`` value, if any."""
        return self._comment("sent_id")

    @property
    def text(self) -> str | None:
        """The ``# text = ...`` value, if any."""
        return self._comment("text")

    @property
    def newdoc(self) -> bool:
        """Whether a ``# newdoc`` comment starts a document here."""
        return any(c.startswith("# newdoc") for c in self.comments)

    @property
    def newpar(self) -> bool:
        """Whether a ``# newpar`` comment starts a paragraph here."""
        return any(c.startswith("# newpar") for c in self.comments)

    def heads0(self) -> list[int]:
        """0-based head position of every word, ``-1`` for the root."""
        return [h - 1 for h in self.head]

    def word_lines(self) -> list[str]:
        """The word lines as CoNLL-U text (tab-separated, no newline)."""
        return [
            "\t".join(
                (str(i), w, lem, up, xp, fe, str(h), rel, dp, mi)
            )
            for i, w, lem, up, xp, fe, h, rel, dp, mi in zip(
                self.ids, self.words, self.lemmas, self.upos, self.xpos, self.feats,
                self.head, self.deprel, self.deps, self.misc,
            )
        ]


def _parse_int(text: str, what: str, path: Path, line: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise MalformedInputError(path, line, f"{what} must be an integer, got {text!r}") from None


class _Builder:
    def __init__(self, path: Path, start: int):
        self.path, self.start = path, start
        self.comments: list[str] = []
        self.extra: list[tuple[int, str]] = []
        self.cols: list[list[str]] = []
        self.lines: list[int] = []  # 1-based line number of each word

    def empty(self) -> bool:
        return not (self.comments or self.extra or self.cols)

    def finish(self) -> Sentence:
        if not self.cols:
            line = self.start
            raise MalformedInputError(self.path, line, "a sentence block has comments but no word lines")
        n = len(self.cols)
        heads = []
        for cols, line in zip(self.cols, self.lines):
            h = _parse_int(cols[6], "HEAD (column 7)", self.path, line)
            i = int(cols[0])
            if not 0 <= h <= n:
                raise MalformedInputError(
                    self.path, line, f"HEAD {h} of word {i} is outside 0..{n} (the sentence has {n} words)"
                )
            if h == i:
                raise MalformedInputError(self.path, line, f"word {i} is its own head")
            heads.append(h)
        c = list(zip(*self.cols))
        return Sentence(
            ids=[int(x) for x in c[0]], words=list(c[1]), lemmas=list(c[2]), upos=list(c[3]),
            xpos=list(c[4]), feats=list(c[5]), head=heads, deprel=list(c[7]), deps=list(c[8]),
            misc=list(c[9]), comments=self.comments, extra=self.extra, source=(str(self.path), self.start),
        )


# Kept, not the `conllu` package: parse_incr reads UD EWT 2.3-3.5x slower even with raw fields; no line numbers.
def parse_conllu(lines: Iterable[str], path: Path | str = "<string>") -> Iterator[Sentence]:
    """Parse CoNLL-U text given as lines; yields :class:`Sentence` objects (see the module doc)."""
    path = Path(path)
    block: _Builder | None = None
    lineno = 0
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            if block is not None and not block.empty():
                yield block.finish()
            block = None
            continue
        if block is None:
            block = _Builder(path, lineno)
        if line.startswith("#"):
            if block.cols:
                raise MalformedInputError(path, lineno, "a comment line inside a sentence's word lines")
            block.comments.append(line)
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise MalformedInputError(
                path, lineno, f"expected 10 tab-separated columns (ID FORM ... MISC), got {len(cols)}"
            )
        first = cols[0]
        if _RANGE.match(first) or _EMPTY.match(first):
            block.extra.append((len(block.cols), line))
            continue
        i = _parse_int(first, "ID (column 1)", path, lineno)
        expected = len(block.cols) + 1
        if i != expected:
            raise MalformedInputError(
                path, lineno, f"word ids must be consecutive from 1: expected {expected}, got {i}"
            )
        block.cols.append(cols)
        block.lines.append(lineno)
    if block is not None and not block.empty():
        yield block.finish()


def iter_conllu(path: Path | str) -> Iterator[Sentence]:
    """Stream the sentences of a CoNLL-U file (UTF-8)."""
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        yield from parse_conllu(fh, path)


def read_conllu(path: Path | str, max_sentences: int | None = None) -> list[Sentence]:
    """The sentences of a CoNLL-U file, the first ``max_sentences`` of them if given.

    Raises :class:`EmptyDataError` if the file holds no sentence.
    """
    out: list[Sentence] = []
    for s in iter_conllu(path):
        if max_sentences is not None and len(out) >= max_sentences:
            break
        out.append(s)
    if not out:
        raise EmptyDataError(f"{path} holds no CoNLL-U sentence")
    return out


def format_conllu(sentences: Iterable[Sentence]) -> str:
    """CoNLL-U text of ``sentences``: comments, word lines with range/empty-node lines restored, blank line."""
    chunks: list[str] = []
    for s in sentences:
        lines = list(s.comments)
        words = s.word_lines()
        extra = sorted(s.extra, key=lambda e: e[0])  # stable: keeps file order among equal positions
        k = 0
        for before in range(len(words) + 1):
            # range lines precede word `before + 1`; empty nodes follow word `before`
            while k < len(extra) and extra[k][0] == before:
                lines.append(extra[k][1])
                k += 1
            if before < len(words):
                lines.append(words[before])
        chunks.append("\n".join(lines) + "\n\n")
    return "".join(chunks)


def write_conllu(sentences: Iterable[Sentence], path: Path | str) -> Path:
    """Write ``sentences`` as a CoNLL-U file (atomically); returns the path."""

    path = Path(path)
    text = format_conllu(sentences)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def ud_path(split: str) -> Path:
    """Path of a UD English EWT split (``"train"``, ``"dev"``, ``"test"``) in the data directory."""

    if split not in UD_SPLITS:
        raise ValueError(f"UD split is one of {UD_SPLITS}, got {split!r}")
    return data_path("ud_ewt", f"en_ewt-ud-{split}.conllu")


def load_ud(split: str, max_sentences: int | None = None) -> list[Sentence]:
    """The sentences of UD English EWT ``split`` (the first ``max_sentences`` if given, in file order)."""
    return read_conllu(ud_path(split), max_sentences)
