"""What happens to an executed chapter between papermill and the page: one parameters cell, no kernel noise.

* :func:`merge_parameters` — papermill runs the notebook's ``parameters`` cell and then an injected cell
  with the values it was given; a reader should see one cell. The injected values are written into the
  original cell's assignments (keeping each line's comment), and the injected cell is dropped. The page
  then shows every parameter with the value the chapter ran with.
* :func:`take_stderr` — warnings and other text the kernel wrote to stderr are removed from the page and
  returned, so the runner can keep them in a log file (``_build/logs/<chapter>.stderr.txt``) and say how
  many there were: nothing is hidden, it is moved out of the reader's way.
* :func:`fold_bookkeeping` — the parameters cell, the set-up cells after it (imports, ``chapter.setup``) and the
  cells that only write the results files get the tag that folds their input behind a toggle (:data:`FOLD_TAG`);
  their outputs stay on the page, and the source notebooks keep their cells as they are.
* :func:`stable_outputs` — what would make two runs of the same code differ on the page without a number changing
  goes: progress-bar widgets (their state needs widget JavaScript the static book does not load) and object
  addresses in text reprs; the random ids pandas gives each styled table become ids numbered in page order.
* :func:`split_pages` — a chapter published on several pages (:attr:`attnbook.chapters.toc.Chapter.pages`) is cut
  before each cell tagged :data:`attnbook.chapters.toc.PAGE_TAG`; each page gets the link targets, the findings box
  and the run's box of its own rows. The notebook stays one.
* :class:`Progress` — while a chapter runs, a line every ``every`` seconds with the cell being executed
  (papermill saves the output notebook after each cell; the watcher only reads it).
"""
from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable

from attnbook.chapters.anchors import place_targets
from attnbook.chapters.summary import insert_summary
from attnbook.chapters.toc import PAGE_CHAPTER, PAGE_TAG
from attnbook.chapters.toc import chapter as chapter_of

PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"
#: Jupyter Book's tag for a cell whose input is folded behind a toggle (its outputs shown)
FOLD_TAG = "hide-input"
#: a cell that is not on the page at all keeps its tag as it is
REMOVED_TAGS = ("remove-cell", "remove-input")

#: a statement that only writes the chapter's results files or shows its provenance (continuation lines aside)
_BOOKKEEPING = re.compile(r"^(res\.(add|use_data|compare)\(|chapter\.(finish|provenance)\()")

_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>.*)$")


def _tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _split_comment(value: str) -> tuple[str, str]:
    """``'None   # a comment'`` -> ``('None', '# a comment')``; a ``#`` inside a string literal is not a comment."""
    quote = None
    for i, ch in enumerate(value):
        if quote:
            if ch == quote and value[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return value[:i].rstrip(), value[i:]
    return value.rstrip(), ""


def merge_parameters(nb: dict) -> dict[str, str]:
    """Write the injected parameters into the ``parameters`` cell and drop the injected cell (in place).

    Returns the merged assignments (name -> source text). A notebook without an injected cell is left as it is.
    """
    cells = nb.get("cells", [])
    injected = [i for i, c in enumerate(cells) if INJECTED_TAG in _tags(c)]
    original = [i for i, c in enumerate(cells) if PARAMETERS_TAG in _tags(c)]
    if not injected:
        return {}
    values: dict[str, str] = {}
    for line in _source(cells[injected[0]]).splitlines():
        m = _ASSIGNMENT.match(line.strip())
        if m:
            values[m["name"]] = _split_comment(m["value"])[0]
    if original:
        cell = cells[original[0]]
        lines = _source(cell).splitlines()
        seen = set()
        for k, line in enumerate(lines):
            m = _ASSIGNMENT.match(line)
            if m and m["name"] in values:
                old_value, comment = _split_comment(m["value"])
                new = f"{m['name']} = {values[m['name']]}"
                if comment:  # keep the comment in its column when the new value leaves room
                    column = len(line) - len(comment)
                    new = (new + " ").ljust(column) + comment if len(new) + 1 < column else f"{new}  {comment}"
                lines[k] = new
                seen.add(m["name"])
        lines += [f"{name} = {value}" for name, value in values.items() if name not in seen]
        cell["source"] = "\n".join(lines)
    del cells[injected[0]]
    return values


def take_stderr(nb: dict) -> list[str]:
    """Remove every stderr stream output from the notebook (in place); returns their texts, cell by cell."""
    taken: list[str] = []
    for i, cell in enumerate(nb.get("cells", [])):
        keep = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = out.get("text", "")
                taken.append(f"--- cell {i}\n" + ("".join(text) if isinstance(text, list) else text))
            else:
                keep.append(out)
        if "outputs" in cell:
            cell["outputs"] = keep
    return taken


def _bookkeeping(source: str) -> bool:
    """Whether every statement of a code cell only writes the results files (``res.add``, ``res.use_data``,
    ``res.compare``, ``chapter.finish``, ``chapter.provenance``); comments and continuation lines aside."""
    lines = [ln for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(lines) and all(_BOOKKEEPING.match(ln) or ln[:1] in " \t)]}" for ln in lines)


def fold_bookkeeping(nb: dict) -> list[int]:
    """Tag the bookkeeping cells of an executed notebook with :data:`FOLD_TAG` (in place); returns their indices.

    Folded: the ``parameters`` cell; the code cells after it up to the first Markdown cell (the set-up: imports,
    ``chapter.setup``, the results object), and, anywhere, a code cell whose statements only write the results files
    (:func:`_bookkeeping`). Cells already removed from the page (:data:`REMOVED_TAGS`) are left as they are."""
    cells = nb.get("cells", [])
    folded: list[int] = []
    start = next((i for i, c in enumerate(cells) if PARAMETERS_TAG in _tags(c)), None)
    setup_end = start
    if start is not None:
        setup_end = next((i for i in range(start + 1, len(cells)) if cells[i].get("cell_type") == "markdown"),
                         len(cells))
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or any(t in _tags(cell) for t in REMOVED_TAGS):
            continue
        if (start is not None and start <= i < setup_end) or _bookkeeping(_source(cell)):
            tags = _tags(cell)
            if FOLD_TAG not in tags:
                cell.setdefault("metadata", {})["tags"] = tags + [FOLD_TAG]
            folded.append(i)
    return folded


WIDGET = "application/vnd.jupyter.widget-view+json"
_STYLER_ID = re.compile(r"\bT_([0-9a-f]{5})(?=[_\"\s])")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+>")


def stable_outputs(nb: dict) -> int:
    """Make ``nb``'s outputs the same from run to run (see the module docstring); returns how many widget outputs
    were dropped. A styled table's id ``T_<5 hex digits>`` becomes ``T_<n>``, numbered in the page's order (its CSS
    and its cells' ids change together: the same text is replaced everywhere in the output)."""
    dropped = 0
    nb.get("metadata", {}).pop("widgets", None)
    ids: dict[str, str] = {}
    for cell in nb.get("cells", []):
        outputs = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET in data:
                data.pop(WIDGET)
                dropped += 1
                if set(data) <= {"text/plain"}:  # a widget's text stand-in ("HBox(...)") has nothing to show
                    continue
            for kind, text in data.items():
                if kind == "text/html":
                    joined = "".join(text) if isinstance(text, list) else text
                    for found in _STYLER_ID.findall(joined):
                        ids.setdefault(found, f"{len(ids) + 1:05d}")
                    joined = _STYLER_ID.sub(lambda m: f"T_{ids[m.group(1)]}", joined)
                    data[kind] = joined.splitlines(keepends=True) if isinstance(text, list) else joined
                elif kind == "text/plain":
                    joined = "".join(text) if isinstance(text, list) else text
                    joined = _ADDRESS.sub(">", joined)
                    data[kind] = joined.splitlines(keepends=True) if isinstance(text, list) else joined
            outputs.append(out)
        if "outputs" in cell:
            cell["outputs"] = outputs
    return dropped


def split_pages(nb: dict, chapter: str) -> list[tuple[str, dict]]:
    """``[(page id, notebook)]``: the executed notebook of ``chapter`` cut before each cell tagged
    :data:`~attnbook.chapters.toc.PAGE_TAG`, one part per page of :attr:`~attnbook.chapters.toc.Chapter.page_ids`
    (``[(chapter, nb)]`` for a chapter on one page, or a page that is not a chapter). Each part keeps the notebook's
    metadata; a page after the first starts at its tagged cell (its title)."""

    if chapter not in PAGE_CHAPTER:
        return [(chapter, nb)]
    pages = chapter_of(chapter).page_ids
    cells = nb.get("cells", [])
    starts = [i for i, c in enumerate(cells) if PAGE_TAG in _tags(c)]
    if len(starts) != len(pages) - 1:
        raise ValueError(f"chapter {chapter} is published on {len(pages)} page(s) ({', '.join(pages)}) but its "
                         f"notebook has {len(starts)} cell(s) tagged {PAGE_TAG!r}; tag the first cell of each page "
                         f"after the first")
    bounds = [0, *starts, len(cells)]
    return [(page, {**nb, "cells": cells[a:b]}) for page, a, b in zip(pages, bounds, bounds[1:])]


def tidy(notebook: Path, log: Path, results: Path | None = None, seconds: float | None = None,
         chapter: str | None = None) -> dict[str, Any]:
    """:func:`merge_parameters`, :func:`take_stderr` and :func:`fold_bookkeeping` on an executed notebook file; the
    stderr texts go to ``log`` (removed when there are none). With the chapter's ``results`` file (its provenance file
    beside it), each row's section gets the target its links point to
    (:func:`attnbook.chapters.anchors.place_targets`) and the findings and summary boxes go under the title
    (:func:`attnbook.chapters.summary.insert_summary`; ``seconds``: the run's wall time). A chapter published on
    several pages (``chapter``, or the results file's) is cut by :func:`split_pages`: ``notebook`` keeps the first
    page, each further page is written beside it as ``<notebook>.<page id>.ipynb``, and each page's targets and boxes
    come from its own rows. Returns ``{"parameters": {...}, "stderr": n, "summary": bool, "folded": [cell indices],
    "pages": {page id: path}}``."""

    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    params = merge_parameters(nb)
    stderr = take_stderr(nb)
    folded = fold_bookkeeping(nb)
    stable_outputs(nb)
    data: dict[str, Any] | None = None
    provenance: dict[str, Any] = {}
    if results is not None and Path(results).exists():
        prov = Path(results).with_name(Path(results).name.replace(".json", ".provenance.json"))
        data = json.loads(Path(results).read_text(encoding="utf-8"))
        provenance = json.loads(prov.read_text(encoding="utf-8")) if prov.exists() else {}
        chapter = chapter or data["chapter"]
    parts = split_pages(nb, chapter) if chapter else [(None, nb)]
    written: dict[str, Path] = {}
    for i, (page, part) in enumerate(parts):
        if data is not None:
            rows = data.get("comparisons", [])
            if len(parts) > 1:
                mine = chapter_of(chapter).page_ids.index(page)
                rows = [r for r in rows if chapter_of(chapter).page_index(r["experiment"]) == mine]
            where = place_targets(part, data["chapter"], [r["experiment"] for r in rows])
            insert_summary(part, {**data, "comparisons": rows}, provenance, seconds, linked=where)
        path = Path(notebook) if i == 0 else Path(notebook).with_name(f"{Path(notebook).name}.{page}.ipynb")
        path.write_text(json.dumps(part, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if page is not None:
            written[page] = path
    log = Path(log)
    if stderr:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("\n".join(stderr) + "\n", encoding="utf-8")
    elif log.exists():
        log.unlink()
    return {"parameters": params, "stderr": len(stderr), "summary": data is not None, "folded": folded,
            "pages": written}


def cells_done(notebook: Path) -> tuple[int, int, str] | None:
    """``(cells completed, cells, current section)`` of a notebook papermill is writing (the section: the last
    heading above the first cell not yet completed), or ``None`` while it cannot be read."""
    try:
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells = nb.get("cells", [])
    status = [c.get("metadata", {}).get("papermill", {}).get("status") for c in cells]
    done = sum(1 for st in status if st == "completed")
    current = next((i for i, st in enumerate(status) if st != "completed" and cells[i].get("cell_type") == "code"),
                   len(cells))
    section = ""
    for cell in cells[:current]:
        if cell.get("cell_type") == "markdown":
            for line in _source(cell).splitlines():
                if line.startswith("#"):
                    section = line.lstrip("#").strip()
    return done, len(cells), section


class Progress:
    """Print ``[attnbook] <chapter>: cell k of n (section), m min s`` every ``every`` seconds while a chapter runs."""

    def __init__(self, chapter: str, notebook: Path, every: float = 30.0, write: Callable[[str], None] | None = None):
        self.chapter, self.notebook, self.every = chapter, Path(notebook), float(every)
        self.write = write or (lambda line: print(line, flush=True))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._start = time.time()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            state = cells_done(self.notebook)
            elapsed = int(time.time() - self._start)
            where = (f"cell {min(state[0] + 1, state[1])} of {state[1]}" + (f" ({state[2]})" if state[2] else "")
                     if state else "starting")
            self.write(f"[attnbook] {self.chapter}: {where}, {elapsed // 60} min {elapsed % 60:02d} s")

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
