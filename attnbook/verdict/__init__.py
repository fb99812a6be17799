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
:meth:`Comparison.rejudged`. :func:`summary_markdown` writes the papers' claims (counted, then as bullets grouped by
outcome), the book's own questions and what was not reproduced.

What lives where: :mod:`~attnbook.verdict.rules` holds the outcomes, the kinds of row and the rules (:func:`judge`,
:func:`rule_spec`, :func:`rule_from_spec`); :mod:`~attnbook.verdict.power` what an undecided row's sample could detect
and what would decide it; :mod:`~attnbook.verdict.rows` the row (:class:`Comparison`, :func:`row`);
:mod:`~attnbook.verdict.summary` a chapter's closing summary. Callers use every name from here (``verdict.X``,
``from attnbook.verdict import X``); the modules import one another directly.
"""
from __future__ import annotations

from attnbook.stats import Estimate  # the estimate every rule judges, also reached as ``verdict.Estimate``
from attnbook.verdict.power import (Z80, Z90, Z975, between_words, deciding_sample, deciding_scale,
    detectable_effect, planned_sample, possible_outcomes, power_effect, rounded_count, standard_error)
from attnbook.verdict.rows import Comparison, row
from attnbook.verdict.rules import (AGREES, CLAIM, DISAGREES, INCONCLUSIVE, KINDS, NOT_COMPARABLE, NOT_REPRODUCED,
    OUTCOMES, OWN, OWN_WORDS, PARTLY, RULES, Beyond, Cases, Holds, Margin, NoEffect, NotComparable, Rejects, Rule,
    Within, as_estimate, check, judge, margin_class, rule_from_spec, rule_spec)
from attnbook.verdict.summary import (GROUPS, OUTCOME_SLUGS, PLURAL, expected_by_chance, multiplicity_words,
    outcome_html, shown, summary_markdown)

__all__ = [
    # rules: outcomes, kinds of row, the rules
    "AGREES", "PARTLY", "DISAGREES", "INCONCLUSIVE", "NOT_COMPARABLE", "OUTCOMES", "CLAIM", "OWN", "NOT_REPRODUCED",
    "KINDS", "OWN_WORDS", "margin_class", "check", "as_estimate", "Rule", "Within", "Beyond", "NoEffect", "Margin",
    "Holds", "Cases", "NotComparable", "Rejects", "RULES", "rule_spec", "rule_from_spec", "judge",
    # power: what an undecided row's sample could detect, and what would decide it
    "Z975", "Z80", "Z90", "rounded_count", "standard_error", "power_effect", "planned_sample", "possible_outcomes",
    "between_words", "deciding_sample", "detectable_effect", "deciding_scale",
    # rows: a comparison row
    "Comparison", "row",
    # summary: the closing summary of a chapter
    "PLURAL", "OUTCOME_SLUGS", "GROUPS", "outcome_html", "shown", "expected_by_chance", "multiplicity_words",
    "summary_markdown",
    # the estimate a rule judges
    "Estimate",
]
