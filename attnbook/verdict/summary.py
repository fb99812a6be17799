"""The closing summary of a chapter, computed from its rows only (:func:`summary_markdown`), and how many of the
judged claims chance alone would turn against the paper (:func:`expected_by_chance`, :func:`multiplicity_words`);
:func:`outcome_html` and :func:`shown` write a row's outcome and number the same way wherever a page lists rows."""
from __future__ import annotations

import re
from typing import Sequence

from attnbook.verdict.rows import Comparison
from attnbook.verdict.rules import AGREES, CLAIM, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE, NOT_REPRODUCED, OUTCOMES, OWN
from attnbook.verdict.rules import PARTLY

#: an outcome counted more than once reads as a plural verb ("3 agree", not "3 agrees")
PLURAL = {AGREES: "agree", PARTLY: "partly agree", DISAGREES: "disagree"}

#: the words of an outcome (a claim's verdict, an own question's words, "not reproduced") -> the slug of its colour
#: class on the page (``attnbook-outcome attnbook-outcome-<slug>``)
OUTCOME_SLUGS = {AGREES: "agrees", PARTLY: "partly", DISAGREES: "disagrees", INCONCLUSIVE: "inconclusive",
                 NOT_COMPARABLE: "not-comparable", "supported": "supported", "partly supported": "partly",
                 "not supported": "not-supported", "undecided": "undecided", "not testable here": "not-comparable",
                 NOT_REPRODUCED: "not-reproduced"}

#: the groups of the summary's lists, in the order a reader meets them: (outcome, heading)
GROUPS = ((AGREES, "Agree"), (PARTLY, "Partly agree"), (DISAGREES, "Disagree"),
          (INCONCLUSIVE, "Cannot tell (inconclusive)"), (NOT_COMPARABLE, "Not comparable"))

#: a quantity asked once per task or relation: ``"MRPC: Vertical share"`` (the prefix one word, no spaces)
_PER_CASE = re.compile(r"^([^\s:,]{1,12}): (.+)$")


def outcome_html(words: str, text: str | None = None) -> str:
    """``words`` (an outcome as :attr:`Comparison.outcome_words` reads) in its colour class:
    ``'<span class="attnbook-outcome attnbook-outcome-agrees">agrees</span>'``; ``text`` replaces the shown words."""
    slug = OUTCOME_SLUGS.get(words)
    if slug is None:
        raise ValueError(f"no colour for the outcome {words!r}; known: {sorted(OUTCOME_SLUGS)}")
    return f'<span class="attnbook-outcome attnbook-outcome-{slug}">{text if text is not None else words}</span>'


def shown(r: Comparison) -> str:
    """This run's number as the row shows it, with its 95% interval unless the shown text already gives one."""
    return f"{r.ours} {r.interval}" if r.interval and "[" not in str(r.ours) else str(r.ours)


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


def _extra(r: Comparison) -> str:
    """What a bullet adds after the numbers: what an undecided sample could detect."""
    return f" ({r.detectable})" if r.verdict == INCONCLUSIVE and r.detectable else ""


def _why(r: Comparison) -> str:
    """Why a row is not comparable or not reproduced, without the outcome's own words in front."""
    return r.reason.removeprefix(f"{NOT_REPRODUCED}: ")


def _by_reason(rows: "Sequence[Comparison]", bullet) -> list[str]:
    """Rows that are not comparable (or not reproduced) for the same reason: the reason stated once, their bullets
    under it; a reason of one row follows its bullet."""
    reasons: dict[str, list[Comparison]] = {}
    for r in rows:
        reasons.setdefault(_why(r), []).append(r)
    out = []
    for why, rs in reasons.items():
        if len(rs) == 1:
            out.append(f"{bullet(rs[0])} ({why})" if why else bullet(rs[0]))
        else:
            out.append(f"- {why}:" if why else "- no reason given:")
            out += [f"  {bullet(r)}" for r in rs]
    return out


def _folded(head: str, n: int, lines: list[str]) -> str:
    """A group of bullets folded under its heading (an HTML ``details`` element around the Markdown list)."""
    return (f'<details class="attnbook-fold"><summary><strong>{head}</strong> ({n})</summary>\n\n' + "\n".join(lines)
            + "\n\n</details>")


def _bullets(rows: "Sequence[Comparison]", outcome_words: bool = False) -> list[str]:
    """One bullet per row, ``quantity: paper P; this run O``; rows of one experiment that ask one quantity per task or
    relation (``"MRPC: Vertical share"``, ``"SST-2: Vertical share"``) and come out alike share one bullet that names
    each case.
    ``outcome_words``: each bullet states its outcome (the book's own questions, whose outcomes differ in a list)."""
    groups: dict[tuple, list[Comparison]] = {}
    for r in rows:
        m = _PER_CASE.match(r.quantity)
        key = ("case", r.experiment, m.group(2), r.outcome_words) if m else ("row", id(r))
        groups.setdefault(key, []).append(r)
    out = []
    for key, rs in groups.items():
        said = f"{outcome_html(rs[0].outcome_words)} " if outcome_words else ""
        if len(rs) == 1:
            r = rs[0]
            out.append(f"- {said}{r.quantity}: paper {r.paper}; this run {shown(r)}{_extra(r)}")
            continue
        cases = [(_PER_CASE.match(r.quantity).group(1), r) for r in rs]
        if len({str(r.paper) for r in rs}) == 1:
            out.append(f"- {said}{key[2]}: paper {rs[0].paper}; this run "
                       + "; ".join(f"{case} {shown(r)}{_extra(r)}" for case, r in cases))
        else:
            out.append(f"- {said}{key[2]}: "
                       + "; ".join(f"{case}: paper {r.paper}, this run {shown(r)}{_extra(r)}" for case, r in cases))
    return out


def _per_experiment(claims: "Sequence[Comparison]") -> str:
    """``'By experiment: §4.2: 1 of 2 agree, 1 partly; §5: not comparable.'``; ``''`` for one experiment."""
    by_exp: dict[str, list[Comparison]] = {}
    for r in claims:
        by_exp.setdefault(r.experiment, []).append(r)
    if len(by_exp) < 2:
        return ""
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
    return "By experiment: " + "; ".join(per) + "."


def summary_markdown(rows: "Sequence[Comparison]", setting: str = "", *, title: str = "What this run found") -> str:
    """The one writer of a chapter's closing summary, computed from its rows only.

    A first paragraph counts the papers' claims (kind :data:`CLAIM`) by outcome, weighs them against chance
    (:func:`multiplicity_words`) and gives ``setting``, one sentence of context (the model, the data, the classifiers)
    that the chapter's text module writes from this run's parameters; a second counts the claims per experiment. Then
    the claims as bullets grouped by outcome (:data:`GROUPS`: agree, partly agree, disagree, cannot tell, not
    comparable), each the row's quantity with the paper's number and this run's (an undecided row adds what its sample
    could detect; rows not comparable, folded, under their reason); then the book's own questions (:data:`OWN`) with
    their outcome words, and what was not reproduced (:data:`NOT_REPRODUCED`), folded, under its reason. Only the
    claims are counted as the paper's.
    """
    if not rows:
        return f"**{title}.** No comparison was made." + (f" {setting}" if setting else "")
    claims = [r for r in rows if r.kind == CLAIM]
    own = [r for r in rows if r.kind == OWN]
    gone = [r for r in rows if r.kind == NOT_REPRODUCED]
    count = {o: sum(r.verdict == o for r in claims) for o in OUTCOMES}
    with_paper = " with the papers' claims" if own or gone else ""
    lead = [f"**{title}.** " + (f"Of {len(claims)} comparisons{with_paper}, "
                                + ", ".join(f"{n} {o if n == 1 else PLURAL.get(o, o)}" for o, n in count.items() if n)
                                + "."
                                if claims else "No claim of a paper was compared here.")]
    chance = multiplicity_words(claims)
    if chance:
        lead.append(chance)
    if setting:
        lead.append(setting.strip())
    blocks = [" ".join(lead)]
    per = _per_experiment(claims)
    if per:
        blocks.append(per)
    for outcome, head in GROUPS:
        these = [r for r in claims if r.verdict == outcome]
        if not these:
            continue
        if outcome == NOT_COMPARABLE:
            blocks.append(_folded(outcome_html(outcome, head), len(these), _by_reason(
                these, lambda r: f"- {r.quantity}: paper {r.paper}; this run {shown(r)}")))
        else:
            blocks.append(f"**{outcome_html(outcome, head)}** ({len(these)}):\n\n" + "\n".join(_bullets(these)))
    if own:
        judged, chance = expected_by_chance(own)
        blocks.append(f"**The book's own questions** ({len(own)}, no paper's claim among them):\n\n"
                      + "\n".join(_bullets(own, outcome_words=True)))
        if judged > 1:
            blocks.append(f"Each of these is tested at 95%, so about {chance:.1f} of these {judged} could come out "
                          "supported or not supported by chance alone.")
    if gone:
        blocks.append(_folded(outcome_html(NOT_REPRODUCED, "Not reproduced here"), len(gone),
                              _by_reason(gone, lambda r: f"- {r.experiment}, {r.quantity}")))
    return "\n\n".join(blocks)
