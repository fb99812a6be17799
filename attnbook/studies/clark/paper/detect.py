"""How much a row of chapters 1-3 could tell: the numbers its rule compared, and what an undecided row's sample could
detect.

Every judged row's note quotes what its rule compared (:func:`compared`, :func:`holds_compared`), so a reader (and
``tests/test_rows32_reviewed.py``) can judge the row again from the results file. A row the data leave
``inconclusive`` says between which two outcomes it lies, the smallest effect its sample detects with 80% power and
the sample that would decide it were the truth the one its rule is planned for (:func:`bootstrap_detectable`, which
is :func:`attnbook.verdict.detectable_effect`, for an interval over segments, sentences, documents or groups of
segments; :func:`holds_detectable` for a claim checked resample by resample), filled in by :func:`with_detectable`.
Nothing here measures, and nothing here sizes a sample: :mod:`attnbook.verdict` does, for every chapter.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from attnbook import verdict
from attnbook.stats import Estimate
from attnbook.verdict import Comparison


def bootstrap_detectable(rule: verdict.Rule, paper_value, est: Estimate, units: str = "") -> str:
    """What an undecided row's bootstrap interval over ``est.n`` units could detect
    (:func:`attnbook.verdict.detectable_effect`): between which two outcomes it lies, the smallest effect its sample
    detects with 80% power (about 2.8 standard errors, in ``units``, e.g. ``" points"``) and how many units would
    decide the rule with 80% power were the truth the value the rule is planned for (the paper's, for a reproduced
    number). ``""`` for a decided row."""
    return verdict.detectable_effect(est, rule, paper_value, units)


def holds_detectable(holds: np.ndarray, n: int, unit: str) -> str:
    """What an undecided :class:`attnbook.verdict.Holds` row could detect: the share of resamples in which the claim
    holds (it needs 97.5% to agree, 2.5% to disagree) and, reading that share as a normal margin that shrinks as one
    over the square root of the units, about how many units would decide it with 80% power
    (:func:`attnbook.verdict.deciding_sample`)."""
    holds = np.asarray(holds, dtype=bool).ravel()
    k, total = int(holds.sum()), int(holds.size)
    rule = verdict.Holds("the claim")
    text = (f"the claim holds in {k} of {total} resamples of {n:,} {unit}; deciding takes at least "
            f"{1 - rule.alpha / 2:.1%} of them (agrees) or at most {rule.alpha / 2:.1%} (disagrees)")
    share = min(max(k / total, 0.5 / total), 1 - 0.5 / total)
    need = verdict.deciding_sample(Estimate(share, None, None, int(n), unit), rule)
    if need is None:
        return text
    if math.isinf(need):
        return text + ": an even split, which no sample size decides"
    return (text + f": about {verdict.rounded_count(need)} {unit} would decide it with 80% power were the share of "
                   "resamples to stay as it is")


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
