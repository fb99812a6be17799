"""A chapter declared in one place: :class:`Chapter` (the spec every part of the book reads) and its pages.

Each chapter's module in :mod:`attnbook.chapters.profiles` makes one :class:`Chapter` and registers it
(:func:`attnbook.chapters.params.register_chapter`): the table of contents (:mod:`attnbook.chapters.toc`), the runner,
the parameters (:mod:`attnbook.chapters.params`), the data set-up (:mod:`attnbook.chapters.datasets`) and the box at
the top of its page (:mod:`attnbook.chapters.summary`) all read it. Adding a chapter is one such module and its
notebook.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, TypeVar

from attnbook.core.errors import ParameterError
from attnbook.core.parameters import Parameters

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
    """One chapter, declared once (its module in :mod:`attnbook.chapters.profiles`): ``id`` names its notebook
    (``notebooks/<id>.ipynb``), results file and parameters; ``title`` and ``part`` place it in the book;
    ``datasets`` are the manifest datasets it reads (``attnbook fetch`` names, fetched by the notebook's set-up
    cell); ``pipeline`` the study's :class:`~attnbook.engine.pipeline.Pipeline` that runs it, as
    ``"module:Class"`` (imported when first asked for: the parameter table loads no model code); ``profiles`` its
    parameters in the three profiles, one :class:`~attnbook.core.parameters.Parameters` subclass; ``sizes(params)``
    the sentence of data and sample sizes and ``differs(params, numbers)`` the main ways a run differs from the paper,
    in the box at the top of its page (:mod:`attnbook.chapters.summary`). A long chapter is published on several
    ``pages`` (the first keeps the chapter's id); the notebook stays one. ``after``: the chapters whose results it
    reads (it would compute them again otherwise: chapter 4's classifiers for chapters 5 and 6, chapters 1-6's
    measurements for the atlas), which run first when chapters run side by side."""

    id: str
    title: str
    part: str
    datasets: tuple[str, ...] = ()
    pipeline: str = ""
    profiles: Mapping[str, Parameters] = field(default_factory=dict)
    sizes: Callable[[Any], str] | None = None
    differs: Callable[[Any, Mapping[str, Any]], list[str]] | None = None
    pages: tuple[Page, ...] = ()
    after: tuple[str, ...] = ()

    def pipeline_class(self) -> type:
        """The chapter's pipeline class (:attr:`pipeline` imported)."""
        module, _, name = self.pipeline.partition(":")
        if not module or not name:
            raise ParameterError(f"chapter {self.id} names no pipeline ('module:Class'), got {self.pipeline!r}")
        return getattr(importlib.import_module(module), name)

    def stages(self) -> list:
        """The chapter's stages as the plan reads them (:meth:`~attnbook.engine.pipeline.Pipeline.stages`)."""
        return self.pipeline_class().stages(self.id)

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


# --------------------------------------------------------------------------- words for the sizes sentences
def count_text(value: Any, unit: str = "") -> str:
    """``1000 -> '1,000'``; ``None``/``0`` (no cap) -> ``'all'``."""
    if value in (None, 0):
        return f"all {unit}".strip()
    if isinstance(value, (int, float)):
        return f"{value:,}" + (f" {unit}" if unit else "")
    return str(value)


def caps_text(caps: Mapping[str, Any] | None, unit: str) -> str:
    """A per-task cap mapping as text: ``{"default": 96, "RTE": 64}`` -> ``'96 examples (RTE 64)'``."""
    if not caps:
        return f"all {unit}"
    caps = dict(caps)
    default = caps.pop("default", None)
    rest = ", ".join(f"{t} {count_text(v)}" for t, v in caps.items() if v != default)
    return count_text(default, unit) + (f" ({rest})" if rest else "")


def tasks_text(p: Parameters, key: str = "tasks") -> str:
    """The task list parameter ``key`` as text."""
    value = getattr(p, key)
    return ", ".join(value) if isinstance(value, (list, tuple)) else str(value)


def seeds_text(p: Parameters, key: str = "seeds") -> str:
    """The seed list parameter ``key`` as text: ``[0, 1, 2]`` -> ``'0, 1, 2'``."""
    return ", ".join(map(str, getattr(p, key)))
