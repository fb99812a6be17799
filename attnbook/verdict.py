"""The one verdict rule: how a "paper vs this run" row gets its outcome.

Every chapter's comparison rows are judged here, so that "agrees" means the same thing in every
chapter. An outcome is one of :data:`OUTCOMES`:

* ``agrees`` / ``partly agrees`` / ``disagrees``: the paper's claim and this run's number were put
  side by side by the rule named in the row, and the rule decided;
* ``inconclusive``: the data cannot tell (kept for rules that know the uncertainty of this run's number);
* ``not comparable``: a different quantity, model or data, so the comparison could not fail.

The rules:

* :func:`closeness` - this run's number within ``agree`` (``partly``) of the paper's, absolutely or
  relative to the paper's value;
* :func:`share` - a claim that should hold in every case (task, relation, layer): all cases,
  at least ``partly`` of them, or none;
* :func:`margin` - a claim about a margin between two systems (a head over a baseline): same sign
  and the same size class (at least ``big`` points, or less) agrees, same sign only partly;
* :func:`conditions` - a claim the caller turns into two stated conditions (the row's note says which).
"""
from __future__ import annotations

import math
from typing import Any

AGREES, PARTLY, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE = (
    "agrees", "partly agrees", "disagrees", "inconclusive", "not comparable")

#: Every outcome a comparison row can have, in the order the tables count them.
OUTCOMES = (AGREES, PARTLY, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def conditions(agrees: bool, partly: bool = False) -> str:
    """``agrees`` when ``agrees`` holds, else ``partly agrees`` when ``partly`` holds, else ``disagrees``."""
    return AGREES if agrees else (PARTLY if partly else DISAGREES)


def closeness(paper: float, ours: float, agree: float, partly: float, *, relative: bool = False) -> str:
    """``agrees`` if ``|ours - paper| <= agree``, ``partly agrees`` if ``<= partly``, else ``disagrees``
    (with ``relative``, the gap is divided by ``|paper|``); ``not comparable`` when a number is missing."""
    if _missing(paper) or _missing(ours):
        return NOT_COMPARABLE
    gap = abs(float(ours) - float(paper))
    if relative:
        gap /= abs(float(paper))
    return conditions(gap <= agree, gap <= partly)


def share(hits: int, total: int, *, agree: float = 1.0, partly: float | None = None) -> str:
    """A claim checked case by case: ``agrees`` when at least ``agree`` of the ``total`` cases hold (default: all),
    ``partly agrees`` when at least ``partly`` do (default: any), else ``disagrees``; no case: ``not comparable``."""
    if total == 0:
        return NOT_COMPARABLE
    rate = hits / total
    return conditions(rate >= agree, rate >= partly if partly is not None else hits > 0)


def margin_class(value: float, big: float) -> int:
    """Size class of a margin in points: 2 (>= ``big``), 1 (between 0 and ``big``), -1 (> ``-big``), -2."""
    if value > 0:
        return 2 if value >= big else 1
    return -1 if value > -big else -2


def margin(paper: float, ours: float, big: float) -> str:
    """A finding stated as a margin (A minus B, e.g. a head over a baseline): ``agrees`` when both margins
    fall in the same :func:`margin_class`, ``partly agrees`` when they only share the sign, else ``disagrees``."""
    p, o = margin_class(paper, big), margin_class(ours, big)
    if p == o:
        return AGREES
    return PARTLY if (p > 0) == (o > 0) else DISAGREES


def check(outcome: str) -> str:
    """``outcome`` if it is one of :data:`OUTCOMES`, else ``ValueError``."""
    if outcome not in OUTCOMES:
        raise ValueError(f"an outcome is one of {OUTCOMES}, got {outcome!r}")
    return outcome
