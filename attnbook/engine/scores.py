"""Score functions of the sweeps: one number from a classifier's outputs on the dev examples.

A ``score_fn(logits[example, class], labels[example]) -> float`` takes numpy arrays. The sweeps
(:mod:`attnbook.engine.sweeps`) score every head configuration with one, and cached results name it by
:func:`score_name`, so a score function is a named module-level function (or says its name in a
``score_name`` attribute, as :func:`task_score_fn`'s do).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from attnbook.data.glue_metrics import glue_metrics, predictions_from_logits, task_score

#: ``score_fn(logits[example, class], labels[example]) -> float`` (numpy arrays)
ScoreFn = Callable[[np.ndarray, np.ndarray], float]


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Share of examples whose arg-max class is the gold label."""
    return float(np.mean(np.argmax(logits, axis=-1) == labels))


def accuracy_points(logits: np.ndarray, labels: np.ndarray) -> float:
    """:func:`accuracy` x 100, in points (Michel et al. report Δ in accuracy points)."""
    return 100.0 * accuracy(logits, labels)


def f1_positive(logits: np.ndarray, labels: np.ndarray) -> float:
    """F1 of class 1 (MRPC, QQP in Kovaleva et al.)."""
    pred = np.argmax(logits, axis=-1) == 1
    gold = np.asarray(labels) == 1
    tp = float(np.sum(pred & gold))
    denom = float(np.sum(pred) + np.sum(gold))
    return 2.0 * tp / denom if denom else 0.0


def task_score_fn(task: Any) -> ScoreFn:
    """A ``score_fn`` giving the number Kovaleva et al.'s Table 1 prints for a GLUE ``task``
    (x 100: F1 for MRPC/QQP, Pearson r for STS-B, accuracy otherwise; see :mod:`attnbook.data.glue_metrics`)."""

    def score(logits: np.ndarray, labels: np.ndarray) -> float:
        return task_score(task, glue_metrics(task, predictions_from_logits(task, logits), labels))

    score.score_name = f"task_score_fn({getattr(task, 'name', task)})"
    return score


def score_name(score_fn: ScoreFn) -> str:
    """What names ``score_fn`` in a cache key: its ``score_name`` attribute, else ``module.qualname``."""
    named = getattr(score_fn, "score_name", None)
    if named:
        return str(named)
    return f"{getattr(score_fn, '__module__', '')}.{getattr(score_fn, '__qualname__', repr(score_fn))}"


def correct(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-example correctness ``bool[example]`` of the arg-max prediction."""
    return np.argmax(logits, axis=-1) == np.asarray(labels)
