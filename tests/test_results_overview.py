"""The results overview (issue 32): three lists, the counts over the papers' claims only, every row linked to its
chapter's table, and a page that fits a 1,280-pixel window without scrolling sideways."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnbook import verdict
from attnbook.chapters.frontmatter import CHAPTER_TITLES, TABLE_ANCHOR, results_markdown
from attnbook.chapters.results import comparisons_of
from chapter_rows import BUILDERS, save

ROOT = Path(__file__).resolve().parents[1]


def _results(folder: Path) -> dict[str, list[verdict.Comparison]]:
    out = {}
    for chapter, build in BUILDERS.items():
        out[chapter] = comparisons_of(json.loads(save(folder, chapter, build()).read_text()))
    return out


def test_the_overview_counts_the_papers_claims_and_lists_the_rest_apart(tmp_path):
    """Regression: the overview counted every row, so chapter 8's questions (no paper's claim) and the experiments
    the data cannot run filled "not comparable" (old: chapter 8 counted 13 rows, its questions in the claims' table)."""
    rows = _results(tmp_path)
    md = results_markdown(tmp_path)
    counts, claims, own, gone = md.split("\n## ")[1:]
    assert counts.startswith("The papers' claims, counted by chapter") and claims.startswith("The papers' claims\n")
    assert own.startswith("The book's own questions") and gone.startswith("Not reproduced")
    for chapter, rs in rows.items():
        line = next(x for x in counts.splitlines() if x.startswith(f"| {CHAPTER_TITLES[chapter]} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        mine = [r for r in rs if r.kind == verdict.CLAIM]
        assert cells[2:7] == [str(sum(r.verdict == o for r in mine)) for o in verdict.OUTCOMES], chapter
        assert cells[7] == str(len(mine)), chapter
        link = f'<a href="{chapter}.html#{TABLE_ANCHOR}">{CHAPTER_TITLES[chapter].split(".")[0]}</a>'
        for r in rs:  # every row, in its own list, linked to its chapter's table
            section = {verdict.CLAIM: claims, verdict.OWN: own, verdict.NOT_REPRODUCED: gone}[r.kind]
            assert any(x.startswith(f"| {link} |") and r.quantity.replace("|", "\\|") in x
                       for x in section.splitlines()), (chapter, r.quantity)
    assert "| 8. A head atlas (all papers) | all-MiniLM-L6-v2, `quick` | 0 | 0 | 0 | 0 | 0 | 0 | — |" in counts
    assert "supported" in own and "undecided" in own and "not reproduced: train.tsv" in gone
    assert "needs a machine-translation model" in gone and "§5 Fig. 4 (WMT)" in gone
    assert "### The claims left open, and why" in claims and "would decide it" in claims
    assert md.count(":::{container} attnbook-results") == 4 and md.count("\n:::\n") == 4
    css = (ROOT / "book" / "_static" / "attnbook.css").read_text()
    assert ".attnbook-results table" in css and "overflow-wrap: anywhere" in css


def _stub_chapter(path: Path, title: str) -> None:
    cells = [{"cell_type": "markdown", "id": f"c{i}", "metadata": {}, "source": text} for i, text in enumerate(
        [f"# {title}\n\nText.\n", "## A section\n\nMore text.\n", "## Paper vs this run\n\nThe table.\n"])]
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                                                            "display_name": "Python 3"}},
                                "nbformat": 4, "nbformat_minor": 5}))


MEASURE = r"""() => {
  const col = document.querySelector('article.bd-article') || document.querySelector('main');
  const right = col.getBoundingClientRect().right + 2;
  const wide = Array.from(document.querySelectorAll('article table')).filter(t => t.getBoundingClientRect().right > right)
    .map(t => Math.round(t.getBoundingClientRect().width));
  const scrolling = Array.from(document.querySelectorAll('article *')).filter(el => {
    const x = getComputedStyle(el).overflowX;
    return (x === 'auto' || x === 'scroll') && el.scrollWidth > el.clientWidth + 1; }).length;
  const links = Array.from(new Set(Array.from(document.querySelectorAll('article td a')).map(a => a.href)));
  return {page: document.documentElement.scrollWidth - window.innerWidth, wide, scrolling, links,
          tables: document.querySelectorAll('article .attnbook-results table').length};
}"""


@pytest.mark.integration
def test_the_overview_fits_a_1280_pixel_window_and_links_every_row_to_its_table(tmp_path):
    """Build a small book with the overview of every chapter's rows (chapters 4-6 and 8 from their row functions;
    1-3 and 7 from the same rows, as long) and stub chapter pages, then open it in Chromium at 1,280 x 900: the page
    and no table scroll sideways (before: the tables of the overview scrolled inside their containers), and each
    row's link lands on its chapter's "Paper vs this run" section."""
    from playwright.sync_api import sync_playwright

    book = tmp_path / "book"
    (book / "results").mkdir(parents=True)
    shutil.copytree(ROOT / "book" / "_static", book / "_static", ignore=shutil.ignore_patterns("mathjax"))
    shutil.copy(ROOT / "book" / "references.bib", book)
    rows = _results(book / "results")
    for chapter in CHAPTER_TITLES:
        if chapter not in rows:
            save(book / "results", chapter, BUILDERS["04_kovaleva_taxonomy"]())
        _stub_chapter(book / f"{chapter}.ipynb", CHAPTER_TITLES[chapter])
    (book / "results.md").write_text(results_markdown(book / "results"))
    (book / "intro.md").write_text("# Intro\n\nText.\n")
    (tmp_path / "_toc.yml").write_text(json.dumps({"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "Chapters", "chapters": [{"file": f"book/{c}"} for c in CHAPTER_TITLES] + [{"file": "book/results"}]}]}))
    (tmp_path / "_config.yml").write_text(json.dumps({
        "title": "t", "execute": {"execute_notebooks": "off"}, "only_build_toc_files": True,
        "parse": {"myst_enable_extensions": ["colon_fence", "dollarmath"]}, "bibtex_bibfiles": ["book/references.bib"],
        "sphinx": {"config": {"html_static_path": ["book/_static"], "html_css_files": ["attnbook.css"]}}}))
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(tmp_path), "--builder", "html", "--warningiserror"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = tmp_path / "_build" / "html" / "book"
    chromium = os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("google-chrome")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((html / "results.html").as_uri())
        page.wait_for_load_state("load")
        m = page.evaluate(MEASURE)
        assert m["tables"] == 4 and m["page"] <= 0 and not m["wide"] and not m["scrolling"], m
        assert len(m["links"]) == len(CHAPTER_TITLES)
        for link in m["links"]:
            page.goto(link)
            page.wait_for_load_state("load")
            assert page.evaluate(f"() => document.getElementById('{TABLE_ANCHOR}') !== null"), link
            assert "Paper vs this run" in page.evaluate(f"() => document.getElementById('{TABLE_ANCHOR}').textContent")
        browser.close()
