"""The results overview: the scorecard first (the papers' main findings, one row each, a column per model, on one
screen), then three lists (the papers' claims with per-task repeats on one line, the book's own questions, what was
not reproduced), each row linked to its chapter, and the outcome counts last; every table at least as wide per column
as its longest word at 1,280 pixels."""
from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnbook import verdict
from attnbook.chapters import scorecard
from attnbook.chapters.toc import chapter
from attnbook.chapters.frontmatter import (CHAPTER_TITLES, TABLE_ANCHOR, chapter_results, grouped_claims,
                                           results_markdown, times_markdown)
from attnbook.chapters.results import comparisons_of
from attnbook.stats import Estimate
from chapter_rows import BUILDERS, MODEL, save

ROOT = Path(__file__).resolve().parents[1]


def _results(folder: Path) -> dict[str, list[verdict.Comparison]]:
    out = {}
    for chapter, build in BUILDERS.items():
        out[chapter] = comparisons_of(json.loads(save(folder, chapter, build()).read_text()))
    return out


def _link(chapter: str) -> str:
    return f'<a href="{chapter}.html#{TABLE_ANCHOR}">{CHAPTER_TITLES[chapter].split(".")[0]}</a>'


def test_the_overview_opens_with_the_scorecard_lists_every_row_and_counts_last(tmp_path):
    """Regression: the overview opened with counts that add up outcomes of different rules, then 126 rows with a
    finding asked of four tasks on four lines. Now the scorecard comes first, a per-task finding is one line of the
    claims' list (its tasks and their outcomes in it), and the counts come last."""
    rows = _results(tmp_path)
    md = results_markdown(tmp_path)
    head, claims, own, gone, counts = md.split("\n## ")
    assert head.startswith("# Results overview") and f'<table class="{scorecard.TABLE_CLASS}">' in head
    assert "{term}`inconclusive`" in head and "*holds differently*" in head
    assert claims.startswith("The papers' claims\n") and own.startswith("The book's own questions")
    assert gone.startswith("Not reproduced") and counts.startswith("The outcomes counted by chapter")
    assert "different rules" in counts
    for chapter, rs in rows.items():
        line = next(x for x in counts.splitlines() if x.startswith(f"| {CHAPTER_TITLES[chapter]} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        mine = [r for r in rs if r.kind == verdict.CLAIM]
        assert cells[1:6] == [str(sum(r.verdict == o for r in mine)) for o in verdict.OUTCOMES], chapter
        assert cells[6] == str(len(mine)), chapter
        for r in rs:  # every row, in its own list, linked to its chapter's table
            section = {verdict.CLAIM: claims, verdict.OWN: own, verdict.NOT_REPRODUCED: gone}[r.kind]
            task = re.fullmatch(r"([A-Z][A-Za-z0-9.-]*): (.+)", r.quantity) if r.kind == verdict.CLAIM else None
            wanted = [[r.quantity]] + ([[task.group(2), f"{task.group(1)} "]] if task else [])
            assert any(x.startswith(f"| {_link(chapter)} ") and any(all(w.replace("|", "\\|") in x for w in ws)
                                                                  for ws in wanted)
                       for x in section.splitlines()), (chapter, r.quantity)
    table = [x for x in claims.splitlines() if x.startswith("| <a")]
    fig5 = [x for x in table if "§4.3 Fig. 5: most changed layer is one of the last two" in x]
    assert len(fig5) == 1, "a finding asked of several tasks is one line"
    assert all(t in fig5[0] for t in ("MRPC", "SST-2")) and 'class="attnbook-outcome attnbook-outcome-' in fig5[0]
    assert "supported" in own and "undecided" in own and "not reproduced: train.tsv" in gone
    assert 'attnbook-outcome-undecided">undecided<' in own
    assert "needs a machine-translation model" in gone and "§5 Fig. 4 (WMT)" in gone
    assert "### The claims left open, and why" in claims and "would decide it" in claims
    assert md.count(":::{container} attnbook-overview") == 4 and md.count("\n:::\n") == 4
    assert "| 8. A head atlas (all papers) | 0 | 0 | 0 | 0 | 0 | 0 | — |" in counts
    assert "Models: all-MiniLM-L6-v2, profile `quick` (chapters 4, 5, 6, 8)." in counts


def test_grouping_keeps_rows_that_repeat_no_other_and_groups_per_task_repeats():
    row = lambda q, v: verdict.row("§4", q, paper=0.5, ours=Estimate(v, v - 0.01, v + 0.01, 10),  # noqa: E731
                                   rule=verdict.Within(0.05, 0.1))
    rows = [("04_kovaleva_taxonomy", row("MRPC: share", 0.5)), ("04_kovaleva_taxonomy", row("RTE: share", 0.9)),
            ("04_kovaleva_taxonomy", row("MRPC, pretrained", 0.5)), ("04_kovaleva_taxonomy", row("pobj: margin", 0.5))]
    groups = grouped_claims(rows)
    assert [(claim, [t for t, _ in members]) for _, claim, members in groups] == [
        ("§4: share", ["MRPC", "RTE"]), ("§4: MRPC, pretrained", [""]), ("§4: pobj: margin", [""])]


def _row(experiment: str, quantity: str, outcome: str) -> verdict.Comparison:
    """A row with the given outcome, made by a rule (the paper's value 1, this run's interval placed to give it)."""
    est = {verdict.AGREES: Estimate(1.0, 0.99, 1.01, 50), verdict.PARTLY: Estimate(1.15, 1.12, 1.18, 50),
           verdict.DISAGREES: Estimate(2.0, 1.9, 2.1, 50), verdict.INCONCLUSIVE: Estimate(1.0, 0.5, 1.5, 50),
           verdict.NOT_COMPARABLE: Estimate(float("nan"))}[outcome]
    r = verdict.row(experiment, quantity, paper=1.0, ours=est, rule=verdict.Within(0.05, 0.2))
    assert r.verdict == outcome
    return r


def test_combined_outcomes_and_the_words_a_cell_shows():
    A, P, D, I, N = (verdict.AGREES, verdict.PARTLY, verdict.DISAGREES, verdict.INCONCLUSIVE,
                     verdict.NOT_COMPARABLE)
    mk = lambda *os: [_row("§x", f"T{i}: q", o) for i, o in enumerate(os)]  # noqa: E731
    cases = {(A,): A, (P,): P, (D,): D, (I,): I, (N,): N, (A, A, N): A, (A, I): A, (D, D, I): D, (A, D): P,
             (A, P): P, (I, N): I, (N, N): N, (P, P): P}
    for outcomes, want in cases.items():
        assert scorecard.combined(mk(*outcomes)) == want, outcomes
    assert scorecard.WORDS == {A: "holds", P: "holds differently", D: "fails", I: "cannot tell", N: "cannot tell"}
    assert set(scorecard.SLUGS) == set(verdict.OUTCOMES)


_CELL = re.compile(r'<td><span class="attnbook-outcome attnbook-outcome-([a-z-]+)">([a-z ]+)</span> '
                   r'<span class="attnbook-scorecard-number" title="[^"]*">([^<]*)</span></td>'
                   r'|<td class="attnbook-scorecard-none">(not run|no row)</td>')


def _scorecard_cells(md: str) -> dict[str, list[tuple]]:
    table = md.split(f'<table class="{scorecard.TABLE_CLASS}">')[1].split("</table>")[0]
    out = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1], flags=re.S):
        words = html_lib.unescape(re.match(r"<td>([^<]*)</td>", tr).group(1))
        out[words] = _CELL.findall(tr)
    return out


def test_scorecard_cells_follow_the_mapping_from_the_rows_outcomes(tmp_path):
    """Each cell is its rows' combined outcome in the stated words and class; a model without the chapter reads
    "not run"; chapter 9's other models get a column each, from its per-model rows."""
    rows = _results(tmp_path)
    other = [_row("§6 layers", "same-layer / other-layer mean JS", verdict.DISAGREES),
             _row("§6 layers", "heads whose nearest head is in the same layer (share)", verdict.AGREES),
             _row("§3.2 gradients", "|dL/d attn| to [SEP] / to other tokens: mean over the layers with the most "
                                    "[SEP] attention minus the rest", verdict.INCONCLUSIVE)]
    res = scorecard.ACROSS
    (tmp_path / f"{res}.json").write_text(json.dumps({
        "chapter": res, "profile": "quick", "model": {"name": "all-MiniLM-L6-v2 vs other-model"}, "comparisons": [],
        "numbers": {"per_model_rows": {"all-MiniLM-L6-v2": [], "other-model": [r.as_dict() for r in other]}}}))
    md = results_markdown(tmp_path)
    header = md.split("<thead>")[1].split("</thead>")[0]
    assert "<th>all-MiniLM-L6-v2</th>" in header and ">other-model</a></th>" in header  # the chapters' model once
    cells = _scorecard_cells(md)
    assert list(cells) == [f.words for f in scorecard.FINDINGS]
    checked = 0
    for f in scorecard.FINDINGS:
        mine, theirs = cells[f.words]
        found = f.rows(rows.get(f.chapter, []))
        if f.chapter not in rows:
            assert mine[3] == "not run", f.words
        else:
            assert found, f"{f.words}: no row of {f.chapter} matches the scorecard's table"
            o = scorecard.combined(found)
            assert (mine[0], mine[1]) == (scorecard.SLUGS[o], scorecard.WORDS[o]), f.words
            checked += 1
        in_other = f.rows(other)
        if in_other:
            o = scorecard.combined(in_other)
            assert (theirs[0], theirs[1]) == (scorecard.SLUGS[o], scorecard.WORDS[o]), f.words
        else:
            assert theirs[3] == "not run", f.words
    assert checked >= 6
    layers = cells["heads of one layer attend alike"][1]
    assert layers[:2] == ("partly", "holds differently") and layers[2] == "2"  # disagrees + agrees; first row's value
    grads = cells["attention to the sink barely moves the loss"][1]
    assert grads[:2] == ("inconclusive", "cannot tell")


def test_the_scorecard_has_15_to_20_findings_of_all_four_papers_each_linked_to_its_section():
    assert 15 <= len(scorecard.FINDINGS) <= 20
    assert {f.paper for f in scorecard.FINDINGS} == {"Clark", "Kovaleva", "Michel", "Niven & Kao"}
    assert len({f.words for f in scorecard.FINDINGS}) == len(scorecard.FINDINGS)
    for f in scorecard.FINDINGS:
        assert f.chapter in CHAPTER_TITLES and f.number in ("value", "ours", "count")
        page = chapter(f.chapter).page_of(f.experiment)  # a chapter on several pages: the page holding the row
        assert re.fullmatch(rf"{page}\.html#ch{f.chapter[:2]}-row-[a-z0-9-]+", f.link)
        assert len(f.words) <= 50, f.words  # one line of the scorecard


def test_times_come_from_the_chapters_provenance(tmp_path):
    for ch, seconds in (("01_clark_surface_patterns", 219.8), ("04_kovaleva_taxonomy", 2955.0)):
        (tmp_path / f"{ch}.provenance.json").write_text(json.dumps(
            {"run_seconds": seconds, "machine": "x86_64 Linux, 2 cores", "finished": "2026-11-29 05:10:39 UTC",
             "profile": "quick"}))
    (tmp_path / "_times-quick.json").write_text(json.dumps({"01_clark_surface_patterns": 1.0}))
    md = times_markdown(tmp_path)
    assert "| {doc}`1. Surface patterns (Clark §3) <01_clark_surface_patterns>` | 4 min |" in md
    assert "| {doc}`4. Patterns and fine-tuning (Kovaleva §4) <04_kovaleva_taxonomy>` | 49 min |" in md
    assert "x86_64 Linux, 2 cores" in md and "`quick`" in md and "| all chapters | 53 min |" in md
    assert "_times" not in chapter_results(tmp_path)  # a build's times file is not a chapter


# --------------------------------------------------------------------------------------------- in the browser

#: the overview's tables measured at 1,280 x 900: each column's content width against the longest word in it (every
#: text node's words measured in its own font), the tables' right edges against the column's, the scorecard's bottom
MEASURE = r"""() => {
  const col = document.querySelector('article.bd-article') || document.querySelector('main');
  const right = col.getBoundingClientRect().right + 2;
  const ctx = document.createElement('canvas').getContext('2d');
  const narrow = [];
  document.querySelectorAll('article table').forEach((t, ti) => {
    Array.from(t.rows).forEach(tr => Array.from(tr.cells).forEach((td, ci) => {
      const cs = getComputedStyle(td);
      const inner = td.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
      let node, longest = 0, word = '';
      while ((node = walker.nextNode())) {
        ctx.font = getComputedStyle(node.parentElement).font;
        for (const w of node.textContent.split(/\s+/)) {
          const width = ctx.measureText(w).width;
          if (width > longest) { longest = width; word = w; }
        }
      }
      if (longest > inner + 1)
        narrow.push(`table ${ti} column ${ci}: "${word}" ${Math.round(longest)} px in ${Math.round(inner)} px`);
    }));
  });
  const wide = Array.from(document.querySelectorAll('article table'))
    .filter(t => t.getBoundingClientRect().right > right).map(t => Math.round(t.getBoundingClientRect().right));
  const card = document.querySelector('table.attnbook-scorecard');
  const box = card ? card.getBoundingClientRect() : null;
  const links = Array.from(new Set(Array.from(document.querySelectorAll('.attnbook-overview td a')).map(a => a.href)));
  const cardLinks = card ? Array.from(card.querySelectorAll('td a')).map(a => a.href) : [];
  return {page: document.documentElement.scrollWidth - window.innerWidth, narrow, wide, links, cardLinks,
          card: box && {top: Math.round(box.top), bottom: Math.round(box.bottom), right: Math.round(box.right)},
          height: window.innerHeight, rows: card ? card.tBodies[0].rows.length : 0,
          tables: document.querySelectorAll('article .attnbook-overview table').length};
}"""


def _chromium():
    from playwright.sync_api import sync_playwright

    return sync_playwright(), (os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium")
                               or shutil.which("google-chrome"))


def _stub_chapter(path: Path, title: str) -> None:
    cells = [{"cell_type": "markdown", "id": f"c{i}", "metadata": {}, "source": text} for i, text in enumerate(
        [f"# {title}\n\nText.\n", "## A section\n\nMore text.\n", "## Paper vs this run\n\nThe table.\n"])]
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                                                            "display_name": "Python 3"}},
                                "nbformat": 4, "nbformat_minor": 5}))


@pytest.mark.integration
def test_the_overview_fits_a_1280_pixel_window_and_links_every_row_to_its_table(tmp_path):
    """Build a small book with the overview of chapters 4-6 and 8's rows (from their row functions) and stub chapter
    pages, then open it in Chromium at 1,280 x 900: no table wider than the column, no column narrower than its
    longest word (before: the lists' tables broke words into letters, "dis agr ee s"), the scorecard ends above the
    window's bottom, and each list row's link lands on its chapter's "Paper vs this run" section."""
    book = tmp_path / "book"
    (book / "results").mkdir(parents=True)
    shutil.copytree(ROOT / "book" / "_static", book / "_static", ignore=shutil.ignore_patterns("mathjax"))
    for name in ("references.bib", "glossary.md"):
        shutil.copy(ROOT / "book" / name, book)
    _results(book / "results")
    for chapter in CHAPTER_TITLES:
        _stub_chapter(book / f"{chapter}.ipynb", CHAPTER_TITLES[chapter])
    (book / "results.md").write_text(results_markdown(book / "results"))
    (book / "intro.md").write_text("# Intro\n\nText.\n")
    (tmp_path / "_toc.yml").write_text(json.dumps({"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "Chapters", "chapters": [{"file": f"book/{c}"} for c in CHAPTER_TITLES]
         + [{"file": "book/results"}, {"file": "book/glossary"}]}]}))
    (tmp_path / "_config.yml").write_text(json.dumps({
        "title": "t", "execute": {"execute_notebooks": "off"}, "only_build_toc_files": True,
        "parse": {"myst_enable_extensions": ["colon_fence", "dollarmath"]}, "bibtex_bibfiles": ["book/references.bib"],
        "sphinx": {"config": {"html_static_path": ["book/_static"],
                              "html_css_files": ["attnbook.css", "attnbook-overview.css"]}}}))
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(tmp_path), "--builder", "html", "--warningiserror"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = tmp_path / "_build" / "html" / "book"
    manager, chromium = _chromium()
    with manager as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((html / "results.html").as_uri())
        page.wait_for_load_state("load")
        m = page.evaluate(MEASURE)
        assert m["tables"] == 4 and m["page"] <= 0 and not m["wide"] and not m["narrow"], m
        assert m["rows"] == len(scorecard.FINDINGS) and m["card"]["bottom"] <= m["height"], m["card"]
        assert len(m["links"]) == 4  # chapters 4, 5, 6 and 8
        for link in m["links"]:
            page.goto(link)
            page.wait_for_load_state("load")
            assert "Paper vs this run" in page.evaluate(f"() => document.getElementById('{TABLE_ANCHOR}').textContent")
        browser.close()


#: findings whose rows the smoke profile's sizes do not make (chapter 5 sweeps no layer there); their rows come from
#: the same row function as the quick book's, which test_scorecard_cells_follow_the_mapping_from_the_rows_outcomes
#: matches (tests/chapter_rows.py)
SMOKE_ABSENT = {"switching a whole layer off can help": "no layer swept", "switching layer 1 off costs little":
                "no layer swept"}


@pytest.mark.integration
def test_the_smoke_books_scorecard_maps_to_its_rows_and_fits_one_screen(smoke_book):
    """The scorecard's table of findings against the rows the smoke book wrote (the chapters' own row functions, as
    in the quick book): every finding matches a row of its chapter, and of every other model of chapter 9 where that
    chapter ran the finding's analysis; in Chromium at 1,280 x 900 the scorecard ends above the window's bottom, no
    table of the page is wider than the column or has a column narrower than its longest word, and every link of the
    scorecard lands on an element of its chapter page."""
    results = chapter_results(smoke_book / "book" / "results")
    rows = {ch: comparisons_of(d) for ch, d in results.items()}
    assert set(scorecard.missing_findings(rows)) == set(SMOKE_ABSENT)
    cols = scorecard.columns(results, rows)
    assert len(cols) >= 2, "chapter 9 gives at least one other model's column"
    for col in cols[1:]:
        ran = {f.chapter for f in scorecard.FINDINGS if col.finding_rows(f) is not None}
        assert {scorecard.C1, scorecard.C3} <= ran, col.label
    md = (smoke_book / "book" / "results.md").read_text()
    cells = _scorecard_cells(md)
    for f in scorecard.FINDINGS:
        found = f.rows(rows[f.chapter])
        if not found:
            assert cells[f.words][0][3] == "no row", f.words
            continue
        o = scorecard.combined(found)
        assert cells[f.words][0][:2] == (scorecard.SLUGS[o], scorecard.WORDS[o]), f.words
    manager, chromium = _chromium()
    with manager as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((smoke_book / "_build" / "html" / "book" / "results.html").as_uri())
        page.wait_for_load_state("load")
        m = page.evaluate(MEASURE)
        assert m["page"] <= 0 and not m["wide"] and not m["narrow"], m
        assert m["rows"] == len(scorecard.FINDINGS) and m["card"]["bottom"] <= m["height"], m["card"]
        for link in dict.fromkeys(m["cardLinks"]):
            page.goto(link)
            page.wait_for_load_state("load")
            anchor = link.split("#", 1)[1]
            assert page.evaluate(f"() => document.getElementById('{anchor}') !== null"), link
        browser.close()
