"""Links from a "paper vs this run" row to the section of its page that measures it.

A row names the part of the paper it judges (``experiment``: "§4.2 heads as parsers", "Table 1", "§4.1 Fig. 2").
:func:`experiment_anchor` turns that name into one HTML id per chapter and experiment, so the comparison table and
the findings box can link a row to its section while the chapter runs (the kernel does not see the page's headings).
When the executed notebook is tidied, :func:`place_targets` puts a MyST target with that id above the heading of the
section the experiment belongs to: the heading that names the same paper section (``§4.2``, ``4.2``, ``Table 1``,
``Fig. 2``), else the "Paper vs this run" heading, so every link a row carries lands somewhere on its page.
"""
from __future__ import annotations

import re
from typing import Iterable

#: a target line this module places (so a second tidy of the same notebook replaces, not repeats, them)
_TARGET = re.compile(r"^\((ch\d\d[a-z]?-row-[a-z0-9-]+)\)=\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")
_FIGURE = re.compile(r"\b(Table|Fig\.?|Figure)\s*(\d+)", re.IGNORECASE)
#: the heading of the comparison table, the fallback target
TABLE_HEADING = "paper vs this run"


def experiment_anchor(chapter: str, experiment: str) -> str:
    """The id of ``experiment``'s section on ``chapter``'s page: ``("02_clark_probing", "§4.2 heads as parsers")``
    -> ``"ch02-row-s4-2-heads-as-parsers"``. Lower-case letters, digits and single hyphens, starting with a letter
    (Sphinx keeps such an id as it is), and distinct between chapters (the book's labels share one namespace)."""

    prefix = re.match(r"(\d\d[a-z]?)", chapter)
    if not prefix:
        raise ValueError(f"chapter ids start with their two-digit number (e.g. '02_clark_probing'), got {chapter!r}")
    slug = re.sub(r"[^a-z0-9]+", "-", experiment.replace("§", " s").lower()).strip("-") or "row"
    return f"ch{prefix.group(1)}-row-{slug}"


def _keys(text: str) -> tuple[set[str], set[str]]:
    """The paper sections (``{"4.2"}``) and numbered tables/figures (``{"table 1", "fig 2"}``) a text names."""
    sections = set(_SECTION.findall(text))
    figures = {f"{'table' if k.lower().startswith('table') else 'fig'} {n}" for k, n in _FIGURE.findall(text)}
    return sections, figures


def _heading_keys(title: str) -> tuple[set[str], set[str]]:
    sections, figures = _keys(title)
    lead = re.match(r"(\d+(?:\.\d+)*)\.?\s", title)  # "3.1 Relative position", "5. Probing": a leading number
    if lead:
        sections.add(lead.group(1))
    return sections, figures


def _words(text: str) -> set[str]:
    """The words of four letters or more, cut to their first five (``"layers"`` and ``"layer"`` meet)."""
    return {w[:5] for w in re.findall(r"[a-z]{4,}", text.lower())}


def _score(experiment: str, title: str, inherited: tuple[set[str], set[str]] = (set(), set())) -> int:
    """How well a heading matches an experiment: a shared paper section counts by its depth (``4.2`` beats ``4``),
    a shared table or figure number 5, each shared word 1 (a subsection shares its section's numbers); 0: none."""
    e_sec, e_fig = _keys(experiment)
    h_sec, h_fig = _heading_keys(title)
    h_sec, h_fig = h_sec | inherited[0], h_fig | inherited[1]
    score = max((10 * (s.count(".") + 1) for s in e_sec & h_sec), default=0) + (5 if e_fig & h_fig else 0)
    words = _words(_SECTION.sub(" ", experiment)) & _words(title)
    return score + len(words)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def place_targets(nb: dict, chapter: str, experiments: Iterable[str]) -> dict[str, str]:
    """Put a target for each experiment above the heading of its section in the executed notebook ``nb`` (in place);
    returns experiment -> the heading it links to. Targets a previous tidy placed are removed first."""

    cells = nb.get("cells", [])
    headings: list[tuple[int, int, str, tuple[set[str], set[str]]]] = []  # (cell, line, title, inherited keys)
    section_keys: tuple[set[str], set[str]] = (set(), set())
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        lines = [ln for ln in _source(cell).split("\n") if not _TARGET.match(ln)]
        cell["source"] = "\n".join(lines)
        for k, line in enumerate(lines):
            m = _HEADING.match(line)
            if not m or len(m.group(1)) == 1:  # the page title (one '#') is not a section
                continue
            title = m.group(2).strip()
            if len(m.group(1)) == 2:
                section_keys = _heading_keys(title)
                headings.append((i, k, title, (set(), set())))
            else:
                headings.append((i, k, title, section_keys))
    fallback = next((h for h in headings if h[2].lower().startswith(TABLE_HEADING)), None)
    placed: dict[tuple[int, int], list[str]] = {}
    where: dict[str, str] = {}
    for experiment in dict.fromkeys(experiments):
        candidates = [h for h in headings if h is not fallback]
        best = max(candidates, key=lambda h: _score(experiment, h[2], h[3]), default=None)
        if best is None or _score(experiment, best[2], best[3]) == 0:
            best = fallback
        if best is None:
            continue
        placed.setdefault(best[:2], []).append(experiment_anchor(chapter, experiment))
        where[experiment] = best[2]
    for (i, k), anchors in sorted(placed.items(), reverse=True):
        lines = _source(cells[i]).split("\n")
        lines[k:k] = [f"({a})=" for a in dict.fromkeys(anchors)]
        cells[i]["source"] = "\n".join(lines)
    return where
