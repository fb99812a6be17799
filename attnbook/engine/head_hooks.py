"""The family-generic way to intervene on heads: hooks placed through the family table.

:mod:`attnbook.engine.interventions` runs BERT-style models (:data:`~attnbook.engine.interventions.INTERFACE_FAMILIES`)
through its own attention function; every other family gets its interventions (masking gates, disabled heads,
per-token gates) applied by the hooks here, installed by the outermost :func:`hooked` block and removed when the
last one ends. Shapes as in :class:`attnbook.engine.interventions.Intervention`.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from attnbook.core.errors import ModelError, ParameterError
from attnbook.engine import families

#: the hooks of the family-generic path while interventions are active (on the model's ``__dict__``)
_HOOKS_ATTR = "_attnbook_head_hooks"


def uniform_weights(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Kovaleva's uniform attention from ``allowed[..., query, key]`` (bool: the keys each query may see):
    ``1/n`` on each of a query's ``n`` allowed keys, 0 elsewhere (a query that may see none gets zeros). Both paths
    of the engine build ``allowed`` their way (the attention function from its 4-D mask,
    :func:`attnbook.engine.interventions.uniform_from_mask`; the hooks from the padding and the window,
    :func:`window_weights`) and share this."""
    count = allowed.sum(-1, keepdim=True).clamp(min=1)
    return allowed.to(dtype) / count.to(dtype)


def window_weights(padding: torch.Tensor | None, window: int | None, batch: int, seq: int,
                   like: torch.Tensor) -> torch.Tensor:
    """``w[batch, query, key]``: :func:`uniform_weights` over the keys a query may see, not padding
    (``padding[batch, seq]``, 0 = padding) and, in a local (sliding-window) layer, within ``window`` of it."""
    if padding is None:
        allowed = torch.ones(batch, seq, dtype=torch.bool, device=like.device)
    elif padding.dim() == 2 and tuple(padding.shape) == (batch, seq):
        allowed = padding.to(like.device) > 0
    else:
        raise ParameterError("disabling heads needs the 2-D padding mask attention_mask[batch, seq] (0 = padding) "
                             f"passed to the model by keyword; got shape {tuple(padding.shape)}")
    allowed = allowed[:, None, :].expand(batch, seq, seq)
    if window is not None:
        pos = torch.arange(seq, device=like.device)
        allowed = allowed & ((pos[:, None] - pos[None, :]).abs() <= window)[None]
    return uniform_weights(allowed, like.dtype)


def expand_rows(values: torch.Tensor, n_rows: int, what: str) -> torch.Tensor:
    """Expand ``values[n, ...]`` to ``[n_rows, ...]`` for a batch tiled ``n`` times (mask-major)."""
    n = values.shape[0]
    if n == n_rows:
        return values
    if n_rows % n:
        raise ParameterError(
            f"{n} stacked {what} configurations but the batch has {n_rows} rows; tile the inputs "
            f"{n} times with attnbook.engine.interventions.tile_batch"
        )
    return values.repeat_interleave(n_rows // n, dim=0)


@contextmanager
def hooked(module: nn.Module, interventions: Sequence[Any]) -> Iterator[None]:
    """Apply ``interventions`` to ``module`` through :class:`_HeadHooks` inside the block (installed by the
    outermost block, removed when the last one ends)."""
    hooks = module.__dict__.get(_HOOKS_ATTR)
    if hooks is None:
        hooks = _HeadHooks(module)
        module.__dict__[_HOOKS_ATTR] = hooks
    hooks.stack.extend(interventions)
    try:
        yield
    finally:
        for iv in interventions:
            for i in range(len(hooks.stack) - 1, -1, -1):
                if hooks.stack[i] is iv:
                    del hooks.stack[i]
                    break
        if not hooks.stack:
            hooks.close()
            module.__dict__.pop(_HOOKS_ATTR, None)


class _HeadHooks:
    """The interventions of a model outside :data:`INTERFACE_FAMILIES`, applied by hooks placed through the family
    table (:func:`attnbook.engine.families.sites`).

    * a pre-hook on the top model and on the base encoder records, at every forward, whether maps were asked for,
      the padding mask ``attention_mask[batch, seq]`` and resets the call counters;
    * a pre-hook on each layer says which depth runs (a shared ALBERT layer is called once per depth: its n-th call
      is its n-th depth; the fast sweep's :class:`~attnbook.engine.sweeps.LayerReplay` calls every layer, also
      those whose kept output it hands back, so the count holds there too);
    * a forward hook on each value projection (or fused ``qkv``) keeps its output while a head is disabled;
    * a pre-hook on each attention output projection ``W_o`` edits the context ``[rows, seq, heads * d]``:
      disabled heads' slices become the mean of their value vectors over the keys each query may see, then every
      mask multiplies its heads' slices;
    * a forward hook on each attention module edits the maps it returns ``[rows, head, query, key]`` the same way
      (uniform rows, gated weights) when maps were asked for and no gradient flows through them.
    """

    def __init__(self, module: nn.Module):
        self.module = module
        self.stack: list[Any] = []  # attnbook.engine.interventions.Intervention objects
        self.sites = families.sites(module)
        self.n_layers, self.n_heads, self.head_size = families.model_shape(module)
        self.depths: dict[int, list[int]] = {}
        for site in self.sites:
            self.depths.setdefault(id(site.layer), []).append(site.depth)
        self.calls: dict[int, int] = {}
        self.depth = 0
        self.padding: torch.Tensor | None = None
        self.want_maps = False
        self.values: dict[int, torch.Tensor] = {}
        base = families.base_model(module)
        self.handles = [base.register_forward_pre_hook(self._start, with_kwargs=True)]
        if base is not module:
            self.handles.append(module.register_forward_pre_hook(self._asked, with_kwargs=True))
        seen: set[tuple[str, int]] = set()
        for site in self.sites:
            source = site.qkv if site.qkv is not None else site.value
            for kind, mod, fn in (("l", site.layer, self._enter_layer), ("v", source, self._keep_value),
                                  ("o", site.output, self._before_output), ("a", site.attention, self._after_attention)):
                if (kind, id(mod)) in seen:
                    continue
                seen.add((kind, id(mod)))
                if kind in ("l", "o"):
                    self.handles.append(mod.register_forward_pre_hook(fn))
                else:
                    self.handles.append(mod.register_forward_hook(fn))

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
        self.values.clear()
        self.padding = None

    # -------------------------------------------------------------- bookkeeping
    def _asked(self, module, args, kwargs) -> None:
        self.want_maps = bool(kwargs.get("output_attentions") or getattr(module.config, "output_attentions", False))

    def _start(self, module, args, kwargs) -> None:
        self.calls.clear()
        self.values.clear()
        if module is self.module:
            self._asked(module, args, kwargs)
        elif kwargs.get("output_attentions"):
            self.want_maps = True
        mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
        self.padding = mask if isinstance(mask, torch.Tensor) and mask.dim() == 2 else None

    def _enter_layer(self, module, args) -> None:
        i = self.calls.get(id(module), 0)
        self.calls[id(module)] = i + 1
        depths = self.depths[id(module)]
        self.depth = depths[i % len(depths)]

    def _keep_value(self, module, args, output) -> None:
        if any(iv.mode == "disable" for iv in self.stack):
            self.values[id(module)] = output

    def _slices(self, site, device) -> tuple[int, torch.Tensor, torch.Tensor]:
        """Number of slices ``W_o`` reads, the original head of each (placeholders: 0) and which are real heads."""
        slices = families.slices_of(site, self.n_heads)
        index = torch.tensor([max(h, 0) for h in slices], device=device)
        real = torch.tensor([h >= 0 for h in slices], device=device)
        return len(slices), index, real

    def _disabled(self, depth: int, index: torch.Tensor, real: torch.Tensor, rows: int) -> torch.Tensor | None:
        """``bool[rows or 1, slices]``: the slices disabled at ``depth`` (``None`` when none is)."""
        out = None
        for iv in self.stack:
            if iv.mode != "disable":
                continue
            d = iv.values[..., depth, :].to(index.device).index_select(-1, index) & real
            d = d.reshape(1, -1) if d.ndim == 1 else expand_rows(d, rows, "disable")
            out = d if out is None else (out | d)
        if out is None or not bool(out.any()):
            return None
        return out

    def _masks(self, depth: int, index: torch.Tensor, real: torch.Tensor, like: torch.Tensor):
        """Each mask's gates at ``depth`` per slice (placeholders: 1), with whether it is per token."""
        for iv in self.stack:
            if iv.mode != "mask":
                continue
            m = iv.values[..., depth, :].to(device=like.device, dtype=like.dtype).index_select(-1, index)
            yield torch.where(real, m, torch.ones_like(m)), iv.per_token

    def _padding(self, rows: int, seq: int, device) -> torch.Tensor | None:
        """The padding mask of the keys ``bool[rows, seq]`` (``None``: no padding)."""
        if self.padding is None:
            return None
        if tuple(self.padding.shape) != (rows, seq):
            raise ParameterError(
                f"the attention mask has shape {tuple(self.padding.shape)} but the attention runs on "
                f"[{rows}, {seq}]: pass the padding mask attention_mask[batch, seq] to the model by keyword")
        return self.padding.to(device) > 0

    # -------------------------------------------------------------- the edits
    def _before_output(self, module, args):
        depth = self.depth
        if not self.stack:
            return None
        site = self.sites[depth]
        ctx = args[0]
        rows, seq = ctx.shape[0], ctx.shape[1]  # seq: the queries (the first ones only in a first-query layer)
        n, index, real = self._slices(site, ctx.device)
        d = self.head_size
        x = None
        disabled = self._disabled(depth, index, real, rows)
        if disabled is not None:
            source = site.qkv if site.qkv is not None else site.value
            values = self.values.get(id(source))
            if values is None:
                raise ModelError(f"no value vectors were seen before layer {depth}'s attention output projection")
            keys = values.shape[1]
            values = values.reshape(rows, keys, 3, n, d)[:, :, 2] if site.qkv is not None else values.reshape(
                rows, keys, n, d)
            cols = torch.nonzero(disabled.any(0)).flatten()  # the slices disabled in some row: their means only
            values = values.index_select(2, cols).to(ctx.dtype)
            allowed = self._padding(rows, keys, ctx.device)
            if site.window is None:  # every query sees the same keys: one mean per row and head
                if allowed is None:
                    mean = values.mean(1, keepdim=True)
                else:
                    w = allowed.to(ctx.dtype)
                    mean = (torch.einsum("bk,bkhd->bhd", w, values)
                            / w.sum(1).clamp(min=1)[:, None, None])[:, None]
            else:
                weights = window_weights(self.padding, site.window, rows, keys, ctx)[:, :seq]
                mean = torch.einsum("bqk,bkhd->bqhd", weights, values)
            x = ctx.reshape(rows, seq, n, d)
            chosen = disabled.index_select(1, cols)[:, None, :, None]
            x = x.index_copy(2, cols, torch.where(chosen, mean, x.index_select(2, cols)))
        for m, per_token in self._masks(depth, index, real, ctx):
            x = ctx.reshape(rows, seq, n, d) if x is None else x
            if per_token:
                if m.shape[0] != rows or m.shape[1] != seq:
                    raise ParameterError(f"a per-token mask has shape [batch, query] = {tuple(m.shape[:2])}, the "
                                         f"batch is {rows} x {seq}")
                x = x * m[..., None]
            else:
                m = m.reshape(1, n) if m.ndim == 1 else expand_rows(m, rows, "mask")
                x = x * m[:, None, :, None]
        if x is None:
            return None
        return (x.reshape(ctx.shape), *args[1:])

    def _after_attention(self, module, args, output) -> None:
        """Edit the returned maps in place (the output is kept)."""
        depth = self.depth
        if not (self.stack and self.want_maps) or not isinstance(output, tuple) or len(output) < 2:
            return
        weights = output[1]
        if not isinstance(weights, torch.Tensor) or weights.dim() != 4:
            return
        if torch.is_grad_enabled() and weights.requires_grad:  # the maps feed the gradient: leave them
            return
        site = self.sites[depth]
        rows, _, q, k = weights.shape
        _, index, real = self._slices(site, weights.device)
        disabled = self._disabled(depth, index, real, rows)
        if disabled is not None:
            if q != k:
                return
            uniform = window_weights(self.padding, site.window, rows, q, weights)[:, None]
            weights.copy_(torch.where(disabled[:, :, None, None], uniform, weights))
        for m, per_token in self._masks(depth, index, real, weights):
            if per_token:
                weights.mul_(m.transpose(1, 2)[..., None])
            else:
                m = m.reshape(1, -1) if m.ndim == 1 else expand_rows(m, rows, "mask")
                weights.mul_(m[:, :, None, None])
