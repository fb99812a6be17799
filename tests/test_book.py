"""End to end: execute every chapter (smoke profile) through papermill, build the book, open it in Chromium.

The book is built in a temporary copy of the project (``ATTNBOOK_HOME``) so the test never touches the
checkout's ``book/``. Screenshots of every page are saved to ``_build/screenshots/`` of the checkout.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# ATTNBOOK_CHROMIUM names a Chromium-based browser; else Debian's chromium; else Playwright's own build
# (`make test` installs one of them: tools/ensure-browser).
CHROMIUM = (os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
            or shutil.which("google-chrome"))
SHOTS = ROOT / "_build" / "screenshots"


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


@pytest.mark.integration
def test_every_chapter_executed_and_rendered(smoke_book):
    from attnbook.chapters.runner import available_chapters

    html = smoke_book / "_build" / "html"
    for doc in toc_files():
        assert (html / f"{doc}.html").exists(), f"{doc} was not rendered"
    for chapter in available_chapters():
        assert (smoke_book / "book" / f"{chapter}.ipynb").exists()
        results = json.loads((smoke_book / "book" / "results" / f"{chapter}.json").read_text())
        assert results["profile"] == "smoke" and results["comparisons"], f"{chapter}: no paper-vs-run rows"
        prov = json.loads((smoke_book / "book" / "results" / f"{chapter}.provenance.json").read_text())
        assert prov["model"]["fingerprint"] and prov["data_files"] and prov["seed"] is not None
    from attnbook.chapters.frontmatter import CHAPTER_TITLES

    overview = (smoke_book / "book" / "results.md").read_text()
    for chapter in available_chapters():
        assert f"| {CHAPTER_TITLES[chapter]} |" in overview, f"{chapter} missing from the results overview"
        first_row = json.loads((smoke_book / "book" / "results" / f"{chapter}.json").read_text())["comparisons"][0]
        assert str(first_row["quantity"]).replace("|", "\\|") in overview


@pytest.mark.integration
def test_pages_in_chromium(smoke_book):
    """Every page loads with no console error or failed request; every figure, equation and citation rendered;
    no internal link is broken. Screenshots are saved as build artefacts."""
    from playwright.sync_api import sync_playwright

    html = smoke_book / "_build" / "html"
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,  # None: Playwright's own Chromium
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                  "--disable-component-update", "--disable-sync"],
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        for doc in toc_files():
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m, e=errors: e.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda exc, e=errors: e.append(f"page error: {exc}"))
            page.on("requestfailed", lambda r, e=errors: e.append(f"request failed: {r.url}"))
            page.goto((html / f"{doc}.html").as_uri())
            page.wait_for_load_state("load")
            page.wait_for_timeout(1500)
            n_charts = page.evaluate("document.querySelectorAll('.attnbook-chart').length")
            n_live = page.evaluate(
                "Array.from(document.querySelectorAll('.attnbook-chart')).filter(c => "
                "c.querySelector('.vega-embed svg, .vega-embed canvas') && "
                "c.querySelector('.vega-embed svg, .vega-embed canvas').getBoundingClientRect().width > 0).length")
            n_math_src = page.evaluate("document.querySelectorAll('.math').length")
            n_math = page.evaluate("document.querySelectorAll('mjx-container').length")
            unresolved = page.evaluate(
                "Array.from(document.querySelectorAll('body *')).filter(n => n.childNodes.length === 1 && "
                "/\\{cite\\}|\\[\\?\\?\\]/.test(n.textContent)).length")
            links = page.evaluate(
                "Array.from(document.querySelectorAll('a[href]')).map(a => a.href).filter(h => h.startsWith('file:'))")
            page.screenshot(path=str(SHOTS / f"{Path(doc).name}.png"), full_page=True)
            page.close()
            if errors:
                problems.append(f"{doc}: " + "; ".join(errors[:5]))
            if n_live != n_charts:
                problems.append(f"{doc}: {n_charts - n_live} of {n_charts} charts did not render")
            if n_math_src and n_math < n_math_src:
                problems.append(f"{doc}: {n_math_src - n_math} equations not rendered")
            if unresolved:
                problems.append(f"{doc}: {unresolved} unresolved citations")
            for link in links:
                target = Path(link.split("#")[0].split("?")[0].removeprefix("file://"))
                if not target.exists():
                    problems.append(f"{doc}: broken link {link}")
        browser.close()
    assert not problems, "\n".join(problems)


@pytest.mark.integration
def test_atlas_page_grid_and_card_in_chromium(smoke_book):
    """Chapter 8's head atlas: the layer-by-head grid renders live, clicking a head puts that head's card up (and
    highlights it in the linked scatter), and the page logs no console error."""
    from playwright.sync_api import sync_playwright

    page_file = smoke_book / "_build" / "html" / "book" / "08_head_atlas.html"
    assert page_file.exists(), "the atlas chapter was not rendered"
    find_chart = ("Array.from(document.querySelectorAll('.attnbook-chart')).find(c => "
                  "c.querySelector('.attnbook-live svg') && "
                  "c.querySelector('.attnbook-live').textContent.includes('card of the chosen head'))")
    card_lines = (f"(() => {{ const c = {find_chart}; return c ? Array.from(c.querySelectorAll("
                  "'.attnbook-live .mark-text text')).map(t => t.textContent).filter(t => t.includes(' · ')) : null; })()")
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                      "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        page.wait_for_function(f"!!({find_chart})", timeout=15000)
        before = page.evaluate(card_lines)
        assert before and all(line.startswith("1-1 · ") for line in before), before
        page.evaluate(f"(() => {{ {find_chart}.scrollIntoView({{block: 'center'}}); }})()")
        page.wait_for_timeout(300)
        cells = page.evaluate(
            f"(() => {{ const c = {find_chart}; return Array.from(c.querySelectorAll('.attnbook-live g.mark-rect.role-mark path'))"
            ".map(p => { const r = p.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2, r.width]; })"
            ".filter(r => r[2] > 0 && r[1] > 0 && r[1] < window.innerHeight && r[0] > 0 && r[0] < window.innerWidth); })()")
        assert len(cells) > 1, "the grid has no cells"
        x, y, _ = cells[-1]
        page.mouse.click(x, y)
        page.wait_for_timeout(500)
        after = page.evaluate(card_lines)
        labels = {line.split(" · ")[0] for line in after}
        assert after and len(labels) == 1 and labels != {"1-1"}, f"the card did not follow the click: {after[:3]}"
        page.screenshot(path=str(SHOTS / "08_head_atlas-clicked.png"), full_page=True)
        browser.close()
    assert not errors, "; ".join(errors[:5])


@pytest.mark.integration
def test_launch_buttons_open_the_source_notebook_whose_first_cell_installs_the_book(smoke_book):
    """Issue 21: Binder and Colab opened the executed notebook, with no way to install attnbook or fetch the data.
    Issue 34: each chapter page links Binder and Colab to the source notebook in notebooks/, whose set-up cell
    installs the package and fetches the chapter's data; the executed notebook can still be downloaded."""
    import re

    from attnbook.chapters.runner import available_chapters

    for chapter in available_chapters():
        text = (smoke_book / "_build" / "html" / "book" / f"{chapter}.html").read_text()
        links = re.findall(r'href="(https://(?:mybinder\.org|colab\.research\.google\.com)[^"]*)"', text)
        assert len(links) == 2 and all(link.endswith(f"notebooks/{chapter}.ipynb") for link in links), (chapter, links)
        assert f"{chapter}.ipynb" in text


@pytest.mark.integration
def test_chapter_pages_have_figures_and_tables(smoke_book):
    """Every page of every chapter has a figure and its paper-vs-this-run section; the chapter's last page ends with
    the run's provenance (a chapter published on several pages states it once)."""
    from attnbook.chapters.runner import available_chapters
    from attnbook.chapters.toc import chapter as chapter_of

    for chapter in available_chapters():
        pages = chapter_of(chapter).page_ids
        for page in pages:
            text = (smoke_book / "_build" / "html" / "book" / f"{page}.html").read_text()
            assert "attnbook-chart" in text, f"{page} has no figure"
            assert "Paper vs this run" in text, f"{page} has no paper-vs-run section"
            assert ("Provenance" in text) == (page == pages[-1]), f"{page}: provenance on the last page only"


@pytest.mark.integration
def test_chapter_pages_fit_the_column_and_read_cleanly(smoke_book):
    """Issue 21, as a reader meets a page at the book's default width: no figure or table wider than the text
    column (or shrunk below :data:`pagecheck.MIN_SCALE` to fit it), no chart labels on top of each other, no kernel
    stderr, exactly one parameters cell (the injected values merged into it) and the summary box."""
    from pagecheck import chapter_pages, page_problems

    problems: list[str] = []
    from attnbook.chapters.toc import CHAPTER_IDS

    for name, page in chapter_pages(smoke_book, CHROMIUM, wait_ms=1500):  # a chapter's further pages: no parameters
        problems += [f"{name}: {p}" for p in page_problems(page, parameters=int(name in CHAPTER_IDS))]
    assert not problems, "\n".join(problems)


@pytest.mark.integration
def test_the_page_check_finds_what_it_looks_for(tmp_path):
    """The checks above can fail: a page built to break each rule is caught on each."""
    from pagecheck import page_problems
    from playwright.sync_api import sync_playwright

    bad = tmp_path / "bad.html"
    bad.write_text("""<html><body><article class="bd-article" style="width:600px">
      <section><h2>Wide</h2><div class="attnbook-chart"><div class="vega-embed">
        <svg width="900" height="100" style="width:900px"><text x="10" y="50">will not</text>
        <text x="14" y="50">can not</text></svg></div></div>
        <div class="cell_output"><table style="width:900px"><tr><td>x</td></tr></table></div>
        <div class="output stderr">UserWarning: /home/me</div>
        <div class="tag_parameters"></div><div class="tag_parameters"></div></section>
      </article></body></html>""")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(bad.as_uri())
        problems = page_problems(page)
        browser.close()
    text = "\n".join(problems)
    assert "overflow: chart" in text and "overflow: table" in text and "labels overlap" in text
    assert "stderr" in text and "2 parameters cell(s)" in text and "0 summary boxes" in text


@pytest.mark.integration
def test_the_book_prints_to_one_pdf(smoke_book, tmp_path):
    """Issue 21: `make pdf` prints the rendered pages, charts drawn, into one PDF (two pages here, to keep the
    suite short; the published workflow prints all of them)."""
    from pypdf import PdfReader

    from attnbook.chapters.pdf import print_pages, toc_pages

    html = smoke_book / "_build" / "html"
    names = toc_pages(smoke_book)
    chapter = next(n for n in names if n.endswith("01_clark_surface_patterns"))
    target = print_pages([html / f"{names[0]}.html", html / f"{chapter}.html"], tmp_path / "book.pdf")
    reader = PdfReader(str(target))
    text = " ".join(page.extract_text() or "" for page in reader.pages)
    assert len(reader.pages) >= 3 and "Surface patterns" in text and "This run" in text


@pytest.mark.integration
def test_each_chapter_reads_only_the_datasets_its_set_up_cell_fetches(smoke_book):
    """The set-up cell fetches :data:`CHAPTER_DATASETS` in a fresh environment: every data file a chapter's
    provenance lists must lie in one of those datasets' folders; and where the data are present (this build) the
    cell prints nothing."""
    from attnbook.chapters.datasets import CHAPTER_DATASETS
    from attnbook.chapters.runner import available_chapters
    from attnbook.core.paths import data_dir
    from attnbook.data.manifest import Manifest

    manifest = Manifest.load()
    root = data_dir().resolve()
    for chapter in available_chapters():
        folders = {e.folder for e in manifest.entries(CHAPTER_DATASETS[chapter])}
        prov = json.loads((smoke_book / "book" / "results" / f"{chapter}.provenance.json").read_text())
        paths = [Path(f["path"]).resolve() for f in prov["data_files"]]
        # files outside the data directory ship with the package (chapter 4's pattern labels): nothing to fetch
        used = {p.relative_to(root).parts[0] for p in paths if p.is_relative_to(root)}
        assert used, f"{chapter}: no data file from the data directory in its provenance"
        assert used <= folders, f"{chapter} reads {sorted(used - folders)}: add them to CHAPTER_DATASETS"
        cells = json.loads((smoke_book / "book" / f"{chapter}.ipynb").read_text())["cells"]
        setup = next(c for c in cells if "set-up" in c["metadata"].get("tags", []))
        assert setup["outputs"] == [], f"{chapter}: the set-up cell did something although everything is here"


@pytest.mark.integration
def test_the_heads_page_ran_in_the_build_on_the_embedded_model(smoke_book):
    """Issue 29: "Heads of your own model" is executed in the build (notebooks/pages/), not a static text."""
    text = (smoke_book / "_build" / "html" / "book" / "heads_of_your_own_model.html").read_text()
    assert "ModernBERT" in text and "DeBERTa" in text  # the families table
    assert "attnbook-chart" in text  # the line view and the importance heatmap were drawn
    assert "Pruned" in text and "parameters; paraphrase cosine" in text  # the pruning cell's output
    assert "Traceback" not in text


@pytest.mark.integration
@pytest.mark.parametrize("chapter", ["01_clark_surface_patterns", "02_clark_probing", "03_clark_clustering",
                                     "04_kovaleva_taxonomy", "05_kovaleva_disabling", "06_michel_pruning",
                                     "07_arct_cues", "08_head_atlas"])
def test_the_smoke_books_outcomes_are_their_rules_on_their_numbers(smoke_book, chapter):
    """Issue 32's reviewed outcomes on a real run: every row the smoke book stored has the outcome its rule gives on
    the numbers stored beside it (no outcome asserted by hand)."""
    results = json.loads((smoke_book / "book" / "results" / f"{chapter}.json").read_text())
    if chapter in ("04_kovaleva_taxonomy", "05_kovaleva_disabling", "06_michel_pruning", "08_head_atlas"):
        from test_reviewed_outcomes import review

        assert review(chapter, results)
    else:
        from test_rows32_reviewed import check_reviewed

        from attnbook.chapters.results import comparisons_of

        check_reviewed(comparisons_of(results))
