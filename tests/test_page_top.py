"""The top of every page as a reader meets it in Chromium at 1,280 x 900 (the smoke book): on a chapter page the
findings box comes within the first screen, each of its links lands on an element of the page, the parameters and
set-up cells are folded; every page states its reading time under its title."""
from __future__ import annotations

import pytest

from test_book import CHROMIUM, toc_files

WIDTH, HEIGHT = 1280, 900

#: the measurements of one page, taken in the browser
MEASURE = r"""
() => {
  const box = document.querySelector('.admonition.attnbook-findings');
  const rect = (el) => { const r = el.getBoundingClientRect();
                         return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, height: r.height}; };
  const links = box ? Array.from(box.querySelectorAll('a[href]')).map(a => {
    const href = a.getAttribute('href');
    const id = href.startsWith('#') ? decodeURIComponent(href.slice(1)) : null;
    return {href, local: id !== null, found: id !== null && document.getElementById(id) !== null};
  }) : [];
  const reading = document.querySelector('p.attnbook-reading-time');
  const h1 = document.querySelector('article h1, main h1, h1');
  const params = Array.from(document.querySelectorAll('.cell.tag_parameters'));
  // a closed <details> keeps its content laid out (content-visibility: hidden): ask whether it is visible
  const inputShown = (cell) => { const code = cell.querySelector('.cell_input');
                                 return !!code && (code.checkVisibility ? code.checkVisibility()
                                                                        : code.getBoundingClientRect().height > 0); };
  return {
    box: box ? rect(box) : null,
    boxTitle: box ? box.querySelector('.admonition-title').textContent.trim() : '',
    bullets: box ? box.querySelectorAll(':scope > ul > li').length : 0,
    firstBullet: box && box.querySelector(':scope > ul > li') ? rect(box.querySelector(':scope > ul > li')) : null,
    links,
    reading: reading ? reading.textContent.trim() : null,
    readingTop: reading ? rect(reading).top : null,
    h1Bottom: h1 ? rect(h1).bottom : null,
    readingAfterH1: !!(reading && h1 && (h1.compareDocumentPosition(reading) & Node.DOCUMENT_POSITION_FOLLOWING)),
    params: params.length,
    paramsFolded: params.length ? params.every(c => c.classList.contains('tag_hide-input') && !inputShown(c)) : false,
    runBox: document.querySelectorAll('.attnbook-summary').length,
  };
}
"""


def _measure(page, url: str) -> dict:
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(800)
    return page.evaluate(MEASURE)


@pytest.mark.integration
def test_chapter_pages_open_with_their_findings(smoke_book):
    """Every chapter page: the findings box (1-5 bullets) starts within the first screen and its first bullet ends
    within it; every link of the box is a link on the page to an element that exists; the parameters cell is there
    once, its input folded; the run's box is there once."""
    from playwright.sync_api import sync_playwright

    from attnbook.chapters.runner import available_chapters

    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        for chapter in available_chapters():
            m = _measure(page, (smoke_book / "_build" / "html" / "book" / f"{chapter}.html").as_uri())
            print(f"{chapter}: box {m['box']}, {m['bullets']} bullets, first ends at {m['firstBullet']}")
            if m["box"] is None:
                problems.append(f"{chapter}: no findings box")
                continue
            if not 1 <= m["bullets"] <= 5:
                problems.append(f"{chapter}: {m['bullets']} findings bullets; want 1 to 5")
            if m["box"]["top"] >= HEIGHT or not m["firstBullet"] or m["firstBullet"]["bottom"] > HEIGHT:
                problems.append(f"{chapter}: findings box at {m['box']}, first bullet {m['firstBullet']}: "
                                f"not within the first {HEIGHT} px")
            bad = [x["href"] for x in m["links"] if not (x["local"] and x["found"])]
            if bad:
                problems.append(f"{chapter}: findings links without a target on the page: {bad}")
            if m["params"] != 1 or not m["paramsFolded"]:
                problems.append(f"{chapter}: {m['params']} parameters cell(s), folded: {m['paramsFolded']}")
            if m["runBox"] != 1:
                problems.append(f"{chapter}: {m['runBox']} run boxes; want one")
        browser.close()
    assert not problems, "\n".join(problems)


@pytest.mark.integration
def test_every_page_states_its_reading_time_under_its_title(smoke_book):
    import re

    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        for doc in toc_files():
            m = _measure(page, (smoke_book / "_build" / "html" / f"{doc}.html").as_uri())
            if not m["reading"] or not re.fullmatch(r"\d+ min read", m["reading"]):
                problems.append(f"{doc}: reading time {m['reading']!r}")
            elif not m["readingAfterH1"] or m["readingTop"] > HEIGHT:
                problems.append(f"{doc}: the reading time is not under the title (at {m['readingTop']} px)")
        browser.close()
    assert not problems, "\n".join(problems)
