"""A small Sphinx extension for the book's HTML.

Jupyter Book 1 runs sphinx-thebe's set-up twice, which registers its inline
configuration script twice, so every page logs "Identifier 'THEBE_JS_URL' has
already been declared". This extension drops exact duplicates from the
builder's script list after the other extensions have added theirs.

It also points the launch buttons (Binder, Colab, JupyterHub) of a chapter at its source notebook in
``notebooks/``: the page itself is rendered from the executed copy in ``book/``, which the repository
does not keep, so the theme's default links would open a file that does not exist.

:class:`VegaLiteSpec` (a MyST-NB mime renderer, registered as an entry point in ``pyproject.toml``)
tells MyST-NB that a chart's Vega-Lite JSON needs no rendering of its own on a page: every chart also
carries its HTML rendition (the live chart over a static SVG, :mod:`attnbook.charts`), which the page
shows. Without it each chart logs "skipping unknown output mime type", 39 warnings per book that made
``--warningiserror`` impossible.

:func:`add_reading_time` puts "N min read" under the first heading of every page: the words a reader reads on it
(:func:`reading_words`: prose, lists, tables and the notebooks' text and table outputs; not code, equations or the
charts' specifications) at :data:`WORDS_PER_MINUTE`.
"""
from __future__ import annotations

import html
import re
from typing import Any

from docutils import nodes

from attnbook.chapters.toc import PAGE_CHAPTER

#: the reading rate of the book's pages, in words per minute. Brysbaert (2019, "How many words do we read per
#: minute?", Journal of Memory and Language 109) puts adults' silent reading of English non-fiction at about 238; a
#: page of numbers, tables and claims weighed against one another is read more slowly, so the book counts 200
WORDS_PER_MINUTE = 200
#: the class of the line that states the reading time
READING_CLASS = "attnbook-reading-time"
_WORD = re.compile(r"\w+(?:['’.,-]\w+)*")
#: parts of raw HTML a reader does not read as text: scripts, styles, drawings (a chart's labels are its figure's)
_UNREAD_HTML = re.compile(r"<(script|style|svg)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
#: nodes whose text is not read as prose: code, equations, comments, build messages
_SKIPPED = (nodes.literal_block, nodes.doctest_block, nodes.math_block, nodes.math, nodes.comment,
            nodes.system_message, nodes.raw)

#: book/NN_name.ipynb (the executed copy) -> notebooks/NN_name.ipynb (the source in the repository)
_EXECUTED = re.compile(r"(?<=/)book/(\d\d_[A-Za-z0-9_]+\.ipynb)")
#: book/<page>.ipynb of a chapter's page that is not the chapter's own id -> the chapter's notebook
_CHAPTER_PAGE = re.compile(r"(?<=/)book/(" + "|".join(re.escape(p) for p, c in PAGE_CHAPTER.items() if p != c)
                           + r")\.ipynb") if any(p != c for p, c in PAGE_CHAPTER.items()) else re.compile(r"(?!)")
#: book/<page>.ipynb of a front-matter notebook page -> notebooks/pages/<page>.ipynb
_PAGE = re.compile(r"(?<=/)book/([a-z][A-Za-z0-9_]*\.ipynb)")


class VegaLiteSpec:
    """MyST-NB mime renderer: a chart's Vega-Lite JSON is rendered as nothing (the chart's HTML is shown)."""

    mime_priority_overrides: tuple = ()

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list | None:
        if str(getattr(data, "mime_type", "")).startswith("application/vnd.vegalite."):
            return []
        return None


def source_notebook_url(url: str) -> str:
    """A launch URL that opens the source notebook instead of the executed copy: a chapter's in ``notebooks/`` (for
    every page of a chapter published on several, the chapter's one notebook), a front-matter page's
    (:data:`attnbook.chapters.toc.PAGES`) in ``notebooks/pages/``."""
    url = _CHAPTER_PAGE.sub(lambda m: f"notebooks/{PAGE_CHAPTER[m.group(1)]}.ipynb", url)
    return _PAGE.sub(r"notebooks/pages/\1", _EXECUTED.sub(r"notebooks/\1", url))


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attributes.items())))


def _dedupe(items: list) -> None:
    seen: set[tuple] = set()
    kept = []
    for item in items:
        key = _key(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    items[:] = kept


def _dedupe_builder(app, env, docnames) -> None:
    for name in ("_js_files", "script_files"):
        items = getattr(app.builder, name, None)
        if isinstance(items, list):
            _dedupe(items)


def _dedupe_page(app, pagename, templatename, context, doctree) -> None:
    if isinstance(context.get("script_files"), list):
        _dedupe(context["script_files"])


def _launch_from_sources(app, pagename, templatename, context, doctree) -> None:
    for group in context.get("header_buttons") or []:
        if isinstance(group, dict) and group.get("label") == "launch-buttons":
            for button in group.get("buttons", []):
                if isinstance(button, dict) and "url" in button:
                    button["url"] = source_notebook_url(button["url"])


def _count(text: str) -> int:
    return len(_WORD.findall(text))


def _skipped(node: nodes.Node) -> bool:
    classes = getattr(node, "get", lambda *_: [])("classes", [])
    return isinstance(node, _SKIPPED) or READING_CLASS in classes or "toctree-wrapper" in classes \
        or "cell_input" in classes


def reading_words(doctree: nodes.Node) -> int:
    """The words a reader reads on a page: its text outside code, equations and the table of contents, plus the text
    of raw HTML outputs (a notebook's tables) without their scripts, styles and drawings."""
    total = 0
    stack = [doctree]
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.raw):
            if "html" in str(node.get("format", "")).split():
                total += _count(html.unescape(_TAG.sub(" ", _UNREAD_HTML.sub(" ", node.astext()))))
            continue
        if _skipped(node):
            continue
        if isinstance(node, nodes.Text):
            total += _count(str(node))
            continue
        stack.extend(node.children)
    return total


def reading_minutes(words: int, rate: int = WORDS_PER_MINUTE) -> int:
    """Whole minutes to read ``words`` at ``rate`` words per minute, at least 1."""
    return max(1, round(words / rate))


def add_reading_time(app, doctree: nodes.document, docname: str) -> None:
    """Insert "N min read" (a paragraph of class :data:`READING_CLASS`) right under the page's first heading;
    a page without a heading is left as it is."""
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children or not isinstance(section.children[0], nodes.title):
        return
    for old in list(section.findall(lambda n: isinstance(n, nodes.paragraph) and READING_CLASS in n["classes"])):
        old.parent.remove(old)
    minutes = reading_minutes(reading_words(doctree))
    section.insert(1, nodes.paragraph("", f"{minutes} min read", classes=[READING_CLASS]))


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", _launch_from_sources, priority=600)
    app.connect("env-before-read-docs", _dedupe_builder, priority=999)
    app.connect("html-page-context", _dedupe_page, priority=999)
    app.connect("doctree-resolved", add_reading_time)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
