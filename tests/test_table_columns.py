"""Tables a reader can scan, measured in Chromium at 1,280 x 900: on every page of the built smoke book, no table
column is narrower than the longest word in any of its cells (with every row's fold closed and opened), and every
row link of a "paper vs this run" table leads to an element of its page. The measurement is
:data:`pagecheck.COLUMNS`, which ``python tests/pagecheck.py _build/html`` also runs."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CSS = ROOT / "book" / "_static" / "attnbook.css"
CHROMIUM = (os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
            or shutil.which("google-chrome"))
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def measure(page) -> dict:
    """The page's tables measured with their folds closed, then opened: narrow columns, broken row links, tables."""
    from pagecheck import COLUMNS

    closed = page.evaluate(COLUMNS, {"openFolds": False})
    opened = page.evaluate(COLUMNS, {"openFolds": True})
    return {"narrow": closed["narrow"] + opened["narrow"], "links": closed["links"], "tables": closed["tables"]}


def open_page(browser, path: Path, wait_ms: int = 300):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(wait_ms)
    return page


@pytest.mark.integration
def test_every_table_column_is_as_wide_as_its_longest_word_on_every_page(smoke_book):
    from pagecheck import pages
    from playwright.sync_api import sync_playwright

    html = smoke_book / "_build" / "html"
    problems: list[str] = []
    measured = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for path, chapter in pages(html):
            page = open_page(browser, path, 1500 if chapter else 300)
            m = measure(page)
            page.close()
            measured += m["tables"]
            problems += [f"{path.name}: {p}" for p in m["narrow"] + m["links"]]
        browser.close()
    assert measured > 10, f"only {measured} tables measured: did the pages render?"
    assert not problems, "\n".join(problems)


@pytest.mark.integration
def test_each_chapter_shows_its_comparison_table_with_a_working_link_per_row(smoke_book):
    """Each chapter page shows one five-column comparison table with a link per row (and per group) that resolves
    to an element on the page, and no table of the page has a column narrower than a word."""
    from playwright.sync_api import sync_playwright

    from attnbook.chapters.anchors import experiment_anchor
    from attnbook.chapters.runner import available_chapters
    from attnbook.chapters.toc import chapter as chapter_of

    html = smoke_book / "_build" / "html" / "book"
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for chapter, name, rows in [(c, name, [r for r in every if chapter_of(c).page_of(r["experiment"]) == name])
                                    for c in available_chapters()
                                    for every in [json.loads((smoke_book / "book" / "results" / f"{c}.json")
                                                             .read_text())["comparisons"]]
                                    for name in chapter_of(c).page_ids]:  # each page of a chapter: its own rows
            page = open_page(browser, html / f"{name}.html", 1000)
            found = page.evaluate("""() => {
              const t = document.querySelectorAll('.attnbook-comparison table');
              if (t.length !== 1) return {tables: t.length};
              const links = Array.from(t[0].querySelectorAll('tr.attnbook-row td.attnbook-link a'));
              return {tables: 1, columns: t[0].querySelectorAll('thead th').length,
                      hrefs: links.map(a => a.getAttribute('href')),
                      resolved: links.filter(a => document.getElementById(a.getAttribute('href').slice(1))).length,
                      width: t[0].getBoundingClientRect().width,
                      column: (document.querySelector('article.bd-article') || document.body).getBoundingClientRect().width};
            }""")
            page.close()
            if found["tables"] != 1:
                problems.append(f"{name}: {found['tables']} comparison tables")
                continue
            want = sorted("#" + experiment_anchor(chapter, r["experiment"]) for r in rows)
            if found["columns"] != 5 or sorted(found["hrefs"]) != want:
                problems.append(f"{name}: {found['columns']} columns, links {found['hrefs'][:3]} vs {want[:3]}")
            if found["resolved"] != len(rows):
                problems.append(f"{name}: {len(rows) - found['resolved']} of {len(rows)} row links lead nowhere")
            if found["width"] > found["column"] + 2:
                problems.append(f"{name}: the table is {found['width']:.0f} px, its column {found['column']:.0f}")
        browser.close()
    assert not problems, "\n".join(problems)


def _old_table_html(rows) -> str:
    """The table as chapters showed it before: nine columns of a Styler (experiment, kind, quantity, paper, this run
    with model and profile, outcome, rule, note, detectable)."""
    import pandas as pd

    from attnbook.chapters.results import KIND_WORDS

    label = "this run (bert-base-uncased, quick)"
    df = pd.DataFrame([{"experiment": r.experiment, "kind": KIND_WORDS[r.kind], "quantity": r.quantity,
                        "paper": r.paper, label: f"{r.ours} {r.interval}", "outcome": r.outcome_words,
                        "rule": r.rule, "note": r.note, "detectable": r.detectable} for r in rows])
    return df.style.hide(axis="index").to_html()


def _page(tmp_path: Path, name: str, body: str, css: str = "") -> Path:
    """A page with the book's column width and ``body`` in it, styled by the book's stylesheet (``css``: by that
    instead)."""
    path = tmp_path / name
    style = f"<style>{css}</style>" if css else f'<link rel="stylesheet" href="{CSS.as_uri()}">'
    path.write_text(f"""<html><head><meta charset="utf-8">{style}</head>
      <body style="font-family: sans-serif; font-size: 16px; margin: 0">
      <article class="bd-article" style="width: 780px; margin-left: 300px"><section><h2>Paper vs this run</h2>
      {body}</section></article></body></html>""")
    return path


@pytest.mark.integration
def test_the_column_check_fails_on_the_old_table_and_passes_on_the_new_one(tmp_path):
    """The check can fail: the old nine-column table, whose cells broke words anywhere ("exp erim ent"), has narrow
    columns at the book's column width; the same rows as the five-column table have none, and its links resolve
    once the page has their targets (a link without one is reported)."""
    from pagecheck import page_problems
    from playwright.sync_api import sync_playwright
    from test_comparison_table import CHAPTER, rows

    from attnbook.chapters.anchors import experiment_anchor
    from attnbook.chapters.comparison_table import comparison_html

    rs = rows()
    old_css = (".cell_output table { max-width: 100%; font-size: 0.82em; } .cell_output table th, .cell_output "
               "table td { white-space: normal; overflow-wrap: anywhere; padding: 0.2em 0.45em; }")
    old = _page(tmp_path, "old.html", f'<div class="cell_output">{_old_table_html(rs)}</div>', old_css)
    targets = "".join(f'<span id="{experiment_anchor(CHAPTER, e)}"></span>'
                      for e in dict.fromkeys(r.experiment for r in rs))
    new_body = f'<div class="cell_output">{comparison_html(CHAPTER, rs)}</div>'
    new = _page(tmp_path, "new.html", targets + new_body)
    missing = _page(tmp_path, "missing.html", targets.replace('id="ch04-row-s4-5"', 'id="elsewhere"') + new_body)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pages = [open_page(browser, p) for p in (old, new, missing)]
        m_old, m_new, m_missing = (measure(p) for p in pages)
        reported = [page_problems(p, chapter_page=False) for p in pages]  # what `pagecheck.py _build/html` prints
        browser.close()
    assert any(p.startswith("narrow column: ") for p in reported[0]) and not reported[1], reported
    assert [p for p in reported[2] if p.startswith("broken table link: ")], reported[2]
    assert m_old["tables"] == 1 and len(m_old["narrow"]) >= 2, m_old
    assert any('column "experiment"' in n or 'column "kind"' in n for n in m_old["narrow"]), m_old["narrow"]
    assert m_new["tables"] == 1 and not m_new["narrow"] and not m_new["links"], m_new
    assert len(m_missing["links"]) == 1 and "#ch04-row-s4-5" in m_missing["links"][0], m_missing
