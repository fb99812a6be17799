"""The closing summaries say nothing the rows do not carry: every number in a chapter's "What this run found" is a
value of one of its rows (the paper's, this run's, an interval bound, a sample size) or a count of its rows, every
outcome word it counts is the rows' own, and every row is listed once, under its own outcome."""
from __future__ import annotations

import re

import pytest

from attnbook import verdict
from chapter_rows import BUILDERS

NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?")
#: a heading of the summary's lists: its outcome's colour class
GROUP = re.compile(r'attnbook-outcome attnbook-outcome-([a-z-]+)">([^<]+)</span>(?:</strong>|\*\*) \((\d+)\)')


def _numbers(text: str) -> list[str]:
    """The numbers a reader reads: in the text, not in the HTML tags' names and attributes."""
    return [m.group(0).replace("−", "-").replace(",", "") for m in NUMBER.finditer(re.sub(r"<[^>]+>", " ", text))]


def _carried(rows: list[verdict.Comparison]) -> set[str]:
    """Every number the rows' fields show (as the summary may print them) and every count of rows."""
    out: set[str] = set()
    for r in rows:
        for field in (r.experiment, r.quantity, str(r.paper), str(r.ours), r.detectable, r.note, r.rule, r.unit,
                      str(r.n), r.interval):
            out.update(_numbers(field))
    n = len(rows)
    out.update(str(k) for k in range(n + 1))
    return out


def _chance(text: str) -> set[str]:
    """The multiplicity sentence's expected count (5% of the judged rows, one decimal), computed here again."""
    return set(re.findall(r"about (\d+\.\d) (?:of these|would)", text))


@pytest.mark.parametrize("chapter", list(BUILDERS))
def test_every_number_in_the_summary_is_carried_by_the_rows(chapter):
    rows = BUILDERS[chapter]()
    text = verdict.summary_markdown(rows, "")
    claims = [r for r in rows if r.kind == verdict.CLAIM]
    own = [r for r in rows if r.kind == verdict.OWN]
    expected_chance = {f"{verdict.expected_by_chance(claims)[1]:.1f}", f"{verdict.expected_by_chance(own)[1]:.1f}"}
    assert _chance(text) <= expected_chance
    carried = _carried(rows) | expected_chance | {"95", "5"}  # the level every row is judged at
    stray = [x for x in _numbers(text) if x not in carried and x.lstrip("+-") not in carried]
    assert not stray, f"{chapter}: the summary states numbers no row carries: {stray}"
    counts = {o: sum(r.verdict == o for r in claims) for o in verdict.OUTCOMES}
    for outcome, k in counts.items():
        if k:
            assert f"{k} {outcome if k == 1 else verdict.PLURAL.get(outcome, outcome)}" in text


def test_a_stray_number_is_caught():
    rows = BUILDERS[list(BUILDERS)[0]]()
    text = verdict.summary_markdown(rows, "") + " The best head scored 97.3."
    assert "97.3" not in _carried(rows)
    assert [x for x in _numbers(text) if x not in _carried(rows)]


def _groups(text: str) -> list[tuple[str, int, str]]:
    """``(slug, count, the group's text)`` for each list of the summary, in page order; the book's own questions
    under ``"own"``."""
    marks = [(m.start(), m.group(1), int(m.group(3))) for m in GROUP.finditer(text)]
    own = text.find("**The book's own questions** (")
    if own >= 0:
        marks.append((own, "own", int(re.match(r"\*\*The book's own questions\*\* \((\d+)", text[own:]).group(1))))
    marks.sort()
    return [(slug, n, text[at:(marks[k + 1][0] if k + 1 < len(marks) else len(text))])
            for k, (at, slug, n) in enumerate(marks)]


@pytest.mark.parametrize("chapter", list(BUILDERS))
def test_every_row_is_listed_once_under_its_outcome(chapter):
    """The summary lists the claims as bullets grouped by outcome (agree, partly, disagree, cannot tell, not
    comparable), then the book's own questions, then what was not reproduced: each group counts its rows, and each
    row's quantity (a per-task row's, without its task) is in its own outcome's group."""
    rows = BUILDERS[chapter]()
    text = verdict.summary_markdown(rows, "")
    groups = _groups(text)
    order = ["agrees", "partly", "disagrees", "inconclusive", "not-comparable", "own", "not-reproduced"]
    slugs = [g[0] for g in groups]
    assert slugs == sorted(slugs, key=order.index), slugs
    kinds = {verdict.CLAIM: None, verdict.OWN: "own", verdict.NOT_REPRODUCED: "not-reproduced"}
    expected: dict[str, list] = {}
    for r in rows:
        expected.setdefault(kinds[r.kind] or verdict.OUTCOME_SLUGS[r.verdict], []).append(r)
    assert {g[0]: g[1] for g in groups} == {k: len(v) for k, v in expected.items()}
    for slug, _, block in groups:
        for r in expected[slug]:
            quantity = r.quantity.split(": ", 1)[-1] if re.match(r"^[^\s:,]{1,12}: ", r.quantity) else r.quantity
            assert quantity in block, (slug, r.quantity)
            assert str(r.paper) in block and str(r.ours) in block if r.kind != verdict.NOT_REPRODUCED else True
            others = [b for s, _, b in groups if s != slug and s not in ("own", "not-reproduced")]
            assert r.kind != verdict.CLAIM or not any(f"- {r.quantity}:" in b for b in others)
    lead = text.split("\n\n")[0]
    assert lead.startswith("**What this run found.**") and "\n- " not in lead  # the counts lead, then the lists


def test_the_summary_groups_bullets_by_outcome():
    """Regression: the closing summary was one paragraph (372-1,013 words on the quick book's chapters 1-4)."""
    E = verdict.Estimate
    rows = [verdict.row("§1", "share", paper=0.5, ours=E(0.5, 0.49, 0.51, 100), rule=verdict.Within(0.05, 0.1)),
            verdict.row("§1", "gap", paper=0.5, ours=E(0.9, 0.89, 0.91, 100), rule=verdict.Within(0.05, 0.1)),
            verdict.row("§2", "MRPC: peak", paper=0.5, ours=E(0.5, 0.2, 0.8, 100), rule=verdict.Within(0.05, 0.1)),
            verdict.row("§2", "RTE: peak", paper=0.5, ours=E(0.5, 0.1, 0.9, 100), rule=verdict.Within(0.05, 0.1))]
    text = verdict.summary_markdown(rows, "Setting.")
    assert text.split("\n\n")[0].endswith("1 disagrees. Setting.")
    agree, disagree, undecided = (g[2] for g in _groups(text))
    assert "(1):\n\n- share: paper 0.5; this run 0.5 [0.49, 0.51]\n\n" in agree and "gap" not in agree
    assert "- gap: paper 0.5; this run 0.9 [0.89, 0.91]" in disagree
    # one quantity per task, alike in outcome and paper: one bullet naming each task
    assert "- peak: paper 0.5; this run MRPC 0.5 [0.2, 0.8] (" in undecided and "; RTE 0.5 [0.1, 0.9] (" in undecided
