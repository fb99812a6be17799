"""The book's Sphinx extension: duplicate scripts dropped, launch buttons pointed at the source notebooks."""
from __future__ import annotations

from types import SimpleNamespace

from attnbook.chapters.sphinxext import _dedupe, _launch_from_sources, source_notebook_url


def test_launch_urls_point_at_source_notebooks():
    binder = "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/book/06_michel_pruning.ipynb"
    colab = "https://colab.research.google.com/github/o/r/blob/main/book/01_clark_surface_patterns.ipynb"
    assert source_notebook_url(binder).endswith("lab/tree/notebooks/06_michel_pruning.ipynb")
    assert source_notebook_url(colab).endswith("blob/main/notebooks/01_clark_surface_patterns.ipynb")


def test_other_urls_unchanged():
    for url in ("https://x.org/book/intro.md", "https://github.com/o/notebook/book/01_x.md",
                "https://x.org/mybook/01_clark_surface_patterns.ipynb"):
        assert source_notebook_url(url) == url


def test_page_context_rewritten_only_for_launch_group():
    context = {"header_buttons": [
        {"label": "launch-buttons", "buttons": [{"url": "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/book/02_clark_probing.ipynb"}]},
        {"label": "download-buttons", "buttons": [{"url": "../_sources/book/02_clark_probing.ipynb"}]},
    ]}
    _launch_from_sources(None, "book/02_clark_probing", "page.html", context, None)
    assert context["header_buttons"][0]["buttons"][0]["url"].endswith("notebooks/02_clark_probing.ipynb")
    assert context["header_buttons"][1]["buttons"][0]["url"] == "../_sources/book/02_clark_probing.ipynb"


def test_dedupe_keeps_first_of_identical_scripts():
    a = SimpleNamespace(filename="x.js", attributes={"defer": "defer"})
    b = SimpleNamespace(filename="x.js", attributes={"defer": "defer"})
    c = SimpleNamespace(filename="y.js", attributes={})
    items = [a, b, c]
    _dedupe(items)
    assert items == [a, c]
