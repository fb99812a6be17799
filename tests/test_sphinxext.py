"""The book's Sphinx extension: duplicate scripts dropped, launch buttons pointed at the source notebooks."""
from __future__ import annotations

from types import SimpleNamespace

from attnbook.chapters.sphinxext import _dedupe, _launch_from_sources, source_notebook_url


def test_launch_urls_point_at_source_notebooks():
    binder = "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/book/06_michel_pruning.ipynb"
    colab = "https://colab.research.google.com/github/o/r/blob/main/book/01_clark_surface_patterns.ipynb"
    assert source_notebook_url(binder).endswith("lab/tree/notebooks/06_michel_pruning.ipynb")
    assert source_notebook_url(colab).endswith("blob/main/notebooks/01_clark_surface_patterns.ipynb")
    page = "https://colab.research.google.com/github/o/r/blob/main/book/heads_of_your_own_model.ipynb"
    assert source_notebook_url(page).endswith("blob/main/notebooks/pages/heads_of_your_own_model.ipynb")


def test_other_urls_unchanged():
    for url in ("https://x.org/book/intro.md", "https://github.com/o/notebook/book/01_x.md",
                "https://x.org/mybook/01_clark_surface_patterns.ipynb"):
        assert source_notebook_url(url) == url


def test_page_context_rewritten_only_for_launch_group():
    context = {"header_buttons": [
        {"label": "launch-buttons", "buttons": [{"url": "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/book/02_clark_probing.ipynb"}]},
        {"label": "download-buttons", "buttons": [{"url": "../_sources/book/02_clark_probing.ipynb"}]},
    ]}
    _launch_from_sources(None, "book/02_clark_probing", "page.html", context, None)
    assert context["header_buttons"][0]["buttons"][0]["url"].endswith("notebooks/02_clark_probing.ipynb")
    assert context["header_buttons"][1]["buttons"][0]["url"] == "../_sources/book/02_clark_probing.ipynb"


def test_dedupe_keeps_first_of_identical_scripts():
    a = SimpleNamespace(filename="x.js", attributes={"defer": "defer"})
    b = SimpleNamespace(filename="x.js", attributes={"defer": "defer"})
    c = SimpleNamespace(filename="y.js", attributes={})
    items = [a, b, c]
    _dedupe(items)
    assert items == [a, c]


# ---- reading time under every page's title ------------------------------------------------------------------------

def _page(words: int, code_words: int = 0, table: str = "", chart: str = ""):
    from docutils import nodes
    from docutils.utils import new_document

    doc = new_document("page")
    section = nodes.section(ids=["page"])
    section += nodes.title("", "A title of five words")
    section += nodes.paragraph("", " ".join(["word"] * words))
    section += nodes.literal_block("", " ".join(["code"] * code_words))
    cell = nodes.container(classes=["cell"])
    cell += nodes.container("", nodes.literal_block("", "x = 1 " * 50), classes=["cell_input"])
    section += cell
    if table:
        section += nodes.raw("", table, format="html")
    if chart:
        section += nodes.raw("", chart, format="html")
    section += nodes.math_block("", "a + b = c " * 40)
    doc += section
    return doc


def test_reading_words_count_prose_and_tables_not_code_equations_or_charts():
    from attnbook.chapters.sphinxext import reading_words

    table = ("<style>td {color: red}</style><table><tr><th>claim</th><th>paper</th></tr>"
             "<tr><td>share of heads</td><td>0.843 [0.841, 0.846]</td></tr></table>")
    chart = ('<div class="attnbook-chart"><script>var spec = {"a": "many words in a spec"};</script>'
             "<svg><text>axis label</text></svg></div>")
    assert reading_words(_page(100)) == 5 + 100  # the title and the paragraph
    assert reading_words(_page(100, code_words=300)) == 105
    # the table's text counts (claim, paper, share of heads, 0.843, 0.841, 0.846), its style and the chart do not
    assert reading_words(_page(100, table=table, chart=chart)) == 105 + 8


def test_reading_time_goes_under_the_first_heading_once():
    from docutils import nodes

    from attnbook.chapters.sphinxext import READING_CLASS, WORDS_PER_MINUTE, add_reading_time, reading_minutes

    assert WORDS_PER_MINUTE == 200 and reading_minutes(10) == 1 and reading_minutes(1_000) == 5
    assert reading_minutes(1_150) == 6 and reading_minutes(0) == 1
    doc = _page(995)  # 1,000 words with the title
    add_reading_time(None, doc, "page")
    add_reading_time(None, doc, "page")  # a second pass replaces the line
    section = doc.children[0]
    assert isinstance(section.children[0], nodes.title)
    lines = [n for n in doc.findall(nodes.paragraph) if READING_CLASS in n["classes"]]
    assert len(lines) == 1 and section.children[1] is lines[0] and lines[0].astext() == "5 min read"
    empty = _page(0)
    empty.children[0].remove(empty.children[0].children[0])  # no heading: nothing is added
    add_reading_time(None, empty, "page")
    assert not [n for n in empty.findall(nodes.paragraph) if READING_CLASS in n["classes"]]


def test_the_extension_registers_the_reading_time():
    from attnbook.chapters import sphinxext

    events = []
    app = SimpleNamespace(connect=lambda event, fn, priority=500: events.append((event, fn)))
    sphinxext.setup(app)
    assert ("doctree-resolved", sphinxext.add_reading_time) in events
