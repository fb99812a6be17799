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
"""
from __future__ import annotations

import re
from typing import Any

#: book/NN_name.ipynb (the executed copy) -> notebooks/NN_name.ipynb (the source in the repository)
_EXECUTED = re.compile(r"(?<=/)book/(\d\d_[A-Za-z0-9_]+\.ipynb)")


class VegaLiteSpec:
    """MyST-NB mime renderer: a chart's Vega-Lite JSON is rendered as nothing (the chart's HTML is shown)."""

    mime_priority_overrides: tuple = ()

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list | None:
        if str(getattr(data, "mime_type", "")).startswith("application/vnd.vegalite."):
            return []
        return None


def source_notebook_url(url: str) -> str:
    """A launch URL that opens the chapter's source notebook instead of the executed copy."""
    return _EXECUTED.sub(r"notebooks/\1", url)


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


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", _launch_from_sources, priority=600)
    app.connect("env-before-read-docs", _dedupe_builder, priority=999)
    app.connect("html-page-context", _dedupe_page, priority=999)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
