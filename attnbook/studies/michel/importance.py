"""Head importance and iterative pruning by masking (Michel, Levy & Neubig 2019, §3–§4.2).

* :func:`head_importance` — Michel §4.1: ``I_h = E_x |∂L(x)/∂ξ_h|``, the sensitivity of the
  loss to the gate of head ``h``, for every head at once from one forward and one backward
  pass per batch. Each example gets its own gates (``ξ[example, layer, head] = 1``), so the
  absolute value is taken per example as in the paper's Eq. 2. ``granularity="token"``
  instead takes it per token and averages over real tokens, which is what the authors'
  code does (it gives somewhat different rankings; see the notes). Scores are
  ℓ2-normalised within each layer (``normalize=True``, Michel §4.1).
* :func:`single_head_ablation` and :func:`ablation_significance` — Michel §3.2: Δ of masking
  each head alone, and which Δ are significant (a t-test at p < 0.01 for BERT in the paper;
  a paired bootstrap with 1000 resamples for BLEU).
* :func:`all_but_one_ablation` and :func:`best_head_per_layer` — Michel §3.3 and App. A:
  keep only one head in a layer; the best head per layer, optionally chosen on one set and
  scored on another.
* :func:`iterative_pruning` — Michel §4.2: mask heads cumulatively in increasing order of
  importance, a fixed share of all heads per step (the paper says 10 %, the BERT script
  uses 5 %: ``step``), no retraining, and score after each step. Orderings: importance
  computed once before pruning (Michel's default) or recomputed after every step
  (``recompute=True``, the code's ``--exact_pruning``), the single-ablation Δ (Fig. 3's
  dashed curves), random orders (mean and spread over seeds), or any ``values[layer, head]``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from attnbook.core.errors import ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.interventions import Intervention, as_mask, intervene, model_shape, restore_attention, unwrap, use_attnbook_attention
from attnbook.engine.sweeps import (
    ScoreFn,
    SweepResult,
    accuracy,
    as_batches,
    bootstrap_delta,
    correct,
    output_of,
    paired_ttest,
    sweep_configs,
    sweep_single_heads,
)

#: ``loss_fn(outputs[batch, ...], labels[batch]) -> losses[batch]`` (one loss per example)
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


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
    if granularity not in ("example", "token"):
        raise ParameterError(f"granularity is 'example' (Michel Eq. 2) or 'token' (their code), got {granularity!r}")
    module = unwrap(model)
    loss_fn = loss_fn or default_loss
    data = as_batches(batches)
    n_layers, n_heads = model_shape(module)
    base = torch.ones(n_layers, n_heads) if base_mask is None else as_mask(base_mask, module).detach()
    if base.ndim != 2:
        raise ParameterError("base_mask is one mask [layer, head]")
    device = next(module.parameters()).device
    dtype = next(module.parameters()).dtype
    base = base.to(device=device, dtype=dtype)
    total = torch.zeros(n_layers, n_heads, dtype=torch.float64)
    count = 0.0
    was_training = module.training
    module.eval()
    previous = use_attnbook_attention(module)
    iterator = data
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(data, desc="head importance")
    try:
        for batch in iterator:
            if batch.labels is None:
                raise ParameterError("head importance needs gold labels in every batch")
            inputs = {k: v.to(device) for k, v in batch.inputs.items()}
            labels = batch.labels.to(device)
            n = batch.size
            if granularity == "example":
                xi = base.expand(n, n_layers, n_heads).clone().requires_grad_(True)
                iv = Intervention("mask", xi)
            else:
                seq = inputs["input_ids"].shape[1]
                xi = base.expand(n, seq, n_layers, n_heads).clone().requires_grad_(True)
                iv = Intervention("mask", xi, per_token=True)
            with torch.enable_grad(), intervene(module, iv):
                losses = loss_fn(output_of(module(**inputs)), labels)
                if losses.ndim != 1 or losses.shape[0] != n:
                    raise ParameterError(f"loss_fn must return one loss per example, shape [{n}], got {tuple(losses.shape)}")
                (grad,) = torch.autograd.grad(losses.sum(), xi)
            grad = grad.detach().abs().to(torch.float64).cpu()
            if granularity == "example":
                total += grad.sum(0)
                count += n
            else:
                real = inputs.get("attention_mask", torch.ones_like(inputs["input_ids"])).to(torch.float64).cpu()
                total += (grad * real[:, :, None, None]).sum((0, 1))
                count += float(real.sum())
    finally:
        restore_attention(module, previous)
        module.train(was_training)
    values = (total / max(count, 1.0)).numpy()
    return normalize_per_layer(values) if normalize else values


# ----------------------------------------------------------------------------- ablations (§3.2, §3.3)


def single_head_ablation(model: Any, batches: Iterable[Any], score_fn: ScoreFn = accuracy, **kwargs: Any) -> SweepResult:
    """Michel §3.2: mask each head alone (ξ_h = 0); ``.delta[layer, head]`` = score without h − base."""
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
    as in the paper; see :func:`attnbook.engine.sweeps.surviving_gains` for a corrected version).
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




def best_head_per_layer(selection: SweepResult, evaluation: SweepResult | None = None):
    """The head to keep in each layer (Michel Table 3, App. A Tables 5–6).

    The best head is the arg-max of ``selection.scores[layer]``; its Δ is reported on the
    selection set and, if given, on ``evaluation`` (App. A: choose on 5,000 training examples,
    score on the dev set). Layer and head are 1-based.
    """
    import pandas as pd

    if selection.kind != "all_but_one":
        raise ParameterError("best_head_per_layer needs the result of all_but_one_ablation")
    rows = []
    for layer, row in enumerate(selection.scores):
        head = int(np.argmax(row))
        rec = {"layer": layer + 1, "head": head + 1, "label": head_label(layer, head), "delta_selection": float(selection.delta[layer, head])}
        if evaluation is not None:
            rec["delta_evaluation"] = float(evaluation.delta[layer, head])
        rows.append(rec)
    return pd.DataFrame(rows)


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

    * ``"importance"`` — by :func:`head_importance` on ``importance_batches`` (Michel: the training
      set; default: ``eval_batches``), or by a precomputed ``importance``; computed once before
      pruning unless ``recompute`` (then after every step, on the heads still present);
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
    n_layers, n_heads = model_shape(module)
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
