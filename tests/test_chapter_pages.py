"""A long chapter published on several pages: one notebook, cut where a tagged cell starts the next page, each page
with its own rows, findings box, link targets and table; the table of contents, the launch buttons and the scorecard
point at the page that holds a row."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attnbook.chapters.publish import split_pages, tidy
from attnbook.chapters.summary import SUMMARY_TAG
from attnbook.chapters.toc import CHAPTER_PAGES, PAGE_CHAPTER, PAGE_TAG, chapter, toc

ROOT = Path(__file__).resolve().parents[1]
CH4 = "04_kovaleva_taxonomy"


def _rows() -> list[dict]:
    from attnbook.verdict import Comparison

    return [Comparison(exp, q, 1.0, 1.0, "agrees", rule="r").as_dict() for exp, q in [
        ("Table 1", "MRPC, pre-trained + FT"), ("§4.3", "STS-B: random init + FT minus untrained"),
        ("§4.1 Fig. 2", "SST-2: Heterogeneous share"), ("§4.2 FrameNet", "top head"), ("§4.4", "features")]]


def _executed_ch4() -> dict:
    nb = new_notebook()
    page2 = new_markdown_cell("# 4, continued. Patterns\n\nA bridge.")
    page2.metadata["tags"] = [PAGE_TAG]
    nb.cells = [new_markdown_cell("# 4. Table 1\n\nIntroduction."), new_code_cell("x = 1"),
                new_markdown_cell("## Table 1 (§4.3): scores"), new_code_cell("t1"),
                new_markdown_cell("## Paper vs this run"), new_code_cell("table"),
                page2, new_markdown_cell("## §4.1 Five kinds of maps"), new_markdown_cell("### Fig. 2 shares"),
                new_markdown_cell("## §4.2 Frames"), new_markdown_cell("## §4.4 Features"),
                new_markdown_cell("## Paper vs this run"), new_code_cell("chapter.finish(res, page=1)")]
    return json.loads(json.dumps(nb))


def test_chapter_four_is_published_on_two_pages_that_the_toc_lists_in_order():
    c = chapter(CH4)
    assert c.page_ids == (CH4, "04_kovaleva_patterns")
    assert CHAPTER_PAGES.index(CH4) + 1 == CHAPTER_PAGES.index("04_kovaleva_patterns")
    files = [f["file"] for part in toc()["parts"] for f in part["chapters"]]
    assert files.index(f"book/{CH4}") + 1 == files.index("book/04_kovaleva_patterns")
    assert [c.page_of(e) for e in ("Table 1", "§4.3", "§4.1 Fig. 2", "§4.3 Fig. 5", "§4.5")] \
        == [CH4, CH4] + ["04_kovaleva_patterns"] * 3
    assert chapter("01_clark_surface_patterns").page_ids == ("01_clark_surface_patterns",)
    assert PAGE_CHAPTER["04_kovaleva_patterns"] == CH4


def test_the_chapter_notebook_starts_each_further_page_with_one_tagged_title():
    cells = json.loads((ROOT / "notebooks" / f"{CH4}.ipynb").read_text())["cells"]
    tagged = [c for c in cells if PAGE_TAG in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == len(chapter(CH4).page_ids) - 1
    assert all("".join(c["source"]).startswith("# 4") for c in tagged)  # the page's title, an H1 heading
    for other in (p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if p.stem != CH4):
        assert not any(PAGE_TAG in c.get("metadata", {}).get("tags", []) for c in json.loads(other.read_text())["cells"])


def test_split_pages_cuts_before_the_tagged_cell_and_names_the_fix_when_tags_are_missing():
    nb = _executed_ch4()
    pages = split_pages(nb, CH4)
    assert [p for p, _ in pages] == [CH4, "04_kovaleva_patterns"]
    assert pages[1][1]["cells"][0]["source"].startswith("# 4, continued.")
    assert len(pages[0][1]["cells"]) + len(pages[1][1]["cells"]) == len(nb["cells"])
    assert pages[1][1]["metadata"] == nb["metadata"]
    with pytest.raises(ValueError, match="tag the first cell of each page"):  # a stray tag in a one-page chapter
        split_pages(nb, "01_clark_surface_patterns")
    del nb["cells"][6]["metadata"]["tags"]
    assert split_pages(nb, "01_clark_surface_patterns") == [("01_clark_surface_patterns", nb)]
    with pytest.raises(ValueError, match="tag the first cell of each page"):
        split_pages(nb, CH4)


def test_tidy_writes_each_page_with_its_own_findings_targets_and_rows(tmp_path):
    """Fails on a tidy that publishes one page: the second page is never written and the first page's findings box
    lists rows whose sections are not on it."""
    path, log = tmp_path / "nb.ipynb", tmp_path / "log.txt"
    path.write_text(json.dumps(_executed_ch4()))
    results = {"chapter": CH4, "profile": "quick", "comparisons": _rows(), "params": {}, "numbers": {}}
    (tmp_path / "r.json").write_text(json.dumps(results))
    out = tidy(path, log, results=tmp_path / "r.json", seconds=3)
    assert set(out["pages"]) == {CH4, "04_kovaleva_patterns"} and out["pages"][CH4] == path
    first = json.loads(path.read_text())
    second = json.loads(out["pages"]["04_kovaleva_patterns"].read_text())
    box = lambda nb: next(c["source"] for c in nb["cells"] if SUMMARY_TAG in c["metadata"].get("tags", []))  # noqa
    assert "Table 1" in box(first) and "§4.3" in box(first) and "§4.1" not in box(first)
    assert "§4.1 Fig. 2" in box(second) and "§4.2" in box(second) and "Table 1" not in box(second)
    text = lambda nb: "\n".join(c["source"] for c in nb["cells"] if c["cell_type"] == "markdown")  # noqa: E731
    assert "(ch04-row-table-1)=" in text(first) and "(ch04-row-s4-3)=" in text(first)
    assert "(ch04-row-s4-1-fig-2)=" in text(second) and "(ch04-row-s4-4)=" in text(second)
    assert "(ch04-row-s4-1-fig-2)=" not in text(first) and "(ch04-row-table-1)=" not in text(second)
    assert second["cells"][0]["source"].startswith("# 4, continued.")  # the page's title first, then its boxes
    assert SUMMARY_TAG in second["cells"][1]["metadata"]["tags"]


def test_the_results_table_of_a_page_shows_that_pages_rows_only():
    from attnbook.chapters.results import ChapterResults
    from attnbook.verdict import Comparison

    res = ChapterResults(CH4, {"profile": "quick"}, {"name": "m"})
    res.compare(*[Comparison.from_dict(r) for r in _rows()])
    assert list(res.table(0)["experiment"]) == ["Table 1", "§4.3"]
    assert list(res.table(1)["experiment"]) == ["§4.1 Fig. 2", "§4.2 FrameNet", "§4.4"]
    assert len(res.table()) == 5
    assert "ch04-row-s4-1-fig-2" in res.table(1).page_html and "ch04-row-table-1" not in res.table(1).page_html


def test_launch_buttons_of_every_page_open_the_chapter_notebook_and_the_scorecard_links_the_right_page():
    from attnbook.chapters.scorecard import FINDINGS
    from attnbook.chapters.sphinxext import source_notebook_url

    base = "https://example.org/repo/blob/main/"
    assert source_notebook_url(base + "book/04_kovaleva_patterns.ipynb") == base + f"notebooks/{CH4}.ipynb"
    assert source_notebook_url(base + f"book/{CH4}.ipynb") == base + f"notebooks/{CH4}.ipynb"
    links = {f.experiment: f.link for f in FINDINGS if f.chapter == CH4}
    assert links["Table 1"].startswith(f"{CH4}.html#ch04-row-table-1")
    assert links["§4.1 Fig. 2"].startswith("04_kovaleva_patterns.html#ch04-row-s4-1-fig-2")
