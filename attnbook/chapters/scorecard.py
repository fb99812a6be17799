"""The scorecard at the top of the results overview: the papers' main findings, one row each, one column per model.

:data:`FINDINGS` is the one table that says which "paper vs this run" rows test a finding: the chapter, the rows'
experiment and a pattern for their quantity (``{task}`` stands for a task name, ``{sink}`` for ``[CLS]`` or
``[SEP]``: chapter 1 tests the no-op reading on each model's own sink token). The model the chapters ran with reads
its rows from chapters 1-7's results files; every other model of chapter 9 from that chapter's per-model rows
(``numbers["per_model_rows"]``, judged by the same rules). A cell says what the rows' outcomes say
(:data:`WORDS`): *holds* (agrees), *holds differently* (partly agrees, or rows that disagree among themselves),
*fails* (disagrees), *cannot tell* (inconclusive or not comparable); :func:`combined` states how several rows (one
per task) make one cell. The key number is the judged number of the row (its 95% interval on hover), the row's own
words, or how many rows hold (:attr:`Finding.number`).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from attnbook.chapters.anchors import experiment_anchor
from attnbook.chapters.toc import chapter as chapter_of
from attnbook.verdict import AGREES, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE, NOT_REPRODUCED, PARTLY, Comparison

#: the chapter whose per-model rows give the other models' columns
ACROSS = "09_across_encoders"

#: what a cell says for an outcome (of one row, or of several combined by :func:`combined`)
WORDS = {AGREES: "holds", PARTLY: "holds differently", DISAGREES: "fails", INCONCLUSIVE: "cannot tell",
         NOT_COMPARABLE: "cannot tell"}

#: the CSS class suffix of an outcome (``attnbook-outcome attnbook-outcome-<slug>``, book/_static/attnbook.css)
SLUGS = {AGREES: "agrees", PARTLY: "partly", DISAGREES: "disagrees", INCONCLUSIVE: "inconclusive",
         NOT_COMPARABLE: "not-comparable"}

#: the class of the scorecard's table (book/_static/attnbook-overview.css lays it out)
TABLE_CLASS = "attnbook-scorecard"

#: the id of a chapter page's "Paper vs this run" section
TABLE_ANCHOR = "paper-vs-this-run"

_PLACEHOLDERS = {"{task}": r"(?P<task>[A-Za-z0-9.-]+)", "{sink}": r"\[(?:CLS|SEP)\]"}


@dataclass(frozen=True)
class Finding:
    """One of the papers' main findings and the rows that test it.

    ``words``: the finding in a few words; ``paper`` and ``section``: where the paper states it (the link's text);
    ``chapter`` and ``experiment``: the rows' chapter and experiment; ``quantities``: patterns of the rows' quantity
    (:data:`_PLACEHOLDERS`); ``number``: the key number shown, ``"value"`` (the judged number of the first row),
    ``"ours"`` (the first row's words, up to the first ``;``, ``:`` and ``,``) or ``"count"`` (rows that hold, of those
    judged, counted in ``unit``)."""

    words: str
    paper: str
    section: str
    chapter: str
    experiment: str
    quantities: tuple[str, ...]
    number: str = "value"
    unit: str = "rows"

    def patterns(self) -> list[re.Pattern]:
        out = []
        for q in self.quantities:
            parts = re.split(r"(\{task\}|\{sink\})", q)
            out.append(re.compile("".join(_PLACEHOLDERS.get(p, re.escape(p)) for p in parts)))
        return out

    def rows(self, rows: Sequence[Comparison]) -> list[Comparison]:
        """The rows of ``rows`` (one chapter's, or one model's in chapter 9) that test this finding, in the order of
        :attr:`quantities` (the first one gives the key number)."""
        pats = self.patterns()
        mine = [r for r in rows if r.kind != NOT_REPRODUCED and r.experiment == self.experiment]
        return [r for p in pats for r in mine if p.fullmatch(r.quantity)]

    @property
    def link(self) -> str:
        """The page and section that measure it: ``04_kovaleva_taxonomy.html#ch04-row-s4-3-fig-5``."""
        page = chapter_of(self.chapter).page_of(self.experiment)
        return f"{page}.html#{experiment_anchor(self.chapter, self.experiment)}"


CLARK, KOVALEVA, MICHEL, NIVEN_KAO = ("Clark", "Kovaleva", "Michel", "Niven & Kao")
C1, C2, C3 = "01_clark_surface_patterns", "02_clark_probing", "03_clark_clustering"
K4, K5, M6, N7 = "04_kovaleva_taxonomy", "05_kovaleva_disabling", "06_michel_pruning", "07_arct_cues"

#: The papers' main findings, in the papers' order, and the rows that test them.
FINDINGS: tuple[Finding, ...] = (
    Finding("early heads attend to the previous/next token", CLARK, "§3.1", C1, "§3.1 relative position",
            ("layers with a head putting >50% of its attention on the previous token",
             "layers with a head putting >50% of its attention on the next token"), "count", ""),
    Finding("middle layers attend mostly to [SEP]", CLARK, "§3.2", C1, "§3.2 special tokens",
            ("the special token that gets the most attention (mean over all heads)",
             "layers where over half of the attention goes to {sink}"), "ours"),
    Finding("attention to the sink barely moves the loss", CLARK, "§3.2", C1, "§3.2 gradients",
            ("|dL/d attn| to {sink} / to other tokens: mean over the layers with the most {sink} attention "
             "minus the rest",)),
    Finding("some heads track one syntactic relation", CLARK, "§4.2", C2, "§4.2 heads as parsers",
            ("relations with a specialist head (>= 10 points over the best offset)",), "ours"),
    Finding("a head resolves coreference almost as rules do", CLARK, "§4.3", C2, "§4.3 coreference",
            ("best head minus head-word match (points, all mentions)",
             "best head minus rule-based (points, all mentions)")),
    Finding("attention probes beat distance by 19 UAS", CLARK, "§5", C2, "§5 probing classifiers",
            ("Attn + word vectors minus Distances + word vectors (UAS points)",)),
    Finding("heads of one layer attend alike", CLARK, "§6", C3, "§6 layers",
            ("same-layer / other-layer mean JS", "heads whose nearest head is in the same layer (share)")),
    Finding("heads cluster by behaviour", CLARK, "§6", C3, "§6 clusters",
            ("same-behaviour / other-behaviour mean JS (broad heads left out)",)),
    Finding("pre-training helps each task's fine-tuning", KOVALEVA, "Table 1", K4, "Table 1",
            ("{task}: pre-trained + FT minus random init + FT (points)",), "count", "tasks"),
    Finding("a third or more of the maps are heterogeneous", KOVALEVA, "Fig. 2", K4, "§4.1 Fig. 2",
            ("{task}: Heterogeneous share",), "count", "tasks"),
    Finding("fine-tuning changes the last layers most", KOVALEVA, "Fig. 5", K4, "§4.3 Fig. 5",
            ("{task}: most changed layer is one of the last two",), "count", "tasks"),
    Finding("switching one head off can raise the score", KOVALEVA, "Fig. 8", K5, "§4.6 Fig. 8",
            ("{task}: best single-head gain (points)",), "count", "tasks"),
    Finding("switching a whole layer off can help", KOVALEVA, "Fig. 9", K5, "§4.6 Fig. 9",
            ("largest gain from disabling a layer (points)",)),
    Finding("switching layer 1 off costs little", KOVALEVA, "Fig. 9", K5, "§4.6 Fig. 9",
            ("largest drop from disabling layer 1 (points)",)),
    Finding("most heads can go, one at a time", MICHEL, "§3.2", M6, "§3.2",
            ("share of heads whose removal surely changes the score by less than the tolerance",), "ours"),
    Finding("one head per layer is often enough", MICHEL, "§3.3", M6, "§3.3, Table 3",
            ("layers reduced to one head (chosen on other data) with no effect",), "ours"),
    Finding("pruning by importance beats random order", MICHEL, "§4.2", M6, "§4.2 Fig. 3",
            ("I_h minus random orderings, mean accuracy up to 90% pruned (points)",)),
    Finding("BERT beats chance from the warrants alone", NIVEN_KAO, "§5", N7, "§5 probe, BERT (W)",
            ("test accuracy − constant predictor, mean",)),
    Finding("the adversarial test set takes BERT to chance", NIVEN_KAO, "§6", N7,
            "§6 adversarial test, BERT (C, R, W)", ("test accuracy − constant predictor, mean",)),
)


def combined(rows: Sequence[Comparison]) -> str:
    """One outcome for a finding's rows in one model: the rows that could not be compared are left out (none left:
    not comparable); of the rest, none decided: inconclusive; every decided row agrees: agrees; every one
    disagrees: disagrees; otherwise (partly agreeing rows, or decided rows that differ): partly agrees."""
    judged = [r.verdict for r in rows if r.verdict != NOT_COMPARABLE]
    decided = [v for v in judged if v in (AGREES, PARTLY, DISAGREES)]
    if not judged:
        return NOT_COMPARABLE
    if not decided:
        return INCONCLUSIVE
    if all(v == AGREES for v in decided):
        return AGREES
    if all(v == DISAGREES for v in decided):
        return DISAGREES
    return PARTLY


def _missing(x: Any) -> bool:
    """No number: ``None``, NaN, or NaN as a results file stores it (``"nan"``)."""
    try:
        return x is None or float(x) != float(x)
    except (TypeError, ValueError):
        return True


def _num(x: Any) -> str:
    return "—" if _missing(x) else f"{float(x):.3g}"


def _case(quantity: str) -> str:
    """The task a per-task row is about (``"MRPC"`` of ``"MRPC: Heterogeneous share"``), else the quantity."""
    m = re.match(r"([A-Za-z0-9.-]+): ", quantity)
    return m.group(1) if m else quantity


def key_number(finding: Finding, rows: Sequence[Comparison]) -> tuple[str, str]:
    """The key number of a cell and what a reader sees on hovering it (the interval, or each row's outcome)."""
    if not rows:
        return "", ""
    first = rows[0]
    if finding.number == "count":
        judged = [r for r in rows if r.verdict != NOT_COMPARABLE]
        held = sum(r.verdict in (AGREES, PARTLY) for r in judged)
        return (f"{held} of {len(judged)} {finding.unit}".rstrip() if judged else "—",
                "; ".join(f"{_case(r.quantity)}: {r.verdict}" for r in rows))
    if finding.number == "ours":
        text = str(first.ours).split(";")[0].split(":")[0].split(",")[0].strip()
        return text, str(first.ours)
    if _missing(first.value):
        return "—", str(first.ours)
    interval = (f"95% interval [{_num(first.low)}, {_num(first.high)}]"
                if not _missing(first.low) and not _missing(first.high) else "no interval")
    return _num(first.value), interval


@dataclass(frozen=True)
class Column:
    """A model's column: its label and its rows by chapter (chapter 9's models: all under :data:`ACROSS`)."""
    label: str
    rows: Mapping[str, Sequence[Comparison]]
    from_across: bool = False

    def finding_rows(self, f: Finding) -> list[Comparison] | None:
        """The rows of ``f`` in this model; ``None`` when the model did not run the finding's chapter."""
        if self.from_across:
            found = f.rows(self.rows.get(ACROSS, ()))
            return found or None
        if f.chapter not in self.rows:
            return None
        return f.rows(self.rows[f.chapter])


def _label(model: Mapping[str, Any] | None) -> str:
    return str((model or {}).get("name", "?")).split(" (")[0]


def columns(results: Mapping[str, Mapping[str, Any]],
            comparisons: Mapping[str, Sequence[Comparison]]) -> list[Column]:
    """The model the chapters ran with (rows of chapters 1-7), then every other model of chapter 9."""
    chapters = [ch for ch in comparisons if ch != ACROSS]
    labels = list(dict.fromkeys(_label(results[ch].get("model")) for ch in chapters))
    out = [Column(" / ".join(labels) or "this run", {ch: comparisons[ch] for ch in chapters})]
    per_model = (results.get(ACROSS, {}).get("numbers", {}) or {}).get("per_model_rows") or {}
    for label, rows in per_model.items():
        if label in labels:
            continue
        out.append(Column(label, {ACROSS: [Comparison.from_dict(r) for r in rows]}, from_across=True))
    return out


def _cell(finding: Finding, rows: list[Comparison] | None) -> str:
    if rows is None:
        return '<td class="attnbook-scorecard-none">not run</td>'
    if not rows:
        return '<td class="attnbook-scorecard-none">no row</td>'
    outcome = combined(rows)
    number, hover = key_number(finding, rows)
    return (f'<td><span class="attnbook-outcome attnbook-outcome-{SLUGS[outcome]}">{WORDS[outcome]}</span> '
            f'<span class="attnbook-scorecard-number" title="{html.escape(hover, quote=True)}">'
            f'{html.escape(number)}</span></td>')


def scorecard_html(results: Mapping[str, Mapping[str, Any]], comparisons: Mapping[str, Sequence[Comparison]],
                   findings: Sequence[Finding] = FINDINGS) -> str:
    """The scorecard as one HTML table (no blank line: one raw block of the Markdown page): a row per finding, a
    column per model (:func:`columns`), and the link to the section that measures it."""
    cols = columns(results, comparisons)
    head = "".join(f"<th>{html.escape(c.label)}</th>" if not c.from_across else
                   f'<th><a href="{ACROSS}.html#{TABLE_ANCHOR}">{html.escape(c.label)}</a></th>' for c in cols)
    lines = [f'<table class="{TABLE_CLASS}">',
             f"<thead><tr><th>finding of the paper</th>{head}<th>where</th></tr></thead>", "<tbody>"]
    paper = None
    for f in findings:
        first = ' class="attnbook-scorecard-paper"' if f.paper != paper else ""
        paper = f.paper
        found = [c.finding_rows(f) for c in cols]
        cells = "".join(_cell(f, rows) for rows in found)
        # a chapter that made no row for the finding has no section target for it: its comparison table instead
        link = f.link if found[0] else f"{chapter_of(f.chapter).page_of(f.experiment)}.html#{TABLE_ANCHOR}"
        lines.append(f"<tr{first}><td>{html.escape(f.words)}</td>{cells}"
                     f'<td><a href="{link}">{html.escape(f.paper)} {html.escape(f.section)}</a></td></tr>')
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def missing_findings(comparisons: Mapping[str, Sequence[Comparison]],
                     findings: Sequence[Finding] = FINDINGS) -> list[str]:
    """The findings whose chapter ran but has no row matching them (the table names a row that does not exist)."""
    return [f.words for f in findings if f.chapter in comparisons and not f.rows(comparisons[f.chapter])]
