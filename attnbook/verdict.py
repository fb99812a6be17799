"""The one verdict rule: how a "paper vs this run" row gets its outcome.

Every chapter's comparison rows are judged here, so that "agrees" means the same thing in every
chapter. An outcome is one of :data:`OUTCOMES`:

* ``agrees`` / ``partly agrees`` / ``disagrees``: the paper's claim and this run's number were put
  side by side by the rule named in the row, and the rule decided;
* ``inconclusive``: the data cannot tell (kept for rules that know the uncertainty of this run's number);
* ``not comparable``: a different quantity, model or data, so the comparison could not fail.

The rules (each states itself in words in the row's table, through ``Rule.words``):

* :class:`Within` - this run's number within ``agree`` (``partly``) of the paper's, absolutely or relative to it;
* :class:`Beyond` - this run's number above (below) a threshold the paper's claim implies;
* :class:`NoEffect` - a claim of no effect: agrees only when the interval excludes an effect of the given size;
* :class:`Margin` - a margin between two systems in the paper's size class (at least ``big`` points, or less);
* :class:`Holds` - a categorical claim, judged by the share of bootstrap resamples in which it holds;
* :class:`Cases` - a claim over several cases (tasks, layers), counted;
* :class:`Rejects` - a relation claimed by a test with a p-value (a test that does not reject cannot tell);
* :class:`NotComparable` - another quantity, model or data, or a classifier no better than a constant.

A rule agrees or disagrees only when this run's interval (or an exact count) supports it; otherwise the
outcome is ``inconclusive``. :func:`row` builds a comparison row; a row without a rule is refused. An undecided row
states what its sample could detect (:func:`detectable_effect`); a stored row is judged again from its numbers by
:meth:`Comparison.rejudged`. :func:`summary_markdown` writes three lists: the papers' claims (counted), the book's own
questions and what was not reproduced.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from attnbook.stats import Estimate

AGREES, PARTLY, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE = (
    "agrees", "partly agrees", "disagrees", "inconclusive", "not comparable")

#: Every outcome a comparison row can have, in the order the tables count them.
OUTCOMES = (AGREES, PARTLY, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE)

#: What a row is: one of the papers' claims (the overview's counts are over these only), one of the book's own
#: questions (chapter 8, and the rows of other chapters that go beyond the papers), or an experiment of a paper this
#: book cannot run (data or models not obtainable; the row says why, with the paper's section).
CLAIM, OWN, NOT_REPRODUCED = "claim", "own", "not reproduced"
KINDS = (CLAIM, OWN, NOT_REPRODUCED)

#: How the outcome of one of the book's own questions reads (it tests the book's expectation, not a paper's claim).
OWN_WORDS = {AGREES: "supported", PARTLY: "partly supported", DISAGREES: "not supported",
             INCONCLUSIVE: "undecided", NOT_COMPARABLE: "not testable here"}


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def margin_class(value: float, big: float) -> int:
    """Size class of a margin in points: 2 (>= ``big``), 1 (between 0 and ``big``), -1 (> ``-big``), -2."""
    if value > 0:
        return 2 if value >= big else 1
    return -1 if value > -big else -2


def check(outcome: str) -> str:
    """``outcome`` if it is one of :data:`OUTCOMES`, else ``ValueError``."""
    if outcome not in OUTCOMES:
        raise ValueError(f"an outcome is one of {OUTCOMES}, got {outcome!r}")
    return outcome


# ---------------------------------------------------------------------------------------------
# rules that know the uncertainty of this run's number (an Estimate with a 95% interval)
# ---------------------------------------------------------------------------------------------


def as_estimate(ours: Any) -> Estimate:
    """``ours`` as an :class:`~attnbook.stats.Estimate` (a plain number has no interval)."""
    return ours if isinstance(ours, Estimate) else Estimate(float(ours))


def _sourced(source: str) -> str:
    return f" (tolerance: {source})" if source else ""


@dataclass(frozen=True)
class Rule:
    """How a paper's claim and this run's number are judged; ``words`` states the rule in a row's table."""

    def judge(self, paper: Any, ours: Estimate) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def words(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Within(Rule):
    """The paper's number reproduced, judged as an equivalence test (two one-sided tests at 2.5% each): agrees
    when the whole 95% interval lies within ``agree`` of the paper's value, partly when it lies within ``partly``,
    disagrees when it lies entirely outside ``partly``, inconclusive otherwise (:func:`possible_outcomes` says
    between which two). The point estimate decides nothing.

    ``signed``: the quantity has a sign the claim rests on (a margin over a baseline, a gain): an interval entirely
    on the other side of 0 from the paper's value disagrees whatever the bands. ``source``: where the tolerance
    comes from (the paper's own spread, the published seed spread of fine-tuning, a measurement floor), stated in
    the row's rule."""

    agree: float
    partly: float
    relative: bool = False
    unit: str = ""
    signed: bool = False
    source: str = ""

    def judge(self, paper: Any, ours: Estimate) -> str:
        if _missing(paper) or _missing(ours.value):
            return NOT_COMPARABLE
        paper = float(paper)
        scale = abs(paper) if self.relative else 1.0
        lo, hi = ours.bounds
        if self.signed and paper != 0 and ((paper > 0 and hi < 0) or (paper < 0 and lo > 0)):
            return DISAGREES
        glo, ghi = (lo - paper) / scale, (hi - paper) / scale
        if -self.agree <= glo and ghi <= self.agree:
            return AGREES
        if -self.partly <= glo and ghi <= self.partly:
            return PARTLY
        if glo > self.partly or ghi < -self.partly:
            return DISAGREES
        return INCONCLUSIVE

    def half_widths(self, paper: Any) -> tuple[float, float]:
        """The two bands in the quantity's own units (``agree``, ``partly``) around ``paper``."""
        scale = abs(float(paper)) if self.relative else 1.0
        return self.agree * scale, self.partly * scale

    @property
    def words(self) -> str:
        rel = "" if self.relative else (f" {self.unit}" if self.unit else "")
        a = f"{self.agree:.0%}" if self.relative else f"{self.agree:.4g}"
        p = f"{self.partly:.0%}" if self.relative else f"{self.partly:.4g}"
        sign = "; surely on the other side of 0 disagrees" if self.signed else ""
        return (f"whole 95% interval within ±{a}{rel} of the paper's value agrees, within ±{p} partly, entirely "
                f"outside ±{p} disagrees{sign}" + _sourced(self.source))


@dataclass(frozen=True)
class Beyond(Rule):
    """A directional claim: this run's number is above ``threshold`` (``above=True``) or below it. Agrees when the
    whole interval is on the claimed side (and, with ``strong``, beyond ``strong`` too; else partly), disagrees
    when no value in it is on the claimed side (an interval that ends at ``threshold`` excludes "above" as much as
    one that ends below it: an exact 0.5 [0.5, 0.5] contradicts "below 0.5"), inconclusive when it reaches both
    sides."""

    threshold: float = 0.0
    above: bool = True
    strong: float | None = None
    what: str = ""
    source: str = ""

    def judge(self, paper: Any, ours: Estimate) -> str:
        if _missing(ours.value):
            return NOT_COMPARABLE
        lo, hi = ours.bounds
        if not self.above:
            lo, hi, t, s = -hi, -lo, -self.threshold, None if self.strong is None else -self.strong
        else:
            t, s = self.threshold, self.strong
        if lo > t:
            return AGREES if s is None or lo >= s else PARTLY
        if hi <= t:
            return DISAGREES
        return INCONCLUSIVE

    @property
    def words(self) -> str:
        side = "above" if self.above else "below"
        extra = f"; beyond {self.strong:.4g} to agree fully" if self.strong is not None else ""
        return (f"{self.what or 'value'} {side} {self.threshold:.4g}: the 95% interval must lie {side} it{extra}"
                + _sourced(self.source))


@dataclass(frozen=True)
class NoEffect(Rule):
    """A claim of "no effect": agrees only when the interval excludes the paper's effect size ``effect`` on both
    sides; disagrees when the interval lies entirely beyond ``effect``; else inconclusive (too few data to tell)."""

    effect: float
    source: str = ""

    def judge(self, paper: Any, ours: Estimate) -> str:
        if _missing(ours.value):
            return NOT_COMPARABLE
        lo, hi = ours.bounds
        if -self.effect < lo and hi < self.effect:
            return AGREES
        if lo >= self.effect or hi <= -self.effect:
            return DISAGREES
        return INCONCLUSIVE

    @property
    def words(self) -> str:
        return f"no effect: the 95% interval must lie inside ±{self.effect:.4g}" + _sourced(self.source)


@dataclass(frozen=True)
class Margin(Rule):
    """A finding stated as a margin (A minus B): agrees when the whole interval lies in the paper's size class
    (same sign and at least ``big``, or same sign and below it), partly when it only keeps the sign, disagrees
    when it lies entirely on the other side of 0, inconclusive when it straddles 0 (or a class bound it needs)."""

    big: float
    source: str = ""

    def judge(self, paper: Any, ours: Estimate) -> str:
        if _missing(paper) or _missing(ours.value):
            return NOT_COMPARABLE
        lo, hi = ours.bounds
        p = margin_class(float(paper), self.big)
        cl, ch = margin_class(lo, self.big), margin_class(hi, self.big)
        if cl == ch == p:
            return AGREES
        if (cl > 0) == (ch > 0) == (p > 0) and lo != 0 and hi != 0:
            return PARTLY
        if (cl > 0) == (ch > 0) != (p > 0):
            return DISAGREES
        return INCONCLUSIVE

    @property
    def words(self) -> str:
        return (f"same sign and size class (>= {self.big:.4g} or less) agrees, same sign partly; 95% interval decides"
                + _sourced(self.source))


@dataclass(frozen=True)
class Holds(Rule):
    """A claim the code checks in every bootstrap resample (``ours.value`` is the share of resamples where it
    holds, ``paper`` is not used): agrees when it holds in at least ``1 - alpha/2`` of them, disagrees when in at
    most ``alpha/2``, else inconclusive."""

    claim: str
    alpha: float = 0.05

    def judge(self, paper: Any, ours: Estimate) -> str:
        if _missing(ours.value):
            return NOT_COMPARABLE
        if ours.value >= 1 - self.alpha / 2:
            return AGREES
        if ours.value <= self.alpha / 2:
            return DISAGREES
        return INCONCLUSIVE

    @property
    def words(self) -> str:
        return f"{self.claim}: holds in >= {1 - self.alpha / 2:.1%} of bootstrap resamples agrees, <= {self.alpha / 2:.1%} disagrees"


@dataclass(frozen=True)
class Cases(Rule):
    """A claim made for several cases (tasks, relations, layers), each judged on its own: ``ours.value`` is the
    number of cases that agree, ``ours.n`` the cases judged, and ``ours.high`` (optional) that number plus the
    cases whose own test was inconclusive; ``paper`` is not used. Agrees when every case agrees, partly when
    at least ``partly`` of them surely do (but not all), disagrees when fewer than ``partly`` could, and
    inconclusive when the undecided cases could tip it (the row's note lists the cases)."""

    partly: float = 0.5

    def judge(self, paper: Any, ours: Estimate) -> str:
        n = ours.n
        if not n:
            return NOT_COMPARABLE
        sure = ours.value
        could = ours.high if ours.high is not None else sure
        if sure >= n:
            return AGREES
        if could < self.partly * n:
            return DISAGREES
        if sure >= self.partly * n and could < n:
            return PARTLY
        return INCONCLUSIVE

    @property
    def words(self) -> str:
        return (f"every case agrees: agrees; at least {self.partly:.0%} of them: partly; cases whose own test is "
                "inconclusive can make it inconclusive")


@dataclass(frozen=True)
class NotComparable(Rule):
    """No comparison could fail: another quantity, model or data, or a classifier no better than a constant."""

    reason: str

    def judge(self, paper: Any, ours: Estimate) -> str:
        return NOT_COMPARABLE

    @property
    def words(self) -> str:
        return f"not comparable: {self.reason}"


@dataclass(frozen=True)
class Rejects(Rule):
    """A relation claimed by a test with a p-value (``ours.value`` is the p-value, ``paper`` is not used): agrees when
    p < ``alpha``; otherwise inconclusive, never disagrees: a test that does not reject cannot tell a small relation
    from none (the row's ``detectable`` says how large a relation its sample could have shown)."""

    test: str
    alpha: float = 0.05

    def judge(self, paper: Any, ours: Estimate) -> str:
        if _missing(ours.value):
            return NOT_COMPARABLE
        return AGREES if ours.value < self.alpha else INCONCLUSIVE

    @property
    def words(self) -> str:
        return f"{self.test}: p < {self.alpha:g} agrees; a test that does not reject cannot tell"


#: every rule by name, to read a rule back from a results file (:func:`rule_spec`, :func:`rule_from_spec`)
RULES = {c.__name__: c for c in (Within, Beyond, NoEffect, Margin, Holds, Cases, Rejects, NotComparable)}


def rule_spec(rule: Rule) -> dict[str, Any]:
    """The rule as plain JSON: its class name under ``"rule"`` and its fields (:func:`rule_from_spec` reads it back)."""
    return {"rule": type(rule).__name__, **{k: v.item() if hasattr(v, "item") else v
                                            for k, v in dataclasses.asdict(rule).items()}}


def rule_from_spec(spec: Mapping[str, Any]) -> Rule:
    """The rule :func:`rule_spec` wrote."""
    fields = dict(spec)
    return RULES[fields.pop("rule")](**fields)


def judge(rule: Rule, paper: Any, ours: Any) -> str:
    """The outcome of ``rule`` for the paper's value and this run's (an :class:`~attnbook.stats.Estimate` or a number)."""
    return check(rule.judge(paper, as_estimate(ours)))


# ---------------------------------------------------------------------------------------------
# what an undecided row's sample could detect, and what would decide it
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# a comparison row
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """One row of "paper vs this run", from the rule to the page and the results JSON: what the paper says, this
    run's number (with its 95% interval when it is a sample estimate: ``low``/``high`` over ``n`` resampled
    ``unit``), the rule's outcome (``verdict``, one of :data:`OUTCOMES`) and that rule in words. Made by :func:`row`;
    a row without a rule or with an unknown outcome is refused."""

    experiment: str
    quantity: str
    paper: Any
    ours: Any
    verdict: str
    note: str = ""
    rule: str = ""
    low: float | None = None
    high: float | None = None
    n: int | None = None
    unit: str = ""
    kind: str = CLAIM
    #: for an undecided row: the smallest effect its sample could detect (and the sample that would decide it)
    detectable: str = ""
    #: what the rule judged: this run's number (``ours`` may be words), the paper's when not ``paper``, the rule
    value: float | None = None
    paper_value: Any = None
    rule_spec: dict | None = None

    def __post_init__(self) -> None:
        if self.verdict not in OUTCOMES:
            raise ValueError(f"verdict must be one of {OUTCOMES}, got {self.verdict!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == NOT_REPRODUCED and self.verdict != NOT_COMPARABLE:
            raise ValueError(f"{self.experiment}: a row not reproduced has no outcome but {NOT_COMPARABLE!r}")
        if not self.rule:
            raise ValueError(f"{self.experiment}: {self.quantity}: a comparison states its rule "
                             "(make rows with attnbook.verdict.row)")

    @property
    def interval(self) -> str:
        """``"[low, high]"`` or ``""``."""
        if self.low is None or self.high is None:
            return ""
        return f"[{self.low:.4g}, {self.high:.4g}]"

    @property
    def outcome_words(self) -> str:
        """The outcome as a reader reads it: the verdict for a paper's claim, :data:`OWN_WORDS` for the book's own
        questions, "not reproduced" for an experiment this book cannot run."""
        if self.kind == NOT_REPRODUCED:
            return NOT_REPRODUCED
        return OWN_WORDS[self.verdict] if self.kind == OWN else self.verdict

    @property
    def reason(self) -> str:
        """Why the row is not comparable (or not reproduced), from its rule; ``""`` for a judged row."""
        return self.rule.removeprefix("not comparable: ") if self.verdict == NOT_COMPARABLE else ""

    def rejudged(self) -> str:
        """The outcome of the row's rule (``rule_spec``) on the numbers it stores (``value``, ``low``, ``high``,
        ``n``), as a reader of the results file recomputes it; the stored ``verdict`` for a row without a known spec."""
        if not self.rule_spec or self.rule_spec.get("rule") not in RULES:
            return self.verdict
        num = lambda x: float(x) if isinstance(x, str) and x in ("nan", "inf", "-inf") else x  # noqa: E731
        est = Estimate(float(num(self.value)), num(self.low), num(self.high), self.n, self.unit)
        return judge(rule_from_spec(self.rule_spec), num(self.paper if self.paper_value is None else self.paper_value),
                     est)

    def same_direction(self) -> bool | None:
        """For a row whose quantity has a sign (its rule a :class:`Within` with ``signed``): whether the whole 95%
        interval lies on the paper's side of 0 (the paper's direction, whatever the size); ``None`` for other rows."""
        spec = self.rule_spec or {}
        paper = self.paper if self.paper_value is None else self.paper_value
        if spec.get("rule") != "Within" or not spec.get("signed") or not isinstance(paper, (int, float)) \
                or _missing(paper) or paper == 0 or self.value is None:
            return None
        lo = self.low if self.low is not None else self.value
        hi = self.high if self.high is not None else self.value
        return bool(lo > 0) if paper > 0 else bool(hi < 0)

    def replace(self, **changes: Any) -> "Comparison":
        """A copy with ``changes`` (the row's outcome is not re-judged: change ``verdict`` with its ``rule``)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The row as the results JSON stores it (the field names are the JSON keys)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: "Mapping[str, Any]") -> "Comparison":
        """A row read back from a results JSON (:meth:`as_dict`); unknown keys are refused."""
        names = {f.name for f in dataclasses.fields(cls)}
        extra = set(data) - names
        if extra:
            raise ValueError(f"a comparison row has no field(s) {sorted(extra)}")
        return cls(**dict(data))


def row(experiment: str, quantity: str, *, paper: Any, ours: Any, rule: Rule, note: str = "",
        paper_value: Any = None, estimate: Estimate | None = None, fmt: str = ".3g", kind: str = CLAIM,
        detectable: str = "") -> Comparison:
    """One "paper vs this run" row, its outcome decided by ``rule`` (:func:`judge`); a chapter adds it with
    :meth:`attnbook.chapters.results.ChapterResults.compare`.

    ``paper``/``ours`` are what the table shows. The rule judges ``paper_value`` (default: ``paper``) against
    ``estimate`` (default: ``ours``, which must then be a number or an :class:`~attnbook.stats.Estimate`);
    a sample estimate carries its 95% interval into the row (``low``, ``high``, ``n`` resampled ``unit``).
    ``kind`` (:data:`KINDS`) says whether the row is a paper's claim, the book's own question, or not reproduced;
    ``detectable`` states, for a row the data leave undecided, the smallest effect its sample could detect (default:
    :func:`detectable_effect` of the estimate and the rule; a decided row keeps none). The row keeps what the rule judged (``value``,
    ``paper_value``, ``rule_spec``), so :meth:`Comparison.rejudged` recomputes its outcome from the results file.
    """
    est = estimate if estimate is not None else (ours if isinstance(ours, Estimate) else None)
    if est is None:
        if isinstance(ours, (int, float)) and not isinstance(ours, bool):
            est = Estimate(float(ours))
        else:
            raise TypeError(f"{quantity}: give the rule an estimate (ours is {ours!r})")
    shown = est.text(fmt) if isinstance(ours, Estimate) else ours
    judged = paper if paper_value is None else paper_value
    outcome = judge(rule, judged, est)
    detectable = (detectable or detectable_effect(est, rule, judged)) if outcome == INCONCLUSIVE else ""
    return Comparison(experiment=experiment, quantity=quantity, paper=paper, ours=shown, verdict=outcome,
                      rule=rule.words, note=note, low=est.low, high=est.high, n=est.n, unit=est.unit, kind=kind,
                      detectable=detectable, value=float(est.value), paper_value=paper_value, rule_spec=rule_spec(rule))


# ---------------------------------------------------------------------------------------------
# the closing summary of a chapter
# ---------------------------------------------------------------------------------------------
def _listed(r: Comparison, outcome: str = "") -> str:
    """``quantity (outcome: paper P, here O) [what the sample could detect]`` for the summary's lists."""
    return (f"{r.quantity} ({outcome + ': ' if outcome else ''}paper {r.paper}, here {r.ours})"
            + (f" [{r.detectable}]" if r.detectable else ""))


def expected_by_chance(rows: "Sequence[Comparison]", alpha: float = 0.05) -> tuple[int, float]:
    """How many of ``rows`` were decided by a rule that reads a 95% interval (not :data:`NOT_COMPARABLE`), and how many
    of those could come out against the paper by chance alone were every claim true: ``alpha`` of them (each such
    rule errs with at most ``alpha``: the calibration tests in ``tests/test_calibration.py``)."""
    judged = [r for r in rows if r.verdict != NOT_COMPARABLE]
    return len(judged), alpha * len(judged)


def multiplicity_words(rows: "Sequence[Comparison]") -> str:
    """One sentence: how many of the judged claims chance alone would turn against the paper, beside the count that
    disagree (so a reader weighs a handful of disagreements among many rows)."""
    n, chance = expected_by_chance(rows)
    if not n:
        return ""
    d = sum(r.verdict == DISAGREES for r in rows)
    return (f"Each row is judged at 95%, so among these {n} judged claims about {chance:.1f} would come out against "
            f"the paper by chance alone were every claim true; {d} disagree{'s' if d == 1 else ''}.")


def summary_markdown(rows: "Sequence[Comparison]", setting: str = "", *, title: str = "What this run found") -> str:
    """The one writer of a chapter's closing summary, computed from its rows only, in three lists.

    ``setting`` is one sentence of context (the model, the data, the classifiers) that the chapter's text module
    writes from this run's parameters. The papers' claims (kind :data:`CLAIM`) are counted by outcome and per
    experiment (rows that are not comparable named apart), and every claim that differs from the paper (partly or not
    at all) or that the data cannot decide is listed with the paper's and this run's numbers (and, undecided, what its
    sample could detect). The book's own questions (:data:`OWN`) follow with their own outcome words, then what was
    not reproduced (:data:`NOT_REPRODUCED`) with the reason. Only the claims are counted.
    """
    if not rows:
        return f"**{title}.** No comparison was made." + (f" {setting}" if setting else "")
    claims = [r for r in rows if r.kind == CLAIM]
    own = [r for r in rows if r.kind == OWN]
    gone = [r for r in rows if r.kind == NOT_REPRODUCED]
    count = {o: sum(r.verdict == o for r in claims) for o in OUTCOMES}
    with_paper = " with the papers' claims" if own or gone else ""
    parts = [f"**{title}.** " + (f"Of {len(claims)} comparisons{with_paper}, "
                                 + ", ".join(f"{n} {o}" for o, n in count.items() if n) + "."
                                 if claims else "No claim of a paper was compared here.")]
    chance = multiplicity_words(claims)
    if chance:
        parts.append(chance)
    if setting:
        parts.append(setting.strip())
    by_exp: dict[str, list[Comparison]] = {}
    for r in claims:
        by_exp.setdefault(r.experiment, []).append(r)
    if len(by_exp) > 1:
        per = []
        for exp, rs in by_exp.items():
            judged = [r for r in rs if r.verdict != NOT_COMPARABLE]
            if not judged:
                per.append(f"{exp}: not comparable")
                continue
            c = {o: sum(r.verdict == o for r in judged) for o in OUTCOMES}
            per.append(f"{exp}: {c[AGREES]} of {len(judged)} agree"
                       + (f", {c[PARTLY]} partly" if c[PARTLY] else "")
                       + (f", {c[DISAGREES]} disagree" if c[DISAGREES] else "")
                       + (f", {c[INCONCLUSIVE]} undecided" if c[INCONCLUSIVE] else "")
                       + (f" ({len(rs) - len(judged)} not comparable)" if len(judged) < len(rs) else ""))
        parts.append("By experiment: " + "; ".join(per) + ".")
    for outcomes, head in (((DISAGREES, PARTLY), "Where the numbers differ"),
                           ((INCONCLUSIVE,), "Where the data cannot tell")):
        these = [r for r in claims if r.verdict in outcomes]
        if these:
            parts.append(f"{head}: " + "; ".join(_listed(r, r.verdict if len(outcomes) > 1 else "")
                                                 for r in these) + ".")
    if own:
        judged, chance = expected_by_chance(own)
        parts.append(f"The book's own questions ({len(own)}, no paper's claim among them): "
                     + "; ".join(_listed(r, r.outcome_words) for r in own) + "."
                     + (f" Each is tested at 95%, so about {chance:.1f} of these {judged} could come out supported or "
                        "not supported by chance alone." if judged > 1 else ""))
    if gone:
        parts.append("Not reproduced here: " + "; ".join(f"{r.experiment}, {r.quantity}: {r.reason}" for r in gone)
                     + ".")
    return " ".join(parts)
