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
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from attnbook.core.errors import EmptyDataError, MalformedInputError
from attnbook.data.registry import data_path

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


def read_articles(path: Path, source: str, unk_token: str = "[UNK]") -> list[Article]:
    """Parse a WikiText file into articles (raw or tokenized layout)."""
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


def load_articles(sources: tuple[str, ...] = ("test_raw", "valid"), unk_token: str = "[UNK]") -> list[Article]:
    """Articles from the named sources (keys of :data:`WIKI_FILES`), in that order."""
    out: list[Article] = []
    for name in sources:
        if name not in WIKI_FILES:
            raise KeyError(f"unknown WikiText source {name!r}; known: {', '.join(WIKI_FILES)}")
        out.extend(read_articles(data_path("wiki", *WIKI_FILES[name]), name, unk_token))
    return out


def source_files(sources: tuple[str, ...] = ("test_raw", "valid")) -> list[Path]:
    """The data files behind ``sources`` (for provenance and cache keys)."""
    return [data_path("wiki", *WIKI_FILES[name]) for name in sources]
