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


def test_within_is_an_equivalence_test_the_point_estimate_decides_nothing():
    """Regression: "agrees" needed only the estimate within ``agree`` and the interval within ``partly``, so
    4.9 [-4, 13.8] against a ±5 band around 0 agreed. Now the whole interval must lie within ±agree."""
    rule = verdict.Within(agree=5, partly=10)
    assert verdict.judge(rule, 0.0, Estimate(4.9, -4.0, 13.8)) == "inconclusive"  # old: agrees
    assert verdict.judge(rule, 0.0, Estimate(4.9, -4.0, 9.8)) == "partly agrees"  # old: agrees
    assert verdict.judge(rule, 0.0, Estimate(4.9, -4.9, 4.95)) == "agrees"
    assert verdict.judge(rule, 0.0, Estimate(5.1, 4.9, 5.3)) == "partly agrees"
    assert verdict.judge(rule, 0.0, Estimate(12.0, 10.5, 14.0)) == "disagrees"
    assert verdict.possible_outcomes(Estimate(4.9, -4.0, 13.8), rule, 0.0) == ["agrees", "partly agrees", "disagrees"]
    assert verdict.between_words(Estimate(9.0, 7.0, 11.0), rule, 0.0) == "between partly agrees and disagrees"


def test_a_signed_within_disagrees_when_the_interval_is_surely_on_the_wrong_side():
    """Regression: a Clark margin of -1.0 [-1.8, -0.2] against the paper's +8.2 "partly agreed" (the best head is
    surely worse than the baseline); with ``signed`` it disagrees."""
    old_style = verdict.Within(5.0, 10.0, unit="points")
    signed = verdict.Within(5.0, 10.0, unit="points", signed=True, source="x")
    est = Estimate(-1.0, -1.8, -0.2, 400)
    assert verdict.judge(old_style, 8.2, est) == "partly agrees"
    assert verdict.judge(signed, 8.2, est) == "disagrees"
    assert verdict.judge(signed, -3.0, Estimate(1.0, 0.2, 1.8)) == "disagrees"
    assert verdict.judge(signed, 8.2, Estimate(7.0, 5.0, 9.0)) == "agrees"
    assert "other side of 0 disagrees" in signed.words and "(tolerance: x)" in signed.words


def test_beyond_and_no_effect():
    up = verdict.Beyond(0.0)
    assert verdict.judge(up, "> 0", Estimate(1.2, 0.3, 2.0)) == "agrees"
    assert verdict.judge(up, "> 0", Estimate(-1.0, -2.0, -0.1)) == "disagrees"
    assert verdict.judge(up, "> 0", Estimate(0.5, -0.4, 1.4)) == "inconclusive"
    assert verdict.judge(up, "> 0", Estimate(2.0, 0.0, 4.0)) == "inconclusive"  # 0 is not above 0: not yet agreed


def test_an_interval_that_ends_on_the_threshold_excludes_the_claimed_side():
    """Chapter 7's BoV and BiLSTM, trained on the original data, score exactly 0.5 [0.5, 0.5] on the adversarial
    set in every seed: the paper's "below random" is contradicted, not undecided (the rule used to say
    inconclusive and call it undecidable at any number of seeds)."""
    below = verdict.Beyond(0.5, above=False)
    assert verdict.judge(below, "below 0.5", Estimate(0.5, 0.5, 0.5, 3)) == "disagrees"
    assert verdict.judge(below, "below 0.5", Estimate(0.52, 0.5, 0.55, 3)) == "disagrees"
    assert verdict.judge(below, "below 0.5", Estimate(0.49, 0.47, 0.5, 3)) == "inconclusive"
    assert verdict.judge(verdict.Beyond(0.0), "> 0", Estimate(-1.0, -2.0, 0.0)) == "disagrees"
    assert verdict.detectable_effect(Estimate(0.5, 0.5, 0.5, 3), below) == ""  # decided, so nothing to detect
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


def test_detectable_effect_reports_80_percent_power_and_the_sample_planned_for_the_tolerance():
    """Regression: the "smallest effect its sample could detect" was the 95% half-width (detected half the time), and
    the deciding sample held the observed estimate fixed (a post-hoc power calculation). Now: 2.8 standard errors,
    and the sample that decides the rule with 80% power were the truth the one the rule is planned for."""
    from attnbook import verdict as V

    # Michel's "no effect within ±1 point" on 160 dev examples with a ±2.8-point paired interval around 0
    est = Estimate(0.0, -2.8, 2.8, 160, "dev examples (paired)")
    se = 2.8 / V.Z975
    assert V.standard_error(est) == pytest.approx(se)
    assert V.power_effect(est) == pytest.approx((V.Z975 + V.Z80) * se)
    assert V.power_effect(est) == pytest.approx(1.43 * 2.8, rel=0.01)  # not the half-width
    # planned for no effect: the interval must fit inside ±1 with 80% power (two one-sided tests): SE <= 1 / 3.24
    need = 1.0 / (V.Z975 + V.Z90)
    assert V.deciding_sample(est, V.NoEffect(1.0)) == pytest.approx(160 * (se / need) ** 2)
    text = V.detectable_effect(est, V.NoEffect(1.0), units=" points")
    assert text.startswith("between agrees and disagrees; on 160 dev examples an effect of 4 points or more is "
                           "detected with 80% power; if the truth were no effect at all")
    assert "about 3,400 dev examples would decide it with 80% power" in text
    # a Beyond row with the paper's number: planned at the paper's distance from the threshold, not this estimate
    b = Estimate(0.5, -0.3, 1.3, 100)
    got = V.planned_sample(b, V.Beyond(0.0), 3.2)
    assert got[0] == got[1] == pytest.approx(100 * ((0.8 / V.Z975) / (3.2 / (V.Z975 + V.Z80))) ** 2)
    assert V.planned_sample(b, V.Beyond(0.0), "> 0") is None  # no size to plan for: only the power effect is said
    # over seeds: a range, since s from 3 seeds is uncertain; and no number of seeds when the items' error is larger
    seeds = Estimate(0.55, 0.50, 0.60, 3, "seeds", df=10.0, seed_var=0.0004, item_var=0.00002)
    lo, hi = V.planned_sample(seeds, V.Within(0.03, 0.08), 0.55)
    assert 2 <= lo < hi and hi / lo > 30
    wide_items = Estimate(0.55, 0.45, 0.65, 3, "seeds", df=10.0, seed_var=0.0004, item_var=0.002)
    assert V.planned_sample(wide_items, V.Within(0.03, 0.08), 0.55) == (float("inf"), float("inf"))
    assert "only a larger evaluation set could" in V.detectable_effect(wide_items, V.Within(0.03, 0.08), 0.6)
    # a claim checked in bootstrap resamples: the share's normal z, at 80% power
    held = V.detectable_effect(Estimate(0.8, None, None, 200, "inputs (share of bootstrap resamples)"), V.Holds("c"))
    assert held.startswith("the claim holds in 80% of the bootstrap resamples on 200 inputs") and "2,200 inputs" in held
    assert V.detectable_effect(Estimate(2.0, 1.0, 3.0, 50), V.Beyond(0.0)) == ""  # decided
    assert V.detectable_effect(Estimate(1, None, 3, 4), V.Cases()) == ""  # its row says it, case by case
    # a row made by verdict.row carries it when undecided, and only then
    assert V.row("§1", "q", paper=0.0, ours=est, rule=V.NoEffect(1.0)).detectable == V.detectable_effect(
        est, V.NoEffect(1.0), 0.0)
    assert V.row("§1", "q", paper=0.0, ours=Estimate(0.1, -0.2, 0.3, 900), rule=V.NoEffect(1.0)).detectable == ""
    assert V.rounded_count(2963.2) == "3,000" and V.rounded_count(42.1) == "43"


def test_deciding_scale_has_one_home():
    """The shrink factor that decides a row is defined once in the package, in attnbook/verdict/power.py."""
    import pathlib
    import re

    root = pathlib.Path(verdict.__file__).parents[1]  # attnbook/, the whole package
    homes = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
             if re.search(r"^def deciding_scale\b", p.read_text(), re.M)]
    assert homes == ["verdict/power.py"]
    est = Estimate(0.5, -0.3, 1.3, 100)
    s = verdict.deciding_scale(verdict.Beyond(0.0), None, est)
    assert verdict.judge(verdict.Beyond(0.0), None, Estimate(0.5, 0.5 - s * 0.8 * 0.999, 0.5 + s * 0.8)) == "agrees"


def test_a_stored_row_is_judged_again_from_its_numbers():
    """The row keeps what its rule judged (the estimate's value, the paper's value, the rule as JSON), so its outcome
    can be recomputed from a results file, for every kind of rule."""
    import json

    from attnbook import verdict as V

    rows = [V.row("a", "q", paper=77.0, ours=Estimate(76.0, 74.0, 78.5, 100), rule=V.Within(3, 8)),
            V.row("b", "q", paper="32% to 61%", paper_value=0.465, ours=Estimate(0.9, 0.85, 0.95), rule=V.Within(0.2, 0.2)),
            V.row("c", "q", paper="yes", ours="yes (60% of resamples)", estimate=Estimate(0.6, None, None, 50),
                  rule=V.Holds("c")),
            V.row("d", "q", paper="all", ours="2 of 4", estimate=Estimate(2.0, None, 4.0, 4, "seeds"), rule=V.Cases()),
            V.row("e", "q", paper=1.0, ours="n/a", estimate=Estimate(float("nan")), rule=V.NotComparable("x"),
                  kind=V.NOT_REPRODUCED),
            V.row("f", "q", paper="no", ours="p 0.01", estimate=Estimate(0.01, None, None, 72), rule=V.Rejects("test"),
                  kind=V.OWN)]
    for r in rows:
        back = V.Comparison.from_dict(json.loads(json.dumps(r.as_dict()).replace("NaN", '"nan"')))
        assert back.rejudged() == r.verdict and V.rule_from_spec(back.rule_spec).words == r.rule
    assert [r.verdict for r in rows] == [V.AGREES, V.DISAGREES, V.INCONCLUSIVE, V.INCONCLUSIVE, V.NOT_COMPARABLE,
                                         V.AGREES]
    assert rows[4].reason == "x" and rows[5].outcome_words == "supported"
    assert V.judge(V.Rejects("test"), None, 0.2) == V.INCONCLUSIVE  # a test that does not reject cannot tell
    plain = V.Comparison("g", "q", 1, 2, V.DISAGREES, rule="r")  # a row without a spec keeps its verdict
    assert plain.rejudged() == V.DISAGREES


def test_the_summary_counts_the_papers_claims_and_lists_the_rest_apart():
    """Regression (issue 32): the closing summary counted every row, so the book's own questions and the experiments
    not reproduced inflated "not comparable" (old: "Of 4 comparisons, 1 agrees, 3 not comparable")."""
    from attnbook import verdict as V

    rows = [V.row("§4.2", "share", paper=0.4, ours=Estimate(0.41, 0.38, 0.44, 500), rule=V.Within(0.05, 0.1)),
            V.row("book", "seeds agree", paper="not reported", ours=Estimate(0.5, 0.3, 0.7, 3), rule=V.Beyond(0.0),
                  kind=V.OWN),
            V.row("book", "tasks agree", paper="not reported", ours=Estimate(0.1, -0.2, 0.4, 72, "heads"),
                  rule=V.Beyond(0.0), kind=V.OWN),
            V.row("§5 Fig. 4 (WMT)", "Enc-Dec most sensitive", paper="yes", ours="n/a",
                  estimate=Estimate(float("nan")), rule=V.NotComparable("needs a translation model"),
                  kind=V.NOT_REPRODUCED)]
    text = V.summary_markdown(rows, "Setting.")
    assert text.startswith("**What this run found.** Of 1 comparisons with the papers' claims, 1 agrees. Each row is "
                           "judged at 95%, so among these 1 judged claims about 0.1 would come out against the paper by "
                           "chance alone were every claim true; 0 disagree. Setting.")
    assert "not comparable" not in text
    assert ("**The book's own questions** (2, no paper's claim among them):\n\n"
            '- <span class="attnbook-outcome attnbook-outcome-supported">supported</span> seeds agree: paper not '
            "reported; this run 0.5 [0.3, 0.7]\n"
            '- <span class="attnbook-outcome attnbook-outcome-undecided">undecided</span> tasks agree: paper not '
            "reported; this run 0.1 [-0.2, 0.4] (between agrees and disagrees; on 72 heads an effect of 0.429 or more "
            "is detected with 80% power)") in text
    assert text.endswith('Not reproduced here</span></strong> (1)</summary>\n\n'
                         "- §5 Fig. 4 (WMT), Enc-Dec most sensitive (needs a translation model)\n\n</details>")
    claims_only = V.summary_markdown(rows[:1])
    assert claims_only.startswith("**What this run found.** Of 1 comparisons, 1 agrees. Each row")


def test_a_one_seed_row_with_a_borrowed_spread_is_planned_in_seeds():
    """Regression: a one-seed estimate that borrowed its table's seed spread was sized as if its unit were examples
    ("about 80 seed")."""
    from attnbook.stats import over_seeds

    one = Estimate(0.60, 0.56, 0.64, 444, "test items (one run)")
    est = over_seeds([one], seed_sd=(0.02, 6.0))
    lo, hi = verdict.planned_sample(est, verdict.Within(0.02, 0.05), 0.60)
    room = (0.02 / (verdict.Z975 + verdict.Z90)) ** 2 - est.item_var
    assert room < 0 and (lo, hi) == (float("inf"), float("inf"))
    narrow = over_seeds([Estimate(0.60, 0.595, 0.605, 444, "items")], seed_sd=(0.02, 6.0))
    lo, hi = verdict.planned_sample(narrow, verdict.Within(0.03, 0.05), 0.60)
    assert lo == hi == pytest.approx(0.02 ** 2 / ((0.03 / (verdict.Z975 + verdict.Z90)) ** 2 - narrow.item_var))
    assert "seeds would decide it" in verdict.detectable_effect(
        Estimate(0.62, 0.55, 0.69, 1, "seed (seed spread borrowed)", 30.0, 0.0009, 0.00001), verdict.Within(0.03, 0.05),
        0.60)


def test_the_summary_counts_outcomes_with_plural_verbs():
    """Regression: the closing summary read "5 agrees, 4 disagrees"."""
    rows = [verdict.row("§1", f"q{i}", paper=0.5, ours=Estimate(v, v - 0.01, v + 0.01, 100), rule=verdict.Within(0.05, 0.1))
            for i, v in enumerate([0.5, 0.51, 0.9])]
    text = verdict.summary_markdown(rows)
    assert "Of 3 comparisons, 2 agree, 1 disagrees." in text
