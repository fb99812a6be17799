"""Physically removing attention heads, and what it buys in speed (Michel et al. §4.3): the book's one pruning.

Masking a head (:mod:`attnbook.engine.interventions`) changes the function but not the cost. To measure the
speed-up of a smaller model, Michel et al. remove the heads; transformers 5 no longer has ``prune_heads``, so
:func:`prune_heads` does it for every family of the family table (:mod:`attnbook.engine.families`): per layer the
rows of the query/key/value projections of the removed heads (the matching row blocks of a fused ``qkv``; DeBERTa's
positional projections too) and the input columns of the output projection are deleted, and the attention module's
head-count and size attributes updated, so the forward really is smaller. A pruned model computes what the unpruned
one computes with those heads masked (a masked head contributes nothing but the output bias, which pruning keeps).

The original head numbering survives pruning: each pruned attention module records the original head of every
slice it still has (:data:`attnbook.engine.families.SLICES_ATTR`), so masks, disabled sets, importance scores and
maps keep using ``[layer, head]`` of the full model. The model's ``config`` is left unchanged (it describes the
original shape). A layer whose heads are all removed keeps one inert placeholder head (zero query/key/value rows,
zero output columns): no family's attention code runs with zero heads, and the placeholder contributes exactly
what a fully masked layer does, the output bias.

ALBERT applies one layer at every depth, so a head can only go at all of them at once: :func:`heads_to_prune`
chooses heads per shared layer for it (importance summed over the depths).
"""
from __future__ import annotations

import copy
import time
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core.errors import ModelError, ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.families import SLICES_ATTR, Site, family_of, get_path, model_shape, set_path, sites, slices_of
from attnbook.engine.interventions import as_disabled, unwrap


def kept_heads(model: Any) -> dict[int, list[int]]:
    """``{layer: [original heads still present]}`` (0-based)."""
    module = unwrap(model)
    _, n_heads, _ = model_shape(module)
    return {site.depth: [h for h in slices_of(site, n_heads) if h >= 0] for site in sites(module)}


def heads_from_mask(mask: Any) -> dict[int, list[int]]:
    """``{layer: [heads]}`` of the zero entries of ``mask[layer, head]`` (the heads a mask removes)."""
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ParameterError(f"expected mask[layer, head], got shape {mask.shape}")
    return {int(l): [int(h) for h in np.flatnonzero(mask[l] == 0)] for l in range(mask.shape[0]) if np.any(mask[l] == 0)}


def _rows(positions: list[int], d: int, offset: int = 0) -> torch.Tensor:
    return torch.cat([torch.arange(offset + p * d, offset + (p + 1) * d) for p in positions])


def _sliced(linear: nn.Linear, index: torch.Tensor, dim: int, zero: bool = False) -> nn.Linear:
    """A new ``nn.Linear`` keeping ``index`` of the output rows (``dim=0``) or input columns (``dim=1``)."""
    index = index.to(linear.weight.device)
    weight = linear.weight.detach().index_select(dim, index).clone()
    bias = None if linear.bias is None else linear.bias.detach()
    if bias is not None:
        bias = (bias.index_select(0, index) if dim == 0 else bias).clone()
    if zero:
        weight.zero_()
        if bias is not None and dim == 0:
            bias.zero_()
    new = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device=weight.device,
                    dtype=weight.dtype)
    new.weight = nn.Parameter(weight, requires_grad=linear.weight.requires_grad)
    if bias is not None:
        new.bias = nn.Parameter(bias, requires_grad=linear.bias.requires_grad)
    new.train(linear.training)
    return new


def _slice_head_bias(module: nn.Module, args: tuple, kwargs: dict):
    """Pre-hook left on a pruned attention module of a family with a shared per-head bias (MPNet): keeps the
    bias ``[batch, heads, query, key]`` rows of the heads the module still has."""
    name, position = module._attnbook_head_bias
    keep = torch.tensor([max(h, 0) for h in module.__dict__[SLICES_ATTR]])
    if name in kwargs and kwargs[name] is not None:
        kwargs[name] = kwargs[name].index_select(1, keep.to(kwargs[name].device))
    elif len(args) > position and args[position] is not None:
        args = (*args[:position], args[position].index_select(1, keep.to(args[position].device)),
                *args[position + 1:])
    return args, kwargs


def prune_heads(model: Any, heads: Any) -> nn.Module:
    """Remove ``heads`` from ``model`` in place and return it (the module inside a LoadedModel): ``{layer: [head,
    ...]}``, ``[(layer, head), ...]`` (0-based, original numbering), the papers' labels ``"2-3"``, or a bool array
    ``[layer, head]``. Heads already removed are ignored. See the module doc for what is removed and kept.

    Shared layers (ALBERT) cannot lose a head at one depth only: pruning acts on the weights, which every depth
    uses. A head must then be listed at every depth its module serves, otherwise :class:`ModelError` is raised
    (mask it instead, which is per depth; :func:`heads_to_prune` lists it at every depth).
    """
    module = unwrap(model)
    family = family_of(module)
    chosen = {(int(l), int(h)) for l, h in np.argwhere(as_disabled(heads, module).numpy())}
    _, n_heads, d = model_shape(module)
    groups: dict[int, list[Site]] = {}
    for site in sites(module):
        groups.setdefault(id(site.attention), []).append(site)
    for group in groups.values():
        depths = [site.depth for site in group]
        removal = [frozenset(head for (layer, head) in chosen if layer == depth) for depth in depths]
        if len(set(removal)) > 1:
            labels = sorted({head_label(layer, head) for (layer, head) in chosen if layer in depths})
            raise ModelError(
                f"{family.label} shares one attention module among depths {depths}: a head can "
                f"only be pruned at all of them at once (asked: {', '.join(labels)}). List the head at every "
                "depth to prune it everywhere, or mask it to switch it off at one depth.")
        if removal[0]:
            _prune_module(family, group[0], removal[0], n_heads, d)
    return module


def _prune_module(family, site: Site, remove: frozenset, n_heads: int, d: int) -> None:
    attn = site.attention
    current = list(slices_of(site, n_heads))
    if not remove.intersection(current):
        return
    kept = [h for h in current if h >= 0 and h not in remove]
    placeholder = not kept
    positions = [0] if placeholder else [current.index(h) for h in kept]
    rows = _rows(positions, d)
    if site.qkv is not None:
        width = len(current) * d
        fused = torch.cat([_rows(positions, d, offset=k * width) for k in range(3)])
        set_path(attn, family.qkv, _sliced(site.qkv, fused, 0, zero=placeholder))
    else:
        for name in (family.query, family.key, family.value):
            set_path(attn, name, _sliced(get_path(attn, name), rows, 0, zero=placeholder))
    for name in family.head_rows:
        extra = get_path(attn, name)
        if isinstance(extra, nn.Linear):
            set_path(attn, name, _sliced(extra, rows, 0, zero=placeholder))
    set_path(site.layer, family.output, _sliced(site.output, rows, 1, zero=placeholder))
    for name in family.count_attrs:
        setattr(attn, name, len(positions))
    for name in family.size_attrs:
        setattr(attn, name, len(positions) * d)
    attn.__dict__[SLICES_ATTR] = tuple(kept) if kept else (-1,)
    if family.head_bias and "_attnbook_head_bias" not in attn.__dict__:
        attn.__dict__["_attnbook_head_bias"] = family.head_bias
        attn.register_forward_pre_hook(_slice_head_bias, with_kwargs=True)


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
    n_layers, n_heads, _ = model_shape(module)
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
