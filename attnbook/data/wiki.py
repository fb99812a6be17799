"""WikiText-2 articles and paragraphs (the text of Clark et al.'s §3 segments).

Two files of the data directory's ``wiki/`` folder are read:

* ``wikitext-2-raw/wiki.test.raw`` - 60 articles, raw text (CRLF line ends, no
  blank lines; each line a heading or a paragraph);
* ``wikitext-2/valid.txt`` - 60 more articles, the *tokenized* release, where
  rare words are ``<unk>`` (mapped to the tokenizer's ``[UNK]``).

An article starts at a ``= Title =`` line (a single ``=``); section headings
(``= = ... = =``) are skipped; every other non-empty line is a paragraph.
WikiText's tokenization artefacts are undone: `` @-@ `` -> ``-``, `` @,@ `` -> ``,``,
`` @.@ `` -> ``.``.

The articles are read as a :class:`datasets.Dataset`, one row per article (:func:`wiki_dataset`,
:func:`articles_dataset`; columns ``title``, ``paragraphs`` (a list of strings) and ``source``), kept in the book's
cache by :func:`attnbook.data.hf.cached`; :func:`load_articles` and :func:`read_articles` build the
:class:`Article` s from its rows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attnbook.core.cache import code_hash
from attnbook.core.errors import EmptyDataError, MalformedInputError
from attnbook.data import hf
from attnbook.data.registry import data_path

if TYPE_CHECKING:
    from datasets import Dataset, Features

#: the two files, in the order they are used
WIKI_FILES = {
    "test_raw": ("wikitext-2-raw", "wiki.test.raw"),
    "valid": ("wikitext-2", "valid.txt"),
}

_TITLE = re.compile(r"^ ?= [^=].* = ?$")
_HEADING = re.compile(r"^ ?(= )+.*( =)+ ?$")
_ARTEFACTS = ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", "."))


@dataclass(frozen=True)
class Article:
    """One WikiText article: its title, paragraphs, and where it came from."""

    title: str
    paragraphs: tuple[str, ...]
    source: str


def clean_paragraph(text: str, unk_token: str = "[UNK]") -> str:
    """Undo WikiText's ``@-@`` style escapes and map ``<unk>`` to the tokenizer's unknown token."""
    text = text.strip()
    for old, new in _ARTEFACTS:
        text = text.replace(old, new)
    return text.replace("<unk>", unk_token)


def features() -> Features:
    """The typed columns of a WikiText Dataset: ``title``, ``paragraphs`` (a list of strings), ``source``."""
    from datasets import Features, List, Value

    return Features({"title": Value("string"), "paragraphs": List(Value("string")), "source": Value("string")})


def articles_of(ds: Dataset) -> list[Article]:
    """A WikiText Dataset's rows as :class:`Article` s, in order."""
    cols = hf.rows(ds)
    return [Article(t, tuple(ps), s) for t, ps, s in zip(cols["title"], cols["paragraphs"], cols["source"])]


def articles_dataset(path: Path, source: str, unk_token: str = "[UNK]") -> Dataset:
    """A WikiText file (raw or tokenized layout) as a Dataset of its articles, cached by the file's content."""
    path = Path(path)

    def build():
        articles = _parse_articles(path, source, unk_token)
        cols = {"title": [a.title for a in articles], "paragraphs": [list(a.paragraphs) for a in articles],
                "source": [a.source for a in articles]}
        return cols, features(), ""

    parts = {"reader": "wiki", "code": code_hash(_parse_articles), "sha256": hf.file_sha256(path), "source": source,
             "unk_token": unk_token}
    return hf.cached("wiki", parts, build)


def read_articles(path: Path, source: str, unk_token: str = "[UNK]") -> list[Article]:
    """Parse a WikiText file into articles (raw or tokenized layout): :func:`articles_dataset`'s rows."""
    return articles_of(articles_dataset(path, source, unk_token))


def _parse_articles(path: Path, source: str, unk_token: str) -> list[Article]:
    articles: list[Article] = []
    title: str | None = None
    paragraphs: list[str] = []
    with open(path, encoding="utf-8", newline="") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            if "\x00" in line:
                raise MalformedInputError(path, lineno, "NUL byte in a text file")
            if _TITLE.match(line):
                if title is not None and paragraphs:
                    articles.append(Article(title, tuple(paragraphs), source))
                title, paragraphs = line.strip(" =").strip(), []
            elif _HEADING.match(line):
                continue
            else:
                if title is None:
                    raise MalformedInputError(path, lineno, "paragraph before the first '= Title =' line")
                paragraphs.append(clean_paragraph(line, unk_token))
    if title is not None and paragraphs:
        articles.append(Article(title, tuple(paragraphs), source))
    if not articles:
        raise EmptyDataError(f"no articles found in {path}")
    return articles


def wiki_dataset(sources: tuple[str, ...] = ("test_raw", "valid"), unk_token: str = "[UNK]") -> Dataset:
    """The articles of the named sources (keys of :data:`WIKI_FILES`), in that order, as one Dataset."""
    from datasets import concatenate_datasets

    parts = []
    for name in sources:
        if name not in WIKI_FILES:
            raise KeyError(f"unknown WikiText source {name!r}; known: {', '.join(WIKI_FILES)}")
        parts.append(articles_dataset(data_path("wiki", *WIKI_FILES[name]), name, unk_token))
    if not parts:
        return hf.table({"title": [], "paragraphs": [], "source": []}, features())
    return parts[0] if len(parts) == 1 else concatenate_datasets(parts)


def load_articles(sources: tuple[str, ...] = ("test_raw", "valid"), unk_token: str = "[UNK]") -> list[Article]:
    """Articles from the named sources (keys of :data:`WIKI_FILES`), in that order (:func:`wiki_dataset`'s rows)."""
    return articles_of(wiki_dataset(sources, unk_token))


def source_files(sources: tuple[str, ...] = ("test_raw", "valid")) -> list[Path]:
    """The data files behind ``sources`` (for provenance and cache keys)."""
    return [data_path("wiki", *WIKI_FILES[name]) for name in sources]
