"""Iterative pruning by masking, and what it leaves (Michel, Levy & Neubig 2019, §3.3, §4.2–4.3).

* :func:`iterative_pruning` — Michel §4.2: mask heads cumulatively in increasing order of
  importance, a fixed share of all heads per step (the paper says 10 %, the BERT script
  uses 5 %: ``step``), no retraining, and score after each step. Orderings: importance
  computed once before pruning (Michel's default) or recomputed after every step
  (``recompute=True``, the code's ``--exact_pruning``), the single-ablation Δ (Fig. 3's
  dashed curves), random orders (mean and spread over seeds), or any ``values[layer, head]``.
* :func:`pruning_curve` — one such curve of a fine-tuned classifier, cached under its key and the
  batches' digest; :func:`curves_by_ordering` — the chapter's curves (named orderings and random ones).
* :func:`largest_safe_share`, :func:`safe_shares`, :func:`curve_area`, :func:`curve_areas`,
  :func:`random_band` — what a curve says: how much can go with little loss, how much is kept on average.
* :func:`one_head_per_layer` — §3.3/§4.2: every layer reduced to one head at once.
* :func:`throughput_pool`, :func:`speed_numbers` — the inputs and the record of the speed test (§4.3,
  Table 4; removing heads and timing them is :mod:`attnbook.engine.pruning`).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.families import model_shape
from attnbook.engine.inputs import Batch
from attnbook.engine.interventions import unwrap
from attnbook.engine.mask_gradients import LossFn
from attnbook.engine.pruning import heads_to_prune, interleaved_throughput, pruned_copy
from attnbook.engine.scores import ScoreFn, accuracy
from attnbook.engine.sweeps import SweepResult, as_batches, sweep_configs
from attnbook.stats import Estimate, bootstrap_counts, median_interval, percentile_interval
from attnbook.studies.heads_off.effects import weighted_scores
from attnbook.studies.michel.importance import (
    head_importance,
    normalize_per_layer,
    single_head_ablation,
)

#: The chapter's names of the pruning orders (Michel Fig. 3): by importance, by the single-head Δ, at random.
BY_IMPORTANCE, BY_ABLATION, RANDOM = "importance I_h", "ablation Δ (oracle)", "random"
#: The random orders' mean curve, as a row of :func:`safe_shares`.
RANDOM_MEAN = "random (mean)"


# ----------------------------------------------------------------------------- iterative pruning (§4.2)


def pruning_schedule(n_total: int, step: float = 0.1) -> list[tuple[float, int]]:
    """``(share, n_heads_pruned)`` for shares ``0, step, 2·step, …, 1``: ``n = floor(n_total · share)``
    (as Michel's BERT script, ``int(144·p/100)``)."""
    if not 0 < step <= 1:
        raise ParameterError(f"step is a share of all heads in (0, 1], got {step}")
    k_max = int(np.floor(1 / step + 1e-9))
    shares = [round(i * step, 10) for i in range(k_max + 1)]
    if shares[-1] < 1:
        shares.append(1.0)
    return [(s, int(np.floor(n_total * s + 1e-9))) for s in shares]


def pruning_order(values: np.ndarray) -> list[tuple[int, int]]:
    """Heads ``(layer, head)`` in increasing order of ``values[layer, head]`` (ties: layer-major order)."""
    values = np.asarray(values, dtype=np.float64)
    flat = np.argsort(values.reshape(-1), kind="stable")
    return [tuple(int(i) for i in np.unravel_index(k, values.shape)) for k in flat]  # type: ignore[misc]


def masks_from_order(order: Sequence[tuple[int, int]], counts: Sequence[int], shape: tuple[int, int]) -> np.ndarray:
    """``mask[step, layer, head]``: 0 for the first ``counts[step]`` heads of ``order``, 1 elsewhere."""
    masks = np.ones((len(counts), *shape), dtype=np.float32)
    for k, n in enumerate(counts):
        for layer, head in order[:n]:
            masks[k, layer, head] = 0.0
    return masks


def _curve_rows(
    ordering: str, seed: Any, schedule, order: Sequence[tuple[int, int]], sweep: SweepResult, n_total: int
) -> list[dict]:
    """One row per pruning step; ``newly_pruned`` lists the step's heads in pruning order."""
    rows, done = [], 0
    for (share, n), score in zip(schedule, sweep.scores):
        rows.append(
            {
                "ordering": ordering,
                "seed": seed,
                "share_target": float(share),
                "n_pruned": int(n),
                "share_pruned": n / n_total,
                "score": float(score),
                "delta": float(score - sweep.baseline_score),
                "newly_pruned": " ".join(head_label(l, h) for l, h in order[done:n]),
            }
        )
        done = n
    return rows


def iterative_pruning(
    model: Any,
    eval_batches: Iterable[Any],
    score_fn: ScoreFn = accuracy,
    *,
    ordering: str | np.ndarray = "importance",
    importance_batches: Iterable[Any] | None = None,
    importance: np.ndarray | None = None,
    loss_fn: LossFn | None = None,
    step: float = 0.1,
    recompute: bool = False,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    normalize: bool = True,
    granularity: str = "example",
    fast: bool = True,
    progress: bool = False,
):
    """Michel §4.2: score after masking the least important heads, ``step`` of all heads at a time.

    ``ordering``:

    * ``"importance"`` — by :func:`~attnbook.studies.michel.importance.head_importance` on
      ``importance_batches`` (Michel: the training set; default: ``eval_batches``), or by a precomputed
      ``importance``; computed once before pruning unless ``recompute`` (then after every step, on the
      heads still present);
    * ``"ablation"`` — by the single-head masking Δ of §3.2 on ``importance_batches``: heads whose
      removal costs least (or helps most) go first;
    * ``"random"`` — one random order per seed in ``seeds``;
    * an array ``values[layer, head]`` — prune in increasing order of it.

    No floor per layer (a layer can lose all its heads) and no retraining, as in the paper.
    Returns a long DataFrame: ``ordering, seed, share_target, n_pruned, share_pruned, score,
    delta, newly_pruned`` (1-based labels).
    """
    import pandas as pd

    module = unwrap(model)
    n_layers, n_heads, _ = model_shape(module)
    schedule = pruning_schedule(n_layers * n_heads, step)
    counts = [n for _, n in schedule]
    eval_data = as_batches(eval_batches)
    imp_data = as_batches(importance_batches) if importance_batches is not None else eval_data
    sweep_kw = {"fast": fast, "progress": progress}

    def curve(name: str, seed: Any, order: Sequence[tuple[int, int]]) -> list[dict]:
        masks = masks_from_order(order, counts, (n_layers, n_heads))
        sweep = sweep_configs(module, eval_data, masks, "mask", score_fn, kind="pruning", **sweep_kw)
        return _curve_rows(name, seed, schedule, order, sweep, n_layers * n_heads)

    if isinstance(ordering, np.ndarray):
        return pd.DataFrame(curve("custom", None, pruning_order(ordering)))
    if ordering == "random":
        rows = []
        for seed in seeds:
            perm = np.random.default_rng(seed).permutation(n_layers * n_heads)
            rows += curve("random", int(seed), [divmod(int(k), n_heads) for k in perm])
        return pd.DataFrame(rows)
    if ordering == "ablation":
        abl = single_head_ablation(module, imp_data, score_fn, **sweep_kw)
        return pd.DataFrame(curve("ablation", None, pruning_order(-abl.delta)))
    if ordering != "importance":
        raise ParameterError(f"ordering is 'importance', 'ablation', 'random' or an array [layer, head], got {ordering!r}")

    imp_kw = {"normalize": normalize, "granularity": granularity, "progress": progress}
    if not recompute:
        values = importance if importance is not None else head_importance(module, imp_data, loss_fn, **imp_kw)
        return pd.DataFrame(curve("importance", None, pruning_order(values)))

    # recompute after every step, ranking only the heads still present
    mask = np.ones((n_layers, n_heads), dtype=np.float32)
    order: list[tuple[int, int]] = []
    for n in counts:
        need = n - len(order)
        if need > 0:
            raw = head_importance(module, imp_data, loss_fn, base_mask=mask, **{**imp_kw, "normalize": False})
            raw = np.where(mask > 0, raw, 0.0)
            values = normalize_per_layer(raw) if normalize else raw
            values = np.where(mask > 0, values, np.inf)
            for layer, head in pruning_order(values)[:need]:
                mask[layer, head] = 0.0
                order.append((layer, head))
    return pd.DataFrame(curve("importance (recomputed)", None, order))


def pruning_curves(
    model: Any,
    eval_batches: Iterable[Any],
    score_fn: ScoreFn = accuracy,
    *,
    orderings: Sequence[str] = ("importance", "ablation", "random"),
    **kwargs: Any,
):
    """:func:`iterative_pruning` for several orderings, one long DataFrame (Michel Fig. 3)."""
    import pandas as pd

    eval_data = as_batches(eval_batches)
    if kwargs.get("importance_batches") is not None:
        kwargs["importance_batches"] = as_batches(kwargs["importance_batches"])
    return pd.concat(
        [iterative_pruning(model, eval_data, score_fn, ordering=o, **kwargs) for o in orderings], ignore_index=True
    )


def summarize_curves(curves):
    """Mean, standard deviation, min and max score per ordering and share (random orders: over seeds)."""
    grouped = curves.groupby(["ordering", "share_target"], sort=False)["score"]
    out = grouped.agg(["mean", "std", "min", "max", "count"]).reset_index()
    out["std"] = out["std"].fillna(0.0)
    return out.rename(columns={"count": "n_runs"})


# ----------------------------------------------------------------------------- cached curves of a classifier


@cache.memoized("pruning_curves")
def pruning_curve(
    classifier: Any,
    batches: Sequence[Batch],
    ordering: str | np.ndarray,
    score_fn: ScoreFn,
    *,
    step: float = 0.1,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    **options: Any,
):
    """:func:`iterative_pruning` of ``classifier`` (a :class:`~attnbook.engine.models.LoadedModel`) scored on
    ``batches``, cached by the classifier's weights, the batches, the ordering, the step, the seeds, the score
    function and any further ``options`` of :func:`iterative_pruning`. ``seed`` is ``None`` for a curve that is not a
    random order, also when read back."""
    return iterative_pruning(classifier.model, batches, score_fn, ordering=ordering, step=step, seeds=seeds,
                             **options)


def curves_by_ordering(
    classifier: Any,
    batches: Sequence[Batch],
    orderings: Mapping[str, np.ndarray],
    score_fn: ScoreFn,
    *,
    step: float = 0.1,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
):
    """Michel Fig. 3: one :func:`pruning_curve` per named ``orderings[name][layer, head]`` (prune in increasing
    order; the ``ordering`` column holds the name), then one random order per seed (``ordering`` "random")."""
    import pandas as pd

    frames = [pruning_curve(classifier, batches, values, score_fn, step=step).assign(ordering=name)
              for name, values in orderings.items()]
    frames.append(pruning_curve(classifier, batches, RANDOM, score_fn, step=step, seeds=seeds))
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------- what a curve says


def random_band(curves, ordering: str = RANDOM):
    """Per pruning share, the mean, standard deviation, min and max score of the ``ordering`` runs
    (one run per seed): the random orders' expected curve and its spread."""
    import pandas as pd

    runs = curves[curves["ordering"] == ordering]
    if runs.empty:
        return pd.DataFrame(columns=["share_pruned", "mean", "std", "min", "max", "n_runs"])
    g = runs.groupby("share_pruned")["score"]
    out = g.agg(["mean", "std", "min", "max", "count"]).reset_index().rename(columns={"count": "n_runs"})
    out["std"] = out["std"].fillna(0.0)
    return out.sort_values("share_pruned", kind="stable").reset_index(drop=True)


def largest_safe_share(curve, baseline: float, tolerance: float) -> float:
    """Michel §4.2: the largest ``share_pruned`` of ``curve`` (rows of one ordering, ascending shares,
    columns ``share_pruned`` and ``score``) such that every step up to it keeps
    ``score >= baseline - tolerance``; 0 when even the first pruning step loses more."""
    safe = 0.0
    for share, score in zip(curve["share_pruned"], curve["score"]):
        if score < baseline - tolerance:
            break
        safe = float(share)
    return safe


def safe_shares(curves, baseline: float, tolerance: float) -> dict[str, float]:
    """:func:`largest_safe_share` of every ordering of ``curves`` but the random ones (by name), and of the
    random orders' mean curve (:data:`RANDOM_MEAN`)."""
    safe = {o: largest_safe_share(c, baseline, tolerance) for o, c in curves.groupby("ordering") if o != RANDOM}
    safe[RANDOM_MEAN] = largest_safe_share(random_band(curves).rename(columns={"mean": "score"}), baseline, tolerance)
    return safe


def curve_area(curve, max_share: float = 0.9) -> float:
    """Mean score of a pruning curve over the steps with ``share_pruned <= max_share`` (higher = pruning hurts less)."""
    sel = curve[curve["share_pruned"] <= max_share + 1e-9]
    if sel.empty:
        raise EmptyDataError("no pruning step at or below the share")
    return float(sel.groupby("share_pruned")["score"].mean().mean())


def curve_areas(curves, max_share: float = 0.9) -> dict[str, float]:
    """:func:`curve_area` of every ordering of ``curves`` (random orders: of their mean curve)."""
    return {o: curve_area(c, max_share) for o, c in curves.groupby("ordering")}


# ----------------------------------------------------------------------------- one head per layer (§3.3, §4.2)


def one_head_per_layer_mask(keep: Sequence[int], n_heads: int) -> np.ndarray:
    """``mask[layer, head]`` keeping only head ``keep[layer]`` (0-based) in every layer (Michel §3.3/§4.2)."""
    mask = np.zeros((len(keep), n_heads), dtype=np.float32)
    for layer, head in enumerate(keep):
        if not 0 <= int(head) < n_heads:
            raise ParameterError(f"head {head} of layer {layer} is outside 0..{n_heads - 1}")
        mask[layer, int(head)] = 1.0
    return mask


def one_head_per_layer(model: Any, batches: Iterable[Any], keep: Sequence[int], score_fn: ScoreFn = accuracy) -> SweepResult:
    """The score of ``model`` with only head ``keep[layer]`` (0-based) left in *every* layer at once: one
    configuration, named "one head per layer" (Michel §3.3 keeps one head in one layer; §4.2 prunes further)."""
    n_heads = model_shape(unwrap(model))[1]
    mask = one_head_per_layer_mask(keep, n_heads)
    return sweep_configs(model, batches, mask[None], "mask", score_fn, names=["one head per layer"])


# ----------------------------------------------------------------------------- speed (§4.3)


def throughput_pool(batches: Sequence[Batch], n: int, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Up to ``n`` examples of ``batches`` as one right-padded input dict (the speed test's pool, Michel §4.3)."""
    rows: list[dict[str, torch.Tensor]] = []
    for b in batches:
        for i in range(b.size):
            length = int(b.inputs["attention_mask"][i].sum()) if "attention_mask" in b.inputs else b.inputs["input_ids"].shape[1]
            rows.append({k: v[i, :length] for k, v in b.inputs.items()})
            if len(rows) >= n:
                break
        if len(rows) >= n:
            break
    if not rows:
        raise EmptyDataError("no examples for the throughput pool")
    width = max(r["input_ids"].shape[0] for r in rows)
    out = {}
    for k in rows[0]:
        fill = pad_id if k == "input_ids" else 0
        t = torch.full((len(rows), width), fill, dtype=rows[0][k].dtype)
        for j, r in enumerate(rows):
            t[j, : r[k].shape[0]] = r[k]
        out[k] = t
    return out


def speed_numbers(speed, share: float) -> dict:
    """The record of a :func:`attnbook.engine.pruning.pruning_speed` table: the share pruned, how many heads,
    and the gain in examples per second (%) per batch size."""
    return {"share": share, "n_pruned": int(speed["n_pruned"].iloc[0]),
            "gain_pct": dict(zip(speed["batch_size"].astype(str), speed["gain_pct"].round(2)))}


# ----------------------------------------------------------------------------- curves with their examples (intervals)


@cache.memoized("head_sweeps")
def ordered_pruning_sweep(classifier: Any, batches: Sequence[Batch], heads: list[tuple[int, int]], score_fn: ScoreFn,
                          *, step: float = 0.1) -> SweepResult:
    """The sweep of :func:`pruning_sweep` for heads pruned in the order ``heads`` (0-based ``(layer, head)``),
    cached by the classifier's weights, the batches, the order, the step and the score function."""
    module = unwrap(classifier.model)
    n_layers, n_heads, _ = model_shape(module)
    schedule = pruning_schedule(n_layers * n_heads, step)
    masks = masks_from_order(heads, [n for _, n in schedule], (n_layers, n_heads))
    names = [f"{n} pruned" for _, n in schedule]
    return sweep_configs(module, batches, masks, "mask", score_fn, names=names, kind="pruning")


def pruning_sweep(classifier: Any, batches: Sequence[Batch], order: np.ndarray | int, score_fn: ScoreFn, *,
                  step: float = 0.1) -> SweepResult:
    """One pruning curve of ``classifier`` on ``batches`` as a sweep that keeps every example's output (so the curve
    can be bootstrapped over examples): the heads go in increasing order of ``order[layer, head]``, or, for an
    integer ``order``, in the seeded random order of :func:`iterative_pruning`'s ``"random"``. Configuration ``k``
    is the model after step ``k`` of :func:`pruning_schedule` (:func:`ordered_pruning_sweep`, cached)."""
    n_layers, n_heads, _ = model_shape(unwrap(classifier.model))
    if isinstance(order, (int, np.integer)):
        perm = np.random.default_rng(int(order)).permutation(n_layers * n_heads)
        heads = [divmod(int(k), n_heads) for k in perm]
    else:
        heads = pruning_order(order)
    sweep = ordered_pruning_sweep(classifier, batches, [(int(l), int(h)) for l, h in heads], score_fn, step=step)
    sweep.meta["order"] = [head_label(l, h) for l, h in heads]
    return sweep


def curve_frame(sweep: SweepResult, ordering: str, seed: Any = None, *, step: float = 0.1):
    """The rows of :func:`iterative_pruning` (``ordering, seed, share_target, n_pruned, share_pruned, score, delta,
    newly_pruned``) for a :func:`pruning_sweep`."""
    import pandas as pd

    n_total = len(sweep.meta["order"]) if "order" in sweep.meta else None
    schedule = pruning_schedule(n_total, step)
    labels = sweep.meta.get("order", [])
    rows, done = [], 0
    for (share, n), score in zip(schedule, sweep.scores):
        rows.append({"ordering": ordering, "seed": seed, "share_target": float(share), "n_pruned": int(n),
                     "share_pruned": n / n_total, "score": float(score), "delta": float(score - sweep.baseline_score),
                     "newly_pruned": " ".join(labels[done:n])})
        done = n
    return pd.DataFrame(rows)


def resampled_curve(sweep: SweepResult, task: str, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curve's scores ``[resample, step]`` and its unpruned score ``[resample]`` in every resample
    ``counts[resample, example]`` of the examples (the task's metric, x 100)."""

    base = np.nan_to_num(weighted_scores(task, sweep.baseline_outputs, sweep.gold, counts))
    scores = np.stack([np.nan_to_num(weighted_scores(task, o, sweep.gold, counts)) for o in sweep.flat_outputs()], 1)
    return scores, base


def safe_share_draws(scores: np.ndarray, base: np.ndarray, shares: np.ndarray, tolerance: float) -> np.ndarray:
    """:func:`largest_safe_share` in every resample: ``scores[resample, step]`` against ``base[resample]``."""
    ok = scores >= (base[:, None] - tolerance)
    first_bad = np.where(ok.all(1), scores.shape[1], np.argmin(ok, axis=1))
    return np.where(first_bad > 0, np.asarray(shares)[np.maximum(first_bad - 1, 0)], 0.0)


def area_draws(scores: np.ndarray, shares: np.ndarray, max_share: float = 0.9) -> np.ndarray:
    """:func:`curve_area` in every resample (mean score over the steps up to ``max_share``)."""
    keep = np.asarray(shares) <= max_share + 1e-9
    return scores[:, keep].mean(1)


def curve_statistics(sweeps: Mapping[str, Sequence[SweepResult]], task: str, tolerance: float, *,
                     n_resamples: int = 1000, seed: int = 0, max_share: float = 0.9) -> dict[str, dict]:
    """What the curves of one classifier say, with 95% intervals over the dev examples (one shared set of
    bootstrap draws, so differences between orderings are paired).

    ``sweeps[name]`` lists the :func:`pruning_sweep` s of an ordering (several for random orders: their mean
    curve is used). Returns per name ``safe`` and ``area`` (:class:`~attnbook.stats.Estimate`, the largest share
    within ``tolerance`` points of the unpruned score and the mean score up to ``max_share``) and their draws
    ``safe_draws``, ``area_draws``; the curves must share their examples and schedule.
    """

    first = next(iter(sweeps.values()))[0]
    n = len(first.gold)
    if n == 0:
        raise EmptyDataError("no examples")
    counts = bootstrap_counts(n, n_resamples, seed)
    n_total = len(first.meta["order"])
    shares = np.array([int(s.split()[0]) / n_total for s in first.names])
    out = {}
    for name, group in sweeps.items():
        curves = [resampled_curve(s, task, counts) for s in group]
        scores = np.mean([c[0] for c in curves], axis=0)
        base = curves[0][1]
        point = np.mean([s.scores for s in group], axis=0)
        safe_point = largest_safe_share({"share_pruned": shares, "score": point}, group[0].baseline_score, tolerance)
        area_point = float(point[shares <= max_share + 1e-9].mean())
        sd, ad = safe_share_draws(scores, base, shares, tolerance), area_draws(scores, shares, max_share)
        est = lambda v, d: Estimate(float(v), *map(float, percentile_interval(d)), n, "dev examples")  # noqa: E731
        out[name] = {"safe": est(safe_point, sd), "area": est(area_point, ad), "safe_draws": sd, "area_draws": ad,
                     "unpruned": est(group[0].baseline_score, base)}
    return out


def difference(stats_: Mapping[str, dict], a: str, b: str, what: str = "area"):
    """``a`` minus ``b`` of :func:`curve_statistics` (``what``: ``"area"`` or ``"safe"``), paired over the examples."""

    x, y = stats_[a], stats_[b]
    d = x[f"{what}_draws"] - y[f"{what}_draws"]
    lo, hi = percentile_interval(d)
    return Estimate(float(x[what].value - y[what].value), float(lo), float(hi), x[what].n, "dev examples (paired)")


# ----------------------------------------------------------------------------- speed with repeats (§4.3)


def speed_runs(model: Any, pool: Mapping[str, torch.Tensor], importance: np.ndarray, share: float, *,
               batch_sizes: Sequence[int] = (1, 4, 16, 64), n_examples: int = 256, repeats: int = 3,
               blocks: int = 8):
    """Michel §4.3, Table 4, measured so that the machine's load cannot decide it: the original model and a copy
    without the ``share`` least important heads (:func:`attnbook.engine.pruning.heads_to_prune`, one head kept per
    layer) are timed in turn, block by block (:func:`attnbook.engine.pruning.interleaved_throughput`): each repeat's
    ``n_examples`` in up to ``blocks`` blocks, the two models one right after the other on each block.

    Returns one row per batch size, repeat and block (one timing pair): ``batch_size, repeat, block, original,
    pruned`` (examples/s), ``gain_pct`` (the pair's speed ratio, in %) and ``n_pruned``."""
    import pandas as pd

    module = unwrap(model)
    heads = heads_to_prune(module, importance, share)
    smaller = pruned_copy(module, heads)
    rows = []
    for r in interleaved_throughput([module, smaller], pool, batch_sizes, n_examples=n_examples, repeats=repeats,
                                    blocks=blocks):
        orig, pruned = (r["examples"] / t for t in r["seconds"])
        rows.append({"batch_size": r["batch_size"], "repeat": r["repeat"], "block": r["block"], "original": orig,
                     "pruned": pruned, "gain_pct": 100.0 * (pruned / orig - 1.0)})
    out = pd.DataFrame(rows)
    out["n_pruned"] = sum(len(v) for v in heads.values())
    return out


def speed_summary(runs):
    """Per batch size of :func:`speed_runs`: mean and sd of both speeds, and the gain (%) as an
    :class:`~attnbook.stats.Estimate`: the median of the timing pairs' gains with its distribution-free 95% interval
    (:func:`attnbook.stats.median_interval`; none with fewer than 6 pairs). A median of paired ratios is what a
    load spike on one side of a pair, or on a few pairs, cannot move."""
    import pandas as pd

    rows = []
    for bs, g in runs.groupby("batch_size", sort=True):
        gain = median_interval(g["gain_pct"].to_numpy(), unit="interleaved timing pairs (median)")
        rows.append({"batch_size": int(bs), "original_mean": g["original"].mean(),
                     "original_std": g["original"].std(ddof=1) if len(g) > 1 else 0.0,
                     "pruned_mean": g["pruned"].mean(), "pruned_std": g["pruned"].std(ddof=1) if len(g) > 1 else 0.0,
                     "gain_pct": gain.value, "gain": gain, "n_pruned": int(g["n_pruned"].iloc[0])})
    return pd.DataFrame(rows)
