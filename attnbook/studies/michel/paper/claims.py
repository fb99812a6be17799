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
    "ablation_pearson_heads": 144,  # §3.4: the heads that r is over (bert-base, 12 x 12)
    "prunable_share": 0.40,  # §4.2, Fig. 3: share of BERT's heads pruned by I_h with little loss (MNLI)
    "prunable_share_by_task": {"SST-2": 0.60, "CoLA": 0.50, "MRPC": 0.50},  # App. B: the same on other GLUE tasks
    "pruning_step": 0.10,  # §4.2: 10% of all heads are pruned per step, so a prunable share is read to one step
    "table4_share": 0.50,  # §4.3, Table 4: share of heads removed for the speed test
    # §4.3, Table 4 (GTX 1080Ti): batch size -> (original ex/s, pruned ex/s, gain %)
    "table4": {1: (17.0, 17.3, 1.9), 4: (67.3, 69.1, 2.7), 16: (114.0, 134.0, 17.5), 64: (124.7, 146.6, 17.5)},
}

#: What of Michel et al. is not reproduced here, and why (the chapter prints it).
NOT_REPRODUCED = ("the machine-translation half of the paper: the WMT single-head and one-head-per-layer "
                  "ablations (Tables 1-2), the encoder-decoder attention of Fig. 4 and the IWSLT training dynamics of "
                  "§6; this book has no translation model, so only the BERT experiments are reproduced")

#: Michel et al.'s machine-translation claims, each a "not reproduced" row of chapter 6 (section or table -> (what,
#: the paper's finding)); the reason is :data:`MT_REASON`.
PAPER_MT: dict[str, tuple[str, str]] = {
    "§3.2 Table 1 (WMT)": ("heads whose removal changes BLEU significantly (Enc-Enc)",
                           "8 of 96, 4 of them raise it (base 36.05 BLEU)"),
    "§3.3 Table 2 (WMT)": ("layers reduced to one head with a significant change",
                           "half of the WMT layers (App. A); Enc-Dec layer 6: -13.56 BLEU"),
    "§3.4 (WMT)": ("Pearson r of single-head Δ, newstest vs MTNT", "0.56"),
    "§4.2 Fig. 3 (WMT)": ("share of heads prunable by I_h with little loss", "about 20%"),
    "§5 Fig. 4 (WMT)": ("Enc-Dec attention is the most sensitive to pruning",
                        "Enc-Dec: BLEU about 0 beyond 60% pruned; Enc-Enc, Dec-Dec: about 30 BLEU with 20% left"),
    "§6 Fig. 5 (IWSLT)": ("heads become important early in training, not at once",
                          "epochs 1-2: score falls with the share pruned; from epoch 10, 40% prunable at 85-90% BLEU"),
}

#: why :data:`PAPER_MT` is not reproduced (each of its rows says it)
MT_REASON = "needs a machine-translation model (WMT14 En-Fr, IWSLT14 De-En), which this book does not have"
