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

from attnbook.core.errors import ParameterError
from attnbook.data.glue import TaskSpec, task_spec
from attnbook.stats import accuracy, f1_binary, pearson, spearman


class _Metrics(dict):
    """Task name -> metric; a task the table does not name (a Hugging Face dataset, :class:`~attnbook.data.glue.
    HubTaskSpec`, or a book alias such as ``sst2``) is scored as its book task, else by accuracy (Pearson r when
    its label is a number). An unknown name raises :func:`~attnbook.data.glue.task_spec`'s ParameterError."""

    def __missing__(self, name: str) -> str:
        spec = task_spec(name)
        if spec.name in self:
            return self[spec.name]
        return "pearson" if spec.is_regression else "accuracy"


#: The metric Kovaleva et al.'s Table 1 shows first for each task (``x 100`` in the table).
TABLE1_METRIC: dict[str, str] = _Metrics({
    "MRPC": "f1",
    "STS-B": "pearson",  # the paper writes "Acc"; see the module docstring
    "SST-2": "accuracy",
    "QQP": "f1",
    "RTE": "accuracy",
    "QNLI": "accuracy",
    "MNLI-m": "accuracy",
    "MNLI-mm": "accuracy",
})

#: Tasks whose Table 1 cell is "F1/Acc".
F1_TASKS = ("MRPC", "QQP")


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


def table1_scores(task: str | TaskSpec, predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """:func:`task_score` of every row of ``predictions[resample, example]`` against ``labels[resample, example]``
    at once (x 100; NaN where Pearson r is undefined): what a bootstrap of the Table 1 score needs, without a
    Python call per resample. Each row's number is the one :func:`glue_metrics` and :func:`task_score` give it."""
    spec = task_spec(task)
    pred, gold = np.atleast_2d(np.asarray(predictions)), np.atleast_2d(np.asarray(labels))
    if pred.shape != gold.shape or pred.shape[1] == 0:
        raise ParameterError(f"predictions {pred.shape} and labels {gold.shape} must be the same, non-empty shape")
    name = TABLE1_METRIC[spec.name]
    if name == "accuracy":
        return 100.0 * np.mean(pred == gold, axis=1)
    if name == "f1":
        tp = np.sum((pred == 1) & (gold == 1), axis=1).astype(np.float64)
        wrong = np.sum(pred != gold, axis=1).astype(np.float64)  # false positives + false negatives
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(tp == 0, 0.0, 100.0 * 2.0 * tp / (2.0 * tp + wrong))
    x, y = pred.astype(np.float64), gold.astype(np.float64)
    xc, yc = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    denom = np.sqrt(np.sum(xc * xc, axis=1) * np.sum(yc * yc, axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(np.sum(xc * yc, axis=1) / denom, -1.0, 1.0)
    return 100.0 * np.where((denom == 0) | ~np.isfinite(denom), np.nan, r)


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
