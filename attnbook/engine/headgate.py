"""Masking, disabling, scoring and pruning attention heads of any supported encoder, written once.

The idea: head ``h`` of a layer contributes through its slice ``ctx[..., h*d:(h+1)*d]`` of the context vector
``ctx[batch, seq, heads*d]`` (``d`` = head size) that enters the attention output projection ``W_o``. A forward
pre-hook on ``W_o`` (found through the family table, :mod:`attnbook.engine.families`) can scale or replace those
slices whatever the attention implementation (eager, SDPA, flash) computes inside, so nothing here knows a
family's attention code.

* :func:`gated` - Michel et al.'s gate: ``ctx_h <- gate[layer, head] * ctx_h`` (differentiable in ``gate``).
* :func:`masked` - ``gate = 0`` on some heads: the head contributes nothing (``W_o``'s bias is kept).
* :func:`disabled` - Kovaleva et al.'s disabling: the head's attention is replaced by the uniform distribution
  over the non-padding keys (ModernBERT local layers: the keys inside the window), so its slice becomes the mean
  of its value vectors over those keys: ``ctx_h[b, i] = mean_{j valid for i} v_h[b, j]``. The value vectors are
  captured by a forward hook on the value projection (or the fused ``qkv``); the padding mask by a pre-hook on
  the base encoder's forward.
* :func:`head_importance` - Michel's importance ``sum_batches |d loss / d gate|`` at ``gate = 1``.
* :func:`prune` - physically removes heads (rows of q/k/v, columns of ``W_o``).
* :func:`attention_maps` - the model's own attention probabilities, ``attn[layer, batch, head, query, key]``.

Every array is 0-based ``[layer, head]`` over the model's *original* heads (``layer`` = depth, so ALBERT has
``num_hidden_layers`` rows although it has one set of weights), also after pruning. Heads can be given as
``(layer, head)`` pairs or as the reader's 1-based labels ``"2-3"``. Contexts restore the model on exit (all
hooks removed, even when the body raises) and can be nested.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from attnbook.core.errors import ModelError, ParameterError
from attnbook.core.heads import head_label, parse_head_label
from attnbook.engine.families import (
    SLICES_ATTR,
    Site,
    base_model,
    family_of,
    get_path,
    model_shape,
    set_path,
    sites,
    slices_of,
)

Heads = Iterable["tuple[int, int] | str"]


def normalize_heads(model: nn.Module, heads: Heads) -> set[tuple[int, int]]:
    """``{(layer, head)}`` 0-based from pairs or 1-based labels (``"2-3"``), checked against the model's shape."""
    n_layers, n_heads, _ = model_shape(model)
    out = set()
    for item in heads:
        layer, head = parse_head_label(item) if isinstance(item, str) else (int(item[0]), int(item[1]))
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ParameterError(f"head ({layer}, {head}) is outside the model's {n_layers} layers x {n_heads} "
                                 "heads (0-based [layer, head]; labels like '2-3' are 1-based)")
        out.add((layer, head))
    return out


class _Run:
    """Hooks of one context: per-module call counters (shared ALBERT layers), the padding mask, value captures.

    A pre-hook on the base encoder resets the counters and records ``attention_mask [batch, seq]`` at every
    forward; ``depth(module)`` then tells which depth a call of a (possibly shared) module is.
    """

    def __init__(self, model: nn.Module, need_values: bool = False):
        self.model = model
        self.sites = sites(model)
        self.n_layers, self.n_heads, self.head_size = model_shape(model)
        self.handles: list = []
        self.calls: dict[int, int] = {}
        self.depths: dict[int, list[int]] = {}
        for site in self.sites:
            self.depths.setdefault(id(site.output), []).append(site.depth)
        self.padding: torch.Tensor | None = None
        self.values: dict[int, torch.Tensor] = {}
        self.handles.append(base_model(model).register_forward_pre_hook(self._start, with_kwargs=True))
        if need_values:
            seen = set()
            for site in self.sites:
                source = site.qkv if site.qkv is not None else site.value
                if id(source) not in seen:
                    seen.add(id(source))
                    self.handles.append(source.register_forward_hook(self._keep_value))

    def _start(self, module, args, kwargs):
        self.calls.clear()
        mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
        self.padding = mask if isinstance(mask, torch.Tensor) else None

    def _keep_value(self, module, args, output):
        self.values[id(module)] = output

    def depth(self, module: nn.Module) -> int:
        """The depth of this call of ``module`` (its n-th call since the base encoder's forward started)."""
        i = self.calls.get(id(module), 0)
        self.calls[id(module)] = i + 1
        depths = self.depths[id(module)]
        return depths[i % len(depths)]

    def on_output(self, fn: Callable[[Site, torch.Tensor], torch.Tensor | None]) -> None:
        """Register ``fn(site, ctx[batch, seq, slices*d]) -> new ctx | None`` on every output projection."""
        seen = set()
        for site in self.sites:
            if id(site.output) in seen:
                continue
            seen.add(id(site.output))

            def hook(module, args, _fn=fn):
                new = _fn(self.sites[self.depth(module)], args[0])
                return None if new is None else (new, *args[1:])

            self.handles.append(site.output.register_forward_pre_hook(hook))

    def slices(self, site: Site) -> tuple[int, ...]:
        return slices_of(site, self.n_heads)

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
        self.values.clear()


@contextmanager
def _run(model: nn.Module, need_values: bool = False) -> Iterator[_Run]:
    run = _Run(model, need_values)
    try:
        yield run
    finally:
        run.close()


@contextmanager
def gated(model: nn.Module, gate: torch.Tensor) -> Iterator[nn.Module]:
    """Multiply each head's context slice by ``gate[layer, head]`` (float ``[n_layers, n_heads]``, may require
    grad; original head numbering) inside the block. Pruned heads ignore their gate."""
    n_layers, n_heads, d = model_shape(model)
    if not isinstance(gate, torch.Tensor) or tuple(gate.shape) != (n_layers, n_heads):
        raise ParameterError(f"gate must be a tensor [layer, head] of shape ({n_layers}, {n_heads}), "
                             f"got {getattr(gate, 'shape', type(gate).__name__)}")
    with _run(model) as run:
        def scale(site: Site, ctx: torch.Tensor) -> torch.Tensor:
            slices = run.slices(site)
            index = torch.tensor([max(h, 0) for h in slices], device=gate.device)
            factor = gate[site.depth].index_select(0, index)
            factor = torch.where(torch.tensor([h >= 0 for h in slices], device=gate.device), factor,
                                 torch.ones_like(factor))  # a placeholder slice is zero already
            shape = ctx.shape
            out = ctx.view(*shape[:-1], len(slices), d) * factor.to(ctx.device, ctx.dtype)[:, None]
            return out.reshape(shape)

        run.on_output(scale)
        yield model


@contextmanager
def masked(model: nn.Module, heads: Heads) -> Iterator[nn.Module]:
    """Zero the listed heads (Michel's masking): their slice of the context is 0 inside the block."""
    n_layers, n_heads, _ = model_shape(model)
    gate = torch.ones(n_layers, n_heads, dtype=_dtype(model))
    for layer, head in normalize_heads(model, heads):
        gate[layer, head] = 0.0
    with gated(model, gate):
        yield model


@contextmanager
def disabled(model: nn.Module, heads: Heads) -> Iterator[nn.Module]:
    """Kovaleva's disabling: each listed head attends uniformly to the non-padding keys inside the block.

    The head's context slice becomes ``ctx_h[b, i] = sum_j w[b, i, j] v_h[b, j]`` with ``w[b, i, j] = 1 / n`` over
    the ``n`` keys ``j`` that query ``i`` may see: not padding (``attention_mask[b, j] = 1``) and, in a local
    (sliding-window) layer, ``|i - j| <= window``. Padded query rows get the same (their output is never read by
    real tokens).
    """
    chosen = normalize_heads(model, heads)
    _, _, d = model_shape(model)
    with _run(model, need_values=True) as run:
        def uniform(site: Site, ctx: torch.Tensor) -> torch.Tensor | None:
            slices = run.slices(site)
            which = [s for s, h in enumerate(slices) if (site.depth, h) in chosen]
            if not which:
                return None
            batch, seq = ctx.shape[0], ctx.shape[1]
            source = site.qkv if site.qkv is not None else site.value
            values = run.values[id(source)]
            if site.qkv is not None:  # fused rows: [q heads | k heads | v heads]
                values = values.reshape(batch, seq, 3, len(slices), d)[:, :, 2]
            else:
                values = values.reshape(batch, seq, len(slices), d)
            weights = _uniform_weights(run.padding, site.window, batch, seq, ctx)
            index = torch.tensor(which, device=ctx.device)
            mean = torch.einsum("bqk,bkhd->bqhd", weights, values.index_select(2, index).to(ctx.dtype))
            out = ctx.reshape(batch, seq, len(slices), d).index_copy(2, index, mean)
            return out.reshape(ctx.shape)

        run.on_output(uniform)
        yield model


def _uniform_weights(padding: torch.Tensor | None, window: int | None, batch: int, seq: int,
                     like: torch.Tensor) -> torch.Tensor:
    """``w[batch, query, key]``: 1/n over the keys a query may see (non-padding, inside the window if any)."""
    if padding is None:
        allowed = torch.ones(batch, seq, dtype=torch.bool, device=like.device)
    elif padding.dim() == 2 and tuple(padding.shape) == (batch, seq):
        allowed = padding.to(like.device) > 0
    else:
        raise ParameterError("disabled() needs the 2-D padding mask attention_mask[batch, seq] (0 = padding) "
                             f"passed to the model by keyword; got shape {tuple(padding.shape)}")
    allowed = allowed[:, None, :].expand(batch, seq, seq)
    if window is not None:
        pos = torch.arange(seq, device=like.device)
        allowed = allowed & ((pos[:, None] - pos[None, :]).abs() <= window)[None]
    weights = allowed.to(like.dtype)
    return weights / weights.sum(-1, keepdim=True).clamp(min=1)


def _dtype(model: nn.Module) -> torch.dtype:
    param = next(model.parameters(), None)
    return param.dtype if param is not None and param.is_floating_point() else torch.float32


# --------------------------------------------------------------------------------------------- attention maps
@contextmanager
def eager_attention(model: nn.Module) -> Iterator[nn.Module]:
    """Run ``model`` with transformers' eager attention inside the block (the only implementation that returns
    attention probabilities); the previous implementation is restored afterwards. Families whose attention
    code has no implementation switch (MPNet, DeBERTa) compute eagerly anyway."""
    previous = getattr(model.config, "_attn_implementation", None)
    switch = previous not in (None, "eager") and getattr(model, "_can_set_attn_implementation", lambda: False)()
    if switch:
        model.set_attn_implementation("eager")
    try:
        yield model
    finally:
        if switch:
            model.set_attn_implementation(previous)


def attention_maps(model: nn.Module, **inputs: Any) -> torch.Tensor:
    """``attn[layer, batch, head, query, key]`` (float, detached): the model's own ``output_attentions=True``
    probabilities with eager attention. Pruned heads are NaN (their original position is kept).

    ModernBERT in float64: its eager softmax runs in float32, so where a local window holds only padding the
    row is NaN and the NaN spreads through the padded keys; run it in float32 (or without padding) for maps."""
    n_layers, n_heads, _ = model_shape(model)
    with eager_attention(model), torch.no_grad():
        out = model(**inputs, output_attentions=True)
    maps = getattr(out, "attentions", None)
    if maps is None or len(maps) != n_layers or any(m is None for m in maps):
        raise ModelError(f"{type(model).__name__} returned {0 if maps is None else len(maps)} attention maps for "
                         f"{n_layers} layers; it needs eager attention and output_attentions support")
    first = maps[0]
    full = first.new_full((n_layers, first.shape[0], n_heads, first.shape[-2], first.shape[-1]), float("nan"))
    for site, layer_maps in zip(sites(model), maps):
        for s, head in enumerate(slices_of(site, n_heads)):
            if head >= 0:
                full[site.depth, :, head] = layer_maps[:, s]
    return full


# ------------------------------------------------------------------------------------------------- importance
def head_importance(model: nn.Module, batches: Iterable[Mapping[str, Any]],
                    loss_fn: Callable[[nn.Module, Mapping[str, Any]], torch.Tensor] | None = None) -> np.ndarray:
    """Michel et al.'s head importance ``I[layer, head] = sum over batches |d loss / d gate[layer, head]|`` at
    ``gate = 1`` (float64 array, original numbering; NaN for pruned heads).

    ``loss_fn(model, batch)`` returns a scalar loss tensor; the default is ``model(**batch).loss`` (give labels in
    the batch). Only the gate is differentiated: the parameters' ``.grad`` are left untouched. Put the model in
    ``eval()`` mode first unless dropout noise is wanted.
    """
    n_layers, n_heads, _ = model_shape(model)
    loss_fn = loss_fn or (lambda m, batch: m(**batch).loss)
    gate = torch.ones(n_layers, n_heads, dtype=_dtype(model), requires_grad=True)
    total = torch.zeros(n_layers, n_heads, dtype=torch.float64)
    count = 0
    with gated(model, gate), torch.enable_grad():
        for batch in batches:
            loss = loss_fn(model, batch)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ParameterError("loss_fn(model, batch) must return a scalar loss tensor")
            (grad,) = torch.autograd.grad(loss.reshape(()), gate, allow_unused=True)
            if grad is not None:
                total += grad.detach().abs().to(torch.float64).cpu()
            count += 1
    if count == 0:
        raise ParameterError("head_importance needs at least one batch")
    out = total.numpy()
    for site in sites(model):
        present = {h for h in slices_of(site, n_heads) if h >= 0}
        out[site.depth, [h for h in range(n_heads) if h not in present]] = np.nan
    return out


# ---------------------------------------------------------------------------------------------------- pruning
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


def prune(model: nn.Module, heads: Heads) -> nn.Module:
    """Remove ``heads`` (``(layer, head)`` 0-based, original numbering, or labels ``"2-3"``) from ``model`` in
    place and return it. The pruned model computes what the unpruned one computes with those heads masked.

    Per layer the rows of the query/key/value projections of the removed heads (the matching row blocks of a
    fused ``qkv``; DeBERTa's positional projections too) and the input columns of the output projection are
    deleted, and the attention module's head-count/size attributes updated, so the forward really is smaller.
    The config still describes the original shape; the original numbering is kept on the module, so gates,
    masks and maps keep using ``[layer, head]`` of the full model.

    A layer whose heads are *all* removed keeps one inert placeholder head (zero query/key/value rows, zero output
    columns): no family's attention code runs with zero heads (they reshape with ``-1`` or divide by the head
    count), and the placeholder contributes exactly what a fully masked layer does, the output bias.

    Shared layers (ALBERT) cannot lose a head at one depth only: pruning acts on the weights, which every depth
    uses. A head must then be listed at every depth its module serves, otherwise :class:`ModelError` is raised
    (mask it with :func:`masked` instead, which is per depth).
    """
    family = family_of(model)
    chosen = normalize_heads(model, heads)
    _, n_heads, d = model_shape(model)
    groups: dict[int, list[Site]] = {}
    for site in sites(model):
        groups.setdefault(id(site.attention), []).append(site)
    for group in groups.values():
        depths = [site.depth for site in group]
        removal = [frozenset(head for (layer, head) in chosen if layer == depth) for depth in depths]
        if len(set(removal)) > 1:
            labels = sorted({head_label(layer, head) for (layer, head) in chosen if layer in depths})
            raise ModelError(
                f"{family.label} shares one attention module among depths {depths}: a head can "
                f"only be pruned at all of them at once (asked: {', '.join(labels)}). List the head at every "
                "depth to prune it everywhere, or use masked() to switch it off at one depth.")
        if removal[0]:
            _prune_module(family, group[0], removal[0], n_heads, d)
    return model


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


def kept_heads(model: nn.Module) -> dict[int, list[int]]:
    """``{layer: [original heads still present]}`` (0-based)."""
    _, n_heads, _ = model_shape(model)
    return {site.depth: [h for h in slices_of(site, n_heads) if h >= 0] for site in sites(model)}
