"""A comparison row: :class:`Comparison`, one row of "paper vs this run" from the rule to the page and the results
JSON, and :func:`row`, which makes one and decides its outcome by its rule."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from attnbook.stats import Estimate
from attnbook.verdict.power import detectable_effect
from attnbook.verdict.rules import (
    CLAIM,
    INCONCLUSIVE,
    KINDS,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    OUTCOMES,
    OWN,
    OWN_WORDS,
    RULES,
    Rule,
    _missing,
    judge,
    rule_from_spec,
    rule_spec,
)


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
