"""What Michel, Levy & Neubig (2019) report: the numbers chapter 6 compares with, with their section or table, and
what of the paper the chapter does not reproduce.

Data only. The comparison rows that read these numbers are in :mod:`attnbook.studies.michel.paper.rows`, the
sentences in :mod:`attnbook.studies.michel.paper.text`. The paper's model is bert-base fine-tuned on MNLI unless
noted.
"""
from __future__ import annotations

from typing import Any

#: Michel et al.'s numbers used by the comparisons (section or table in the comment). Only the BERT half of the paper
#: is reproduced: its machine-translation half (WMT Tables 1-2, the encoder-decoder attention of Fig. 4, the IWSLT
#: training dynamics of §6) has no counterpart here (see :data:`NOT_REPRODUCED`).
PAPER: dict[str, Any] = {
    "one_head_bert": "most heads: no significant change (BERT on MNLI, §3.2)",
    "layers_one_head_significant": (0, 12),  # §3.3, Table 3 (BERT): layers where one head alone differs significantly
    "ablation_pearson_across": 0.68,  # §3.4: Pearson r of the single-head Δ, MNLI-matched vs mismatched
    "prunable_share": 0.40,  # §4.2, Fig. 3: share of BERT's heads pruned by I_h with little loss
    "table4_share": 0.50,  # §4.3, Table 4: share of heads removed for the speed test
    # §4.3, Table 4 (GTX 1080Ti): batch size -> (original ex/s, pruned ex/s, gain %)
    "table4": {1: (17.0, 17.3, 1.9), 4: (67.3, 69.1, 2.7), 16: (114.0, 134.0, 17.5), 64: (124.7, 146.6, 17.5)},
}

#: What of Michel et al. is not reproduced here, and why (the chapter prints it).
NOT_REPRODUCED = ("the machine-translation half of the paper: the WMT single-head and one-head-per-layer "
                  "ablations (Tables 1-2), the encoder-decoder attention of Fig. 4 and the IWSLT training dynamics of "
                  "§6; this book has no translation model, so only the BERT experiments are reproduced")
