"""Clark et al. (2019), "What does BERT look at?": the paper's numbers, each with the section or table it is from.

Data only: the comparisons that read these numbers are in :mod:`~attnbook.studies.clark.paper.surface_rows` (§3) and
:mod:`~attnbook.studies.clark.paper.rows` (§4-5), the tables that set them beside this run's in
:mod:`~attnbook.studies.clark.paper.tables`, the sentences in :mod:`~attnbook.studies.clark.paper.text`. All numbers
are for bert-base-uncased (12 layers x 12 heads); layers and heads are 1-based, as the paper writes them.
"""
from __future__ import annotations

from dataclasses import dataclass

# =============================================================================================
# §3 surface patterns (chapter 1)
# =============================================================================================

#: Clark et al. §3 numbers for bert-base (12 layers x 12 heads), 1-based layers.
SURFACE = {
    "prev_heads_layers": [2, 4, 7, 8],  # §3.1: heads with > 50% attention to the previous token
    "next_heads_layers": [1, 2, 2, 3, 6],  # §3.1: ... to the next token
    "sep_majority_layers": [6, 7, 8, 9, 10],  # §3.2: layers where over half of the attention goes to [SEP]
    "sep_sep_share": 0.9,  # §3.2: from [SEP], over 90% of the attention stays on [SEP]
    "cls_entropy_last_layer": 3.89,  # §3.3: mean entropy from [CLS] in the last layer (nats)
    "segment_pieces": 128,  # §3.2: "most of our segments are 128 tokens long" (at most 128 pieces each)
    "grad_sep_small_from_layer": 5,  # §3.2, Fig. 3: gradients to [SEP] become small from layer 5 on
    "n_layers": 12,
}

#: the paper's model and its shape (Clark et al. §3: bert-base-uncased, 12 layers x 12 heads)
PAPER_MODEL, PAPER_LAYERS, PAPER_HEADS = "bert-base-uncased", 12, 12

# =============================================================================================
# §4 heads as parsers and coreference resolvers (chapter 2)
# =============================================================================================

#: Clark §4.1: the share of words split into several word pieces in their data ("about 8%")
SPLIT_WORD_SHARE = 0.08


@dataclass(frozen=True)
class PaperRow:
    """One row of Clark et al. Table 1 (BERT-base, WSJ/SD): best head, its accuracy, baseline and offset."""

    head: str
    accuracy: float
    baseline: float
    offset: int


#: Clark et al. (2019), Table 1: relation -> best head (1-based), accuracy %, baseline %, best offset
TABLE1: dict[str, PaperRow] = {
    "All": PaperRow("7-6", 34.5, 26.3, 1),
    "prep": PaperRow("7-4", 66.7, 61.8, -1),
    "pobj": PaperRow("9-6", 76.3, 34.6, -2),
    "det": PaperRow("8-11", 94.3, 51.7, 1),
    "nn": PaperRow("4-10", 70.4, 70.2, 1),
    "nsubj": PaperRow("8-2", 58.5, 45.5, 1),
    "amod": PaperRow("4-10", 75.6, 68.3, 1),
    "dobj": PaperRow("8-10", 86.8, 40.0, -2),
    "advmod": PaperRow("7-6", 48.8, 40.2, 1),
    "aux": PaperRow("4-10", 81.1, 71.5, 1),
    "poss": PaperRow("7-6", 80.5, 47.7, 1),
    "auxpass": PaperRow("4-10", 82.5, 40.5, 1),
    "ccomp": PaperRow("8-1", 48.8, 12.4, -2),
    "mark": PaperRow("8-2", 50.7, 14.5, 2),
    "prt": PaperRow("6-7", 99.1, 91.4, -1),
}

#: Table 1's test set: how many edges of each relation Clark et al. scored, on the PTB development set (WSJ §22,
#: Stanford Dependencies), as their released analysis notebook prints them (``Syntax_Analysis.ipynb`` of
#: github.com/clarkkev/attention-analysis); "All" is every word of that set (WSJ §22: 40,117 words in 1,700 sentences,
#: of which the notebook keeps 1,696). The sampling error of each Table 1 number follows from these counts.
TABLE1_EDGES: dict[str, int] = {
    "All": 40117, "prep": 3760, "pobj": 3720, "det": 3337, "nn": 3192, "nsubj": 2804, "amod": 2505, "dobj": 1591,
    "advmod": 1241, "aux": 1237, "poss": 708, "auxpass": 286, "ccomp": 557, "mark": 420, "prt": 116,
}

#: the precision Table 1 prints its accuracies with (points)
TABLE1_PRECISION = 0.1

#: the relations of Clark's Figure 5, in its order
FIGURE5_RELATIONS = ("pobj", "det", "dobj", "poss", "auxpass")

#: Clark et al. (2019) Table 2: antecedent selection accuracy (%) on CoNLL-2012,
#: bert-base-uncased, documents truncated to 128 tokens. Neural coref (Wiseman et
#: al. 2015) is reported overall only, on full documents with its own mentions.
TABLE2: dict[str, dict[str, float | None]] = {
    "Nearest": {"all": 27, "pronoun": 29, "proper": 29, "nominal": 19},
    "Head-word match": {"all": 52, "pronoun": 47, "proper": 67, "nominal": 40},
    "Rule-based": {"all": 69, "pronoun": 70, "proper": 77, "nominal": 60},
    "Neural coref": {"all": 83, "pronoun": None, "proper": None, "nominal": None},
    "Head 5-4": {"all": 65, "pronoun": 64, "proper": 73, "nominal": 58},
}

#: the precision Table 2 prints its accuracies with (points): whole points
TABLE2_PRECISION = 1.0

#: the paper's best coreference head (1-based layer-head), Clark et al. §4.3 / Figure 5 (65.1%)
COREF_HEAD = "5-4"

#: Clark et al. §4.3's own words for the best head's two margins: "improving by over 10 accuracy points on the
#: string-matching baseline and performing close to the rule-based system" (Table 2: +13 and -4). The paper gives no
#: count of mentions (its coreference code was not released), so these words, not a sampling error, size the claims:
#: an improvement is over 10 points, and a gap under those 10 points is "close".
COREF_GAIN_OVER_HEAD_MATCH = 10.0

# =============================================================================================
# §5 probing classifiers (chapter 2)
# =============================================================================================

#: Clark et al. (2019) Table 3, UAS on the PTB/SD dev set (BERT-base), rows of
#: :data:`attnbook.studies.clark.probes.TABLE3_NAMES`
TABLE3: dict[str, float] = {
    "right_branching": 26.0,
    "distances_words": 58.0,
    "random_init_attn_words": 30.0,
    "attn": 61.0,
    "attn_words": 77.0,
}

#: Table 3's test set: the words of the PTB development set (WSJ §22: 40,117 words in 1,700 sentences), where Clark
#: §5 evaluates every probe; Table 3 prints UAS to the whole point
TABLE3_WORDS = 40117
TABLE3_PRECISION = 1.0

#: Clark §5 findings read off Table 3 as margins (row A minus row B, UAS points), with the paper's wording
TABLE3_FINDINGS: tuple[tuple[str, str, str], ...] = (
    ("attn_words", "distances_words", "attention adds to words and distances"),
    ("attn_words", "random_init_attn_words", "pretraining, not the architecture, gives the maps their syntax"),
    ("attn_words", "attn", "word vectors help choose heads"),
    ("attn", "distances_words", "attention alone rivals words + distances"),
    ("random_init_attn_words", "right_branching", "random-init maps barely beat right-branching"),
)
