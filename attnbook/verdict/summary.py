"""The closing summary of a chapter, computed from its rows only (:func:`summary_markdown`), and how many of the
judged claims chance alone would turn against the paper (:func:`expected_by_chance`, :func:`multiplicity_words`)."""
from __future__ import annotations

from typing import Sequence

from attnbook.verdict.rows import Comparison
from attnbook.verdict.rules import AGREES, CLAIM, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE, NOT_REPRODUCED, OUTCOMES, OWN
from attnbook.verdict.rules import PARTLY


def _listed(r: Comparison, outcome: str = "") -> str:
    """``quantity (outcome: paper P, here O) [what the sample could detect]`` for the summary's lists."""
    return (f"{r.quantity} ({outcome + ': ' if outcome else ''}paper {r.paper}, here {r.ours})"
            + (f" [{r.detectable}]" if r.detectable else ""))


#: an outcome counted more than once reads as a plural verb ("3 agree", not "3 agrees")
PLURAL = {AGREES: "agree", PARTLY: "partly agree", DISAGREES: "disagree"}


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
                                 + ", ".join(f"{n} {o if n == 1 else PLURAL.get(o, o)}" for o, n in count.items() if n)
                                 + "."
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
