"""Calibration of the book's seed rule in chapters 6 and 7's shapes: seeds and dev/test items in one interval.

Every seed of a classifier is scored on the same examples, so the examples' sampling error is shared by the seeds
and the spread between seeds does not contain it. Each test simulates seeds x items data (the items drawn afresh
from a population in every simulation and shared by the seeds; a seed effect on top), builds each run's estimate
the way the rows do (:func:`attnbook.studies.niven_kao.paper.run_estimate`, the exact interval over 444 test items;
:func:`attnbook.studies.michel.paper.mean_head_effect`, a bootstrap over 160 dev examples with the resolution floor),
combines the seeds with the real functions (:func:`attnbook.studies.niven_kao.paper.seed_estimate`,
:func:`attnbook.studies.michel.runs.across_seeds`), and counts how often the 95% interval covers the true mean over
seeds and items. The old rule (Student's t over the three seed values only) is run on the same data: it undercovers,
which is the regression these tests guard against. A last test runs an ARCT accuracy row's equivalence rule on the
combined estimate with the truth just outside its agreement band: "agrees" must stay at or below 5%.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from attnbook import stats, verdict
from attnbook.studies.heads_off.effects import resolution
from attnbook.studies.michel import paper as michel
from attnbook.studies.michel import runs as michel_runs
from attnbook.studies.niven_kao import paper as nk

N_SIMS = 400
#: the lower bound a 95% interval's simulated coverage must reach: 95% less two simulation standard errors
FLOOR = 0.95 - 2 * math.sqrt(0.05 * 0.95 / N_SIMS)


# ---- ARCT (chapter 7): 444 test items, 3 seeds, true accuracy 0.55, seed SD about 0.02 -----------------------------

ARCT_ITEMS, SEEDS = 444, 3
#: item kinds: answered right by almost every seed, by almost none, or a coin that the seed tilts
EASY, HARD, COIN = 0.99, 0.01, 0.5
P_COIN = 0.15
P_EASY = (0.55 - P_COIN * COIN - (1 - P_COIN) * HARD) / (EASY - HARD)
P_HARD = 1 - P_COIN - P_EASY
#: the seed effect on a coin item; a seed's accuracy then moves by P_COIN x this: SD 0.02
COIN_TILT_SD = 0.02 / P_COIN
TRUE_ACCURACY = P_EASY * EASY + P_HARD * HARD + P_COIN * COIN  # the mean over seeds (tilts average 0) and items


def arct_accuracies(rng: np.random.Generator, n_sims: int = N_SIMS) -> np.ndarray:
    """``[simulation, seed]`` test accuracies: each simulation draws 444 items (shared by its seeds) and each seed a
    tilt of the coin items; a seed gets an item right with the item's probability."""
    kind = rng.choice(3, size=(n_sims, 1, ARCT_ITEMS), p=[P_EASY, P_HARD, P_COIN])
    tilt = rng.normal(0.0, COIN_TILT_SD, size=(n_sims, SEEDS, 1))
    p = np.where(kind == 0, EASY, np.where(kind == 1, HARD, COIN + tilt))
    return (rng.random((n_sims, SEEDS, ARCT_ITEMS)) < p).mean(axis=2)


def test_arct_shapes_the_seed_rule_covers_the_true_mean_and_the_old_rule_does_not():
    assert TRUE_ACCURACY == pytest.approx(0.55) and 0 < P_HARD < P_EASY
    acc = arct_accuracies(np.random.default_rng(7))
    assert acc.std(axis=1, ddof=1).mean() == pytest.approx(0.024, abs=0.006)  # seeds differ by about 0.02 (+ items)
    new = [nk.seed_estimate(list(a), ARCT_ITEMS) for a in acc]  # each run's exact interval, then the seed rule
    old = [stats.mean_interval(list(a)) for a in acc]  # Student's t over the three seed values only
    covered = lambda ests: float(np.mean([e.low <= TRUE_ACCURACY <= e.high for e in ests]))  # noqa: E731
    assert covered(new) >= FLOOR, covered(new)
    assert covered(old) < 0.90, covered(old)  # regression: the shared test items' error was left out
    assert all(e.item_var > 0 and e.df > SEEDS - 1 for e in new)


def test_arct_shapes_an_accuracy_row_does_not_agree_when_the_truth_is_just_outside_its_band():
    """The equivalence rule (:class:`attnbook.verdict.Within`) on the combined estimate, with the truth just outside
    ±agree of the paper's value: "agrees" at most 5% (+ 2 simulation SE). Run for the chapter's own BoV rule (its
    band, the paper's ±0.009, is far narrower than three seeds on 444 items can show: it never agrees) and for a band
    wide enough to be reached (±0.06), where the bound is tested in earnest; the power at the paper's value is
    reported for the latter."""
    rng = np.random.default_rng(11)
    constant = 230 / 444  # ARCT's test file: the constant predictor
    bov = nk.accuracy_rule(0.02, ARCT_ITEMS, paper_margin=0.046)
    wide = verdict.Within(0.06, 0.12, unit="in accuracy", signed=True)
    bound = 0.05 + 2 * math.sqrt(0.05 * 0.95 / N_SIMS)
    acc = arct_accuracies(rng)  # the truth: 0.55
    margins = [nk.over_constant(nk.seed_estimate(list(a), ARCT_ITEMS), constant) for a in acc]
    truth = TRUE_ACCURACY - constant
    for rule in (bov, wide):
        for side in (1, -1):
            paper = truth + side * 1.01 * rule.agree  # the truth sits just outside the paper's agreement band
            agree = np.mean([verdict.judge(rule, paper, m) == verdict.AGREES for m in margins])
            assert agree <= bound, (rule.agree, side, agree)
    power = np.mean([verdict.judge(wide, truth, m) == verdict.AGREES for m in margins])
    assert 0.0 < power < 1.0  # reachable, not certain: about 0.2 at ±0.06 on three seeds (reported)


# ---- chapter 6: about 160 dev examples, 3 seeds, the mean change when a head is masked -------------------------

DEV, RESAMPLES = 160, 200
#: items a masked head makes wrong in most seeds (shared), that it makes right in most seeds, and the rest, which a
#: seed flips at its own small rate
P_LOSE, P_GAIN, LOSE_SURE = 0.06, 0.015, 0.9
FLIP_MEAN, FLIP_SD = 0.01, 0.004


def michel_truth(p_lose: float = P_LOSE, p_gain: float = P_GAIN, flip_mean: float = FLIP_MEAN,
                 flip_sd: float = FLIP_SD) -> float:
    """The mean change in points over seeds and items: sure losses and gains, plus every seed's own flips (its rate
    drawn with mean ``flip_mean``, cut at 0, integrated numerically)."""
    z = np.linspace(-8, 8, 160001)
    rate = np.maximum(flip_mean + flip_sd * z, 0.0)
    expected_rate = float(np.sum(rate * np.exp(-z ** 2 / 2)) / np.sum(np.exp(-z ** 2 / 2)))
    stable = 1 - p_lose - p_gain
    return 100.0 * (p_gain * LOSE_SURE - p_lose * LOSE_SURE - stable * expected_rate)


def michel_runs_of(rng: np.random.Generator, n_sims: int = N_SIMS, dev: int = DEV, p_lose: float = P_LOSE,
                   p_gain: float = P_GAIN, flip_mean: float = FLIP_MEAN, flip_sd: float = FLIP_SD
                   ) -> list[list[SimpleNamespace]]:
    """Per simulation, three seeds' runs as :func:`attnbook.studies.michel.paper.mean_head_effect` reads them: the
    paired change of every dev example (-1, 0, +1, x 100 / n points), its bootstrap draws over the examples."""
    kind = rng.choice(3, size=(n_sims, 1, dev), p=[p_lose, p_gain, 1 - p_lose - p_gain])
    rate = np.maximum(flip_mean + flip_sd * rng.standard_normal((n_sims, SEEDS, 1)), 0.0)
    u = rng.random((n_sims, SEEDS, dev))
    sure, flipped = (u < LOSE_SURE).astype(float), (u < rate).astype(float)
    change = np.where(kind == 0, -sure, np.where(kind == 1, sure, -flipped))
    draws = np.empty((n_sims, SEEDS, RESAMPLES))
    for s in range(n_sims):  # the bootstrap over examples, one simulation at a time (bounded memory)
        idx = rng.integers(0, dev, size=(RESAMPLES, dev))
        draws[s] = 100.0 * change[s][:, idx].mean(axis=2)
    return [[SimpleNamespace(effect_draws=draws[s, k].reshape(RESAMPLES, 1, 1),
                             ablation=SimpleNamespace(delta=np.array([[100.0 * change[s, k].mean()]]),
                                                      gold=np.zeros(dev)))
             for k in range(SEEDS)] for s in range(n_sims)]


def test_michel_shapes_the_seed_rule_with_the_resolution_floor_covers_the_true_mean():
    truth = michel_truth()
    sims = michel_runs_of(np.random.default_rng(3))
    per_seed = [[michel.mean_head_effect(r) for r in runs] for runs in sims]
    floor = resolution(DEV)  # about ±2.3 points on 160 examples
    assert all(e.high - e.value >= floor - 1e-9 and e.value - e.low >= floor - 1e-9 for ests in per_seed for e in ests)
    new = [michel_runs.across_seeds(ests) for ests in per_seed]
    old = [stats.mean_interval([e.value for e in ests]) for ests in per_seed]
    covered = lambda ests: float(np.mean([e.low <= truth <= e.high for e in ests]))  # noqa: E731
    assert covered(new) >= FLOOR, covered(new)
    assert covered(old) < 0.90, covered(old)  # regression: t over the seeds dropped the shared examples and the floor
    assert np.median([e.high - e.low for e in new]) >= 2 * floor * 0.9


def test_michel_shapes_no_effect_does_not_agree_when_the_truth_is_just_beyond_the_tolerance():
    """§3.2's "no effect" row (:class:`attnbook.verdict.NoEffect` at the chapter's 1-point tolerance) on the seed
    rule's estimate, with the true mean change 1.01 points, just beyond it: "agrees" at most 5% (+ 2 simulation SE).
    On 160 dev examples the resolution floor alone (±2.3 points) keeps it from ever agreeing; on the full SST-2 dev
    set (872 examples) the bound is tested in earnest (measured: about 5% over 800 simulations, above the 2.5% an
    equivalence test aims at, because a bootstrap over a handful of changed examples is skewed: a single run's
    interval misses above the truth about 6% of the time; three seeds do not make it worse), and the power at no
    effect at all is reported."""
    rule = verdict.NoEffect(1.0)
    bound = 0.05 + 2 * math.sqrt(0.05 * 0.95 / 200)
    p_lose = 1.01 / (100 * LOSE_SURE)  # the only changes: items a masked head makes wrong in most seeds
    assert michel_truth(p_lose, 0.0, 0.0, 0.0) == pytest.approx(-1.01)
    for dev in (DEV, 872):
        sims = michel_runs_of(np.random.default_rng(5), 200, dev, p_lose, 0.0, 0.0, 0.0)
        combined = [michel_runs.across_seeds([michel.mean_head_effect(r) for r in runs]) for runs in sims]
        agree = np.mean([verdict.judge(rule, 0.0, e) == verdict.AGREES for e in combined])
        assert agree <= bound, (dev, agree)
    none = michel_runs_of(np.random.default_rng(6), 200, 872, 0.0, 0.0, 0.002, 0.0)  # a few flips, no shared effect
    power = np.mean([verdict.judge(rule, 0.0, michel_runs.across_seeds([michel.mean_head_effect(r) for r in runs]))
                     == verdict.AGREES for runs in none])
    assert power > 0.5  # reported: near no effect, 872 examples and 3 seeds mostly show it
