"""The book's chapters in one place: their order, titles and parts.

The runner executes :data:`CHAPTERS` in this order, the results overview titles its sections from it,
every chapter registers its parameters under the same id (:mod:`attnbook.chapters.profiles`), and
``_toc.yml`` lists the same pages in the same parts (:func:`toc` builds it; a test compares them).
"""
from __future__ import annotations

from dataclasses import dataclass

from attnbook.core.errors import ParameterError


@dataclass(frozen=True)
class Chapter:
    """One chapter: ``id`` names its notebook (``notebooks/<id>.ipynb``), results file and profile entry."""

    id: str
    title: str
    part: str

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
    Chapter("04_kovaleva_taxonomy", "Patterns and fine-tuning (Kovaleva §4)", KOVALEVA),
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
        parts[-1]["chapters"].append({"file": f"book/{c.id}"})
    parts.append({"caption": BACK_MATTER[0], "chapters": [{"file": f} for f in BACK_MATTER[1]]})
    return {"format": "jb-book", "root": ROOT_PAGE, "parts": parts}
