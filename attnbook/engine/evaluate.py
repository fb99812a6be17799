"""Scoring a fine-tuned classifier: its outputs on GLUE examples, the GLUE metrics and Kovaleva's Table 1 score, the
score's 95% interval beside the constant predictor's, and the cached dev outputs every chapter reads.

Whether a classifier learned its task is decided from these numbers in one place,
:func:`attnbook.studies.heads_off.learned.learned`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from attnbook.core import cache
from attnbook.core.errors import ParameterError
from attnbook.data import hf
from attnbook.data.glue import Example, GlueSplit, TaskSpec, load_split, task_path, task_spec
from attnbook.data.glue_metrics import TABLE1_METRIC, glue_metrics, predictions_from_logits, table1_scores, task_score
from attnbook.engine.inputs import collate, encode_examples
from attnbook.engine.models import LoadedModel
from attnbook.stats import bootstrap_indices, percentile_interval, proportion_interval

#: Fixed seed of the dev-set sample, so every run of a task is scored on the same examples.
DEV_SAMPLE_SEED = 0


def _task_of(classifier: LoadedModel, task: str | TaskSpec | None) -> TaskSpec:
    if task is not None:
        return task_spec(task)
    if classifier.classifier is None:
        raise ParameterError("this model does not say which task it classifies; pass task=")
    return task_spec(classifier.classifier.task)


def predict_logits(
    classifier: LoadedModel,
    examples: Sequence[Example] | GlueSplit,
    *,
    task: str | TaskSpec | None = None,
    batch_size: int = 64,
    max_length: int | None = None,
    progress: bool = False,
) -> np.ndarray:
    """The classifier's outputs ``logits[example, label]`` (STS-B: ``[example, 1]`` scores), in input order.

    Runs in eval mode (no dropout), batches sorted by length to save padding.
    """

    spec = _task_of(classifier, task)
    exs = examples.examples if isinstance(examples, GlueSplit) else list(examples)
    max_length = max_length or (classifier.classifier.max_length if classifier.classifier else 128)
    data = encode_examples(classifier.tokenizer, exs, spec, max_length)
    model = classifier.model
    was_training = model.training
    model.eval()
    order = np.argsort(data.lengths, kind="stable")
    out = np.zeros((len(data), spec.num_labels), dtype=np.float32)
    device = next(model.parameters()).device
    pad_id = classifier.tokenizer.pad_token_id or 0
    try:
        with torch.inference_mode():
            starts = range(0, len(order), batch_size)
            for s in tqdm(starts, desc=f"evaluating {spec.name}", disable=not progress, leave=False):
                idx = order[s : s + batch_size]
                logits = model(**collate(data, idx, pad_id).to(device).inputs).logits
                out[idx] = logits.float().cpu().numpy()
    finally:
        model.train(was_training)
    return out


def metrics_from_logits(task: str | TaskSpec, logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """GLUE metrics plus ``score`` (Kovaleva's Table 1 number, x 100), ``n`` and, for classification,
    ``top_class_share``: the share of examples given the most frequent prediction (1.0 = a constant
    classifier, as the untrained heads of Table 1 are)."""
    spec = task_spec(task)
    pred = predictions_from_logits(spec, logits)
    m = glue_metrics(spec, pred, labels)
    m["score"] = task_score(spec, m)
    m["n"] = int(len(labels))
    if not spec.is_regression:
        m["top_class_share"] = float(np.bincount(pred, minlength=spec.num_labels).max() / len(pred))
    return m


def evaluate(
    classifier: LoadedModel,
    examples: Sequence[Example] | GlueSplit,
    batch_size: int = 64,
    *,
    task: str | TaskSpec | None = None,
    max_length: int | None = None,
    progress: bool = False,
) -> dict[str, float]:
    """Score ``classifier`` on ``examples``: GLUE metrics (fractions), ``score`` (x 100) and ``n``."""
    spec = _task_of(classifier, task)
    exs = examples.examples if isinstance(examples, GlueSplit) else list(examples)
    logits = predict_logits(classifier, exs, task=spec, batch_size=batch_size, max_length=max_length,
                            progress=progress)
    labels = np.asarray([e.label for e in exs])
    return metrics_from_logits(spec, logits, labels)


@cache.memoized("glue_eval", ignore=("batch_size", "progress"))
def dev_outputs(classifier: LoadedModel, task: str, dev_cap: int | None, max_length: int, dev_sha256: str, *,
                batch_size: int = 64, progress: bool = False) -> dict[str, np.ndarray]:
    """``classifier``'s ``logits[example, label]`` on ``task``'s dev sample (``dev_cap`` examples drawn with
    :data:`DEV_SAMPLE_SEED`; None: all), the gold ``labels`` in the split's order and ``n_total``, the split's size;
    cached by classifier, task, sample, input length and the dev file's checksum (:func:`scored_dev`)."""
    spec = task_spec(task)
    dev = load_split(spec, "dev", cap=dev_cap, seed=DEV_SAMPLE_SEED)
    logits = predict_logits(classifier, dev, task=spec, batch_size=batch_size, max_length=max_length,
                            progress=progress)
    return {"logits": logits, "labels": dev.labels, "n_total": np.array(dev.n_total)}


def scored_dev(classifier: LoadedModel, task: str | TaskSpec, *, cap: int | None = None, max_length: int = 128,
               batch_size: int = 64, progress: bool = False) -> dict[str, np.ndarray]:
    """:func:`dev_outputs` of ``classifier`` on ``task``'s dev sample (``cap`` examples; None: the whole split),
    keyed on the dev file's checksum: the one way every chapter reads a classifier's dev outputs."""
    spec = task_spec(task)
    return dev_outputs(classifier, spec.name, cap, int(max_length), hf.file_sha256(task_path(spec, "dev")),
                       batch_size=batch_size, progress=progress)


#: Bootstrap resamples (and their seed) of :func:`score_interval`.
SCORE_RESAMPLES = 2000


SCORE_SEED = 0


def constant_score(task: str | TaskSpec, labels: np.ndarray) -> float:
    """The best Table 1 score (x 100) a constant predictor gets on these examples: majority-class accuracy,
    always-positive F1 (MRPC, QQP), and 0 for Pearson r (STS-B: a constant has no correlation)."""
    spec = task_spec(task)
    if spec.is_regression:
        return 0.0
    labels = np.asarray(labels)
    return max(task_score(spec, glue_metrics(spec, np.full(labels.shape, i), labels)) for i in range(spec.num_labels))


def score_interval(task: str | TaskSpec, logits: np.ndarray, labels: np.ndarray, *,
                   n_resamples: int = SCORE_RESAMPLES, seed: int = SCORE_SEED) -> dict[str, Any]:
    """The Table 1 score's 95% interval over the dev examples, beside the constant predictor's score.

    ``score_low``/``score_high``: exact (Clopper-Pearson) for accuracy, the percentile bootstrap over
    examples for F1 and Pearson r; ``constant_score``: :func:`constant_score` on the same examples. Whether a
    classifier learned its task is decided in one place, :func:`attnbook.studies.heads_off.learned.learned`, which
    uses this interval.
    """

    spec = task_spec(task)
    labels = np.asarray(labels)
    pred = predictions_from_logits(spec, logits)
    if TABLE1_METRIC[spec.name] == "accuracy":
        lo, hi = proportion_interval(int(np.sum(pred == labels)), len(labels))
        lo, hi = 100 * lo, 100 * hi
    else:
        scores = np.concatenate([table1_scores(spec, pred[idx], labels[idx])  # [resample]
                                 for idx in bootstrap_indices(len(labels), n_resamples, seed)])
        lo, hi = (float(v) for v in percentile_interval(np.nan_to_num(scores)))
    floor = constant_score(spec, labels)
    return {"score_low": float(lo), "score_high": float(hi), "constant_score": floor}
