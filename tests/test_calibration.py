"""Calibration of the verdict rules (attnbook.verdict): how often each rule decides wrongly when the truth sits on its
bound, and how often it decides rightly at the effect it is planned for.

Each simulation draws this run's estimate the way a sample gives it: normal about the truth with a known standard
error, its 95% interval ``estimate ± 1.96 SE`` (the bootstrap and exact intervals of the chapters are close to this
over hundreds of examples; the chapters' own shapes are simulated in ``test_calibration_<paper>.py``). A rule is
calibrated when a false "agrees" (or a false "disagrees") comes out in at most 5% of the simulations, within the
simulation's own error; and the sample :func:`attnbook.verdict.planned_sample` names decides it with about 80% power.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from attnbook import verdict
from attnbook.stats import Estimate

N_SIM = 4000
#: a rate measured on N_SIM simulations is within this of the truth 95% of the time (at a true 5%)
SLACK = 2 * math.sqrt(0.05 * 0.95 / N_SIM)


def simulate(rule: verdict.Rule, paper, truth: float, se: float, n: int = 400, seed: int = 0) -> dict[str, float]:
    """Share of each outcome of ``rule`` over ``N_SIM`` estimates drawn about ``truth`` with standard error ``se``."""
    rng = np.random.default_rng(seed)
    values = rng.normal(truth, se, N_SIM)
    half = verdict.Z975 * se
    got = [verdict.judge(rule, paper, Estimate(float(v), float(v - half), float(v + half), n, "examples"))
           for v in values]
    return {o: got.count(o) / N_SIM for o in verdict.OUTCOMES}


def old_within(agree: float, partly: float, paper: float, est: Estimate) -> str:
    """The rule before the equivalence test: the point estimate within ``agree`` and the interval within ``partly``."""
    lo, hi = est.bounds
    if lo - paper > partly or hi - paper < -partly:
        return verdict.DISAGREES
    if -partly <= lo - paper and hi - paper <= partly:
        return verdict.AGREES if abs(est.value - paper) <= agree else verdict.PARTLY
    return verdict.INCONCLUSIVE


@pytest.mark.parametrize("side", [1, -1])
def test_within_never_agrees_more_than_5_percent_when_the_truth_is_on_the_agree_bound(side):
    rule = verdict.Within(5.0, 10.0)
    rates = simulate(rule, 80.0, 80.0 + side * 5.0, se=1.5)
    assert rates[verdict.AGREES] <= 0.05 + SLACK


def test_the_old_within_agreed_half_the_time_on_the_agree_bound():
    """Regression evidence: the rule that let the point estimate decide agreed in about half the simulations whose
    truth lies on the agree bound (outside the claim's band as often as inside)."""
    rng = np.random.default_rng(1)
    values = rng.normal(85.0, 1.5, N_SIM)
    h = verdict.Z975 * 1.5
    old = [old_within(5.0, 10.0, 80.0, Estimate(float(v), float(v - h), float(v + h))) for v in values]
    assert old.count(verdict.AGREES) / N_SIM > 0.4


@pytest.mark.parametrize("side", [1, -1])
def test_within_never_disagrees_more_than_5_percent_when_the_truth_is_on_the_partly_bound(side):
    rates = simulate(verdict.Within(5.0, 10.0), 80.0, 80.0 + side * 10.0, se=2.0)
    assert rates[verdict.DISAGREES] <= 0.05 + SLACK


def test_a_signed_within_never_disagrees_on_the_sign_more_than_5_percent_at_zero():
    rates = simulate(verdict.Within(2.0, 4.0, signed=True), 3.0, 0.0, se=0.5)
    rule_only_sign = [verdict.judge(verdict.Within(2.0, 100.0, signed=True), 3.0, Estimate(v, v - 0.98, v + 0.98))
                      for v in np.random.default_rng(2).normal(0.0, 0.5, N_SIM)]
    assert rule_only_sign.count(verdict.DISAGREES) / N_SIM <= 0.05 + SLACK
    assert rates[verdict.AGREES] == 0.0


def test_within_has_80_percent_power_at_the_planned_sample():
    """:func:`attnbook.verdict.planned_sample` for a Within row: the sample that makes the interval fit inside
    ±agree with 80% power when the truth is the paper's value; simulated at that sample, it agrees about 80%."""
    rule, paper, n0, se0 = verdict.Within(3.0, 8.0), 70.0, 200, 2.0
    est = Estimate(66.0, 66.0 - verdict.Z975 * se0, 66.0 + verdict.Z975 * se0, n0, "examples")
    n = verdict.planned_sample(est, rule, paper)[1]
    se = se0 * math.sqrt(n0 / n)
    rates = simulate(rule, paper, paper, se=se)
    assert abs(rates[verdict.AGREES] - 0.80) <= 0.03


def test_no_effect_never_agrees_more_than_5_percent_at_the_effect_bound():
    rates = simulate(verdict.NoEffect(1.0), 0.0, 1.0, se=0.4)
    assert rates[verdict.AGREES] <= 0.05 + SLACK
    at_zero = simulate(verdict.NoEffect(1.0), 0.0, 0.0, se=0.4)
    assert at_zero[verdict.DISAGREES] == 0.0


def test_beyond_never_agrees_more_than_5_percent_at_its_threshold_and_has_80_percent_power_as_planned():
    rule = verdict.Beyond(0.0, above=True)
    assert simulate(rule, 3.2, 0.0, se=1.0)[verdict.AGREES] <= 0.05 + SLACK
    est = Estimate(1.0, 1.0 - verdict.Z975, 1.0 + verdict.Z975, 100, "examples")
    n = verdict.planned_sample(est, rule, 3.2)[1]
    rates = simulate(rule, 3.2, 3.2, se=math.sqrt(100 / n))
    assert abs(rates[verdict.AGREES] - 0.80) <= 0.03


def test_the_margin_rule_never_disagrees_more_than_5_percent_at_zero():
    rates = simulate(verdict.Margin(10.0), 20.0, 0.0, se=2.0)
    assert rates[verdict.DISAGREES] <= 0.05 + SLACK


def test_holds_decides_by_the_share_of_resamples_at_the_nominal_rate():
    """A claim checked in every bootstrap resample, with no true effect (its statistic centred on the claim's
    bound): "agrees" needs 97.5% of the resamples, which a centred bootstrap gives in about 2.5% of samples."""
    rng = np.random.default_rng(3)
    agrees = 0
    n_sim = 400
    for _ in range(n_sim):
        x = rng.normal(0.0, 1.0, 200)
        boot = rng.choice(x, size=(500, x.size)).mean(axis=1)
        share = float(np.mean(boot > 0))
        agrees += verdict.judge(verdict.Holds("mean > 0"), None, Estimate(share, None, None, 200)) == verdict.AGREES
    assert agrees / n_sim <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n_sim)
