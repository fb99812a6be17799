"""The outcomes a comparison row can have, the kinds of row, and the rules that judge one (:func:`judge`).

:data:`OUTCOMES` and :data:`KINDS` name what a row can be; every :class:`Rule` states itself in words
(``Rule.words``), and :func:`rule_spec` stores it as plain JSON that :func:`rule_from_spec` reads back
(:data:`RULES`). The rules in words are listed in :mod:`attnbook.verdict`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

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
