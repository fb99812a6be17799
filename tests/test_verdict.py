"""The one verdict rule (attnbook.verdict)."""
from __future__ import annotations

import pytest

from attnbook import verdict
from attnbook.stats import Estimate


def test_outcomes():
    assert verdict.OUTCOMES == ("agrees", "partly agrees", "disagrees", "inconclusive", "not comparable")
    assert verdict.check("inconclusive") == "inconclusive"
    with pytest.raises(ValueError):
        verdict.check("agree")


def test_within_uses_the_interval():
    rule = verdict.Within(agree=3, partly=8)
    assert verdict.judge(rule, 77.0, Estimate(76.0, 74.0, 78.5)) == "agrees"
    assert verdict.judge(rule, 77.0, Estimate(72.0, 70.0, 74.0)) == "partly agrees"
    assert verdict.judge(rule, 77.0, Estimate(60.0, 55.0, 65.0)) == "disagrees"
    assert verdict.judge(rule, 77.0, Estimate(70.0, 60.0, 80.0)) == "inconclusive"  # too wide to tell
    assert verdict.judge(rule, 77.0, 76.0) == "agrees"  # an exact number
    assert verdict.judge(rule, float("nan"), 76.0) == "not comparable"
    assert verdict.judge(verdict.Within(0.1, 0.25, relative=True), 3.89, Estimate(3.7, 3.6, 3.8)) == "agrees"


def test_beyond_and_no_effect():
    up = verdict.Beyond(0.0)
    assert verdict.judge(up, "> 0", Estimate(1.2, 0.3, 2.0)) == "agrees"
    assert verdict.judge(up, "> 0", Estimate(-1.0, -2.0, -0.1)) == "disagrees"
    assert verdict.judge(up, "> 0", Estimate(0.5, -0.4, 1.4)) == "inconclusive"
    assert verdict.judge(verdict.Beyond(0.0, strong=5.0), "large", Estimate(3.0, 1.0, 6.0)) == "partly agrees"
    down = verdict.Beyond(0.0, above=False, strong=-5.0)
    assert verdict.judge(down, "large loss", Estimate(-9.0, -12.0, -6.0)) == "agrees"
    none = verdict.NoEffect(effect=1.0)
    assert verdict.judge(none, "no change", Estimate(0.1, -0.5, 0.6)) == "agrees"
    assert verdict.judge(none, "no change", Estimate(0.1, -3.0, 3.0)) == "inconclusive"  # low power is not agreement
    assert verdict.judge(none, "no change", Estimate(-4.0, -6.0, -2.0)) == "disagrees"


def test_margin_holds_cases_and_not_comparable():
    m = verdict.Margin(big=10.0)
    assert verdict.judge(m, 42.6, Estimate(21.2, 15.0, 27.0)) == "agrees"
    assert verdict.judge(m, 42.6, Estimate(8.0, 3.0, 14.0)) == "partly agrees"
    assert verdict.judge(m, 42.6, Estimate(-5.0, -9.0, -1.0)) == "disagrees"
    assert verdict.judge(m, 2.5, Estimate(1.0, -2.0, 4.0)) == "inconclusive"
    h = verdict.Holds("the top target is [SEP]")
    assert verdict.judge(h, "[SEP]", 0.99) == "agrees" and verdict.judge(h, "[SEP]", 0.01) == "disagrees"
    assert verdict.judge(h, "[SEP]", 0.6) == "inconclusive"
    c = verdict.Cases()
    assert verdict.judge(c, "all", Estimate(4, n=4)) == "agrees" and verdict.judge(c, "all", Estimate(2, n=4)) == "partly agrees"
    assert verdict.judge(c, "all", Estimate(1, n=4)) == "disagrees" and verdict.judge(c, "all", Estimate(0, n=0)) == "not comparable"
    nc = verdict.NotComparable("another corpus")
    assert verdict.judge(nc, 1.0, 1.0) == "not comparable" and "another corpus" in nc.words
    for rule in (verdict.Within(3, 8), verdict.Beyond(0.0), verdict.NoEffect(1.0), m, h, c, nc):
        assert rule.words


def test_cases_with_undecided_cases():
    c = verdict.Cases()
    assert verdict.judge(c, "all", Estimate(3, None, 3, n=4)) == "partly agrees"
    assert verdict.judge(c, "all", Estimate(1, None, 4, n=4)) == "inconclusive"  # three cases could not tell
    assert verdict.judge(c, "all", Estimate(2, None, 4, n=4)) == "inconclusive"
    assert verdict.judge(c, "all", Estimate(0, None, 1, n=4)) == "disagrees"
    assert verdict.judge(c, "all", Estimate(4, None, 4, n=4)) == "agrees"


def test_rule_words_show_thresholds_rounded_for_reading():
    """Issue 21: a threshold computed as a fraction (0.91 / 3) read "0.303333" in chapter 4's table."""
    from attnbook.verdict import Beyond

    words = Beyond(0.91 / 3, above=True, what="Vertical share").words
    assert "0.3033" in words and "0.303333" not in words


def test_a_row_says_what_it_is_and_a_row_not_reproduced_has_no_outcome():
    from attnbook import verdict as V

    r = V.row("§4 Fig. 6", "share", paper=0.5, ours=0.52, rule=V.Within(0.05, 0.1))
    assert r.kind == V.CLAIM and r.outcome_words == V.AGREES and r.detectable == ""
    own = V.row("atlas", "q", paper=0.5, ours=0.52, rule=V.Within(0.05, 0.1), kind=V.OWN)
    assert own.outcome_words == "supported" and V.Comparison.from_dict(own.as_dict()) == own
    gone = V.row("Table 1 QQP", "F1", paper=0.87, ours=float("nan"), rule=V.NotComparable("no QQP training data"),
                 kind=V.NOT_REPRODUCED)
    assert gone.outcome_words == "not reproduced"
    with pytest.raises(ValueError, match="no outcome"):
        gone.replace(verdict=V.AGREES)
    with pytest.raises(ValueError, match="kind must be"):
        r.replace(kind="mine")
