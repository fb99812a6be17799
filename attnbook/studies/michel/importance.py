"""Which heads matter: single-head ablations and importance scores (Michel, Levy & Neubig 2019, §3–§4.1).

* :func:`single_head_ablation` and :func:`ablation_significance` — Michel §3.2: Δ of masking
  each head alone, and which Δ are significant (a t-test at p < 0.01 for BERT in the paper;
  a paired bootstrap with 1000 resamples for BLEU).
* :func:`best_head_per_layer` and :func:`chosen_heads` — Michel §3.3 and App. A: keep only one
  head in a layer; the best head per layer, chosen on one set of examples and tested on another.
* :func:`head_importance` — Michel §4.1: ``I_h = E_x |∂L(x)/∂ξ_h|``, the sensitivity of the
  loss to the gate of head ``h``, for every head at once (the forward and backward passes are
  :func:`attnbook.engine.mask_gradients.mask_gradients`). Each example gets its own gates, so the
  absolute value is taken per example as in the paper's Eq. 2; ``granularity="token"`` takes it
  per token and averages over real tokens, as the authors' code does (it gives somewhat different
  rankings). Scores are ℓ2-normalised within each layer (``normalize=True``, Michel §4.1).
* :func:`importance_of` — :func:`head_importance` of a fine-tuned classifier on batches, cached under
  the classifier's key and the batches' digest; :func:`importance_by_task`, :func:`importance_on_halves`
  and :func:`task_agreement` — the same scores across tasks and across halves of the data (§3.4's question
  asked of ``I_h``).

Iterative pruning by these scores (§4.2) is :mod:`attnbook.studies.michel.pruning`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from attnbook.core import cache
from attnbook.core.errors import ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.mask_gradients import LossFn, mask_gradients
from attnbook.engine.scores import ScoreFn, accuracy, correct
from attnbook.engine.sweep_stats import bootstrap_delta
from attnbook.engine.sweeps import SweepResult, sweep_single_heads
from attnbook.stats import Estimate, bootstrap_counts, paired_ttest, pearson, percentile_interval, rank_agreement
from attnbook.studies.heads_off import effects as heads_off


def default_loss(outputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-example loss of a classifier: cross-entropy, or squared error for one regression output."""
    if outputs.shape[-1] == 1 and torch.is_floating_point(labels):
        return F.mse_loss(outputs.squeeze(-1), labels.to(outputs.dtype), reduction="none")
    return F.cross_entropy(outputs, labels.long(), reduction="none")


def normalize_per_layer(values: np.ndarray, eps: float = 1e-20) -> np.ndarray:
    """``values[l, h] / sqrt(Σ_h' values[l, h']²)`` (Michel §4.1); an all-zero layer stays zero."""
    values = np.asarray(values, dtype=np.float64)
    norm = np.sqrt(np.sum(values**2, axis=-1, keepdims=True))
    return np.where(norm > eps, values / np.maximum(norm, eps), 0.0)


# ----------------------------------------------------------------------------- importance scores (§4.1)


def head_importance(
    model: Any,
    batches: Iterable[Any],
    loss_fn: LossFn | None = None,
    *,
    normalize: bool = True,
    granularity: str = "example",
    base_mask: Any = None,
    progress: bool = False,
) -> np.ndarray:
    """Michel's head importance ``I[layer, head] = E_x |∂L(x)/∂ξ_h|`` (§4.1, Eq. 2).

    One forward and one backward pass per batch give the gradient for all heads: the gates
    are ones (or ``base_mask``, for importance of a partly pruned model) with
    ``requires_grad``, one set per example (``granularity="example"``, the paper) or per token
    (``"token"``, the authors' code: ``|∂L/∂ξ|`` summed over real tokens, divided by their
    number). Dropout is off. Michel computes it on (a subset of) the *training* set.
    Returns ``float64[layer, head]``, ℓ2-normalised per layer when ``normalize``.
    """
    values = mask_gradients(model, batches, loss_fn or default_loss, granularity=granularity, base_mask=base_mask,
                            progress=progress)
    return normalize_per_layer(values) if normalize else values


@cache.memoized("head_importance")
def importance_of(classifier: Any, batches: Sequence[Any]) -> np.ndarray:
    """:func:`head_importance` (normalised, per example) of ``classifier`` (a
    :class:`~attnbook.engine.models.LoadedModel`) on ``batches``, cached by the classifier's weights and the
    batches' content."""
    return head_importance(classifier.model, batches)


def importance_by_task(
    base: Any,
    tasks: Sequence[str],
    recipe: Mapping[str, Any],
    seed: int,
    *,
    cap: int | None,
    data_seed: int,
    known: Mapping[str, np.ndarray] | None = None,
    batch_size: int = 32,
    max_length: int = 128,
) -> tuple[dict[str, np.ndarray], list[Path]]:
    """``I_h`` of the classifier fine-tuned on each of ``tasks`` from ``base`` (recipe ``recipe``, seed ``seed``),
    each on (at most ``cap`` of, sampled with ``data_seed``) its own training examples, as Michel §4.1 compute it.

    ``known`` holds scores already computed (kept first, in their order; their tasks are not recomputed).
    Returns the scores by task and the data files read (for the chapter's provenance).
    """
    scores = dict(known or {})
    paths: list[Path] = []
    for task in tasks:
        if task in scores:
            continue
        clf = heads_off.classifier(base, task, dict(recipe), seed)
        split, batches = heads_off.task_data(base.tokenizer, task, "train", cap, data_seed, batch_size=batch_size,
                                   max_length=max_length)
        paths.append(split.path)
        scores[task] = importance_of(clf, batches)
    return scores, paths


def importance_on_halves(classifier: Any, batches: Sequence[Any], seed: int
                         ) -> tuple[np.ndarray, np.ndarray]:
    """``I_h`` of ``classifier`` on two disjoint, seeded random halves of the examples of ``batches``
    (is the ranking a property of the model or of the sample it is computed on?)."""
    n = sum(int(b.size) for b in batches)
    first, second = heads_off.halves(n, seed)
    return (importance_of(classifier, heads_off.subset_batches(batches, first)),
            importance_of(classifier, heads_off.subset_batches(batches, second)))


def task_agreement(scores: Mapping[str, np.ndarray]):
    """Spearman ρ between the ``scores[task][layer, head]`` of every two tasks: the matrix (a DataFrame,
    tasks in ``scores`` order) and the pairs above its diagonal as ``[(task_a, task_b, rho), ...]``."""
    import pandas as pd


    names = list(scores)
    rho = pd.DataFrame([[rank_agreement(scores[a], scores[b])["spearman"] for b in names] for a in names],
                       index=names, columns=names)
    pairs = [(a, b, float(rho.loc[a, b])) for i, a in enumerate(names) for b in names[i + 1:]]
    return rho, pairs


# ----------------------------------------------------------------------------- ablations (§3.2, §3.3)


def single_head_ablation(model: Any, batches: Iterable[Any], score_fn: ScoreFn = accuracy, **kwargs: Any) -> SweepResult:
    """Michel §3.2: mask each head alone (ξ_h = 0); ``.delta[layer, head]`` = score without h − base.
    (Cached for a fine-tuned classifier: :func:`attnbook.studies.heads_off.effects.switched_off`.)"""
    return sweep_single_heads(model, batches, "mask", score_fn, **kwargs)


def ablation_significance(
    sweep: SweepResult,
    *,
    test: str = "ttest",
    alpha: float = 0.01,
    score_fn: ScoreFn = accuracy,
    n_resamples: int = 1000,
    seed: int = 0,
):
    """Which single-head ablations change the score significantly (Michel §3.2, Table 1's stars).

    ``test="ttest"``: paired t-test on per-example correctness (the paper's BERT test, p < 0.01;
    accuracy only). ``test="bootstrap"``: paired bootstrap of the score difference with
    ``n_resamples`` resamples (the paper's BLEU test). Returns a DataFrame in ``sweep.names``
    order with ``delta``, ``p_value`` and ``significant`` (no multiple-comparison correction,
    as in the paper; see :func:`attnbook.engine.sweep_stats.surviving_gains` for a corrected version).
    """
    import pandas as pd

    if test not in ("ttest", "bootstrap"):
        raise ParameterError(f"test is 'ttest' or 'bootstrap', got {test!r}")
    base_ok = correct(sweep.baseline_outputs, sweep.gold)
    rows = []
    for name, outs in zip(sweep.names, sweep.flat_outputs()):
        if test == "ttest":
            p = paired_ttest(base_ok, correct(outs, sweep.gold))
            delta = float(score_fn(outs, sweep.gold) - score_fn(sweep.baseline_outputs, sweep.gold))
        else:
            bs = bootstrap_delta(sweep.baseline_outputs, outs, sweep.gold, score_fn, n_resamples=n_resamples, seed=seed)
            p, delta = bs["p_value"], bs["delta"]
        rows.append({"name": name, "delta": delta, "p_value": p, "significant": p < alpha})
    return pd.DataFrame(rows)


def significant_names(significance) -> list[str]:
    """The names of the rows an :func:`ablation_significance` table marks significant."""
    return significance.loc[significance["significant"], "name"].tolist()


def best_head_per_layer(selection: SweepResult, evaluation: SweepResult | None = None):
    """The head to keep in each layer (Michel Table 3, App. A Tables 5–6).

    The best head is the arg-max of ``selection.scores[layer]``; its Δ is reported on the
    selection set and, if given, on ``evaluation`` (App. A: choose on 5,000 training examples,
    score on the dev set). Layer and head are 1-based.
    """
    import pandas as pd

    if selection.kind != "all_but_one":
        raise ParameterError("best_head_per_layer needs the result of an all-but-one sweep (sweep_all_but_one)")
    rows = []
    for layer, row in enumerate(selection.scores):
        head = int(np.argmax(row))
        rec = {"layer": layer + 1, "head": head + 1, "label": head_label(layer, head), "delta_selection": float(selection.delta[layer, head])}
        if evaluation is not None:
            rec["delta_evaluation"] = float(evaluation.delta[layer, head])
        rows.append(rec)
    return pd.DataFrame(rows)


def chosen_heads(all_but_one: SweepResult, select: np.ndarray, evaluate: np.ndarray, score_fn: ScoreFn, *,
                 alpha: float = 0.01):
    """Michel §3.3 with App. A's precaution: per layer, the head to keep chosen on the examples ``select``
    and scored on the disjoint examples ``evaluate`` (indices into the sweep's examples), with the paired
    t-test of keeping only it there.

    Returns :func:`best_head_per_layer`'s table plus ``p (half B)`` (the t-test's p on ``evaluate``) and
    ``significant`` (p < ``alpha``, no correction, as the paper).
    """
    chosen_on = heads_off.subset_sweep(all_but_one, select, score_fn)
    tested_on = heads_off.subset_sweep(all_but_one, evaluate, score_fn)
    best = best_head_per_layer(chosen_on, tested_on)
    sig = ablation_significance(tested_on, test="ttest", alpha=alpha).set_index("name")
    best["p (half B)"] = [float(sig.loc[f"only {label}", "p_value"]) for label in best["label"]]
    best["significant"] = best["p (half B)"] < alpha
    return best


# ----------------------------------------------------------------------------- intervals (issue 17)


def chosen_effects(all_but_one: SweepResult, chosen, evaluate: np.ndarray, task: str, score_fn: ScoreFn, *,
                   n_resamples: int = 1000, seed: int = 0):
    """The change from keeping only the chosen head of each layer (``chosen``: :func:`chosen_heads`), on the
    held-out examples ``evaluate``, with its paired 95% interval
    (:func:`attnbook.studies.heads_off.effects.effect_intervals`): ``layer, label, delta, low, high, n``."""
    tested = heads_off.subset_sweep(all_but_one, evaluate, score_fn)
    table, _ = heads_off.effect_intervals(tested, task, n_resamples=n_resamples, seed=seed)
    table = table.set_index("name")
    rows = [{"layer": int(r.layer), "label": r.label, **table.loc[f"only {r.label}", ["delta", "low", "high", "n"]]}
            for r in chosen.itertuples()]
    import pandas as pd

    return pd.DataFrame(rows)


def delta_correlation(first: SweepResult, second: SweepResult, task: str, *, n_resamples: int = 1000, seed: int = 0):
    """Michel §3.4: Pearson r between the single-head Δ of two sweeps of the same heads (two dev sets, or two
    halves of one), with a 95% interval: each sweep's examples are resampled on their own (independent draws), the
    Δ of every head recomputed and r taken in every resample. Returns an :class:`~attnbook.stats.Estimate`."""

    a = heads_off.resampled_deltas(first, task, bootstrap_counts(len(first.gold), n_resamples, seed))
    b = heads_off.resampled_deltas(second, task, bootstrap_counts(len(second.gold), n_resamples, seed + 1))
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    r = np.array([pearson(x, y) for x, y in zip(a, b)])
    n = len(first.gold) + len(second.gold)
    value = pearson(np.ravel(first.delta), np.ravel(second.delta))
    if np.mean(np.isfinite(r)) < 0.95:  # r undefined (no head changes anything) in too many resamples to tell
        return Estimate(float(value) if np.isfinite(value) else 0.0, -1.0, 1.0, n, "dev examples (r often undefined)")
    lo, hi = percentile_interval(r[np.isfinite(r)])
    return Estimate(float(value), float(lo), float(hi), n, "dev examples")
