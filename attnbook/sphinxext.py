"""A small Sphinx extension for the book's HTML.

Jupyter Book 1 runs sphinx-thebe's set-up twice, which registers its inline
configuration script twice, so every page logs "Identifier 'THEBE_JS_URL' has
already been declared". This extension drops exact duplicates from the
builder's script list after the other extensions have added theirs.
"""
from __future__ import annotations

from typing import Any


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


def setup(app) -> dict[str, Any]:
    app.connect("env-before-read-docs", _dedupe_builder, priority=999)
    app.connect("html-page-context", _dedupe_page, priority=999)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
