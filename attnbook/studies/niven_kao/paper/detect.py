"""How much a row of chapter 7 could tell: the numbers its rule compared, and what an undecided row's sample could
detect.

Every judged row's note quotes what its rule compared (:func:`compared`), so a reader (and
``tests/test_rows32_reviewed.py``) can judge it again from the results file. A row the data leave ``inconclusive``
says, in ``detectable``, between which two outcomes it lies, the smallest effect its seeds and test items detect
with 80% power and how many seeds would decide it were the truth the paper's value
(:func:`seed_detectable`, the book's one statement of it: :func:`attnbook.verdict.detectable_effect`). ARCT's test
set is fixed, so seeds are what a rerun can add; when the test items' own error already exceeds what the rule needs,
the statement says that no number of seeds decides it. Nothing here measures.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from attnbook import verdict
from attnbook.stats import Estimate

#: the most seeds :func:`seeds_needed` looks for
MAX_SEEDS = 10_000


def seeds_needed(sd: float, half_width: float, max_seeds: int = MAX_SEEDS) -> int | None:
    """The fewest seeds whose Student's t 95% interval of a mean, at seed standard deviation ``sd``, is at most
    ``half_width`` wide on each side (``None`` beyond ``max_seeds``): the seed spread alone, without the test items'
    own error (which :func:`attnbook.verdict.planned_sample` adds)."""
    from scipy.stats import t as student

    if sd <= 0:
        return 2
    for m in range(2, max_seeds + 1):
        if student.ppf(0.975, m - 1) * sd / math.sqrt(m) <= half_width:
            return m
    return None


def seed_detectable(rule: verdict.Rule, paper_value: Any, values: Sequence[float], est: Estimate) -> str:
    """What an undecided row could detect: :func:`attnbook.verdict.detectable_effect` of its estimate (between which
    two outcomes it lies, the smallest effect detected with 80% power, and, for an estimate over seeds, the range of
    seeds that would decide it were the truth the paper's value). ``values`` (one per seed) are accepted for the
    callers that pass them and not read: the estimate carries the seed spread and the items' error. One run has no
    seed spread: its row says so, with its exact interval over the test items."""
    text = verdict.detectable_effect(est, rule, paper_value, units=" in accuracy")
    if not text or (est.n or 0) >= 2 and est.seed_var is not None:
        return text
    if est.seed_var is not None:  # one seed whose seed spread is borrowed: a sample in seeds is not sized here
        return (text.split("; if the truth were")[0]
                + "; one seed, its seed spread borrowed from the table's other rows: only more seeds can narrow it")
    if len(values) < 2 and est.has_interval:
        lo, hi = est.bounds
        text += (f"; one run: its interval (±{(hi - lo) / 2:.3f}) counts its {est.n:,} test items only, the whole "
                 "test set, and one seed has no spread to size more seeds by")
    return text


def compared(est: Estimate, paper_value=None) -> str:
    """The numbers a row's rule compared, as its note quotes them: ``"compared: paper 0.671; here 0.5723 [0.4612,
    0.6834]"`` (the paper's value only for a rule that reads it). The same words as
    :func:`attnbook.studies.clark.paper.detect.compared`."""
    here = f"{est.value:.4g}" + (f" [{est.low:.4g}, {est.high:.4g}]" if est.has_interval else "")
    return "compared: " + (f"paper {float(paper_value):.4g}; " if paper_value is not None else "") + f"here {here}"


def count_compared(est: Estimate, what: str) -> str:
    """What a :class:`attnbook.verdict.Cases` row compared: ``"compared: 6360 of 6360 items"``."""
    return f"compared: {int(est.value)} of {int(est.n or 0)} {what}"
