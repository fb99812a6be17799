"""How a chapter's tables read on the page: rounded, no ``nan``, no 0-based index column.

:func:`enable` (called by :func:`attnbook.chapters.chapter.setup`) sets pandas' Styler defaults (3 significant
decimals instead of 6, "—" for a missing value) and makes a plain ``DataFrame`` shown by a cell render through
:func:`book_table`: without its index when that is the default 0, 1, 2, ... (a meaningful index, e.g. task names,
stays), column labels that are program identifiers as words (``train_accuracy`` -> "train accuracy"), numbers rounded
by their size, missing values as "—"; the "paper vs this run" table shows its own page form
(:func:`page_html`). A table's numbers are unchanged in the results files; only their display is. Words in a table
break only between words (book/_static/attnbook.css).
"""
from __future__ import annotations

import math
import re
from typing import Any

MISSING = "—"
PRECISION = 3


def number_text(value: Any) -> str:
    """A number as a reader wants it: integers as integers, others with 3 decimals, small ones with 3 significant
    digits, missing ones as "—"; anything else as ``str``."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"):
        return f"{int(value):,}" if abs(int(value)) >= 10000 else str(int(value))
    if isinstance(value, float) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f"):
        v = float(value)
        if math.isnan(v):
            return MISSING
        if v == int(v) and abs(v) < 1e6:
            return str(int(v))
        if abs(v) < 0.01:
            return f"{v:.3g}"
        return f"{v:.{PRECISION}f}"
    if isinstance(value, str) and value.strip().lower() in ("nan", "none"):
        return MISSING
    return str(value)


#: a column label that is a program's name for a quantity (``train_accuracy``, ``n_items``), not a reader's
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
#: abbreviations a program's column label uses, as a reader says them
_LABEL_WORDS = {"adv": "adversarial", "acc": "accuracy", "ids": "ids", "n": ""}


def label_words(label: Any) -> Any:
    """A column label as words: ``"test_adv_accuracy"`` -> ``"test adversarial accuracy"``, ``"n_items"`` ->
    ``"items"`` (a count's ``n_`` prefix dropped); any other label (words already, a number, a task name) as it is."""
    if not isinstance(label, str) or not _IDENTIFIER.match(label):
        return label
    words = [_LABEL_WORDS.get(w, w) for w in label.split("_")]
    return " ".join(w for w in words if w)


def book_table(df) -> Any:
    """A DataFrame as a Styler formatted for the page (see the module docstring); column labels that are program
    identifiers read as words (:func:`label_words`)."""
    import pandas as pd

    if any(label_words(c) != c for c in df.columns):
        df = df.rename(columns=label_words)
    styler = df.style.format(number_text)
    if isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1:
        styler = styler.hide(axis="index")
    return styler


#: a character after which a browser may break a word (a hyphen, a slash, a dash), inside a word and not before a
#: digit (no browser breaks "-0.5" or "8-10" there)
_BREAKS = re.compile(r"(?<=.)[-/\u2010-\u2015\u2212\\|](?=[^\d])")
#: what is not a table's text: its tags, and its style and script blocks
_MARKUP = re.compile(r"(<style\b.*?</style>|<script\b.*?</script>|<[^>]*>)", re.S | re.I)


def whole_words(text_html: str) -> str:
    """Escaped text with each word that holds a hyphen or a slash in ``<span class="attnbook-nobr">`` (the stylesheet
    keeps it on one line), so a table column is never narrower than such a word: a browser would break it there."""
    return "".join(f'<span class="attnbook-nobr">{w}</span>' if _BREAKS.search(w) else w
                   for w in re.split(r"(\s+)", text_html))


def table_words_whole(html: str) -> str:
    """A rendered table with :func:`whole_words` applied to its text (tags, styles and scripts left as they are)."""
    parts = _MARKUP.split(html)
    return "".join(p if i % 2 else whole_words(p) for i, p in enumerate(parts))


_MISSING_CELL = re.compile(r">\s*(?:nan|NaN|None|<NA>|&lt;NA&gt;)\s*</td>")


def missing_as_dash(html: str) -> str:
    """A rendered table with every cell that shows a missing value ("nan", "None", "<NA>") showing "—" instead
    (pandas 3's ``Styler.format`` ignores the ``styler.format.na_rep`` option)."""
    return _MISSING_CELL.sub(f">{MISSING}</td>", html)


def enable() -> None:
    """Styler defaults and the DataFrame display of the book (outside IPython only the defaults are set)."""
    import pandas as pd

    pd.set_option("styler.format.precision", PRECISION)
    pd.set_option("styler.format.na_rep", MISSING)
    pd.set_option("display.precision", PRECISION)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return
    shell = get_ipython()
    if shell is None:
        return
    html = shell.display_formatter.formatters["text/html"]
    html.for_type(pd.DataFrame, page_html)
    from pandas.io.formats.style import Styler

    html.for_type(Styler, page_html)


def page_html(table) -> str:
    """The HTML a cell shows for a DataFrame or a Styler: a table that brings its own page form (the "paper vs this
    run" table, :func:`attnbook.chapters.comparison_table.comparison_frame`) shows that, also when styled; any other
    as :func:`book_table` (a DataFrame) or as styled, missing values as "—", words with a hyphen or slash kept
    whole (:func:`table_words_whole`)."""
    from pandas.io.formats.style import Styler

    frame = table.data if isinstance(table, Styler) else table
    own = getattr(frame, "page_html", None)
    if isinstance(own, str):
        return own
    return table_words_whole(missing_as_dash(table.to_html() if isinstance(table, Styler)
                                             else book_table(table).to_html()))
