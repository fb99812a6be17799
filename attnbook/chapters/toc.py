"""The book's chapters in order, with their titles, parts and pages, and the table of contents.

Each chapter declares itself once (:class:`attnbook.chapters.spec.Chapter`, in its module of
:mod:`attnbook.chapters.profiles`); :data:`CHAPTERS` lists them in book order. The runner executes them in this order,
the results overview titles its sections from it, and ``_toc.yml`` lists the same pages in the same parts (:func:`toc`
builds it; a test compares them).
"""
from __future__ import annotations

from attnbook.chapters.params import SPECS, load_registry
from attnbook.chapters.spec import ACROSS, CLARK, KOVALEVA, MICHEL, NIVEN_KAO, PAGE_TAG, Chapter, Page  # noqa: F401
from attnbook.core.errors import ParameterError

load_registry()
#: Every chapter, in book order (their ids start with their number), as each declared itself in
#: :mod:`attnbook.chapters.profiles`.
CHAPTERS: tuple[Chapter, ...] = tuple(SPECS[k] for k in sorted(SPECS))

#: Front-matter pages that are notebooks, executed in the build like the chapters (``notebooks/pages/<name>.ipynb``
#: -> ``book/<name>.ipynb``) but with no profile, results file or comparison table: they show the package at work.
PAGES: tuple[str, ...] = ("heads_of_your_own_model",)

#: Pages before and after the chapters: (caption, pages).
FRONT_MATTER = ("Getting started", ("book/how_to_run", "book/heads_of_your_own_model", "book/seminar",
                                    "book/on_a_cluster"))
BACK_MATTER = ("Back matter", ("book/results", "book/glossary", "book/bibliography"))
ROOT_PAGE = "book/intro"

CHAPTER_IDS: tuple[str, ...] = tuple(c.id for c in CHAPTERS)
#: every chapter page of the book, in order: a chapter's id, or the ids of its pages
CHAPTER_PAGES: tuple[str, ...] = tuple(p for c in CHAPTERS for p in c.page_ids)
#: a chapter page -> the chapter (and so the notebook) it comes from
PAGE_CHAPTER: dict[str, str] = {p: c.id for c in CHAPTERS for p in c.page_ids}


def chapter(name: str) -> Chapter:
    """The chapter with id ``name``."""
    for c in CHAPTERS:
        if c.id == name:
            return c
    raise ParameterError(f"unknown chapter {name!r}; known: {', '.join(CHAPTER_IDS)}")


def toc() -> dict:
    """The Jupyter Book table of contents (the content of ``_toc.yml``) for :data:`CHAPTERS`."""
    parts = [{"caption": FRONT_MATTER[0], "chapters": [{"file": f} for f in FRONT_MATTER[1]]}]
    for c in CHAPTERS:
        if not parts[-1]["caption"] == c.part:
            parts.append({"caption": c.part, "chapters": []})
        parts[-1]["chapters"].extend({"file": f"book/{p}"} for p in c.page_ids)
    parts.append({"caption": BACK_MATTER[0], "chapters": [{"file": f} for f in BACK_MATTER[1]]})
    return {"format": "jb-book", "root": ROOT_PAGE, "parts": parts}
