"""What every chapter does first and last.

    P = chapter.setup(CHAPTER, profile, globals())   # after the parameters cell
    ...
    chapter.finish(res)                               # last cell: table, files, provenance

``setup`` resolves the parameters (profile values overridden by non-``None``
notebook parameters), seeds Python, NumPy and torch from ``P.seed``, sets the
torch thread count, makes ``P.device`` the device models load on and enables
the offline chart renderer.
"""
from __future__ import annotations

import random
from typing import Any, Mapping

import numpy as np
import torch

from attnbook import charts as plots
from attnbook.chapters import tables
from attnbook.chapters.params import resolve
from attnbook.chapters.results import ChapterResults
from attnbook.chapters.toc import chapter as chapter_of
from attnbook.core import cache
from attnbook.core.parameters import Parameters
from attnbook.engine.models import set_default_device, set_threads


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup(chapter: str, profile: str, namespace: Mapping[str, Any]) -> Parameters:
    """Resolve parameters, seed, set threads, enable charts; returns the parameters."""
    params = resolve(chapter, profile, namespace)
    seed_everything(int(getattr(params, "seed", 0)))
    set_threads()
    set_default_device(params.device)
    cache.set_enabled(params.use_cache)
    cache.forget_used()  # the chapter's provenance lists the cache entries this run reads or writes
    plots.enable()
    tables.enable()
    torch.set_grad_enabled(True)
    return params


def finish(res: ChapterResults, page: int | None = None):
    """Save the results files and show the "paper vs this run" table (``page``: only the rows that page of a chapter
    published on several shows, :meth:`~attnbook.chapters.results.ChapterResults.table`)."""
    from IPython.display import Markdown, display

    path = res.save()
    table = res.table(page)
    display(table.style.hide(axis="index") if hasattr(table, "style") else table)
    display(Markdown(f"*Key numbers written to `{path.name}` in the results folder.*"))
    return None


def page_table(res: ChapterResults, page: int):
    """The "paper vs this run" table of one page of a chapter published on several, for display where that page
    ends (the results files are written once, by :func:`finish`, at the end of the notebook)."""
    table = res.table(page)
    return table.style.hide(axis="index") if hasattr(table, "style") else table


def page_rows(chapter: str, rows, page: int) -> list:
    """The rows that page ``page`` of ``chapter`` shows (:meth:`attnbook.chapters.toc.Chapter.rows_on_page`)."""
    return chapter_of(chapter).rows_on_page(rows, page)


def provenance(res: ChapterResults):
    """The provenance block shown at the end of every chapter."""
    from IPython.display import Markdown

    return Markdown("### Provenance\n\n" + res.provenance_markdown())
