"""What a Table 1 cell is set beside: Kovaleva et al.'s cell and the task's constant predictor.

Shared by the measurement (:mod:`attnbook.studies.kovaleva.table1`, which puts the paper's cell beside ours and flags
the classifiers that learned nothing) and the comparisons (:mod:`attnbook.studies.kovaleva.paper`, which judges
them). It imports neither, so both import it at the top of the module without an import cycle; the paper package
re-exports every name here (:mod:`attnbook.studies.kovaleva.paper.claims` lists :data:`PAPER_TABLE1` with the
paper's other numbers).
"""
from __future__ import annotations

from typing import Any, Mapping

from attnbook.studies.heads_off.learned import CONSTANT_PREDICTOR_SHARE
from attnbook.studies.heads_off.learned import constant_reason as learned_constant_reason

#: Kovaleva et al., Table 1 (GLUE dev sets, bert-base-uncased): task -> init -> (score, accuracy or None).
#: The score is F1 for MRPC and QQP (accuracy second), Pearson x 100 for STS-B (labelled "Acc" in the paper,
#: see :mod:`attnbook.data.glue_metrics`), accuracy elsewhere.
PAPER_TABLE1: dict[str, dict[str, tuple[float, float | None]]] = {
    "MRPC": {"pretrained": (0.0, 31.6), "random_ft": (81.2, 68.3), "pretrained_ft": (87.9, 82.3)},
    "STS-B": {"pretrained": (33.1, None), "random_ft": (2.9, None), "pretrained_ft": (82.7, None)},
    "SST-2": {"pretrained": (49.1, None), "random_ft": (80.5, None), "pretrained_ft": (92.0, None)},
    "QQP": {"pretrained": (0.0, 60.9), "random_ft": (0.0, 63.2), "pretrained_ft": (65.2, 78.6)},
    "RTE": {"pretrained": (52.7, None), "random_ft": (52.7, None), "pretrained_ft": (64.6, None)},
    "QNLI": {"pretrained": (52.8, None), "random_ft": (49.5, None), "pretrained_ft": (84.4, None)},
    "MNLI-m": {"pretrained": (31.7, None), "random_ft": (61.0, None), "pretrained_ft": (78.6, None)},
}

def is_constant_predictor(row: Mapping[str, Any]) -> bool:
    """Whether a row of :func:`attnbook.studies.kovaleva.table1.table1` gives one class to at least
    :data:`~attnbook.studies.heads_off.learned.CONSTANT_PREDICTOR_SHARE` of the dev examples (regression rows have no
    share and never are)."""
    share = row.get("top_class_share", float("nan"))
    return share == share and share >= CONSTANT_PREDICTOR_SHARE


def constant_reason(row: Mapping[str, Any]) -> str:
    """Why the classifier of a Table 1 row is no better than its constant predictor, or ``""`` when it is better:
    the first two checks of the book's one decision (:func:`attnbook.studies.heads_off.learned.constant_reason`) on
    the row's numbers (``top_class_share``, ``vs_constant_low``/``_high``, ``constant``, ``metric``)."""
    return learned_constant_reason(row.get("top_class_share", float("nan")), row.get("vs_constant_low", float("nan")),
                                   row.get("vs_constant_high", float("nan")), row.get("constant", float("nan")),
                                   row.get("metric", ""))
