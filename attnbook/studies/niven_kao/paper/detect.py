"""How much a row of chapter 7 could tell: the numbers its rule compared, and what an undecided row's sample could
detect (issue 32).

Every judged row's note quotes what its rule compared (:func:`compared`), so a reader (and
``tests/test_rows32_reviewed.py``) can judge it again from the results file. A row the data leave ``inconclusive``
says, in ``detectable``, the smallest effect its sample could detect at 95% and how many seeds would decide it at this
run's spread between seeds (:func:`seed_detectable`): ARCT's test set is fixed, so seeds are what a rerun can add.
Nothing here measures.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from attnbook import verdict
from attnbook.stats import Estimate

#: the most seeds :func:`seeds_needed` looks for
MAX_SEEDS = 10_000


#: the narrowest shrink :func:`deciding_scale` tries: an estimate on a rule's bound is decided only by a zero-width
#: interval (:class:`attnbook.verdict.Beyond` counts one ending on its threshold as outside), which no sample gives
_NARROWEST = 1e-9


def deciding_scale(rule: verdict.Rule, paper_value, est: Estimate) -> float | None:
    """The largest factor ``s <= 1`` by which ``est``'s 95% interval, shrunk about the estimate, is decided by ``rule``
    (``1`` when it already is); ``None`` when not even an interval a billionth as wide is (the estimate sits on
    one of the rule's bounds: only a sample without end would decide it).
    The same as :func:`attnbook.studies.clark.paper.detect.deciding_scale` (a study imports no other paper's study;
    ``tests/test_rows32_detect.py`` checks that the two agree)."""
    v = est.value
    lo, hi = est.bounds

    def decided(s: float) -> bool:
        shrunk = Estimate(v, v - s * (v - lo), v + s * (hi - v), est.n, est.unit)
        return verdict.judge(rule, paper_value, shrunk) != verdict.INCONCLUSIVE

    if decided(1.0):
        return 1.0
    if not decided(_NARROWEST):
        return None
    a, b = _NARROWEST, 1.0
    for _ in range(60):
        mid = (a + b) / 2
        a, b = (mid, b) if decided(mid) else (a, mid)
    return a


def seeds_needed(sd: float, half_width: float, max_seeds: int = MAX_SEEDS) -> int | None:
    """The fewest seeds whose Student's t 95% interval of a mean, at seed standard deviation ``sd``, is at most
    ``half_width`` wide on each side (``None`` beyond ``max_seeds``)."""
    from scipy.stats import t as student

    if sd <= 0:
        return 2
    for m in range(2, max_seeds + 1):
        if student.ppf(0.975, m - 1) * sd / math.sqrt(m) <= half_width:
            return m
    return None


def seed_detectable(rule: verdict.Rule, paper_value, values: Sequence[float], est: Estimate) -> str:
    """What an undecided row over seeds could detect: the half-width of its 95% interval (the smallest difference the
    seeds run could show) and, from this run's spread between the ``values`` (one per seed), how many seeds would
    decide ``rule`` were the estimate to stay where it is. One seed has no spread: its row says only its own exact
    interval over the test items, which no more items can narrow (it is the whole test set)."""
    v = np.asarray(values, dtype=np.float64)
    lo, hi = est.bounds
    if v.size < 2:
        return (f"±{(hi - lo) / 2:.3f}: one run's exact 95% interval over its {est.n:,} test items, the whole test "
                "set; only more seeds can narrow it, and one seed has no spread to size them by")
    from scipy.stats import t as student

    sd = float(v.std(ddof=1))
    half = float(student.ppf(0.975, v.size - 1) * sd / math.sqrt(v.size))
    text = f"±{half:.3f}: the half-width of the t interval over {v.size} seeds (seed SD {sd:.3f})"
    sym = Estimate(est.value, est.value - half, est.value + half, int(v.size), "seeds")
    s = deciding_scale(rule, paper_value, sym)
    if s is None:
        return text + "; the estimate sits on the rule's bound, so no number of seeds would decide it"
    m = seeds_needed(sd, s * half)
    many = f"about {m} seeds" if m is not None else f"more than {MAX_SEEDS:,} seeds"
    return text + f"; the rule decides at about ±{s * half:.3f}, which takes {many} at this spread"


def compared(est: Estimate, paper_value=None) -> str:
    """The numbers a row's rule compared, as its note quotes them: ``"compared: paper 0.671; here 0.5723 [0.4612,
    0.6834]"`` (the paper's value only for a rule that reads it). The same words as
    :func:`attnbook.studies.clark.paper.detect.compared`."""
    here = f"{est.value:.4g}" + (f" [{est.low:.4g}, {est.high:.4g}]" if est.has_interval else "")
    return "compared: " + (f"paper {float(paper_value):.4g}; " if paper_value is not None else "") + f"here {here}"


def count_compared(est: Estimate, what: str) -> str:
    """What a :class:`attnbook.verdict.Cases` row compared: ``"compared: 6360 of 6360 items"``."""
    return f"compared: {int(est.value)} of {int(est.n or 0)} {what}"
