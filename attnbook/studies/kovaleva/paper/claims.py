"""Kovaleva et al. (2019), *Revealing the Dark Secrets of BERT*: the paper's numbers, each with its section, figure or
table.

Data only: :data:`PAPER` (§4.1-4.5), :data:`PAPER_TABLE1` (Table 1) and :data:`PAPER_DISABLING` (§4.6, §5), all for
bert-base-uncased (12 layers x 12 heads; heads written ``layer-head``, 1-based, as the paper writes them). The rows
that read them are in :mod:`~attnbook.studies.kovaleva.paper.rows` (Table 1's in
:mod:`~attnbook.studies.kovaleva.paper.table1_rows`), the sentences in :mod:`~attnbook.studies.kovaleva.paper.text`.

:data:`PAPER_TABLE1` is defined in :mod:`attnbook.studies.kovaleva.reference`, beside the constant predictor, because
the Table 1 measurement (:mod:`attnbook.studies.kovaleva.table1`) sets it beside its own scores and must import it
without importing this package (which imports the measurement).
"""
from __future__ import annotations

from typing import Any

from attnbook.studies.kovaleva.reference import PAPER_TABLE1

#: Kovaleva et al.'s numbers used by the comparisons (section or figure in the comment).
PAPER: dict[str, Any] = {
    "cnn_f1": 0.86,  # §4.1, F1 of the 8-layer CNN on ~400 annotated maps
    "heterogeneous": (0.32, 0.61),  # §4.1 / Fig. 2: MRPC 32% ... QQP 61%
    "vertical_min": 1 / 3,  # Fig. 2: Vertical is at least about a third of the maps on every task
    "annotated_vertical": 0.30,  # §4.1: "Vertical" is 30% of the annotated maps
    "framenet_sentences": 473,  # §4.2
    "framenet_top": (0.209, 0.201),  # §4.2: the two heads above the 99th percentile
    "framenet_n_heads": 2,
    "finetune_gain": 35.9,  # §4.3: mean gain of fine-tuning over pre-trained BERT, 7 tasks
    # §4.5 / Fig. 7: what the last layer's [CLS] attends to most
    "cls_top": {"MRPC": "[SEP]", "SST-2": "[SEP]", "QQP": "[SEP]", "MNLI-m": "[SEP]",
                "STS-B": "punctuation", "RTE": "punctuation", "QNLI": "punctuation"},
    "changed_last_two_except": ("QQP",),  # §4.3 / Fig. 5: the last two layers change most, except on QQP
    "finetune_epochs": 3,  # §3: fine-tuned with batch size 32 for 3 epochs (Devlin et al.'s recipe)
}

#: Kovaleva et al. §4.6 (Fig. 8-9) and §5: disabling heads and layers of fine-tuned bert-base (chapter 5).
PAPER_DISABLING: dict[str, Any] = {
    "tasks_improved": "7 of 7",  # §4.6 / Fig. 8: on every task some head's removal raises the score
    "best_gain": {"MRPC": 1.2, "STS-B": 0.1},  # §4.6: the best single-head gains quoted (points; others in Fig. 8)
    "random_head_tasks": ("MRPC", "RTE"),  # §4.6: disabling a random head helps on average
    "rte_layer1": 3.2,  # §4.6 / Fig. 9: disabling layer 1 on RTE (points)
    "layer_gain": "some (e.g. RTE)",  # Fig. 9: tasks where disabling a layer helps
    "largest_layer_drop": "-0.2 (QNLI, MNLI)",  # §4.6 / Fig. 9: disabling the first layer drops QNLI, MNLI by <= 0.2
    "match_heads": ("4-1", "2-12"),  # §5: heads STS-B and RTE depend on most; they match words across sentences
}

#: the paper's model (Kovaleva et al. §3: bert-base-uncased, GLUE dev sets)
PAPER_MODEL = "bert-base-uncased"

__all__ = ["PAPER", "PAPER_TABLE1", "PAPER_DISABLING", "PAPER_MODEL"]
