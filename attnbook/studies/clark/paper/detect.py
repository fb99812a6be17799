"""How much a row of chapters 1-3 could tell: the numbers its rule compared, and what an undecided row's sample could
detect (issue 32).

Every judged row's note quotes what its rule compared (:func:`compared`, :func:`holds_compared`), so a reader (and
``tests/test_rows32_reviewed.py``) can judge the row again from the results file. A row the data leave
``inconclusive`` states the smallest effect its sample could detect at 95% and the sample that would decide it
(:func:`bootstrap_detectable` for an interval over segments, sentences, documents or groups of segments;
:func:`holds_detectable` for a claim checked resample by resample), filled in by :func:`with_detectable`. The sample
sizes assume what a bootstrap interval does for a mean or a ratio of sums: its half-width shrinks as one over the
square root of the number of units, this run's estimate staying where it is. Nothing here measures.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from attnbook import verdict
from attnbook.stats import Estimate
from attnbook.verdict import Comparison

#: the share of bootstrap resamples that decides a :class:`attnbook.verdict.Holds` row (both sides), as a normal z
_Z975 = 1.959964


#: the narrowest shrink :func:`deciding_scale` tries: an estimate on a rule's bound is decided only by a zero-width
#: interval (:class:`attnbook.verdict.Beyond` counts one ending on its threshold as outside), which no sample gives
_NARROWEST = 1e-9


def deciding_scale(rule: verdict.Rule, paper_value, est: Estimate) -> float | None:
    """The largest factor ``s <= 1`` by which ``est``'s 95% interval, shrunk about the estimate, is decided by ``rule``
    (``1`` when it already is); ``None`` when not even an interval a billionth as wide is (the estimate sits on
    one of the rule's bounds: only a sample without end would decide it)."""
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


def _about(n: float) -> str:
    """A sample size as a reader reads it: two significant digits from 100 on (``2963 -> "3,000"``)."""
    if not math.isfinite(n) or n > 1e7:
        return "more than 10 million"
    n = math.ceil(n)
    return f"{n:,}" if n < 100 else f"{int(round(n, 1 - int(math.log10(n)))):,}"


def bootstrap_detectable(rule: verdict.Rule, paper_value, est: Estimate, units: str = "") -> str:
    """What an undecided row's bootstrap interval over ``est.n`` units could detect: its half-width (an effect of about
    that size is the smallest the sample could show at 95%) and how many units would decide the rule were the estimate
    to stay where it is (the half-width shrinking as one over the square root of the units). ``units``: the unit of
    the quantity (``" points"``)."""
    lo, hi = est.bounds
    half = (hi - lo) / 2
    text = f"±{half:.2g}{units}: the half-width of the 95% interval over {est.n:,} {est.unit}"
    s = deciding_scale(rule, paper_value, est)
    if s is None:
        return text + "; the estimate sits on the rule's bound, so no sample would decide it"
    return (text + f"; the rule decides at about ±{s * half:.2g}{units}, which takes about {_about(est.n / s ** 2)} "
                   f"{est.unit} if the estimate stays at {est.value:.3g}")


def holds_detectable(holds: np.ndarray, n: int, unit: str) -> str:
    """What an undecided :class:`attnbook.verdict.Holds` row could detect: the share of resamples in which the claim
    holds (it needs 97.5% to agree, 2.5% to disagree) and, reading that share as a normal margin that shrinks as one
    over the square root of the units, about how many units would decide it."""
    holds = np.asarray(holds, dtype=bool).ravel()
    k, total = int(holds.sum()), int(holds.size)
    text = (f"the claim holds in {k} of {total} resamples of {n:,} {unit}; deciding takes at least 97.5% of them "
            "(agrees) or at most 2.5% (disagrees)")
    p = min(max(k / total, 0.5 / total), 1 - 0.5 / total)
    from scipy.stats import norm

    z = float(norm.ppf(p))
    if abs(z) < 0.05:
        return text + ": an even split, which no sample size decides"
    return text + f": about {_about(n * (_Z975 / abs(z)) ** 2)} {unit} if its margin shrinks as one over their square root"


def compared(est: Estimate, paper_value=None) -> str:
    """The numbers a row's rule compared, as its note quotes them: ``"compared: paper 41.7; here 31.02 [28.71,
    33.29]"`` (the paper's value only for a rule that reads it)."""
    here = f"{est.value:.4g}" + (f" [{est.low:.4g}, {est.high:.4g}]" if est.has_interval else "")
    return "compared: " + (f"paper {float(paper_value):.4g}; " if paper_value is not None else "") + f"here {here}"


def holds_compared(holds: np.ndarray) -> str:
    """What a :class:`attnbook.verdict.Holds` row compared: ``"compared: holds in 1949 of 2000 resamples"``."""
    holds = np.asarray(holds, dtype=bool).ravel()
    return f"compared: holds in {int(holds.sum())} of {int(holds.size)} resamples"


def with_detectable(row: Comparison, text: Callable[[], str]) -> Comparison:
    """``row`` with ``detectable`` set to ``text()`` when its rule left it inconclusive (else unchanged)."""
    return row.replace(detectable=text()) if row.verdict == verdict.INCONCLUSIVE else row


def _reads_paper(rule: verdict.Rule) -> bool:
    return isinstance(rule, (verdict.Within, verdict.Margin))


def interval_row(experiment: str, quantity: str, *, paper, ours, rule: verdict.Rule, estimate: Estimate | None = None,
                 paper_value=None, note: str = "", units: str = "", fmt: str = ".3g",
                 kind: str = verdict.CLAIM) -> Comparison:
    """:func:`attnbook.verdict.row` for an estimate with a bootstrap interval: its note ends with what the rule
    compared (:func:`compared`) and, when the rule leaves it inconclusive, ``detectable`` says what the sample could
    detect (:func:`bootstrap_detectable`, in ``units``)."""
    est = estimate if estimate is not None else ours
    judged = paper if paper_value is None else paper_value
    quote = compared(est, judged if _reads_paper(rule) else None)
    r = verdict.row(experiment, quantity, paper=paper, ours=ours, rule=rule, estimate=estimate,
                    paper_value=paper_value, note=f"{note}; {quote}" if note else quote, fmt=fmt, kind=kind)
    return with_detectable(r, lambda: bootstrap_detectable(rule, judged, est, units))


def holds_row(experiment: str, quantity: str, *, paper, ours, claim: str, holds: np.ndarray, n: int, unit: str,
              note: str = "", kind: str = verdict.CLAIM) -> Comparison:
    """:func:`attnbook.verdict.row` for a claim checked in every bootstrap resample (``holds[resample]``, judged by
    :class:`attnbook.verdict.Holds` on the share where it holds): the note ends with the count
    (:func:`holds_compared`), and an undecided row says what would decide it (:func:`holds_detectable`)."""
    quote = holds_compared(holds)
    r = verdict.row(experiment, quantity, paper=paper, ours=ours,
                    estimate=Estimate(float(np.mean(holds)), None, None, int(n), unit), rule=verdict.Holds(claim),
                    note=f"{note}; {quote}" if note else quote, kind=kind)
    return with_detectable(r, lambda: holds_detectable(holds, n, unit))
