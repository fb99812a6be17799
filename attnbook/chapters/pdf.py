"""The whole book as one PDF, printed by a headless Chromium from Jupyter Book's single-page HTML.

:func:`build_pdf` renders ``book/`` (already executed) with the ``singlehtml`` builder, opens the page offline in
Chromium, waits until every chart has been drawn by the book's own Vega bundle (each chart also carries a static
SVG, so print never depends on scripts), and prints it to ``_build/pdf/attnbook.pdf`` with the page's print CSS
(charts and tables scaled to the column, bindings hidden). The PDF is written atomically: an interrupted print
leaves the previous one. ``attnbook build --pdf`` runs it after the HTML; the published workflow does the same and
publishes the PDF beside the HTML (``_build/html/attnbook.pdf``).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from attnbook.core.io import atomic_path
from attnbook.core.paths import project_root

PDF_NAME = "attnbook.pdf"


def chromium_path() -> str | None:
    """A Chromium-based browser: ``$ATTNBOOK_CHROMIUM``, Debian's ``chromium``, or ``None`` for Playwright's own."""
    return (os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
            or shutil.which("google-chrome"))


def print_pdf(page_file: Path, target: Path, *, timeout_ms: int = 60000) -> Path:
    """Print one HTML file to ``target`` (A4, backgrounds on) once its charts have rendered."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1000, "height": 1400})
        page.goto(Path(page_file).resolve().as_uri())
        page.wait_for_load_state("load")
        page.wait_for_function(
            "Array.from(document.querySelectorAll('.attnbook-chart')).every(c => "
            "c.querySelector('.attnbook-live svg, .attnbook-live canvas, svg'))", timeout=timeout_ms)
        page.emulate_media(media="print")
        with atomic_path(target) as tmp:
            page.pdf(path=str(tmp), format="A4", print_background=True,
                     margin={"top": "14mm", "bottom": "14mm", "left": "12mm", "right": "12mm"})
        browser.close()
    return target


def build_pdf(copy_to_html: bool = True) -> Path:
    """Render the single-page HTML and print it to ``_build/pdf/attnbook.pdf`` (also copied into ``_build/html``
    when that exists, so the published site links it). Raises :class:`BookBuildError` when nothing was printed."""
    from attnbook.chapters.runner import BookBuildError, build_book

    build_book("singlehtml")
    root = project_root()
    page = root / "_build" / "singlehtml" / "index.html"
    if not page.exists():
        raise BookBuildError(f"the single-page build wrote no {page}")
    target = root / "_build" / "pdf" / PDF_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    print_pdf(page, target)
    if target.stat().st_size < 10_000:
        raise BookBuildError(f"{target} is only {target.stat().st_size} bytes: the print failed")
    html = root / "_build" / "html"
    if copy_to_html and html.exists():
        shutil.copy(target, html / PDF_NAME)
    return target
