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
* :class:`NotComparable` - another quantity, model or data, or a classifier no better than a constant.

A rule agrees or disagrees only when this run's interval (or an exact count) supports it; otherwise the
outcome is ``inconclusive``. :func:`row` builds a comparison row; a row without a rule is refused.
"""
from __future__ import annotations

import dataclasses
import math
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
    """The paper's number reproduced: agrees when the whole 95% interval lies within ``partly`` of the paper's
    value and the estimate within ``agree``; partly when the interval lies within ``partly`` only; disagrees
    when the interval lies entirely outside ``partly``; inconclusive when it straddles that bound."""

    agree: float
    partly: float
    relative: bool = False
    unit: str = ""

    def judge(self, paper: Any, ours: Estimate) -> str:
        if _missing(paper) or _missing(ours.value):
            return NOT_COMPARABLE
        paper = float(paper)
        scale = abs(paper) if self.relative else 1.0
        gap = lambda x: (x - paper) / scale  # noqa: E731
        lo, hi = ours.bounds
        glo, ghi, g = gap(lo), gap(hi), abs(gap(ours.value))
        if glo > self.partly or ghi < -self.partly:
            return DISAGREES
        if -self.partly <= glo and ghi <= self.partly:
            return AGREES if g <= self.agree else PARTLY
        return INCONCLUSIVE

    @property
    def words(self) -> str:
        rel = " of the paper's value" if self.relative else (f" {self.unit}" if self.unit else "")
        a = f"{self.agree:.0%}" if self.relative else f"{self.agree:.4g}"
        p = f"{self.partly:.0%}" if self.relative else f"{self.partly:.4g}"
        return f"within {a}{rel} agrees, within {p} partly (95% interval decides)"


@dataclass(frozen=True)
class Beyond(Rule):
    """A directional claim: this run's number is above ``threshold`` (``above=True``) or below it. Agrees when the
    whole interval is on the claimed side (and, with ``strong``, beyond ``strong`` too; else partly), disagrees
    when it is entirely on the other side, inconclusive when it contains ``threshold``."""

    threshold: float = 0.0
    above: bool = True
    strong: float | None = None
    what: str = ""

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
        if hi < t:
            return DISAGREES
        return INCONCLUSIVE

    @property
    def words(self) -> str:
        side = "above" if self.above else "below"
        extra = f"; beyond {self.strong:.4g} to agree fully" if self.strong is not None else ""
        return f"{self.what or 'value'} {side} {self.threshold:.4g}: the 95% interval must lie {side} it{extra}"


@dataclass(frozen=True)
class NoEffect(Rule):
    """A claim of "no effect": agrees only when the interval excludes the paper's effect size ``effect`` on both
    sides; disagrees when the interval lies entirely beyond ``effect``; else inconclusive (too few data to tell)."""

    effect: float

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
        return f"no effect: the 95% interval must exclude ±{self.effect:.4g}"


@dataclass(frozen=True)
class Margin(Rule):
    """A finding stated as a margin (A minus B): agrees when the whole interval lies in the paper's size class
    (same sign and at least ``big``, or same sign and below it), partly when it only keeps the sign, disagrees
    when it lies entirely on the other side of 0, inconclusive when it straddles 0 (or a class bound it needs)."""

    big: float

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
        return f"same sign and size class (>= {self.big:.4g} or less) agrees, same sign partly; 95% interval decides"


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


def judge(rule: Rule, paper: Any, ours: Any) -> str:
    """The outcome of ``rule`` for the paper's value and this run's (an :class:`~attnbook.stats.Estimate` or a number)."""
    return check(rule.judge(paper, as_estimate(ours)))


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
    ``detectable`` states, for a row the data leave undecided, the smallest effect its sample could detect.
    """
    est = estimate if estimate is not None else (ours if isinstance(ours, Estimate) else None)
    if est is None:
        if isinstance(ours, (int, float)) and not isinstance(ours, bool):
            est = Estimate(float(ours))
        else:
            raise TypeError(f"{quantity}: give the rule an estimate (ours is {ours!r})")
    shown = est.text(fmt) if isinstance(ours, Estimate) else ours
    outcome = judge(rule, paper if paper_value is None else paper_value, est)
    return Comparison(experiment=experiment, quantity=quantity, paper=paper, ours=shown, verdict=outcome,
                      rule=rule.words, note=note, low=est.low, high=est.high, n=est.n, unit=est.unit, kind=kind,
                      detectable=detectable)


# ---------------------------------------------------------------------------------------------
# the closing summary of a chapter
# ---------------------------------------------------------------------------------------------
def summary_markdown(rows: "Sequence[Comparison]", setting: str = "", *, title: str = "What this run found") -> str:
    """The one writer of a chapter's closing summary, computed from its rows only.

    ``setting`` is one sentence of context (the model, the data, the classifiers) that the chapter's text module
    writes from this run's parameters. The paragraph counts the outcomes per experiment (rows that are not comparable
    named apart), then lists every row that differs from the paper (partly or not at all) and every row the data
    cannot decide, each with the paper's and this run's numbers.
    """
    if not rows:
        return f"**{title}.** No comparison was made." + (f" {setting}" if setting else "")
    count = {o: sum(r.verdict == o for r in rows) for o in OUTCOMES}
    parts = [f"**{title}.** Of {len(rows)} comparisons, "
             + ", ".join(f"{n} {o}" for o, n in count.items() if n) + "."]
    if setting:
        parts.append(setting.strip())
    by_exp: dict[str, list[Comparison]] = {}
    for r in rows:
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
        these = [r for r in rows if r.verdict in outcomes]
        if these:
            parts.append(f"{head}: " + "; ".join(
                f"{r.quantity} ({r.verdict + ': ' if len(outcomes) > 1 else ''}paper {r.paper}, here {r.ours})"
                for r in these) + ".")
    return " ".join(parts)
