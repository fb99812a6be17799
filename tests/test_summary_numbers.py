"""The closing summaries say nothing the rows do not carry: every number in a chapter's "What this run found" is a
value of one of its rows (the paper's, this run's, an interval bound, a sample size) or a count of its rows, and
every outcome word it counts is the rows' own."""
from __future__ import annotations

import re

import pytest

from attnbook import verdict
from chapter_rows import BUILDERS

NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> list[str]:
    return [m.group(0).replace("−", "-").replace(",", "") for m in NUMBER.finditer(text)]


def _carried(rows: list[verdict.Comparison]) -> set[str]:
    """Every number the rows' fields show (as the summary may print them) and every count of rows."""
    out: set[str] = set()
    for r in rows:
        for field in (r.experiment, r.quantity, str(r.paper), str(r.ours), r.detectable, r.note, r.rule, r.unit,
                      str(r.n)):
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
