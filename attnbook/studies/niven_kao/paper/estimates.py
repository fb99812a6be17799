"""Niven & Kao (2019) beside this run: this run's numbers as the estimates the comparison rows judge.

* one run's test accuracy with its exact interval over the test items (:func:`run_estimate`);
* the mean over seeds by the book's seed rule, seeds and test items in one interval (:func:`seed_estimate`, a
  one-seed row widened by a pooled seed spread when given; :func:`combined_estimate` for a sum or a gap of two
  accuracies seed by seed), and the median over seeds, none with fewer than :data:`MEDIAN_MIN_SEEDS` seeds
  (:func:`median_estimate`);
* the cue counts as the census they are (:func:`cue_estimate`: exact, no interval) and whether the cue beats a coin
  (:func:`productivity_vs_chance`);
* the constant predictor's accuracy, the bar every accuracy is measured against (:func:`constant_accuracy`).

The rules, the tables and the rows that use them are in :mod:`attnbook.studies.niven_kao.paper.rows`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from attnbook import stats
from attnbook.data import arct
from attnbook.data.arct import ArctItem
from attnbook.stats import Estimate
from attnbook.studies.niven_kao import cues

#: the z of a two-sided 95% interval
_Z95 = 1.959963984540054


def run_estimate(accuracy: float, n_items: int, unit: str = "test items (one run)") -> Estimate:
    """One run's test accuracy with its exact (Clopper-Pearson) 95% interval over its ``n_items`` test items."""
    k = int(round(float(accuracy) * n_items))
    low, high = stats.proportion_interval(k, n_items)
    return Estimate(float(accuracy), low, high, int(n_items), unit)


def seed_estimate(values: Sequence[float], n_items: int, *, seed_sd: tuple[float, float] | None = None) -> Estimate:
    """Mean test accuracy over seeds with its 95% interval by the book's seed rule (:func:`attnbook.stats.over_seeds`:
    each seed's :func:`run_estimate`, exact over its ``n_items`` test items, enters with its interval, so the interval
    counts both the seed-to-seed spread and the test items' own error). One seed: its own interval over the test
    items, widened by ``seed_sd`` (a pooled seed spread measured on the table's other rows,
    :func:`attnbook.stats.pooled_seed_sd`) when given."""
    runs = [run_estimate(float(v), n_items) for v in values]
    return stats.over_seeds(runs, bounds=(0.0, 1.0), seed_sd=seed_sd if len(runs) == 1 else None)


def combined_estimate(a: Sequence[float], b: Sequence[float], n_a: int, n_b: int, sign: int = 1) -> Estimate:
    """The mean over seeds of ``a + sign * b`` (seed by seed: a sum of half accuracies, a gap between inputs),
    combined by the book's seed rule (:func:`attnbook.stats.over_seeds`, cut to the range the sum or difference of
    two accuracies can take). Each seed's own interval: ``± 1.96`` times the root sum of squares of the two runs'
    standard errors (each read from its exact interval), the error of a sum or difference of independent accuracies;
    the two sides here are positively related (two inputs on the same test items) or negatively (an item and its
    negated copy), so for the gap and the sum this errs on the wide side."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size != b.size or a.size == 0:
        raise ValueError(f"need the same number of seeds on both sides, got {a.size} and {b.size}")
    runs = [_one_run_combined(x, y, n_a, n_b, sign) for x, y in zip(a, b)]
    return stats.over_seeds(runs, bounds=(0.0, 2.0) if sign > 0 else (-1.0, 1.0))


def _one_run_combined(a: float, b: float, n_a: int, n_b: int, sign: int) -> Estimate:
    """One seed's ``a + sign * b`` with ``± 1.96 sqrt(se_a² + se_b²)``, each standard error read from that run's
    exact 95% interval."""
    se = [(hi - lo) / 2 / _Z95 for lo, hi in (stats.proportion_interval(int(round(x * n)), n) for x, n in
                                              ((a, n_a), (b, n_b)))]
    value, half = float(a + sign * b), _Z95 * math.hypot(*se)
    return Estimate(value, value - half, value + half, int(min(n_a, n_b)),
                    "test items (one run per side; standard errors combined)")


def cue_estimate(row: Mapping[str, Any], quantity: str) -> Estimate:
    """Productivity or coverage of a :func:`~attnbook.studies.niven_kao.paper.rows.not_cue_table` row, exactly: the
    counts are a census of the same files Niven & Kao counted (Table 2), so there is no sampling interval
    (``low``/``high`` are ``None``; ``n`` is the count the share is over: the items where the cue applies for
    productivity, all items of the split for coverage)."""
    k, n, unit = _cue_counts(row, quantity)
    if n == 0:
        return Estimate(float("nan"), None, None, 0, unit)
    return Estimate(k / n, None, None, n, unit)


def productivity_vs_chance(row: Mapping[str, Any]) -> Estimate:
    """The productivity of a :func:`~attnbook.studies.niven_kao.paper.rows.not_cue_table` row with its exact
    (Clopper-Pearson) 95% interval over the items the cue applies to: not the counted share's uncertainty
    (:func:`cue_estimate` is exact) but whether the cue points to the correct warrant more often than a coin would on
    such items (the interval against one half)."""
    k, n, _ = _cue_counts(row, "productivity")
    if n == 0:
        return Estimate(float("nan"), None, None, 0, "items where the cue applies")
    low, high = stats.proportion_interval(k, n)
    return Estimate(k / n, low, high, n, "items where the cue applies (exact)")


def _cue_counts(row: Mapping[str, Any], quantity: str) -> tuple[int, int, str]:
    applicable, items = int(row["applicability"]), int(row["items"])
    if quantity == "productivity":
        return int(row["productive"]), applicable, "items where the cue applies (census)"
    if quantity == "coverage":
        return applicable, items, "items (census)"
    raise ValueError(f"a cue row has productivity or coverage, not {quantity!r}")


#: the fewest seeds whose median has a 95% distribution-free interval (order statistics: ``1 - 2 / 2^k >= 0.95``)
MEDIAN_MIN_SEEDS = 6


def median_estimate(values: Sequence[float], n_items: int | None = None) -> Estimate:
    """Median test accuracy over seeds (the paper's Tables 1, 3 and 4 give it beside the mean and the maximum) with a
    95% interval: the distribution-free sign-test interval over the seeds (:func:`attnbook.stats.median_interval`),
    widened on each side, in quadrature, by the test items' own error (``1.96`` times the root of the runs' mean item
    variance over ``n_items``, each run's exact interval read as a standard error): the seeds share their test items,
    so the order statistics over seeds do not contain that error (the book's seed rule, for a median).
    With fewer than :data:`MEDIAN_MIN_SEEDS` seeds no order-statistic interval reaches 95% (three seeds' ``[min,
    max]`` covers 75%): the median comes without an interval and its row is not judged
    (:func:`~attnbook.studies.niven_kao.paper.rows._spread_rows`), rather than borrow the mean's interval, which holds
    for the median only when the seeds spread symmetrically. A median is what a handful of seeds can set beside the
    paper's 20: a maximum grows with the number of runs."""
    v = [float(x) for x in values]
    est = stats.median_interval(v, unit="seeds (median)")
    if len(v) < MEDIAN_MIN_SEEDS or not est.has_interval:
        return Estimate(est.value, None, None, len(v),
                        f"seeds (median; a 95% distribution-free interval needs at least {MEDIAN_MIN_SEEDS})")
    if not n_items:
        return est
    ses = [(r.high - r.low) / 2 / _Z95 for r in (run_estimate(x, n_items) for x in v)]
    item = _Z95 * math.sqrt(float(np.mean(np.square(ses))))
    m = est.value
    low, high = m - math.hypot(m - est.low, item), m + math.hypot(est.high - m, item)
    return Estimate(m, max(low, 0.0), min(high, 1.0), len(v), "seeds (median; sign test, with the test items' error)")


def constant_accuracy(train: Sequence[ArctItem], items: Sequence[ArctItem]) -> float:
    """Accuracy on ``items`` of the constant predictor: always the majority label of ``train``
    (:func:`attnbook.studies.niven_kao.cues.majority_baseline`); when ``train``'s labels are exactly balanced (as in
    ``train-swapped``) there is no majority, and the better of the two constant answers on ``items`` is the bar."""
    labels = arct.labels_of(train)
    if labels.size and 2 * int(labels.sum()) == labels.size:
        share = float(arct.labels_of(items).mean())
        return max(share, 1.0 - share)
    return cues.majority_baseline(train, items)
