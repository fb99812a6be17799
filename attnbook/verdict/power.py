"""What an undecided row's sample could detect, and what would decide it.

For a row its rule left ``inconclusive``, :func:`detectable_effect` says between which two outcomes it lies
(:func:`possible_outcomes`, :func:`between_words`), the smallest effect its sample detects with 80% power
(:func:`power_effect`) and the sample that would decide it were the truth the one the rule is planned for
(:func:`planned_sample`, :func:`deciding_sample`). :func:`deciding_scale` describes this run's interval: how far it
would have to shrink to be decided.
"""
from __future__ import annotations

import math
import re
from typing import Any

from attnbook.stats import Estimate
from attnbook.verdict.rules import (
    INCONCLUSIVE,
    OUTCOMES,
    Beyond,
    Cases,
    Holds,
    Margin,
    NoEffect,
    NotComparable,
    Rejects,
    Rule,
    Within,
    _missing,
    as_estimate,
    judge,
)

#: normal quantiles: a two-sided 95% interval, and the power of a one-sided (80%) or an equivalence (two one-sided
#: tests, 90% each side: about 80% together) decision
Z975, Z80, Z90 = 1.959963984540054, 0.8416212335729143, 1.2815515655446004


def rounded_count(n: float) -> str:
    """A sample size to two significant digits: ``2963 -> '3,000'``."""
    if not math.isfinite(n) or n > 1e7:
        return "more than 10 million"
    n = math.ceil(n)
    return f"{n:,}" if n < 100 else f"{int(round(n, 1 - int(math.log10(n)))):,}"


def _units(est: Estimate) -> str:
    return re.sub(r"\s*\(.*?\)", "", est.unit or "").strip() or "units"


def _over_seeds(est: Estimate) -> bool:
    return est.seed_var is not None or ("seed" in (est.unit or "") and (est.n or 0) >= 2)


def _df(est: Estimate) -> float:
    """Degrees of freedom of ``est``'s interval: its own (Satterthwaite, :func:`attnbook.stats.over_seeds`), or
    Student's over ``n`` seeds, or a normal (bootstrap and exact intervals over many units)."""
    if est.df is not None:
        return float(est.df)
    return float(est.n - 1) if _over_seeds(est) and est.n and est.n >= 2 else math.inf


def _q(p: float, df: float) -> float:
    if not math.isfinite(df):
        from statistics import NormalDist

        return NormalDist().inv_cdf(p)
    from scipy.stats import t as student

    return float(student.ppf(p, df))


def standard_error(estimate: Any) -> float | None:
    """The standard error behind ``estimate``'s 95% interval: its half-width over the interval's quantile (normal,
    or Student's t on the interval's degrees of freedom); ``None`` without an interval."""
    est = as_estimate(estimate)
    if not est.has_interval:
        return None
    lo, hi = est.bounds
    return (hi - lo) / 2 / _q(0.975, _df(est))


def power_effect(estimate: Any, power: float = 0.8) -> float | None:
    """The smallest effect ``estimate``'s sample detects with ``power`` (80%) in a two-sided 5% test:
    ``(z_0.975 + z_power) * SE``, about 2.8 standard errors (1.43 x the 95% half-width), not the half-width, which
    is detected only half the time."""
    se = standard_error(estimate)
    if se is None:
        return None
    df = _df(as_estimate(estimate))
    return (_q(0.975, df) + _q(power, df)) * se


def _planned(rule: Rule, paper: Any) -> tuple[float, bool, str] | None:
    """The effect a rule is planned for: the distance between the truth one plans for and the bound that decides,
    whether the decision is an equivalence (two-sided) and the planned truth in words; ``None`` when the rule or the
    paper gives no size to plan for."""
    if isinstance(rule, Within) and not _missing(paper):
        a, _ = rule.half_widths(paper)
        return a, True, f"the paper's {float(paper):.4g} (agrees within ±{a:.3g})"
    if isinstance(rule, NoEffect):
        return rule.effect, True, f"no effect at all (agrees inside ±{rule.effect:.4g})"
    if isinstance(rule, Beyond) and isinstance(paper, (int, float)) and not isinstance(paper, bool) and not _missing(paper):
        d = (float(paper) - rule.threshold) * (1 if rule.above else -1)
        if d > 0:
            return d, False, f"the paper's {float(paper):.4g}"
        return None
    if isinstance(rule, Margin) and not _missing(paper):
        p = abs(float(paper))
        d = min(abs(p - b) for b in (0.0, rule.big))
        if d > 0:
            return d, False, f"the paper's margin {float(paper):.4g}"
    return None


def planned_sample(estimate: Any, rule: Rule, paper: Any = None) -> tuple[float, float] | None:
    """The sample (in ``estimate.n``'s units) that would decide ``rule`` with 80% power were the truth the one the
    rule is planned for (:func:`_planned`: the paper's value for :class:`Within`, :class:`Beyond` and :class:`Margin`,
    no effect for :class:`NoEffect`), not this run's estimate (which would be a post-hoc power calculation).

    A range ``(low, high)``: over seeds, the seed-to-seed standard deviation from ``k`` seeds is uncertain (its 95%
    chi-square interval, a factor of about 0.5-6 at 3 seeds), and when the interval also carries the dev examples'
    own error (``item_var``) more seeds can never shrink it below that (``inf``); over examples, one number twice.
    ``None`` when there is nothing to plan for."""
    est = as_estimate(estimate)
    plan = _planned(rule, paper)
    se = standard_error(est)
    if plan is None or se is None or not est.n:
        return None
    d, two_sided, _ = plan
    need = d / (Z975 + (Z90 if two_sided else Z80))
    if not _over_seeds(est):
        n = est.n * (se / need) ** 2 if se > 0 else float(est.n)
        return n, n
    from scipy.stats import chi2

    k = est.n
    item = est.item_var or 0.0
    between = est.seed_var if est.seed_var is not None else se ** 2
    s2 = between * k  # the seed-to-seed variance of one run
    room = need ** 2 - item
    if room <= 0:
        return math.inf, math.inf
    if k < 2:  # one seed with a spread borrowed from other rows: no chi-square range of its own
        return max(1.0, s2 / room), max(1.0, s2 / room)
    lo_s2, hi_s2 = s2 * (k - 1) / chi2.ppf(0.975, k - 1), s2 * (k - 1) / chi2.ppf(0.025, k - 1)
    return max(2.0, lo_s2 / room), max(2.0, hi_s2 / room)


def possible_outcomes(estimate: Any, rule: Rule, paper: Any = None) -> list[str]:
    """The outcomes ``rule`` could give were this run's interval narrowed anywhere inside itself: for an undecided
    row, the two outcomes it lies between (best first, in :data:`OUTCOMES` order); ``[]`` for a rule whose number is
    not an interval (:class:`Holds`, :class:`Cases`, :class:`Rejects`, :class:`NotComparable`)."""
    est = as_estimate(estimate)
    if isinstance(rule, (Holds, Cases, Rejects, NotComparable)) or _missing(est.value):
        return []
    lo, hi = est.bounds
    points = [lo + (hi - lo) * i / 400 for i in range(401)] + [est.value]
    found = {judge(rule, paper, Estimate(float(x))) for x in points}
    return [o for o in OUTCOMES if o in found and o != INCONCLUSIVE]


def between_words(estimate: Any, rule: Rule, paper: Any = None) -> str:
    """``"between partly agrees and disagrees"`` for an undecided row (``""`` when it cannot be said)."""
    o = possible_outcomes(estimate, rule, paper)
    return f"between {o[0]} and {o[-1]}" if len(o) >= 2 else ""


def deciding_sample(estimate: Any, rule: Rule, paper: Any = None) -> float | None:
    """For an undecided row: the sample that would decide ``rule`` with 80% power at the effect the rule is planned
    for (:func:`planned_sample`, its upper end over seeds); for :class:`Holds`, the share of resamples read as a
    normal margin that shrinks as one over the square root of the units. ``None`` for a decided row or where nothing
    can be planned."""
    est = as_estimate(estimate)
    if _missing(est.value) or not est.n or judge(rule, paper, est) != INCONCLUSIVE:
        return None
    if isinstance(rule, Holds):
        from statistics import NormalDist

        z = abs(NormalDist().inv_cdf(min(max(est.value, 1e-6), 1 - 1e-6)))
        return est.n * ((Z975 + Z80) / z) ** 2 if z > 1e-9 else math.inf
    got = planned_sample(est, rule, paper)
    return None if got is None else got[1]


def _sample_words(est: Estimate, got: tuple[float, float] | None, why: str) -> str:
    if got is None:
        return ""
    unit = "seeds" if _over_seeds(est) else _units(est)
    lo, hi = got
    if math.isinf(lo):
        return (f"; if the truth were {why}, no number of seeds decides it at 80% power: the evaluation examples' own "
                "error is already larger than that allows, so only a larger evaluation set could")
    if _over_seeds(est) and lo != hi:
        return (f"; if the truth were {why}, about {rounded_count(lo)}-{rounded_count(hi)} {unit} would decide it with "
                f"80% power (the range: the seed spread measured on {est.n} {unit} is itself uncertain)")
    return f"; if the truth were {why}, about {rounded_count(hi)} {unit} would decide it with 80% power"


def detectable_effect(estimate: Any, rule: Rule, paper: Any = None, units: str = "") -> str:
    """For a row its rule left ``inconclusive``: between which two outcomes it lies (:func:`possible_outcomes`), the
    smallest effect its sample detects with 80% power (:func:`power_effect`, in the row's ``units``) and the sample
    that would decide it with 80% power were the truth the one the rule is planned for (:func:`planned_sample`).
    ``""`` for a decided row or a rule this cannot say anything about (:class:`Cases`, :class:`Rejects`,
    :class:`NotComparable`: their rows say it)."""
    est = as_estimate(estimate)
    if _missing(est.value) or judge(rule, paper, est) != INCONCLUSIVE:
        return ""
    n = est.n
    unit = _units(est)
    if isinstance(rule, Holds):
        need = deciding_sample(est, rule, paper)
        decide = ("" if need is None else "; an even split, which no sample decides" if math.isinf(need)
                  else f"; about {rounded_count(need)} {unit} would decide it with 80% power were the share of "
                       "resamples to stay as it is")
        return (f"the claim holds in {est.value:.0%} of the bootstrap resamples{f' on {n:,} {unit}' if n else ''}, "
                f"short of the {1 - rule.alpha / 2:.1%} (or {rule.alpha / 2:.1%}) that decides it" + decide)
    mde = power_effect(est)
    if mde is None:
        return ""
    plan = _planned(rule, paper)
    between = between_words(est, rule, paper)
    return ((f"{between}; " if between else "")
            + f"{f'on {n:,} {unit} ' if n else ''}an effect of {mde:.3g}{units} or more is detected with 80% power"
            + _sample_words(est, planned_sample(est, rule, paper), plan[2] if plan else ""))


#: the narrowest shrink :func:`deciding_scale` tries: an estimate on a rule's bound is decided only by a zero-width
#: interval (:class:`Beyond` counts one ending on its threshold as outside), which no sample gives
_NARROWEST = 1e-9


def deciding_scale(rule: Rule, paper_value: Any, est: Estimate) -> float | None:
    """The largest factor ``s <= 1`` by which ``est``'s 95% interval, shrunk about the estimate, is decided by ``rule``
    (``1`` when it already is); ``None`` when not even an interval a billionth as wide is (the estimate sits on one of
    the rule's bounds). A description of this run's interval, not a power calculation (:func:`planned_sample`)."""
    v = est.value
    lo, hi = est.bounds

    def decided(s: float) -> bool:
        shrunk = Estimate(v, v - s * (v - lo), v + s * (hi - v), est.n, est.unit)
        return judge(rule, paper_value, shrunk) != INCONCLUSIVE

    if decided(1.0):
        return 1.0
    if not decided(_NARROWEST):
        return None
    a, b = _NARROWEST, 1.0
    for _ in range(60):
        mid = (a + b) / 2
        a, b = (mid, b) if decided(mid) else (a, mid)
    return a
