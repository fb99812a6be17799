"""The "paper vs this run" table as a reader scans it at the end of a chapter page.

Five columns: **claim** (the row's experiment and quantity), **paper**, **this run** (the value with its 95% interval,
once), **outcome** (a coloured label, :func:`attnbook.verdict.outcome_html`) and a link to the section of the page that measures the
row (:func:`attnbook.chapters.anchors.experiment_anchor`). The rows come in the three lists of
:data:`~attnbook.verdict.KINDS` (the papers' claims, the book's own questions, what was not reproduced), each under
its heading. A finding asked of several tasks (or relations) is one group: rows of the same kind and experiment whose
quantities differ only in a leading ``"MRPC: "`` / ``"MRPC, "`` read as one heading with a sub-row per task. Each
row's rule, note and detectable effect are in a fold (``<details>``) under its claim.

Words never break inside (book/_static/attnbook.css): a word with a hyphen or a slash is kept whole, the table
wraps between words only.
"""
from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from attnbook.chapters.anchors import experiment_anchor
from attnbook.chapters.tables import MISSING, number_text, whole_words
from attnbook.verdict import CLAIM, NOT_REPRODUCED, OWN, Comparison, outcome_html

#: the class of the container around a comparison table (book/_static/attnbook.css)
TABLE_CLASS = "attnbook-comparison"

#: the five visible columns, in order
COLUMNS = ("claim", "paper", "this run [95% interval]", "outcome", "section")

#: how each list of rows is headed, in the order the table shows them
KIND_HEADINGS = {CLAIM: "The papers' claims", OWN: "The book's own questions", NOT_REPRODUCED: "Not reproduced"}

#: a leading task or relation name ("MRPC: ...", "STS-B, ...", "pobj: ...") that repeats a finding per task
_PER_TASK = re.compile(r"^(?P<task>[A-Za-z0-9][\w.+\-]{0,15})(?::|,) (?P<rest>\S.*)$")
#: an interval already written into the row's own text ("0.807 [0.802, 0.811] (...)")
_INTERVAL = re.compile(r"\[[^\[\]]*,[^\[\]]*\]")
#: the space inside an interval ("[0.802, 0.811]"), which the page keeps from breaking
_INTERVAL_SPACE = re.compile(r"(\[[^\[\]\s]*,) (?=[^\[\]\s]*\])")
#: the paper's section a link names: "§4.2", "Table 1", "Fig. 8"
_SECTION = re.compile(r"§\s*\d+(?:\.\d+)*|\bTable \d+|\bFig\. ?\d+")


def _decimals(text: str) -> int:
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def run_text(row: Comparison) -> str:
    """This run's value with its 95% interval, the interval written once: the row's own text when it already holds
    one (``"0.807 [0.802, 0.811] (3.784 nats / ln 109)"``), else the value and ``[low, high]`` at the value's
    decimals; a row without an interval shows its value alone."""
    ours = row.ours
    numeric = isinstance(ours, (int, float)) and not isinstance(ours, bool)
    text = number_text(ours) if numeric or ours is None else str(ours)
    if text.strip().lower() in ("nan", "none"):
        text = MISSING
    if row.low is None or row.high is None or _INTERVAL.search(text):
        return text
    if not numeric:
        try:
            float(text.rstrip("%"))
        except ValueError:  # words ("0 of 6 surely, 6 undecided") state their own range
            return text
    d = _decimals(text)
    scale, unit = (100.0, "%") if text.endswith("%") else (1.0, "")
    low, high = (f"{v * scale:.{d}f}{unit}" for v in (float(row.low), float(row.high)))
    return f"{text} [{low}, {high}]"


def _text_html(text: Any) -> str:
    """Escaped text whose words with a hyphen or slash are kept whole (a browser would break them there); a number
    as it was given (the paper's 33.1, not 33.100)."""
    if text is None or (isinstance(text, float) and text != text):
        text = MISSING
    elif isinstance(text, float):
        text = f"{text:g}"
    return whole_words(html.escape(str(text)))


def link_text(experiment: str) -> str:
    """The words of a row's link: the paper section its experiment names (``"§4.2"``, ``"Table 1"``), else the
    experiment."""
    m = _SECTION.search(experiment)
    return m.group(0) if m else experiment


def fold_html(row: Comparison) -> str:
    """The row's fold: its rule, note and (for an undecided row) what its sample could detect."""
    parts = [("rule", row.rule), ("note", row.note), ("detectable effect", row.detectable)]
    parts = [(k, v) for k, v in parts if v]
    if not parts:
        return ""
    body = "".join(f"<dt>{k}</dt><dd>{_text_html(v)}</dd>" for k, v in parts)
    return (f'<details class="attnbook-row-fold"><summary>{", ".join(k for k, _ in parts)}</summary>'
            f"<dl>{body}</dl></details>")


@dataclass
class Group:
    """Rows of one kind and experiment: one row, or a finding asked of several tasks (``tasks[i]`` names
    ``rows[i]``; ``claim`` is the quantity without the task)."""

    kind: str
    experiment: str
    claim: str
    rows: list[Comparison] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)

    @property
    def grouped(self) -> bool:
        return len(self.rows) > 1


def groups(rows: Iterable[Comparison]) -> list[Group]:
    """The rows in the table's order: by kind (:data:`KIND_HEADINGS`), then as they came, rows that repeat a finding
    per task gathered at the place of the first (two or more rows of one kind and experiment whose quantities are
    ``"<task>: <claim>"`` or ``"<task>, <claim>"`` with the same claim and different tasks)."""
    rows = list(rows)
    keyed: dict[tuple[str, str, str], list[tuple[str, Comparison]]] = {}
    for r in rows:
        m = _PER_TASK.match(r.quantity)
        if m:
            keyed.setdefault((r.kind, r.experiment, m.group("rest")), []).append((m.group("task"), r))
    out: list[Group] = []
    placed: dict[tuple[str, str, str], Group] = {}
    for kind in KIND_HEADINGS:
        for r in rows:
            if r.kind != kind:
                continue
            m = _PER_TASK.match(r.quantity)
            key = (r.kind, r.experiment, m.group("rest")) if m else None
            members = keyed.get(key, []) if key else []
            if len(members) > 1 and len({t for t, _ in members}) == len(members):
                if key not in placed:
                    placed[key] = Group(kind, r.experiment, key[2])
                    out.append(placed[key])
                placed[key].rows.append(r)
                placed[key].tasks.append(m.group("task"))
            else:
                out.append(Group(kind, r.experiment, r.quantity, [r]))
    return out


def _link(chapter: str, experiment: str) -> str:
    return (f'<a class="attnbook-row-link" href="#{experiment_anchor(chapter, experiment)}" '
            f'title="{html.escape(experiment)}: where this run measures it">{_text_html(link_text(experiment))}</a>')


def _claim_html(experiment: str, claim: str) -> str:
    return (f'<span class="attnbook-experiment">{_text_html(experiment)}</span> '
            f'<span class="attnbook-quantity">{_text_html(claim)}</span>')


def _run_html(row: Comparison) -> str:
    """This run's cell: :func:`run_text`, each interval kept on one line."""
    return _text_html(_INTERVAL_SPACE.sub("\\1\u00a0", run_text(row)))


def _row_html(chapter: str, row: Comparison, claim: str, paper: str | None, css: str) -> str:
    cells = [f'<td class="attnbook-claim">{claim}{fold_html(row)}</td>',
             f'<td class="attnbook-paper">{_text_html(row.paper) if paper is None else paper}</td>',
             f'<td class="attnbook-run">{_run_html(row)}</td>',
             f'<td class="attnbook-verdict-cell">{outcome_html(row.outcome_words)}</td>',
             f'<td class="attnbook-link">{_link(chapter, row.experiment)}</td>']
    return f'<tr class="{css}">' + "".join(cells) + "</tr>"


def comparison_html(chapter: str, rows: Sequence[Comparison]) -> str:
    """The chapter's "paper vs this run" table as HTML (see the module docstring)."""
    head = "".join(f'<th scope="col">{_text_html(c)}</th>' for c in COLUMNS)
    cols = "".join(f'<col class="attnbook-col-{c}">' for c in ("claim", "paper", "run", "outcome", "link"))
    body = []
    all_groups = groups(rows)
    for kind, heading in KIND_HEADINGS.items():
        mine = [g for g in all_groups if g.kind == kind]
        if not mine:
            continue
        n = sum(len(g.rows) for g in mine)
        lines = [f'<tbody class="attnbook-kind attnbook-kind-{kind.replace(" ", "-")}">',
                 f'<tr class="attnbook-kind-heading"><th colspan="{len(COLUMNS)}" scope="rowgroup">'
                 f'{html.escape(heading)} <span class="attnbook-count">({n} row{"s" if n != 1 else ""})</span>'
                 f"</th></tr>"]
        for g in mine:
            if not g.grouped:
                lines.append(_row_html(chapter, g.rows[0], _claim_html(g.experiment, g.claim), None, "attnbook-row"))
                continue
            papers = {str(r.paper) for r in g.rows}
            common = _text_html(g.rows[0].paper) if len(papers) == 1 else ""
            lines.append(f'<tr class="attnbook-group-heading"><td class="attnbook-claim">'
                         f"{_claim_html(g.experiment, g.claim)}</td><td class=\"attnbook-paper\">{common}</td>"
                         f'<td class="attnbook-run"></td><td class="attnbook-verdict-cell"></td>'
                         f'<td class="attnbook-link">{_link(chapter, g.experiment)}</td></tr>')
            for task, r in zip(g.tasks, g.rows):
                claim = f'<span class="attnbook-task">{_text_html(task)}</span>'
                lines.append(_row_html(chapter, r, claim, "" if common else None, "attnbook-row attnbook-subrow"))
        body += lines + ["</tbody>"]
    return (f'<div class="{TABLE_CLASS}"><table class="{TABLE_CLASS}-table"><colgroup>{cols}</colgroup>'
            f"<thead><tr>{head}</tr></thead>" + "".join(body) + "</table></div>")


@functools.cache
def _frame_class() -> type:
    import pandas as pd

    class ComparisonFrame(pd.DataFrame):
        """The table's rows as a DataFrame that the page shows as :attr:`page_html` (the book's display formatter,
        :func:`attnbook.chapters.tables.enable`, renders it so, also through ``.style``); anything derived from it
        (a selection, a sort) is a plain DataFrame."""

        _metadata = ["page_html"]

        @property
        def _constructor(self):
            return pd.DataFrame

    return ComparisonFrame


def comparison_frame(records: list[dict], chapter: str, rows: Sequence[Comparison]):
    """``records`` as a DataFrame for programs, shown on the page as :func:`comparison_html` of ``rows``."""
    frame = _frame_class()(records)
    frame.page_html = comparison_html(chapter, rows)
    return frame
