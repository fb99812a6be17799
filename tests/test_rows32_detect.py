"""Issue 32: what an undecided row of chapters 1-3 and 7 could detect, and the numbers a row's note quotes.

The helpers are :mod:`attnbook.studies.clark.paper.detect` (bootstrap intervals over segments, sentences, documents,
and claims checked resample by resample, stated by :mod:`attnbook.verdict`, the one home of ``deciding_scale`` and of
the 80%-power sample sizes) and :mod:`attnbook.studies.niven_kao.paper.detect` (seeds); each sample size is checked
by the property that defines it, not by a number written by hand."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student

from attnbook import verdict
from attnbook.stats import Estimate
from attnbook.studies.clark.paper import detect as clark_detect
from attnbook.studies.niven_kao.paper import detect as nk_detect

ACCURACY = verdict.Within(0.03, 0.08, unit="in accuracy")
CASES = [
    (ACCURACY, 0.671, Estimate(0.60, 0.55, 0.65, 3, "seeds")),  # straddles 0.671 - 0.08
    (ACCURACY, 0.671, Estimate(0.66, 0.62, 0.70, 3, "seeds")),  # decided already: partly agrees
    (verdict.Within(5.0, 10.0, unit="points"), 41.7, Estimate(31.0, 28.7, 33.3, 1000, "sentences")),
    (verdict.Beyond(0.5, above=False), None, Estimate(0.49, 0.45, 0.53, 3, "seeds")),
    (verdict.Beyond(0.5, above=False), None, Estimate(0.5, 0.45, 0.55, 3, "seeds")),  # on the bound
    (verdict.Beyond(0.25, strong=0.5), None, Estimate(0.3, 0.2, 0.4, 40, "groups of segments")),
    (verdict.Within(0.1, 0.25, relative=True), 3.89, Estimate(3.0, 2.6, 3.4, 100, "segments")),
]


@pytest.mark.parametrize("rule,paper,est", CASES)
def test_deciding_scale_is_the_widest_interval_the_rule_decides(rule, paper, est):
    s = verdict.deciding_scale(rule, paper, est)
    v, (lo, hi) = est.value, est.bounds
    shrink = lambda f: Estimate(v, v - f * (v - lo), v + f * (hi - v))
    if s is None:  # the estimate sits on a bound: no interval around it with a width is decided, however narrow
        assert verdict.judge(rule, paper, shrink(1e-9)) == verdict.INCONCLUSIVE
        return
    assert verdict.judge(rule, paper, shrink(s)) != verdict.INCONCLUSIVE
    if s < 1:
        assert verdict.judge(rule, paper, shrink(min(1.0, s * 1.01))) == verdict.INCONCLUSIVE
    else:
        assert verdict.judge(rule, paper, est) != verdict.INCONCLUSIVE


def test_deciding_scale_has_one_home():
    """``deciding_scale`` is defined in :mod:`attnbook.verdict` only: chapters 1-3 (and every study) use it from
    there. Before, :mod:`attnbook.studies.clark.paper.detect` kept a copy (and a test kept the copies in step)."""
    package = Path(verdict.__file__).parents[1]  # attnbook/, the whole package
    homes = [p.relative_to(package).as_posix() for p in package.rglob("*.py")
             if re.search(r"^def deciding_scale\(", p.read_text(), re.M)]
    assert "verdict/power.py" in homes
    assert "studies/clark/paper/detect.py" not in homes and not hasattr(clark_detect, "deciding_scale")


def test_bootstrap_detectable_is_the_verdicts_80_percent_power_statement():
    """An undecided row over sentences says between which two outcomes it lies, the effect its sample detects with
    80% power (2.8 standard errors, not the 95% half-width, which is detected half the time) and the sentences that
    would decide it were the truth the paper's value (not this run's estimate)."""
    rule, paper, est = CASES[2]
    text = clark_detect.bootstrap_detectable(rule, paper, est, " points")
    assert text == verdict.detectable_effect(est, rule, paper, " points")
    assert text.startswith("between partly agrees and disagrees; on 1,000 sentences an effect of ")
    mde = verdict.power_effect(est)
    assert mde == pytest.approx((verdict.Z975 + verdict.Z80) * 2.3 / verdict.Z975)
    assert f"an effect of {mde:.3g} points or more is detected with 80% power" in text
    need = verdict.planned_sample(est, rule, paper)[1]
    assert (f"if the truth were the paper's 41.7 (agrees within ±5), about {verdict.rounded_count(need)} sentences"
            in text)
    # at that many sentences an interval centred on the paper's value fits the agree band with 80% power
    se = 2.3 / verdict.Z975 * math.sqrt(1000 / need)
    assert 5.0 == pytest.approx((verdict.Z975 + verdict.Z90) * se, rel=1e-6)
    assert clark_detect.bootstrap_detectable(rule, paper, CASES[1][2]) == ""  # a decided row says nothing


def test_holds_detectable_reads_the_share_of_resamples_as_a_normal_margin():
    holds = np.r_[np.ones(1800, bool), np.zeros(200, bool)]
    text = clark_detect.holds_detectable(holds, 40, "segments")
    assert text.startswith("the claim holds in 1800 of 2000 resamples of 40 segments")
    need = 40 * ((verdict.Z975 + verdict.Z80) / norm.ppf(0.9)) ** 2  # 80% power, as verdict.deciding_sample
    assert f"about {verdict.rounded_count(need)} segments would decide it with 80% power" in text
    even = clark_detect.holds_detectable(np.r_[np.ones(1000, bool), np.zeros(1000, bool)], 40, "segments")
    assert "an even split, which no sample size decides" in even


def test_seeds_needed_is_the_fewest_seeds_whose_t_interval_is_that_narrow():
    sd, target = 0.045, 0.03
    m = nk_detect.seeds_needed(sd, target)
    half = lambda k: student.ppf(0.975, k - 1) * sd / math.sqrt(k)
    assert half(m) <= target < half(m - 1)
    assert nk_detect.seeds_needed(sd, 1e-6, max_seeds=50) is None


def test_seed_detectable_is_the_verdicts_statement_over_seeds_and_items():
    """Regression: the text sized the seeds at this run's estimate and spread (a post-hoc power calculation) from a
    t interval over the seeds alone. Now it is :func:`attnbook.verdict.detectable_effect` of the seed rule's estimate
    (seeds and test items together), planned at the paper's value."""
    from attnbook.stats import over_seeds
    from attnbook.studies.niven_kao.paper import run_estimate

    # the quick recipe's three seeds (profiles/ch07.py): 0.543, 0.624, 0.550 against BERT Large's 0.671
    values = [0.543, 0.624, 0.550]
    est = over_seeds([run_estimate(v, 444) for v in values], bounds=(0.0, 1.0))
    assert verdict.judge(ACCURACY, 0.671, est) != verdict.AGREES
    text = nk_detect.seed_detectable(ACCURACY, 0.671, values, est)
    assert text == verdict.detectable_effect(est, ACCURACY, 0.671, units=" in accuracy") or \
        verdict.judge(ACCURACY, 0.671, est) != verdict.INCONCLUSIVE
    one = nk_detect.seed_detectable(ACCURACY, 0.671, [0.6], Estimate(0.6, 0.553, 0.645, 444, "test items"))
    assert "one run: its interval (±0.046) counts its 444 test items only" in one


def test_notes_quote_what_the_rule_compared():
    est = Estimate(31.0234, 28.7123, 33.2981, 1000, "sentences")
    assert clark_detect.compared(est, 41.7) == "compared: paper 41.7; here 31.02 [28.71, 33.3]"
    assert clark_detect.compared(est) == nk_detect.compared(est) == "compared: here 31.02 [28.71, 33.3]"
    assert clark_detect.holds_compared(np.array([1, 1, 0], bool)) == "compared: holds in 2 of 3 resamples"
    assert nk_detect.count_compared(Estimate(9, n=10), "items") == "compared: 9 of 10 items"


def test_with_detectable_fills_only_an_undecided_row():
    undecided = verdict.row("e", "q", paper=0.671, ours=CASES[0][2], rule=ACCURACY)
    decided = verdict.row("e", "q", paper=0.671, ours=CASES[1][2], rule=ACCURACY)
    assert clark_detect.with_detectable(undecided, lambda: "x").detectable == "x"
    assert clark_detect.with_detectable(decided, lambda: "x").detectable == decided.detectable
