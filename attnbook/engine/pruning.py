"""Physically removing attention heads, and what it buys in speed (Michel et al. §4.3).

Masking a head (:mod:`attnbook.engine.interventions`) changes the function but not the cost. To
measure the speed-up of a smaller model, Michel et al. remove the heads: the rows of the
query, key and value projections that produce a head's vectors and the matching columns
of the attention output projection are deleted. transformers 5 no longer has
``prune_heads``, so :func:`prune_heads` does it for BERT-family models.

Each pruned self-attention module keeps its own ``num_attention_heads`` and
``all_head_size`` (layers can have different head counts). BERT's attention code reshapes
with ``(*shape, -1, module.attention_head_size)``, so per-layer head counts need no change
there. A pruned model gives the same outputs as the unpruned one with those heads masked
(ξ_h = 0): a masked head contributes exactly nothing but the output bias, which pruning keeps.

The original head numbering survives pruning: the module remembers which original heads
it still has, so masks and disabled sets keep using ``[layer, head]`` of the full model.
The model's ``config`` is left unchanged (it describes the original shape).

Every other encoder family (:mod:`attnbook.engine.families`: DistilBERT, ALBERT, MPNet, DeBERTa-v2/v3, ModernBERT;
the BERT-layout families RoBERTa, XLM-R and ELECTRA go the BERT way) is pruned by
:func:`attnbook.engine.headgate.prune`, which removes the same rows and columns through the family table (fused
``Wqkv`` blocks, DeBERTa's positional projections, MPNet's shared position bias sliced per layer), with the same
guarantee. ALBERT applies one layer at every depth, so a head can only go at all of them at once:
:func:`heads_to_prune` chooses heads per shared layer for it (importance summed over the depths).
"""
from __future__ import annotations

import copy
import time
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core.errors import ModelError, ParameterError
from attnbook.engine import headgate
from attnbook.engine.families import family_of, sites
from attnbook.engine.interventions import (
    KEPT_HEADS_ATTR,
    attention_modules,
    model_shape,
    unwrap,
    uses_attention_interface,
)


def _output_dense(model: nn.Module, attn: nn.Module) -> nn.Linear:
    """The output projection ``W_o`` that reads the concatenated heads of ``attn`` (BERT: ``attention.output.dense``)."""
    names = {id(m): n for n, m in model.named_modules()}
    name = names[id(attn)]
    parent_name = name.rsplit(".", 1)[0] if "." in name else ""
    parent = model.get_submodule(parent_name)
    dense = getattr(getattr(parent, "output", None), "dense", None)
    if not isinstance(dense, nn.Linear):
        raise ModelError(
            f"cannot find the attention output projection of {name} (expected {parent_name}.output.dense): "
            "prune_heads supports BERT-family models"
        )
    return dense


def _slice_linear(linear: nn.Linear, index: torch.Tensor, dim: int) -> nn.Linear:
    """A copy of ``linear`` keeping ``index`` along the output (``dim=0``) or input (``dim=1``) features."""
    w = linear.weight.detach().index_select(dim, index).clone()
    b = None
    if linear.bias is not None:
        b = linear.bias.detach()[index].clone() if dim == 0 else linear.bias.detach().clone()
    new = nn.Linear(w.shape[1], w.shape[0], bias=b is not None, device=w.device, dtype=w.dtype)
    new.weight = nn.Parameter(w, requires_grad=linear.weight.requires_grad)
    if b is not None:
        new.bias = nn.Parameter(b, requires_grad=linear.bias.requires_grad)
    return new


def kept_heads(model: Any) -> dict[int, list[int]]:
    """The original (0-based) indices of the heads each layer still has."""
    if not uses_attention_interface(model):
        return headgate.kept_heads(unwrap(model))
    out = {}
    for layer, attn in enumerate(attention_modules(model)):
        kept = attn.__dict__.get(KEPT_HEADS_ATTR)
        out[layer] = list(range(int(attn.num_attention_heads))) if kept is None else [int(h) for h in kept]
    return out


def heads_from_mask(mask: Any) -> dict[int, list[int]]:
    """``{layer: [heads]}`` of the zero entries of ``mask[layer, head]`` (the heads a mask removes)."""
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ParameterError(f"expected mask[layer, head], got shape {mask.shape}")
    return {int(l): [int(h) for h in np.flatnonzero(mask[l] == 0)] for l in range(mask.shape[0]) if np.any(mask[l] == 0)}


def _checked(layer: Any, heads: Iterable[Any], n_layers: int, n_heads: int) -> tuple[int, set[int]]:
    """``(layer, heads)`` as ints, refused with the valid ranges when outside the model."""
    layer = int(layer)
    if not 0 <= layer < n_layers:
        raise ParameterError(f"layer {layer} is outside the model's {n_layers} layers (0-based)")
    remove = {int(h) for h in heads}
    if any(not 0 <= h < n_heads for h in remove):
        raise ParameterError(f"heads {sorted(remove)} of layer {layer} are outside 0..{n_heads - 1}")
    return layer, remove


def prune_heads(model: Any, heads: Mapping[int, Iterable[int]]) -> nn.Module:
    """Remove ``heads`` (``{layer: [head, ...]}``, 0-based, original numbering) from ``model`` in place.

    Slices the query/key/value output rows and the attention output projection's input
    columns of each removed head and updates the module's ``num_attention_heads`` and
    ``all_head_size``. Heads already removed are ignored. Removing every head of a layer
    is refused (mask them instead): a zero-width attention cannot be reshaped into heads.
    Returns the model. Families outside BERT's layout go through :func:`attnbook.engine.headgate.prune` (module
    doc; ALBERT: a head listed at every depth of its shared layer, :func:`heads_to_prune`).
    """
    module = unwrap(model)
    n_layers, n_heads = model_shape(module)
    if not uses_attention_interface(module):
        return _prune_family(module, heads, n_layers, n_heads)
    modules = attention_modules(module)
    for layer, to_remove in heads.items():
        layer, remove = _checked(layer, to_remove, n_layers, n_heads)
        attn = modules[layer]
        for part in ("query", "key", "value"):
            if not isinstance(getattr(attn, part, None), nn.Linear):
                raise ModelError(f"layer {layer}'s attention has no '{part}' projection: prune_heads supports BERT-family models")
        kept_before = attn.__dict__.get(KEPT_HEADS_ATTR)
        kept_before = list(range(int(attn.num_attention_heads))) if kept_before is None else [int(h) for h in kept_before]
        kept_after = [h for h in kept_before if h not in remove]
        if len(kept_after) == len(kept_before):
            continue
        if not kept_after:
            raise ParameterError(
                f"removing every head of layer {layer} is not supported; mask them with head_mask instead"
            )
        size = int(attn.attention_head_size)
        positions = [kept_before.index(h) for h in kept_after]  # current slot of each kept head
        index = torch.cat([torch.arange(p * size, (p + 1) * size) for p in positions]).to(attn.query.weight.device)
        dense = _output_dense(module, attn)
        attn.query = _slice_linear(attn.query, index, 0)
        attn.key = _slice_linear(attn.key, index, 0)
        attn.value = _slice_linear(attn.value, index, 0)
        new_dense = _slice_linear(dense, index, 1)
        dense_name = {id(m): n for n, m in module.named_modules()}[id(dense)]
        parent_name, attr = dense_name.rsplit(".", 1)
        setattr(module.get_submodule(parent_name), attr, new_dense)
        attn.num_attention_heads = len(kept_after)
        attn.all_head_size = len(kept_after) * size
        attn.__dict__[KEPT_HEADS_ATTR] = torch.tensor(kept_after, dtype=torch.long)
    return module


def _prune_family(module: nn.Module, heads: Mapping[int, Iterable[int]], n_layers: int, n_heads: int) -> nn.Module:
    """:func:`prune_heads` for a family outside BERT's layout: the same checks, then
    :func:`attnbook.engine.headgate.prune` (heads already removed are ignored)."""
    present = headgate.kept_heads(module)
    pairs = []
    for layer, to_remove in heads.items():
        layer, remove = _checked(layer, to_remove, n_layers, n_heads)
        if present[layer] and not set(present[layer]) - remove:
            raise ParameterError(
                f"removing every head of layer {layer} is not supported; mask them with head_mask instead"
            )
        pairs += [(layer, h) for h in sorted(remove) if h in present[layer]]
    return headgate.prune(module, pairs) if pairs else module


def heads_to_prune(model: Any, importance: np.ndarray, share: float, *, min_per_layer: int = 1
                   ) -> dict[int, list[int]]:
    """The ``share`` of all heads with the lowest ``importance[layer, head]`` that :func:`prune_heads` can remove from
    ``model``, at least ``min_per_layer`` heads left in every layer: :func:`least_important_heads`, except for a
    family whose layers share their weights (ALBERT), where a head can only be removed from its shared layer at
    every depth at once: there the heads of each shared layer are ranked by their importance summed over its
    depths, the ``share`` of those (layer, head) pairs with the lowest sum is chosen, and each is listed at every
    depth of its layer."""
    importance = np.asarray(importance, dtype=np.float64)
    module = unwrap(model)
    try:
        shared = family_of(module).shared_layers
    except ModelError:
        shared = False
    if not shared:
        return least_important_heads(importance, share, min_per_layer=min_per_layer)
    groups: dict[int, list[int]] = {}
    for site in sites(module):
        groups.setdefault(id(site.attention), []).append(site.depth)
    depth_lists = list(groups.values())
    summed = np.stack([importance[depths].sum(0) for depths in depth_lists])  # [shared layer, head]
    chosen = least_important_heads(summed, share, min_per_layer=min_per_layer)
    return {depth: list(hs) for g, hs in chosen.items() for depth in depth_lists[g]}


def pruned_copy(model: Any, heads: Mapping[int, Iterable[int]]) -> nn.Module:
    """A pruned deep copy of ``model`` (the original stays intact)."""
    return prune_heads(copy.deepcopy(unwrap(model)), heads)


def least_important_heads(importance: np.ndarray, share: float, *, min_per_layer: int = 1) -> dict[int, list[int]]:
    """The ``share`` of all heads with the lowest ``importance[layer, head]``, keeping at least
    ``min_per_layer`` heads in every layer (physical pruning cannot empty a layer)."""
    importance = np.asarray(importance, dtype=np.float64)
    if not 0 <= share <= 1:
        raise ParameterError(f"share is in [0, 1], got {share}")
    n_layers, n_heads = importance.shape
    target = int(np.floor(importance.size * share + 1e-9))
    left = np.full(n_layers, n_heads)
    out: dict[int, list[int]] = {}
    for k in np.argsort(importance.reshape(-1), kind="stable"):
        if sum(len(v) for v in out.values()) >= target:
            break
        layer, head = divmod(int(k), n_heads)
        if left[layer] > min_per_layer:
            out.setdefault(layer, []).append(head)
            left[layer] -= 1
    return out


def measure_throughput(
    model: Any,
    pool: Mapping[str, torch.Tensor],
    batch_sizes: Sequence[int] = (1, 4, 16, 64),
    *,
    n_examples: int = 256,
    repeats: int = 3,
    warmup: int = 1,
) -> list[dict]:
    """Examples per second of a forward pass, per batch size (Michel §4.3, Table 4).

    ``pool`` holds model inputs ``[examples, seq]``; each measurement runs ``n_examples``
    examples (cycling through the pool) in batches of the given size, ``repeats`` times after
    ``warmup`` untimed batches. Returns one record per (batch size, repeat).
    """
    module = unwrap(model)
    n_pool = int(pool["input_ids"].shape[0])
    if n_pool == 0:
        raise ParameterError("the throughput pool is empty")
    device = next(module.parameters()).device
    was_training = module.training
    module.eval()
    records = []
    try:
        with torch.inference_mode():
            for bs in batch_sizes:
                n_batches = max(1, n_examples // bs)
                batches = []
                for i in range(n_batches + warmup):
                    idx = torch.arange(i * bs, (i + 1) * bs) % n_pool
                    batches.append({k: v[idx].to(device) for k, v in pool.items()})
                for rep in range(repeats):
                    for b in batches[:warmup]:
                        module(**b)
                    t0 = time.perf_counter()
                    for b in batches[warmup:]:
                        module(**b)
                    dt = time.perf_counter() - t0
                    records.append({"batch_size": int(bs), "repeat": rep, "seconds": dt, "examples_per_s": n_batches * bs / dt})
    finally:
        module.train(was_training)
    return records


def interleaved_throughput(
    models: Sequence[Any],
    pool: Mapping[str, torch.Tensor],
    batch_sizes: Sequence[int] = (1, 4, 16, 64),
    *,
    n_examples: int = 256,
    repeats: int = 3,
    blocks: int = 8,
    warmup: int = 1,
) -> list[dict]:
    """Examples per second of two (or more) models timed *in turn, block by block*: a speed ratio that a busy
    machine does not bias (Michel §4.3, measured as ``make bench`` measures).

    Per batch size, each repeat's ``n_examples`` are cut into ``blocks`` blocks of whole batches; every block is run
    by each model right after the other, the order alternating from block to block (A B, B A, ...), so a load that
    comes and goes hits both sides of a pair alike. Returns one record per (batch size, repeat, block):
    ``batch_size, repeat, block, seconds`` (a list, one per model) and ``examples`` (per model)."""
    modules = [unwrap(m) for m in models]
    n_pool = int(pool["input_ids"].shape[0])
    if n_pool == 0:
        raise ParameterError("the throughput pool is empty")
    if len(modules) < 2:
        raise ParameterError("interleaved timing compares at least two models")
    device = next(modules[0].parameters()).device
    was_training = [m.training for m in modules]
    for m in modules:
        m.eval()
    records, turn = [], 0
    try:
        with torch.inference_mode():
            for bs in batch_sizes:
                n_batches = max(1, n_examples // bs)
                batches = [{k: v[torch.arange(i * bs, (i + 1) * bs) % n_pool].to(device) for k, v in pool.items()}
                           for i in range(n_batches + warmup)]
                for m in modules:
                    for b in batches[:warmup]:
                        m(**b)
                timed = batches[warmup:]
                k = max(1, min(blocks, len(timed)))
                cuts = np.array_split(np.arange(len(timed)), k)
                for rep in range(repeats):
                    for blk, idx in enumerate(cuts):
                        order = list(range(len(modules)))[:: 1 if turn % 2 == 0 else -1]
                        turn += 1
                        seconds = [0.0] * len(modules)
                        for j in order:
                            t0 = time.perf_counter()
                            for i in idx:
                                modules[j](**timed[i])
                            seconds[j] = time.perf_counter() - t0
                        records.append({"batch_size": int(bs), "repeat": rep, "block": blk, "seconds": seconds,
                                        "examples": int(len(idx) * bs)})
    finally:
        for m, was in zip(modules, was_training):
            m.train(was)
    return records


def pruning_speed(
    model: Any,
    pool: Mapping[str, torch.Tensor],
    heads: Mapping[int, Iterable[int]] | None = None,
    *,
    importance: np.ndarray | None = None,
    share: float = 0.5,
    seed: int = 0,
    batch_sizes: Sequence[int] = (1, 4, 16, 64),
    n_examples: int = 256,
    repeats: int = 3,
):
    """Michel §4.3, Table 4: examples/s of the original model and of a copy with heads removed.

    The heads are ``heads``, else the ``share`` least important by ``importance``, else a
    seeded random ``share`` (at least one head kept per layer). Returns a DataFrame per batch
    size: ``original_mean``, ``original_std``, ``pruned_mean``, ``pruned_std``, ``gain_pct``, and
    ``n_pruned``.
    """
    import pandas as pd

    module = unwrap(model)
    n_layers, n_heads = model_shape(module)
    if heads is None:
        values = importance if importance is not None else np.random.default_rng(seed).random((n_layers, n_heads))
        heads = heads_to_prune(module, values, share)
    heads = {int(layer): [int(h) for h in hs] for layer, hs in heads.items()}
    smaller = pruned_copy(module, heads)
    kw = {"n_examples": n_examples, "repeats": repeats}
    rows = []
    for variant, m in (("original", module), ("pruned", smaller)):
        for rec in measure_throughput(m, pool, batch_sizes, **kw):
            rows.append({"variant": variant, **rec})
    raw = pd.DataFrame(rows)
    stats = raw.groupby(["batch_size", "variant"])["examples_per_s"].agg(["mean", "std"]).unstack("variant")
    out = pd.DataFrame(
        {
            "batch_size": stats.index.to_numpy(),
            "original_mean": stats[("mean", "original")].to_numpy(),
            "original_std": stats[("std", "original")].fillna(0.0).to_numpy(),
            "pruned_mean": stats[("mean", "pruned")].to_numpy(),
            "pruned_std": stats[("std", "pruned")].fillna(0.0).to_numpy(),
        }
    )
    out["gain_pct"] = 100.0 * (out["pruned_mean"] / out["original_mean"] - 1.0)
    out["n_pruned"] = sum(len(v) for v in heads.values())
    return out
