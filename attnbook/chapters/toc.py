"""The book's chapters in one place: their order, titles and parts.

The runner executes :data:`CHAPTERS` in this order, the results overview titles its sections from it,
every chapter registers its parameters under the same id (:mod:`attnbook.chapters.profiles`), and
``_toc.yml`` lists the same pages in the same parts (:func:`toc` builds it; a test compares them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, TypeVar

from attnbook.core.errors import ParameterError

_Row = TypeVar("_Row")


@dataclass(frozen=True)
class Page:
    """One page of a chapter published on several: ``id`` names the page (``book/<id>.ipynb``); ``experiments`` are
    the "paper vs this run" experiments whose rows, findings and table it shows (empty: every experiment no other page
    of the chapter names). The chapter's notebook starts each page after the first with a cell tagged
    :data:`PAGE_TAG` (its heading is the page's title)."""

    id: str
    experiments: tuple[str, ...] = ()


#: the tag of the notebook cell that starts a chapter's next page in the published book
PAGE_TAG = "attnbook-page"


@dataclass(frozen=True)
class Chapter:
    """One chapter: ``id`` names its notebook (``notebooks/<id>.ipynb``), results file and profile entry. A long
    chapter is published on several ``pages`` (the first keeps the chapter's id); the notebook stays one."""

    id: str
    title: str
    part: str
    pages: tuple[Page, ...] = ()

    @property
    def page_ids(self) -> tuple[str, ...]:
        """The ids of the chapter's pages in the book, in order: ``(id,)`` for a chapter on one page."""
        return tuple(p.id for p in self.pages) or (self.id,)

    def page_index(self, experiment: str) -> int:
        """Which of :attr:`page_ids` shows ``experiment``'s rows (0 for a chapter on one page)."""
        for i, page in enumerate(self.pages):
            if experiment in page.experiments:
                return i
        return next((i for i, page in enumerate(self.pages) if not page.experiments), 0)

    def page_of(self, experiment: str) -> str:
        """The page (its id) that shows ``experiment``'s rows and holds its link target."""
        return self.page_ids[self.page_index(experiment)]

    def rows_on_page(self, rows: Iterable[_Row], index: int) -> list[_Row]:
        """The rows (anything with an ``experiment``) that page ``index`` shows."""
        if not 0 <= index < len(self.page_ids):
            raise ParameterError(f"chapter {self.id} has {len(self.page_ids)} page(s); no page {index}")
        return [r for r in rows if self.page_index(r.experiment) == index]

    @property
    def number(self) -> int:
        return int(self.id[:2])

    @property
    def heading(self) -> str:
        """``"1. Surface patterns (Clark §3)"``: how the results overview names the chapter."""
        return f"{self.number}. {self.title}"


CLARK = "Clark et al. (2019), What does BERT look at?"
KOVALEVA = "Kovaleva et al. (2019), Revealing the dark secrets of BERT"
MICHEL = "Michel et al. (2019), Are sixteen heads really better than one?"
NIVEN_KAO = "Niven & Kao (2019), Probing comprehension of arguments"
ACROSS = "Across the papers"

#: Every chapter, in book order.
CHAPTERS: tuple[Chapter, ...] = (
    Chapter("01_clark_surface_patterns", "Surface patterns (Clark §3)", CLARK),
    Chapter("02_clark_probing", "Probing heads (Clark §4-5)", CLARK),
    Chapter("03_clark_clustering", "Clustering heads (Clark §6)", CLARK),
    Chapter("04_kovaleva_taxonomy", "Patterns and fine-tuning (Kovaleva §4)", KOVALEVA,
            pages=(Page("04_kovaleva_taxonomy", ("Table 1", "§4.3")), Page("04_kovaleva_patterns"))),
    Chapter("05_kovaleva_disabling", "Disabling heads (Kovaleva §4.6, §5)", KOVALEVA),
    Chapter("06_michel_pruning", "Pruning heads (Michel et al.)", MICHEL),
    Chapter("07_arct_cues", "Cues in ARCT (Niven & Kao)", NIVEN_KAO),
    Chapter("08_head_atlas", "A head atlas (all papers)", ACROSS),
    Chapter("09_across_encoders", "What holds across encoders (Clark, Kovaleva)", ACROSS),
)

#: Front-matter pages that are notebooks, executed in the build like the chapters (``notebooks/pages/<name>.ipynb``
#: -> ``book/<name>.ipynb``) but with no profile, results file or comparison table: they show the package at work.
PAGES: tuple[str, ...] = ("heads_of_your_own_model",)

#: Pages before and after the chapters: (caption, pages).
FRONT_MATTER = ("Getting started", ("book/how_to_run", "book/heads_of_your_own_model", "book/seminar"))
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
