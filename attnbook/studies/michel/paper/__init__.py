"""Michel, Levy & Neubig (2019) beside this run, chapter 6's front door to the paper: its numbers, the "paper vs this
run" rows and the chapter's sentences. Callers use ``paper.X`` for every name below; the package holds them by what
they are:

* :mod:`~attnbook.studies.michel.paper.claims` - :data:`PAPER`, the paper's numbers with their section or table, and
  :data:`NOT_REPRODUCED` with the machine-translation claims it leaves out, :data:`PAPER_MT` (data only);
* :mod:`~attnbook.studies.michel.paper.rows` - the rows (:func:`comparisons` and the ``*_rows`` functions, their
  thresholds in :data:`THRESHOLDS`), the estimates they judge, and the tables beside the paper's (:func:`table4`,
  :func:`pruning_summary`);
* :mod:`~attnbook.studies.michel.paper.text` - the sentences from the numbers, and the closing summary
  (:func:`agreement_markdown`, written by :func:`attnbook.verdict.summary_markdown`; :func:`setting_markdown` gives
  its setting).

The measurements are :mod:`attnbook.studies.michel.importance` (§3.2–§4.1), :mod:`attnbook.studies.michel.pruning`
(§4.2–§4.3) and :mod:`attnbook.studies.michel.dynamics` (§6). Only the BERT half of the paper is reproduced; its model
is bert-base fine-tuned on MNLI unless noted.
"""
from __future__ import annotations

from attnbook.studies.michel.paper.claims import MT_REASON, NOT_REPRODUCED, PAPER, PAPER_MT
from attnbook.studies.michel.paper.rows import (
    THRESHOLDS,
    ablation_rows,
    across_rows,
    comparisons,
    dynamics_rows,
    heads_detectable,
    masking_rows,
    mean_head_effect,
    mt_row,
    no_effect_counts,
    one_head_all_rows,
    one_head_rows,
    paper_prunable_share,
    paper_r_low,
    prunable_rule,
    pruning_rows,
    pruning_summary,
    rank_interval,
    seed_rows,
    speed_rows,
    speed_share,
    table4,
)
from attnbook.studies.michel.paper.text import (
    ablation_markdown,
    across_markdown,
    agreement_markdown,
    disable_vs_mask_markdown,
    halves_markdown,
    importance_markdown,
    not_reproduced_markdown,
    one_head_markdown,
    seeds_agreement_markdown,
    seeds_markdown,
    setting_markdown,
)

__all__: list[str] = [
    # claims
    "PAPER", "NOT_REPRODUCED", "PAPER_MT", "MT_REASON",
    # rows and tables
    "THRESHOLDS", "no_effect_counts", "mean_head_effect", "ablation_rows", "one_head_rows", "one_head_all_rows",
    "across_rows", "pruning_rows", "seed_rows", "speed_share", "speed_rows", "dynamics_rows", "masking_rows",
    "comparisons", "table4", "pruning_summary", "mt_row", "heads_detectable", "rank_interval", "paper_r_low",
    "paper_prunable_share", "prunable_rule",
    # text
    "not_reproduced_markdown", "seeds_markdown", "ablation_markdown", "one_head_markdown", "seeds_agreement_markdown",
    "across_markdown", "importance_markdown", "halves_markdown", "disable_vs_mask_markdown", "setting_markdown",
    "agreement_markdown",
]
