"""Tables as a reader sees them (issue 21): rounded by size, "—" for missing, no 0-based index column."""
from __future__ import annotations

import numpy as np
import pandas as pd

from attnbook.chapters.tables import book_table, enable, number_text


def test_numbers_read_cleanly():
    assert number_text(3.890000) == "3.890" and number_text(0.00123456) == "0.00123" and number_text(12.0) == "12"
    assert number_text(float("nan")) == "—" and number_text(None) == "—" and number_text("NaN") == "—"
    assert number_text(np.int64(25000)) == "25,000" and number_text(np.float32(0.5)) == "0.500"
    assert number_text("1-3") == "1-3" and number_text(True) == "True"


def test_default_index_hidden_meaningful_index_kept_and_no_nan():
    df = pd.DataFrame({"head": ["1-3", "2-9"], "avg": [0.972, np.nan]})
    html = book_table(df).to_html()
    assert "0.972" in html and "0.972000" not in html and ">nan<" not in html.lower() and "—" in html
    assert 'class="row_heading' not in html  # the 0, 1, ... index is not shown
    kept = book_table(df.set_index("head")).to_html()
    assert 'class="row_heading' in kept and "1-3" in kept
    enable()  # the Styler defaults apply to tables a chapter styles itself
    assert "0.972000" not in df.style.to_html() and ">nan<" not in df.style.to_html()


def test_a_chapters_own_styler_shows_no_nan():
    """pandas 3's Styler.format ignores the na_rep option: the page formatter replaces what it leaves (a quick
    page of chapter 2 showed "nan" in Table 2)."""
    from attnbook.chapters.tables import missing_as_dash

    df = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", None]}, index=["r1", "r2"])
    html = missing_as_dash(df.style.format(precision=1).to_html())
    assert ">nan<" not in html and ">None<" not in html and html.count("—") == 2 and ">1.0<" in html


def test_a_word_with_a_hyphen_or_slash_stays_whole_in_a_table():
    """A browser may break "pre-trained" after its hyphen (or "q/k/v" after a slash) when a column is short of room:
    the page keeps such words on one line (the stylesheet's .attnbook-nobr), and leaves signs and head labels alone
    (no browser breaks "-0.5" or "8-10")."""
    from attnbook.chapters.tables import page_html, table_words_whole, whole_words

    assert whole_words("pre-trained q/k/v -0.5 8-10 [-2.1, word") == (
        '<span class="attnbook-nobr">pre-trained</span> <span class="attnbook-nobr">q/k/v</span> -0.5 8-10 [-2.1, word')
    styled = '<style type="text/css">#T_1 td { background-color: red; }</style><table><tr><td>word-level</td></tr>'
    assert table_words_whole(styled) == ('<style type="text/css">#T_1 td { background-color: red; }</style><table><tr>'
                                         '<td><span class="attnbook-nobr">word-level</span></td></tr>')
    html = page_html(pd.DataFrame({"model": ["Random-init", "BERT"], "head": ["8-10", "1-1"]}))
    assert '<span class="attnbook-nobr">Random-init</span>' in html and ">8-10<" in html
    assert '<span class="attnbook-nobr">' not in page_html(pd.DataFrame({"x": [-0.5]}).style)


def test_column_labels_that_are_program_identifiers_read_as_words():
    """Chapter 7's run table showed ``train_accuracy`` and ``test_adv_accuracy`` as column titles: a plain DataFrame
    now shows words; labels that are words, task names or numbers stay as they are."""
    import pandas as pd

    from attnbook.chapters.tables import label_words, page_html

    frame = pd.DataFrame({"seed": [0], "train_accuracy": [0.7], "test_adv_accuracy": [0.5], "n_items": [444],
                          "MRPC": [1.0], "layer-head": ["8-10"]})
    html = page_html(frame)
    for raw in ("train_accuracy", "test_adv_accuracy", "n_items"):
        assert raw not in html
    for shown in ("train accuracy", "test adversarial accuracy", "items", "MRPC", "seed"):
        assert f">{shown}<" in html
    assert [label_words(x) for x in ("claim_differs", "n", 3)] == ["claim differs", "n", 3]
