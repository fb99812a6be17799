"""Switched-off heads: what the Kovaleva (chapter 5, §4.6) and Michel (chapter 6, §3-§4) chapters share.

The sweeps themselves run in :mod:`attnbook.engine.sweeps`; this module gives both chapters the same
classifiers, data and cached sweeps, and the paired statistics of a sweep on a task's own metric:

* :func:`dev_batches` — a GLUE split as length-sorted :class:`~attnbook.engine.inputs.Batch` es;
* :func:`paired_bootstrap` — every configuration of a sweep against the baseline on the *task's own
  metric* (accuracy, F1, Pearson r, x 100), all resamples at once as weighted metrics, with a
  percentile interval, a percentile p-value, a normal-approximation p-value (no floor at
  ``2/(R+1)``, so a Holm correction over 72 or 144 heads can be passed) and McNemar's exact test
  where the metric is accuracy; :func:`holm_table` adds the corrected p-values;
* :func:`random_head_effect` — the mean change when a random head is switched off (Kovaleva §4.6),
  :func:`extreme_heads` — the heads whose removal helps or hurts most, :func:`trivial_score` — a constant
  predictor's metric, the floor a classifier must beat;
* :func:`classifier` and :func:`task_data` — the fine-tuned classifier of a task and its (capped) data
  as batches, the same for both chapters;
* :func:`switched_off` — a sweep (single heads, layers, all-but-one) by disabling or masking, cached
  under the classifier's key and the batches' digest;
* :func:`halves`, :func:`subset_batches`, :func:`subset_sweep` — disjoint halves of the examples, and a
  sweep restricted to some of them (choose on one half, score on the other).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.glue import GlueSplit, TaskSpec, load_split, task_spec
from attnbook.data.glue_metrics import TABLE1_METRIC
from attnbook.engine import sweeps
from attnbook.engine.finetune import get_finetuned
from attnbook.engine.inputs import Batch
from attnbook.engine.sweeps import SweepResult, classification_batches
from attnbook.stats import Estimate, adjust_pvalues, bootstrap_counts, mcnemar_exact, percentile_interval

# ----------------------------------------------------------------------------- classifiers, data, sweeps


def classifier(base: Any, task: str, recipe: dict, seed: int, *, fraction: float = 1.0):
    """The classifier fine-tuned on ``task`` from ``base`` with the GLUE recipe ``recipe``
    (``FINETUNE_PROFILES[...]`` with the chapter's model), and its snapshots at ``recipe["save_at"]``;
    trained once and cached (:func:`attnbook.engine.finetune.get_finetuned`)."""

    clf, _ = get_finetuned(base, task, "pretrained_ft", recipe, seed, fraction=fraction,
                           save_at=recipe.get("save_at", ()), evaluate_dev=False, progress=False)
    return clf


def task_data(tokenizer: Any, task: str, split: str, cap: int | None, seed: int, *, batch_size: int = 32,
              max_length: int = 128) -> tuple[GlueSplit, list[Batch]]:
    """``split`` of ``task`` (at most ``cap`` examples, a seeded sample) and its :func:`dev_batches`."""

    data = load_split(task, split, cap=cap, seed=seed)
    return data, dev_batches(tokenizer, data, batch_size=batch_size, max_length=max_length)


SWEEPS = ("single_heads", "layers", "all_but_one")


@cache.memoized("head_sweeps")
def switched_off(model: Any, batches: Sequence[Batch], kind: str, mode: str, score_fn) -> SweepResult:
    """The sweep ``kind`` (:data:`SWEEPS`) of the classifier ``model`` (a :class:`~attnbook.engine.models.LoadedModel`)
    on ``batches``, heads switched off by ``mode`` (``"disable"``: Kovaleva's uniform attention; ``"mask"``:
    Michel's gate). Cached by the classifier's weights, the batches, the sweep and the score function's name
    (:func:`attnbook.engine.scores.score_name`; a sweep stores every output, so any other score can be recomputed
    from it)."""
    if kind not in SWEEPS:
        raise ParameterError(f"kind is one of {SWEEPS}, got {kind!r}")
    run = {"single_heads": sweeps.sweep_single_heads, "layers": sweeps.sweep_layers,
           "all_but_one": sweeps.sweep_all_but_one}[kind]
    return run(model.model, batches, mode, score_fn)


def dev_batches(tokenizer: Any, split: GlueSplit, *, batch_size: int = 32, max_length: int = 128) -> list[Batch]:
    """``split`` tokenised as the fine-tuned classifier saw it (``[CLS] a [SEP] b [SEP]``), batches of
    similar length (examples sorted by length, so little padding); the gold labels travel with them."""
    if not len(split):
        raise EmptyDataError(f"{split.task.name} {split.split} holds no examples")
    spec = split.task
    lengths = [len(e.text_a) + len(e.text_b or "") for e in split.examples]
    order = np.argsort(lengths, kind="stable")
    exs = [split.examples[i] for i in order]
    labels = np.asarray([e.label for e in exs], dtype=np.float32 if spec.is_regression else np.int64)
    return classification_batches(
        tokenizer,
        [e.text_a for e in exs],
        [e.text_b or "" for e in exs] if spec.is_pair else None,
        labels,
        batch_size=batch_size,
        max_length=max_length,
    )


def halves(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint, seeded random halves of ``range(n)`` (sorted index arrays)."""
    if n < 2:
        raise ParameterError(f"need at least 2 examples to split in halves, got {n}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])


def subset_batches(batches: Sequence[Batch], keep: np.ndarray) -> list[Batch]:
    """The examples ``keep`` (indices into the concatenation of ``batches``), batch structure kept."""
    keep = set(int(i) for i in keep)
    out, offset = [], 0
    for b in batches:
        rows = [i for i in range(b.size) if offset + i in keep]
        offset += b.size
        if not rows:
            continue
        out.append(b.select(rows))
    if not out:
        raise EmptyDataError("the subset keeps no example")
    return out


def subset_sweep(sweep: SweepResult, keep: np.ndarray, score_fn) -> SweepResult:
    """``sweep`` restricted to the examples ``keep`` (indices in ``sweep.gold`` order), re-scored with
    ``score_fn`` (e.g. a dev half for Michel App. A's choose-on-one-set, score-on-another)."""
    from dataclasses import replace

    keep = np.asarray(keep, dtype=np.int64)
    if keep.size == 0:
        raise EmptyDataError("the subset keeps no example")
    flat = sweep.flat_outputs()[:, keep]
    gold = sweep.gold[keep]
    base = sweep.baseline_outputs[keep]
    scores = np.array([score_fn(o, gold) for o in flat], dtype=np.float64).reshape(sweep.scores.shape)
    outputs = flat.reshape(*sweep.scores.shape, *flat.shape[1:])
    return replace(sweep, scores=scores, baseline_score=float(score_fn(base, gold)), outputs=outputs,
                   baseline_outputs=base, gold=gold, meta={**sweep.meta, "n_examples": int(keep.size)})


# ----------------------------------------------------------------------------- paired statistics


def weighted_scores(task: str | TaskSpec, outputs: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The task's Table 1 metric (x 100) of ``outputs[example, out]`` under each row of
    ``weights[resample, example]`` (bootstrap counts: a weighted metric equals the metric of the resample)."""
    spec = task_spec(task)
    metric = TABLE1_METRIC[spec.name]
    w = np.asarray(weights, dtype=np.float64)
    outputs = np.asarray(outputs)
    gold = np.asarray(gold)
    if spec.is_regression:
        x = outputs.reshape(len(gold), -1)[:, 0].astype(np.float64)
        y = gold.astype(np.float64)
        n = w.sum(1)
        mx, my = w @ x / n, w @ y / n
        sxy = w @ (x * y) / n - mx * my
        sxx = w @ (x * x) / n - mx**2
        syy = w @ (y * y) / n - my**2
        with np.errstate(invalid="ignore", divide="ignore"):
            r = sxy / np.sqrt(np.maximum(sxx, 0) * np.maximum(syy, 0))
        return 100.0 * r
    pred = np.argmax(outputs, axis=-1)
    if metric == "f1":
        p, g = pred == 1, gold == 1
        tp, fp, fn = w @ (p & g), w @ (p & ~g), w @ (~p & g)
        denom = 2 * tp + fp + fn
        return 100.0 * np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
    return 100.0 * (w @ (pred == gold)) / w.sum(1)


def paired_bootstrap(
    sweep: SweepResult,
    task: str | TaskSpec,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
):
    """Each configuration of ``sweep`` against its baseline on the task's metric (x 100), paired over examples.

    Returns a DataFrame in ``sweep.names`` order: ``name, score, delta, ci_low, ci_high`` (percentile
    interval of the resampled Δ), ``p_bootstrap`` (two-sided percentile p, floor ``2/(R+1)``),
    ``p_normal`` (two-sided, Δ over the bootstrap standard error) and, when the metric is accuracy,
    McNemar's ``b, c, p_mcnemar``. Every configuration uses the same seeded resamples.
    """
    from scipy.stats import norm

    spec = task_spec(task)
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence}")
    gold = sweep.gold
    counts = bootstrap_counts(len(gold), n_resamples, seed)
    ones = np.ones((1, len(gold)))
    base = weighted_scores(spec, sweep.baseline_outputs, gold, ones)[0]
    base_bs = weighted_scores(spec, sweep.baseline_outputs, gold, counts)
    is_acc = TABLE1_METRIC[spec.name] == "accuracy"
    base_ok = np.argmax(sweep.baseline_outputs, -1) == gold if is_acc else None
    alpha = (1 - confidence) / 2
    rows = []
    for name, outs in zip(sweep.names, sweep.flat_outputs()):
        score = weighted_scores(spec, outs, gold, ones)[0]
        d = np.nan_to_num(weighted_scores(spec, outs, gold, counts) - base_bs)
        sd = float(np.std(d, ddof=1)) if len(d) > 1 else 0.0
        delta = float(score - base)
        below, above = int(np.sum(d <= 0)), int(np.sum(d >= 0))
        p_norm = float(2 * norm.sf(abs(delta) / sd)) if sd > 0 else (1.0 if delta == 0 else 0.0)
        row = {
            "name": name,
            "score": float(score),
            "delta": delta,
            "ci_low": float(np.quantile(d, alpha)),
            "ci_high": float(np.quantile(d, 1 - alpha)),
            "p_bootstrap": min(1.0, 2 * (min(below, above) + 1) / (len(d) + 1)),
            "p_normal": p_norm,
        }
        if is_acc:
            mc = mcnemar_exact(base_ok, np.argmax(outs, -1) == gold)
            row.update(b=mc["b"], c=mc["c"], p_mcnemar=mc["p_value"])
        rows.append(row)
    return pd.DataFrame(rows)


def holm_table(table, *, alpha: float = 0.05, column: str | None = None):
    """``table`` (from :func:`paired_bootstrap`) with ``p_holm`` over *all* its rows and ``significant``.

    ``column`` defaults to McNemar's p where present, else the normal-approximation bootstrap p.
    """
    column = column or ("p_mcnemar" if "p_mcnemar" in table else "p_normal")
    if column not in table:
        raise ParameterError(f"no column {column!r} in the table")
    out = table.copy()
    out["test"] = {"p_mcnemar": "McNemar", "p_normal": "bootstrap (normal)", "p_bootstrap": "bootstrap"}.get(column, column)
    out["p_holm"] = adjust_pvalues(out[column].to_numpy(), "holm")
    out["significant"] = out["p_holm"] < alpha
    return out


# ----------------------------------------------------------------------------- summaries of a sweep


def random_head_effect(delta: np.ndarray) -> dict:
    """Kovaleva §4.6: the change expected from disabling one head drawn at random.

    Returns the mean and median Δ over heads, the share of heads whose Δ > 0 and < 0, and
    the best and worst Δ.
    """
    d = np.asarray(delta, dtype=np.float64).ravel()
    if d.size == 0:
        raise EmptyDataError("no heads")
    return {
        "mean": float(d.mean()),
        "median": float(np.median(d)),
        "share_better": float(np.mean(d > 0)),
        "share_worse": float(np.mean(d < 0)),
        "best": float(d.max()),
        "worst": float(d.min()),
    }


def extreme_heads(values: np.ndarray, k: int, *, largest: bool) -> list[tuple[int, int]]:
    """The ``k`` heads ``(layer, head)`` with the largest (or smallest) ``values[layer, head]``; ties layer-major."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(-v.ravel() if largest else v.ravel(), kind="stable")[:k]
    return [tuple(int(x) for x in np.unravel_index(i, v.shape)) for i in order]  # type: ignore[misc]


def trivial_score(task: str | TaskSpec, gold: np.ndarray) -> float:
    """The task's metric (x 100) of a constant predictor, the floor a classifier must beat: majority-class
    accuracy, F1 of always answering the positive class (MRPC, QQP), and 0 for Pearson r (STS-B)."""
    spec = task_spec(task)
    gold = np.asarray(gold)
    if gold.size == 0:
        raise EmptyDataError("no gold labels")
    metric = TABLE1_METRIC[spec.name]
    if metric == "pearson":
        return 0.0
    if metric == "f1":
        pos = float(np.mean(gold == 1))
        return 100.0 * 2 * pos / (1 + pos) if pos > 0 else 0.0
    return 100.0 * float(np.max(np.bincount(gold.astype(np.int64))) / gold.size)


# ----------------------------------------------------------------------------- effects with intervals


def resolution(n: int, confidence: float = 0.95) -> float:
    """The smallest change in points that ``n`` examples can resolve: the exact (Clopper-Pearson) upper bound
    of the share of examples an intervention changes when none of ``n`` changed, ``1 - (alpha/2)^(1/n)``, x 100.

    A paired bootstrap over examples whose predictions never change gives the interval [0, 0]; a true change of
    this size would leave all ``n`` unchanged with probability ``alpha/2``, so :func:`effect_intervals` never
    reports an interval narrower than it around the measured change (16 examples: ±20.6 points; 872: ±0.42).
    """
    if n <= 0:
        raise EmptyDataError("no examples")
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence}")
    return 100.0 * (1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / n))


def resampled_deltas(sweep: SweepResult, task: str | TaskSpec, counts: np.ndarray) -> np.ndarray:
    """Every configuration's change (the task's metric, points) in every resample ``counts[resample, example]``
    of the swept examples, paired (the baseline is scored on the same draws): ``[resample, *sweep.scores.shape]``."""
    base = np.nan_to_num(weighted_scores(task, sweep.baseline_outputs, sweep.gold, counts))
    d = np.stack([np.nan_to_num(weighted_scores(task, o, sweep.gold, counts)) - base for o in sweep.flat_outputs()],
                 axis=1)
    return d.reshape((len(counts),) + sweep.scores.shape)


def effect_intervals(sweep: SweepResult, task: str | TaskSpec, *, n_resamples: int = 1000, seed: int = 0,
                     confidence: float = 0.95) -> tuple[pd.DataFrame, np.ndarray]:
    """Each configuration's change against the baseline with a paired 95% interval over the swept examples.

    The interval is the percentile interval of the paired bootstrap (:func:`resampled_deltas`), widened where
    needed to at least ``±`` :func:`resolution` around the measured change, so that a small sample on which
    nothing flips is not read as evidence of no change. Returns ``(table, draws)``: ``table`` in
    ``sweep.names`` order with ``name, delta, low, high, n``; ``draws[resample, *shape]`` the resampled changes.
    """

    n = len(sweep.gold)
    counts = bootstrap_counts(n, n_resamples, seed)
    draws = resampled_deltas(sweep, task, counts)
    lo, hi = percentile_interval(draws.reshape(len(draws), -1), confidence)
    delta = np.asarray(sweep.delta, dtype=np.float64).ravel()
    floor = resolution(n, confidence)
    table = pd.DataFrame({"name": list(sweep.names), "delta": delta, "low": np.minimum(lo, delta - floor),
                          "high": np.maximum(hi, delta + floor), "n": n})
    return table, draws


def effect_estimates(sweep: SweepResult, task: str | TaskSpec, *, n_resamples: int = 1000, seed: int = 0) -> list:
    """:func:`effect_intervals` as one :class:`~attnbook.stats.Estimate` per configuration (points, paired over the
    swept examples), in ``sweep.names`` order."""

    table, _ = effect_intervals(sweep, task, n_resamples=n_resamples, seed=seed)
    return [Estimate(float(r.delta), float(r.low), float(r.high), int(r.n), "dev examples (paired)")
            for r in table.itertuples()]
