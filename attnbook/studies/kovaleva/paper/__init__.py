"""Kovaleva et al. (2019) beside this run, chapters 4 and 5's front door to the paper: its numbers, the comparison
rows, the sentences. Callers use ``paper.X`` for every name below; the package holds them by what they are:

* :mod:`~attnbook.studies.kovaleva.paper.claims` - the paper's numbers with their section, figure or table:
  :data:`PAPER` (§4.1-4.5), :data:`PAPER_TABLE1` (Table 1), :data:`PAPER_DISABLING` (§4.6, §5) (data only);
* :mod:`~attnbook.studies.kovaleva.paper.learned` - which Table 1 classifiers learned their task, so which rows can
  be compared (the criterion itself, :func:`constant_reason`, is in :mod:`attnbook.studies.kovaleva.reference`,
  which the Table 1 measurement imports too);
* :mod:`~attnbook.studies.kovaleva.paper.rows` - the rules, stated in words in every row with the source of each
  tolerance (the paper's own sampling error, its reported sizes), and the "paper vs this run" rows made by
  :func:`attnbook.verdict.row` (:func:`taxonomy_comparisons`, :func:`fig2_comparisons`, :func:`framenet_comparisons`,
  :func:`change_comparisons`, :func:`feature_rows`); Table 1's rules (their tolerance the published seed spread of
  fine-tuning) and rows (:func:`table1_comparisons`) in :mod:`~attnbook.studies.kovaleva.paper.table1_rows`;
  chapter 5's :func:`disabling_comparisons` in :mod:`~attnbook.studies.kovaleva.paper.disabling_rows`;
* :mod:`~attnbook.studies.kovaleva.paper.text` - the sentences from the numbers and the closing summaries
  (:func:`agreement_markdown` for chapter 4, :func:`disabling_findings` for chapter 5, both written by
  :func:`attnbook.verdict.summary_markdown` with the chapter's setting).

The measurements are in :mod:`~attnbook.studies.kovaleva.table1`, :mod:`~attnbook.studies.kovaleva.taxonomy`,
:mod:`~attnbook.studies.kovaleva.framenet`, :mod:`~attnbook.studies.kovaleva.features`,
:mod:`~attnbook.studies.kovaleva.disabling` and :mod:`~attnbook.studies.kovaleva.word_match`.
"""
from __future__ import annotations

from attnbook.studies.kovaleva.paper.claims import PAPER, PAPER_DISABLING, PAPER_MODEL, PAPER_TABLE1
from attnbook.studies.kovaleva.paper.learned import (
    constant_predictors,
    is_missing,
    learned_tasks,
    not_learned_seeds,
    paper_constant_reason,
    row_reason,
)
from attnbook.studies.kovaleva.paper.rows import (
    F1_RULE,
    FEATURE_ROWS,
    FRAME_RULE,
    GAIN_POSITIVE,
    HETEROGENEOUS_SLACK,
    LAYER_DROP_EFFECT,
    LAYER_DROP_RULE,
    MATCH_RULE,
    PAPER_MAPS,
    RTE_DEV,
    SHARE_RULE,
    TRANSFER_REASON,
    VERTICAL_RULE,
    classifier_gap_words,
    change_comparisons,
    feature_claims,
    feature_comparisons,
    feature_rows,
    fig2_comparisons,
    framenet_comparisons,
    holds_estimate,
    in_range,
    last_layers,
    layer_one_rule,
    most_changed_layers,
    not_run_row,
    peak_layer,
    sampling_rule,
    taxonomy_comparisons,
    top_cls_feature,
)
from attnbook.studies.kovaleva.paper.table1_rows import (
    DEFAULT_SEED_SD,
    SEED_SD,
    beside_table1,
    cell_rule,
    cell_rule_words,
    constant_rule,
    difference_rule,
    gain_rule,
    missing_data,
    row_difference,
    seed_sd,
    seed_variance,
    table1_cells,
    table1_comparisons,
    with_seed_spread,
    versus_constant_estimate,
)
from attnbook.studies.kovaleva.paper.disabling_rows import cross_fit_words, disabling_comparisons
from attnbook.studies.kovaleva.paper.text import (
    agreement_markdown,
    caution_markdown,
    classifier_confound,
    disabling_findings,
    disabling_setting,
    finetune_markdown,
    recipe_confound,
    setting_markdown,
    table1_note,
)
from attnbook.studies.kovaleva.reference import CONSTANT_PREDICTOR_SHARE, constant_reason, is_constant_predictor

__all__: list[str] = [
    # claims
    "PAPER", "PAPER_TABLE1", "PAPER_DISABLING", "PAPER_MODEL",
    # which classifiers learned (the criterion from attnbook.studies.kovaleva.reference)
    "CONSTANT_PREDICTOR_SHARE", "is_constant_predictor", "constant_reason", "row_reason", "not_learned_seeds",
    "paper_constant_reason", "learned_tasks", "constant_predictors", "is_missing",
    # rows: the rules, the helpers, the comparisons
    "SEED_SD", "DEFAULT_SEED_SD", "PAPER_MAPS", "RTE_DEV", "F1_RULE", "SHARE_RULE", "FRAME_RULE", "GAIN_POSITIVE",
    "VERTICAL_RULE", "MATCH_RULE", "HETEROGENEOUS_SLACK", "LAYER_DROP_EFFECT", "LAYER_DROP_RULE", "TRANSFER_REASON",
    "FEATURE_ROWS", "seed_sd", "cell_rule", "cell_rule_words", "constant_rule", "difference_rule", "gain_rule",
    "sampling_rule", "layer_one_rule", "seed_variance", "with_seed_spread",
    "in_range", "last_layers", "most_changed_layers", "holds_estimate", "not_run_row", "row_difference",
    "missing_data", "versus_constant_estimate",
    "table1_cells", "table1_comparisons", "beside_table1", "classifier_gap_words", "taxonomy_comparisons",
    "fig2_comparisons", "framenet_comparisons",
    "change_comparisons", "top_cls_feature", "peak_layer", "feature_claims", "feature_comparisons", "feature_rows",
    "disabling_comparisons", "cross_fit_words",
    # text
    "table1_note", "finetune_markdown", "recipe_confound", "classifier_confound", "setting_markdown",
    "agreement_markdown", "caution_markdown",
    "disabling_setting", "disabling_findings",
]
