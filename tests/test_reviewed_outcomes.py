"""Reviewed outcomes (issue 32): every row of chapters 4, 5, 6 and 8, read back from the chapter's results file, has
the outcome its rule gives on the numbers the file stores. No outcome is asserted by hand: the test rebuilds the rule
from the row (``rule_spec``), checks it is the rule the row states in words and one the chapter uses, and judges the
stored estimate again (``value``, ``low``, ``high``, ``n``) against the stored paper value.

The rows come from the chapters' own row functions on constructed measurements (:mod:`chapter_rows`);
``tests/test_book.py`` reviews the smoke book's own results files the same way.
"""
from __future__ import annotations

import json
import re

import pytest

from attnbook import verdict
from attnbook.chapters.results import comparisons_of
from attnbook.stats import Estimate
from chapter_rows import BUILDERS, save

CHAPTERS = list(BUILDERS)


def _num(x):
    return float(x) if isinstance(x, str) and x in ("nan", "inf", "-inf") else x


def _rules_of(chapter: str) -> set[type]:
    """The rule classes a chapter's rows may use (its modules' rules; every chapter may say not comparable)."""
    own = {"04_kovaleva_taxonomy": {verdict.Within, verdict.Beyond, verdict.Holds},
           "05_kovaleva_disabling": {verdict.Within, verdict.Beyond, verdict.NoEffect, verdict.Cases, verdict.Holds},
           "06_michel_pruning": {verdict.Within, verdict.Beyond, verdict.NoEffect, verdict.Cases},
           "08_head_atlas": {verdict.Beyond, verdict.Rejects, verdict.NoEffect}}[chapter]
    return own | {verdict.NotComparable}


def review(chapter: str, results: dict) -> list[verdict.Comparison]:
    """Judge every stored row of ``results`` again by its rule; return the rows (assertion errors name the row)."""
    rows = comparisons_of(results)
    assert rows, f"{chapter}: no rows"
    for r in rows:
        assert r.rule_spec, f"{r.quantity}: the row does not say which rule judged it"
        rule = verdict.rule_from_spec(r.rule_spec)
        assert rule.words == r.rule and type(rule) in _rules_of(chapter), r.quantity
        est = Estimate(float(_num(r.value)), _num(r.low), _num(r.high), r.n, r.unit)
        again = verdict.judge(rule, _num(r.paper if r.paper_value is None else r.paper_value), est)
        assert again == r.verdict, f"{r.experiment}, {r.quantity}: stored {r.verdict}, its rule gives {again}"
        if r.verdict == verdict.INCONCLUSIVE and r.kind == verdict.CLAIM:
            assert re.search(r"\d", r.detectable), f"{r.quantity}: undecided without what its sample could detect"
        if r.verdict == verdict.NOT_COMPARABLE:
            assert r.reason, f"{r.quantity}: not comparable without a reason"
        if r.kind == verdict.NOT_REPRODUCED:
            assert r.verdict == verdict.NOT_COMPARABLE and r.experiment.startswith(("§", "Table")), r.quantity
    return rows


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_stored_outcome_is_its_rule_on_its_stored_numbers(chapter, tmp_path):
    path = save(tmp_path, chapter, BUILDERS[chapter]())
    rows = review(chapter, json.loads(path.read_text()))
    kinds = {r.kind for r in rows}
    if chapter == "08_head_atlas":
        assert kinds == {verdict.OWN}  # no paper measured these: none is counted as a claim
    else:
        assert verdict.CLAIM in kinds
    if chapter in ("04_kovaleva_taxonomy", "06_michel_pruning"):  # what the data here cannot run is listed apart
        assert verdict.NOT_REPRODUCED in kinds
    assert len({r.verdict for r in rows}) >= 3  # the constructed inputs exercise the rules, not one outcome


def test_a_tampered_outcome_is_caught(tmp_path):
    """The review can fail: a stored outcome that its rule does not give is named."""
    path = save(tmp_path, "05_kovaleva_disabling", BUILDERS["05_kovaleva_disabling"]())
    data = json.loads(path.read_text())
    row = next(r for r in data["comparisons"] if r["verdict"] == verdict.INCONCLUSIVE)
    row["verdict"] = verdict.AGREES
    with pytest.raises(AssertionError, match="stored agrees, its rule gives inconclusive"):
        review("05_kovaleva_disabling", data)
