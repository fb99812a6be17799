"""Niven & Kao (2019) beside this run, chapter 7's front door to the paper: its numbers, the comparison rows, the
sentences. Callers use ``paper.X`` for every name below; the package holds them by what they are:

* :mod:`~attnbook.studies.niven_kao.paper.claims` - :data:`PAPER`, every number of the paper the chapter uses, with
  its table or section (data only);
* :mod:`~attnbook.studies.niven_kao.paper.estimates` - this run's numbers as estimates with 95% intervals
  (:func:`seed_estimate`, :func:`median_estimate`, :func:`combined_estimate`), the cue counts as a census
  (:func:`cue_estimate`) and the constant predictor (:func:`constant_accuracy`);
* :mod:`~attnbook.studies.niven_kao.paper.rows` - the rules (:func:`accuracy_rule`, :func:`cue_rule`, :data:`RULES`),
  the tables in the paper's layout, and the "paper vs this run" rows (:func:`comparisons`);
* :mod:`~attnbook.studies.niven_kao.paper.detect` - what each row's rule compared, as its note quotes it, and what an
  undecided row's seeds could detect;
* :mod:`~attnbook.studies.niven_kao.paper.text` - the sentences from the numbers and the rows, and the closing
  summary (:func:`agreement_markdown`, written by :func:`attnbook.verdict.summary_markdown` with this chapter's
  setting).

The measurements are in :mod:`attnbook.studies.niven_kao.cues` (§4 cues, §6 construction),
:mod:`attnbook.studies.niven_kao.pairwise` (§3, §5, §6 BERT runs) and :mod:`attnbook.studies.niven_kao.word_baselines` (BoV and
BiLSTM).
"""
from __future__ import annotations

from attnbook.studies.niven_kao.paper.claims import PAPER
from attnbook.studies.niven_kao.paper.estimates import (
    MEDIAN_MIN_SEEDS,
    combined_estimate,
    constant_accuracy,
    cue_estimate,
    median_estimate,
    productivity_vs_chance,
    run_estimate,
    seed_estimate,
)
from attnbook.studies.niven_kao.paper.rows import (
    BELOW_CHANCE_RULE,
    COUNT_RULE,
    E_FULL,
    E_ORIGINAL_ADV,
    E_WARRANTS,
    Q_ADV_MEAN,
    Q_GAP,
    Q_HALVES,
    Q_MAX,
    Q_MEAN,
    Q_MEDIAN,
    RULES,
    WORD_ADVERSARIAL_REASON,
    accuracy_rule,
    adversarial_experiment,
    adversarial_seed_table,
    below_chance_rule,
    cue_rule,
    degenerate_mask,
    max_sd,
    non_degenerate,
    not_cue_table,
    original_adv_experiment,
    over_constant,
    comparisons,
    probe_experiment,
    probe_seed_table,
    seed_records,
    seed_table,
    seeds_note,
    table1_seed_table,
)
from attnbook.studies.niven_kao.paper.detect import compared, seed_detectable, seeds_needed
from attnbook.studies.niven_kao.paper.text import (
    adversarial_markdown,
    agreement_markdown,
    cue_markdown,
    degenerate_markdown,
    not_cue_markdown,
    run_markdown,
    setting_markdown,
    training_markdown,
    warrants_markdown,
    word_baselines_markdown,
)

__all__: list[str] = [
    # claims
    "PAPER",
    # rows and estimates: the rules, the tables in the paper's layout, the estimates, the rows and their labels
    "accuracy_rule", "max_sd", "cue_rule", "below_chance_rule", "BELOW_CHANCE_RULE", "COUNT_RULE", "RULES",
    "WORD_ADVERSARIAL_REASON", "MEDIAN_MIN_SEEDS",
    "not_cue_table", "seed_table", "table1_seed_table", "probe_seed_table", "adversarial_seed_table",
    "run_estimate", "seed_estimate", "median_estimate", "combined_estimate", "over_constant", "cue_estimate",
    "productivity_vs_chance",
    "constant_accuracy", "degenerate_mask", "non_degenerate", "seeds_note", "seed_records",
    "E_FULL", "E_WARRANTS", "E_ORIGINAL_ADV", "Q_MEAN", "Q_MEDIAN", "Q_MAX", "Q_ADV_MEAN", "Q_GAP",
    "Q_HALVES",
    "original_adv_experiment", "probe_experiment", "adversarial_experiment", "comparisons",
    # detect: what a row compared, what an undecided row's seeds could detect
    "compared", "seed_detectable", "seeds_needed",
    # text
    "run_markdown", "degenerate_markdown", "cue_markdown", "not_cue_markdown", "training_markdown",
    "warrants_markdown", "adversarial_markdown", "word_baselines_markdown", "setting_markdown", "agreement_markdown",
]
