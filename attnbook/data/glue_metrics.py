"""GLUE metrics, and the one number per task that Kovaleva et al.'s Table 1 shows.

GLUE (Wang et al., 2018) scores SST-2, RTE, QNLI and MNLI by accuracy, MRPC and
QQP by F1 of the positive class (paraphrase / duplicate) and accuracy, and the
regression task STS-B by Pearson and Spearman correlation with the gold
similarity scores. Kovaleva et al. (Table 1, §4.3) print "F1/Acc" for MRPC and
QQP and a single number elsewhere.

STS-B: the paper's metric column says "Acc", which is not defined for a
regression task. Their code base (pytorch-pretrained-BERT's GLUE example) scores
STS-B by Pearson and Spearman correlation, and GLUE lists Pearson first, so
:func:`task_score` reports **Pearson r x 100** for STS-B (Spearman is computed
too). The book says so wherever it shows that number.

All functions are pure NumPy; the tests check them against scikit-learn and SciPy.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.glue import TaskSpec, task_spec

#: The metric Kovaleva et al.'s Table 1 shows first for each task (``x 100`` in the table).
TABLE1_METRIC: dict[str, str] = {
    "MRPC": "f1",
    "STS-B": "pearson",  # the paper writes "Acc"; see the module docstring
    "SST-2": "accuracy",
    "QQP": "f1",
    "RTE": "accuracy",
    "QNLI": "accuracy",
    "MNLI-m": "accuracy",
    "MNLI-mm": "accuracy",
}

#: Tasks whose Table 1 cell is "F1/Acc".
F1_TASKS = ("MRPC", "QQP")


def _pair(pred: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pred, gold = np.asarray(pred).ravel(), np.asarray(gold).ravel()
    if pred.shape != gold.shape:
        raise ParameterError(f"{pred.size} predictions for {gold.size} gold labels")
    if pred.size == 0:
        raise EmptyDataError("no predictions to score")
    return pred, gold


def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    """Share of predictions equal to the gold label."""
    pred, gold = _pair(pred, gold)
    return float(np.mean(pred == gold))


def f1_binary(pred: np.ndarray, gold: np.ndarray, positive: int = 1) -> float:
    """F1 of the ``positive`` class; 0 when there is no true positive (e.g. nothing predicted positive).

    This is how an untrained classifier that always predicts "not a paraphrase"
    scores 0 F1 on MRPC in Kovaleva et al.'s Table 1.
    """
    pred, gold = _pair(pred, gold)
    tp = float(np.sum((pred == positive) & (gold == positive)))
    fp = float(np.sum((pred == positive) & (gold != positive)))
    fn = float(np.sum((pred != positive) & (gold == positive)))
    if tp == 0.0:
        return 0.0
    return 2.0 * tp / (2.0 * tp + fp + fn)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r; NaN when either side is constant (the correlation is undefined)."""
    x, y = _pair(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    xc, yc = x - x.mean(), y - y.mean()
    denom = float(np.sqrt(np.sum(xc * xc) * np.sum(yc * yc)))
    if denom == 0.0 or not np.isfinite(denom):
        return float("nan")
    return float(np.clip(np.sum(xc * yc) / denom, -1.0, 1.0))


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x`` with ties given the mean of the ranks they span."""
    x = np.asarray(x, dtype=np.float64).ravel()
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(x.size, dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], x.size]
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + 1 + e) / 2.0  # mean of ranks s+1 .. e
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks; NaN when either side is constant."""
    x, y = _pair(x, y)
    return pearson(average_ranks(x), average_ranks(y))


def predictions_from_logits(task: str | TaskSpec, logits: np.ndarray) -> np.ndarray:
    """Class index (argmax) per example, or the single regression output for STS-B."""
    spec = task_spec(task)
    logits = np.asarray(logits)
    if logits.ndim == 1:
        logits = logits[:, None]
    if logits.shape[1] != spec.num_labels:
        raise ParameterError(f"{spec.name} needs {spec.num_labels} output(s) per example, got {logits.shape[1]}")
    if spec.is_regression:
        return logits[:, 0].astype(np.float64)
    return logits.argmax(axis=1)


def glue_metrics(task: str | TaskSpec, predictions: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """The GLUE metrics of ``task`` as fractions (not x 100).

    Classification tasks get ``accuracy``; MRPC and QQP also ``f1`` (positive
    class 1); STS-B gets ``pearson`` and ``spearman`` (``predictions`` are scores).
    """
    spec = task_spec(task)
    if spec.is_regression:
        return {"pearson": pearson(predictions, labels), "spearman": spearman(predictions, labels)}
    out = {"accuracy": accuracy(predictions, labels)}
    if spec.name in F1_TASKS:
        out["f1"] = f1_binary(predictions, labels, positive=1)
    return out


def task_score(task: str | TaskSpec, metrics: Mapping[str, float]) -> float:
    """The number Kovaleva et al.'s Table 1 prints for ``task``, x 100.

    MRPC and QQP: F1 (the table's "F1/Acc" shows accuracy second); STS-B:
    Pearson r (the table labels it "Acc", see the module docstring); every other
    task: accuracy.
    """
    spec = task_spec(task)
    name = TABLE1_METRIC[spec.name]
    if name not in metrics:
        raise ParameterError(f"{spec.name} is scored by {name!r}, which is not in {sorted(metrics)}")
    return 100.0 * float(metrics[name])


def constant_baselines(task: str | TaskSpec, labels: np.ndarray) -> dict[str, float]:
    """Table 1 score (x 100) of a classifier that always predicts the same class, per class label.

    Several cells of Kovaleva et al.'s Table 1 equal such a constant predictor on
    the full dev sets: e.g. MRPC "pre-trained" 0/31.6 (always "not paraphrase",
    129 of 408) and "random init + fine-tuning" 81.2/68.3 (always "paraphrase"),
    SST-2 "pre-trained" 49.1 (always negative, 428 of 872), RTE 52.7 (always
    "entailment", 146 of 277). Empty for the regression task STS-B, where a
    constant prediction has no correlation.
    """
    spec = task_spec(task)
    if spec.labels is None:
        return {}
    labels = np.asarray(labels)
    return {
        name: task_score(spec, glue_metrics(spec, np.full(labels.shape, i), labels))
        for i, name in enumerate(spec.labels)
    }
