"""Figures that argue: every chart of every chapter is a numbered figure ("Figure 4.3.") with a one-sentence caption
whose numbers come from the run (:class:`attnbook.charts.Figures`), and the chapters' section headings carry the paper
sections their comparison rows link to."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest

from attnbook import charts as plots

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("0*.ipynb"))


def _chart(n: int = 3) -> alt.Chart:
    return alt.Chart(pd.DataFrame({"x": list(range(n)), "y": [v * v for v in range(n)]})).mark_point().encode(
        x="x:Q", y="y:Q")


# ---- the helper ----------------------------------------------------------------------------------------------------

def test_figures_are_numbered_per_chapter_in_page_order():
    figure = plots.Figures("04_kovaleva_taxonomy")
    first, second = figure(_chart(), "What the first figure shows."), figure(_chart(4), "The second one.")
    assert (first.number, second.number) == ("4.1", "4.2")
    # a cell run twice shows its figure with the same number, and the next figure continues the count
    assert figure(_chart(), "What the first figure shows.").number == "4.1"
    assert figure(_chart(5), "A third.").number == "4.3"
    # a new page starts again at 1, with its own chapter number (ids are 1-based chapter numbers, "09" -> 9)
    assert plots.Figures("09_across_encoders")(_chart(), "x").number == "9.1"
    assert figure(None, "no chart in this profile") is None
    with pytest.raises(ValueError, match="caption"):
        figure(_chart(), "   ")
    with pytest.raises(ValueError, match="chapter ids"):
        plots.Figures("atlas")


def test_a_figure_renders_its_chart_inside_a_figure_with_a_numbered_figcaption():
    plots.enable()
    figure = plots.Figures("01_clark_surface_patterns")
    figure(_chart(), "a first figure")
    fig = figure(_chart(4), "Heads give `[CLS]` 38% & more <b>than</b> **half**.")
    bundle = fig._repr_mimebundle_()
    html = bundle["text/html"]
    assert html.startswith('<figure class="attnbook-figure" id="fig-1-2">')
    assert 'class="attnbook-chart"' in html and html.index("attnbook-chart") < html.index("<figcaption")
    caption = re.search(r'<figcaption class="attnbook-caption">(.*)</figcaption></figure>$', html, re.S).group(1)
    assert caption.startswith('<span class="attnbook-caption-number">Figure 1.2.</span> ')
    # code and bold spans kept, everything else escaped (a caption is text, not markup)
    assert "<code>[CLS]</code>" in caption and "<strong>half</strong>" in caption
    assert "38% &amp; more &lt;b&gt;than&lt;/b&gt;" in caption
    # the static SVG and the Vega-Lite spec are the chart's own; plain text names the figure
    assert bundle["image/svg+xml"].lstrip().startswith("<svg")
    assert bundle["text/plain"].startswith("Figure 1.2. Heads give")


def test_captions_state_this_runs_numbers_formatted_from_the_values():
    """Caption writers take every number from the values they are given (and the paper's from its claims)."""
    from attnbook.studies.clark import charts as clark_charts
    from attnbook.studies.clark.paper.claims import SURFACE
    from attnbook.studies.kovaleva import charts as kovplots

    fractions = {"MRPC": np.array([0.2, 0.1, 0.1, 0.219, 0.381]), "RTE": np.array([0.1, 0.1, 0.1, 0.1, 0.6])}
    text = kovplots.proportions_caption(fractions, (0.32, 0.61))
    assert "from 38% (MRPC) to 60% (RTE)" in text and "32% to 61%" in text

    stats = {"sep_sep": np.full((2, 2), 0.5), "rest_sep": np.full((2, 2), 0.1), "sep": np.full((2, 2), 0.4),
             "cls": np.full((2, 2), 0.05), "cls_cls": np.full((2, 2), 0.3)}
    text = clark_charts.sink_self_caption(stats, {"[SEP]": "</s>"})
    assert "</s> keeps on average 50%" in text and "against 10%" in text
    assert f"over {SURFACE['sep_sep_share']:.0%}" in text

    cos = {"SST-2": np.array([[0.9, 0.9], [0.5, 0.7]]), "RTE": np.array([[0.4, 0.6], [0.8, 0.9]])}
    text = kovplots.layer_change_caption(cos, heatmap=False)
    assert "the last layer changed most on 1 of 2 tasks (SST-2)" in text


def test_cross_model_and_atlas_captions_take_their_numbers_from_the_values():
    from attnbook.atlas import charts as atlas_charts
    from attnbook.atlas import encoder_charts
    from attnbook.stats import Estimate

    prev = np.zeros((6, 12))
    prev[1, 3] = 0.8
    stats = {"MiniLM": {"prev": prev, "next": np.zeros((6, 12)), "self": np.zeros((6, 12))}}
    assert "MiniLM 1 previous, 0 next" in encoder_charts.positional_caption(stats)
    answers = [{"measured": True, "task": "SST-2", "estimate": Estimate(0.05, -0.19, 0.28, 72, "heads")},
               {"measured": False, "question": "q"}]
    assert atlas_charts.rank_caption("Shown", answers, "task") == "Shown: SST-2 ρ = 0.05 [-0.19, 0.28]."
    assert atlas_charts.rank_caption("Shown", answers[1:], "task") == "Shown: not measured in this profile."


def _figure_calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id == "figure"]


#: calls that make a chart (the package's chart functions and Altair's compositions)
CHART_CALL = re.compile(r"(_chart|_heatmaps?|_scatter|_bars|_lines|_views?|_grid|_strip|_curves?)$|"
                        r"^(hconcat|vconcat|wrap|head_heatmap|layer_scatter|line_view|loss_curves)$")


def _is_chart(node: ast.AST) -> bool:
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr in ("properties", "resolve_scale", "interactive")):
        node = node.func.value  # chart.properties(...) is still the chart
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return bool(CHART_CALL.search(name)) and name != "figure"


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_every_chart_a_chapter_shows_is_a_figure_with_a_caption(notebook):
    """No cell shows a bare chart (as its last expression or through ``display``): each goes through the chapter's
    ``figure(chart, caption)``, made once in the set-up (``Figures(CHAPTER)``)."""
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    bare, n_figures = [], 0
    for c in cells:
        tree = ast.parse("".join(c["source"]))
        n_figures += len(_figure_calls(tree))
        for stmt in ast.walk(tree):
            if not isinstance(stmt, ast.Expr):
                continue
            shown = [stmt.value]
            if isinstance(stmt.value, ast.IfExp):  # display(x) if x else None
                shown = [stmt.value.body, stmt.value.orelse]
            for value in shown:
                if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "display":
                    shown += list(value.args)
            bare += [f"cell {c.get('id')}: {ast.unparse(v)[:80]}" for v in shown if _is_chart(v)]
    assert not bare, f"{notebook.name} shows charts without a numbered caption: {bare}"
    assert n_figures >= 1
    code = "\n".join("".join(c["source"]) for c in cells)
    assert re.search(r"\bfigure = (plots\.)?Figures\(CHAPTER\)", code), "the chapter numbers its figures"


#: what may carry digits in a caption's literal text: references to the papers' parts and to chapters, and names
#: that contain digits ("top-1", "stress-1", "CoNLL-2012")
REFERENCES = re.compile(r"(§\s?\d+(\.\d+)*|\b(Fig|Figs|Table|Tables|App)\.?\s\d+|\bchapters? \d+( and \d+)?|"
                        r"\b\w*[A-Za-z]\w*\d\w*\b|\b[A-Za-z]\w*-\d+\b|\{[^{}]*\})")


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_captions_type_no_numbers(notebook):
    """A number in a caption comes from the run (an f-string field) or from the paper's claims through a caption
    writer; the caption's own words type none (references such as "§4.6", "Fig. 5", "chapter 6" aside)."""
    typed = []
    for c in json.loads(notebook.read_text())["cells"]:
        if c["cell_type"] != "code":
            continue
        for call in _figure_calls(ast.parse("".join(c["source"]))):
            if len(call.args) < 2:
                typed.append(f"cell {c.get('id')}: a figure without a caption")
                continue
            caption = call.args[1]
            parts = [caption] if isinstance(caption, ast.Constant) else (
                [v for v in caption.values if isinstance(v, ast.Constant)] if isinstance(caption, ast.JoinedStr) else [])
            for part in parts:
                text = REFERENCES.sub(" ", str(part.value))
                if re.search(r"\d", text):
                    typed.append(f"cell {c.get('id')}: {part.value!r}")
    assert not typed, f"{notebook.name}: captions with typed numbers: {typed}"


# ---- section headings: where each comparison row links -------------------------------------------------------------

@pytest.mark.parametrize("chapter, experiment, heading", [
    ("03_clark_clustering", "§6 MDS", "MDS"),
    ("03_clark_clustering", "§6 clusters", "Clusters"),
    ("03_clark_clustering", "§6 layers", "same layer"),
    ("05_kovaleva_disabling", "§4.6", "Fig. 8"),
    ("05_kovaleva_disabling", "§4.6 Fig. 9", "Fig. 9"),
])
def test_rows_link_to_the_section_that_measures_them(chapter, experiment, heading):
    """A row's link lands on the section of its page that measures it, not on the comparison table: the headings
    name the paper's section (Clark §6's MDS picture, Kovaleva §4.6's Fig. 8)."""
    from attnbook.chapters.anchors import TABLE_HEADING, place_targets

    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    where = place_targets(nb, chapter, [experiment])[experiment]
    assert heading in where and not where.lower().startswith(TABLE_HEADING)


# ---- the built book --------------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_every_chart_on_every_chapter_page_has_a_numbered_caption_in_chromium(smoke_book):
    """Chromium at 1,280 x 900 on the smoke book: on each chapter's page every chart sits in a figure whose caption
    starts "Figure N.k." with N the chapter's number and k = 1, 2, ... in page order (continued on a chapter's next
    page), followed by its sentence."""
    from pagecheck import chapter_pages
    from test_book import CHROMIUM

    problems: list[str] = []
    numbered: dict[int, int] = {}  # a chapter on several pages numbers its figures on from page to page
    for chapter, page in chapter_pages(smoke_book, CHROMIUM):
        charts = page.evaluate(
            "Array.from(document.querySelectorAll('.attnbook-chart')).map(c => { const f = c.closest('figure'); "
            "const cap = f && f.querySelector(':scope > figcaption.attnbook-caption'); "
            "return cap ? cap.textContent.trim() : null; })")
        number = int(chapter[:2])
        if not charts:
            problems.append(f"{chapter}: no chart on the page")
        first = numbered.get(number, 0) + 1
        numbered[number] = first - 1 + len(charts)
        for k, caption in enumerate(charts, start=first):
            if caption is None:
                problems.append(f"{chapter}: chart {k} has no caption")
            elif not re.match(rf"Figure {number}\.{k}\. \S.{{20,}}", caption):
                problems.append(f"{chapter}: chart {k} is captioned {caption[:60]!r}")
    assert not problems, "\n".join(problems)
