"""The whole book as one PDF, printed by a headless Chromium from the rendered HTML pages.

:func:`build_pdf` opens every page of ``_build/html`` in the table of contents' order offline in Chromium, waits
until every chart has been drawn by the book's own Vega bundle, prints each with the page's print CSS (charts and
tables scaled to the column, bindings hidden) and joins them into ``_build/pdf/attnbook.pdf`` (pypdf). Jupyter
Book's single-page builder cannot be used: it fails on the seminar page's dropdowns. The PDF is written
atomically: an interrupted print leaves the previous one. ``attnbook build --pdf`` runs it after the HTML; the
published workflow does the same and publishes the PDF beside the HTML (``_build/html/attnbook.pdf``).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from attnbook.chapters.runner import BookBuildError
from attnbook.core.io import atomic_path
from attnbook.core.paths import project_root

PDF_NAME = "attnbook.pdf"


def chromium_path() -> str | None:
    """A Chromium-based browser: ``$ATTNBOOK_CHROMIUM``, Debian's ``chromium``, or ``None`` for Playwright's own."""
    return (os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
            or shutil.which("google-chrome"))


def toc_pages(root: Path) -> list[str]:
    """The book's pages (``_toc.yml``'s files) in reading order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


def print_pages(pages: list[Path], target: Path, *, timeout_ms: int = 60000) -> Path:
    """Print ``pages`` (HTML files) once their charts have rendered, A4 with backgrounds, joined into ``target``."""
    import io

    from playwright.sync_api import sync_playwright
    from pypdf import PdfWriter

    writer = PdfWriter()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1000, "height": 1400})
        for page_file in pages:
            page.goto(Path(page_file).resolve().as_uri())
            page.wait_for_load_state("load")
            page.wait_for_function(
                "Array.from(document.querySelectorAll('.attnbook-chart')).every(c => c.querySelector('svg, canvas'))",
                timeout=timeout_ms)
            page.emulate_media(media="print")
            writer.append(io.BytesIO(page.pdf(format="A4", print_background=True, margin={
                "top": "14mm", "bottom": "14mm", "left": "12mm", "right": "12mm"})))
        browser.close()
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as fh:
            writer.write(fh)
    return target


def build_pdf(copy_to_html: bool = True) -> Path:
    """Print the rendered book (``_build/html``, from :func:`attnbook.chapters.runner.build_book`) to
    ``_build/pdf/attnbook.pdf`` (also copied into ``_build/html`` so the published site carries it). Raises
    :class:`BookBuildError` naming the fix when the HTML is missing or nothing was printed."""

    root = project_root()
    html = root / "_build" / "html"
    pages = [html / f"{name}.html" for name in toc_pages(root)]
    missing = [p for p in pages if not p.exists()]
    if missing:
        raise BookBuildError(f"{missing[0]} is not rendered: run `attnbook build` (or `make book`) before the PDF")
    target = root / "_build" / "pdf" / PDF_NAME
    print_pages(pages, target)
    if target.stat().st_size < 10_000:
        raise BookBuildError(f"{target} is only {target.stat().st_size} bytes: the print failed")
    if copy_to_html:
        shutil.copy(target, html / PDF_NAME)
    return target
