"""Clark et al. (2019), "What does BERT look at?": the paper's numbers and "paper vs this run" for chapters 1-3.

What lives where: :mod:`~attnbook.studies.clark.paper.claims` holds the paper's numbers, each with its section or
table (§3 :data:`SURFACE`, §4.1 :data:`SPLIT_WORD_SHARE`, §4.2 :data:`TABLE1`, §4.3 :data:`TABLE2` and
:data:`COREF_HEAD`, §5 :data:`TABLE3` and :data:`TABLE3_FINDINGS`), and computes nothing;
:mod:`~attnbook.studies.clark.paper.surface_rows` (§3), :mod:`~attnbook.studies.clark.paper.rows` (§4-5) and
:mod:`~attnbook.studies.clark.paper.cluster_rows` (§6) turn this run's measurements into comparison rows, each
judged by a rule of :mod:`attnbook.verdict` on a bootstrap interval (the resample counts, the book's thresholds and
each rule's tolerance, with its source, live beside them), the best head of many chosen inside the estimate by
:mod:`~attnbook.studies.clark.paper.crossfit`; :mod:`~attnbook.studies.clark.paper.tables` sets the paper's Tables
1-3 beside this run's (:class:`Report`); and :mod:`~attnbook.studies.clark.paper.text` writes the sentences
generated from the numbers, the closing summaries through :func:`attnbook.verdict.summary_markdown`;
:mod:`~attnbook.studies.clark.paper.detect` quotes what each row's rule compared and says what an undecided row's
sample could detect. Chapters and tests use the names below as ``paper.X``.
"""
from __future__ import annotations

from attnbook.studies.clark.paper.claims import (
    COREF_HEAD,
    FIGURE5_RELATIONS,
    PAPER_HEADS,
    PAPER_LAYERS,
    PAPER_MODEL,
    SPLIT_WORD_SHARE,
    SURFACE,
    TABLE1,
    TABLE1_EDGES,
    TABLE2,
    TABLE3,
    TABLE3_FINDINGS,
    TABLE3_WORDS,
    PaperRow,
)
from attnbook.studies.clark.paper.cluster_rows import (
    K_RANGE,
    N_RESAMPLES_CLUSTERS,
    SILHOUETTE_RULE,
    STRESS_RULE,
    best_cut,
    clustering_comparison,
)
from attnbook.studies.clark.paper.detect import bootstrap_detectable, compared, holds_detectable
from attnbook.studies.clark.paper.rows import (
    COREF_CLOSE_RULE,
    COREF_GAIN_RULE,
    N_RESAMPLES,
    SPECIALIST_MARGIN,
    convergence_text,
    coref_comparison,
    last_epoch_fall,
    margin_rule,
    paper_spread,
    probe_comparison,
    share_rule,
    syntax_comparison,
    table1_rule,
    table3_rule,
)
from attnbook.studies.clark.paper.surface_rows import (
    BROAD_SHARE,
    CLS_ENTROPY_RULE,
    gradient_layers,
    in_band,
    mlm_head_rows,
    paper_band,
    relative_layers,
    resampled_surface,
    surface_comparison,
)
from attnbook.studies.clark.paper.tables import (
    Report,
    paper_table2,
    table1,
    table1_frame,
    table2,
    table2_frame,
    table3,
    table3_frame,
)
from attnbook.studies.clark.paper.text import (
    agreement_markdown,
    baselines_markdown,
    distance_setting,
    mlm_markdown,
    random_init_markdown,
    split_words_text,
)

__all__ = [
    # claims: the paper's numbers
    "SURFACE", "PAPER_MODEL", "PAPER_LAYERS", "PAPER_HEADS", "SPLIT_WORD_SHARE", "PaperRow", "TABLE1",
    "TABLE1_EDGES", "FIGURE5_RELATIONS", "TABLE2", "COREF_HEAD", "TABLE3", "TABLE3_FINDINGS", "TABLE3_WORDS",
    # rows: "paper vs this run"
    "N_RESAMPLES", "BROAD_SHARE", "SPECIALIST_MARGIN", "CLS_ENTROPY_RULE", "COREF_GAIN_RULE", "COREF_CLOSE_RULE",
    "paper_spread", "paper_band", "in_band", "gradient_layers", "last_epoch_fall", "convergence_text", "margin_rule",
    "table1_rule", "table3_rule", "share_rule", "relative_layers",
    "resampled_surface", "surface_comparison", "mlm_head_rows", "syntax_comparison", "coref_comparison",
    "probe_comparison", "N_RESAMPLES_CLUSTERS", "K_RANGE", "SILHOUETTE_RULE", "STRESS_RULE", "best_cut",
    "clustering_comparison",
    # detect: what a row compared, what an undecided row's sample could detect
    "compared", "bootstrap_detectable", "holds_detectable",
    # tables: the paper's columns beside this run's
    "Report", "table1_frame", "table1", "table2_frame", "paper_table2", "table2", "table3_frame", "table3",
    # text: sentences from the numbers, the closing summaries
    "mlm_markdown", "split_words_text", "baselines_markdown", "random_init_markdown",
    "agreement_markdown", "distance_setting",
]
