"""The one verdict rule (attnbook.verdict)."""
from __future__ import annotations

import pytest

from attnbook import verdict


def test_outcomes():
    assert verdict.OUTCOMES == ("agrees", "partly agrees", "disagrees", "inconclusive", "not comparable")
    assert verdict.check("inconclusive") == "inconclusive"
    with pytest.raises(ValueError):
        verdict.check("agree")


def test_conditions():
    assert verdict.conditions(True) == "agrees" and verdict.conditions(False, True) == "partly agrees"
    assert verdict.conditions(False) == "disagrees" and verdict.conditions(True, False) == "agrees"


def test_closeness_thresholds_and_missing():
    assert verdict.closeness(0.86, 0.84, 0.05, 0.15) == "agrees"
    assert verdict.closeness(0.86, 0.75, 0.05, 0.15) == "partly agrees"
    assert verdict.closeness(0.86, 0.50, 0.05, 0.15) == "disagrees"
    assert verdict.closeness(0.86, float("nan"), 0.05, 0.15) == "not comparable"
    assert verdict.closeness(3.89, 3.6, 0.1, 0.25, relative=True) == "agrees"
    assert verdict.closeness(3.89, 3.0, 0.1, 0.25, relative=True) == "partly agrees"


def test_share():
    assert verdict.share(3, 3) == "agrees"
    assert verdict.share(1, 3) == "partly agrees"
    assert verdict.share(0, 3) == "disagrees"
    assert verdict.share(0, 0) == "not comparable"
    assert verdict.share(8, 10, agree=0.8, partly=0.5) == "agrees"
    assert verdict.share(5, 10, agree=0.8, partly=0.5) == "partly agrees"
    assert verdict.share(4, 10, agree=0.8, partly=0.5) == "disagrees"


@pytest.mark.parametrize(
    "paper, ours, outcome",
    [(42.6, 21.2, "agrees"), (42.6, 2.5, "partly agrees"), (4.0, -1.0, "disagrees"), (-4.0, -2.7, "agrees"),
     (-4.0, -12.0, "partly agrees"), (8.2, 11.5, "partly agrees"), (16.0, -3.0, "disagrees")],
)
def test_margin(paper, ours, outcome):
    assert verdict.margin(paper, ours, 10.0) == outcome
