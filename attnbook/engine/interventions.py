"""Interventions on attention heads: Michel's head mask and Kovaleva's uniform disabling.

Two ways of switching a head off are studied in the book, and they are *not* the same
operation:

* **Masking** (Michel et al. §2.3). The layer output is ``Σ_h ξ_h · Att_h(x)``; a gate
  ``ξ[layer, head]`` multiplies each head's output (its context vectors, before the
  output projection ``W_o``). ``ξ_h = 0`` removes the head: it contributes nothing but
  the output projection's bias. ``ξ`` is an ordinary tensor, so ``ξ.requires_grad_()``
  gives ``∂L/∂ξ`` — the head-importance score of Michel §4.1.
* **Disabling** (Kovaleva et al. §4.6). The head's attention weights are replaced by the
  uniform distribution ``1/L`` over the ``L`` real (unpadded) tokens of the input, while
  its value projection is kept. The head still writes into the residual stream — the
  *mean* of its value vectors, the same for every query — so information keeps flowing
  through it; only the learned pattern is gone. A disabled head's output is generally
  far from zero, which is why the two interventions can disagree about which heads matter.

Both are applied by one custom attention function registered with
``transformers.AttentionInterface`` under the name ``"attnbook"``, not by forking the
model. The function runs the model's own eager attention (so a model without active
interventions gives bit-identical outputs), then edits the heads of the calling layer
(``module.layer_idx``). Interventions are attached to the model by context managers::

    with disable_heads(model, [(0, 3), (5, 11)]):       # Kovaleva: uniform 1/L
        out = model(**inputs, output_attentions=True)   # maps show the weights actually used
    with head_mask(model, xi):                          # Michel: xi[layer, head]
        loss = loss_fn(model(**inputs).logits, labels)
    grad = torch.autograd.grad(loss, xi)                # dL/dxi

Several interventions can be evaluated in *one* forward pass: give a stack
``xi[n_masks, layer, head]`` (or ``disabled[n_configs, layer, head]``) and feed the inputs
tiled ``n`` times along the batch (:func:`tile_batch`, mask-major: rows ``m*B .. m*B+B-1``
see mask ``m``).

Arrays are 0-based ``[layer, head]`` in the model's *original* head numbering, also after
heads were physically removed by :func:`attnbook.engine.pruning.prune_heads`. This module, with its hook path
(:mod:`attnbook.engine.head_hooks`), is the book's one way of switching heads off: the chapters' sweeps, the
importance scores (:mod:`attnbook.engine.mask_gradients`) and the public :mod:`attnbook.heads` all run here.

**Every encoder family.** The attention function above serves the families whose attention modules call
transformers' ``AttentionInterface`` in BERT's layout, one module per layer (:data:`INTERFACE_FAMILIES`: BERT,
RoBERTa, XLM-R, ELECTRA). Every other family of :mod:`attnbook.engine.families` (DistilBERT, ALBERT, MPNet,
DeBERTa-v2/v3, ModernBERT) gets the same interventions, with the same arguments and the same meaning, from hooks
placed through the family table (:mod:`attnbook.engine.head_hooks`): a forward pre-hook on each
layer's attention output projection ``W_o`` multiplies a head's slice of the context by its gate (masking) or
replaces it by the mean of the head's value vectors over the keys a query may see (disabling: uniform attention
over the non-padding keys, within the window of a ModernBERT local layer), per row of a tiled batch, per example
or per token as above; a forward hook on the attention module edits the maps it returns the same way when the
forward was asked for ``output_attentions`` (and no gradient flows through them). ALBERT's shared layer is
intervened on per depth (the hooks count the calls of the shared modules). Heads removed by
:func:`attnbook.engine.pruning.prune_heads` keep their original numbering there too.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core.errors import ModelError, ParameterError
from attnbook.core.heads import parse_head_label
from attnbook.engine.families import SLICES_ATTR, UnsupportedModelError, family_of, model_shape
from attnbook.engine.head_hooks import expand_rows as _rows
from attnbook.engine.head_hooks import hooked as _hooked
from attnbook.engine.head_hooks import uniform_weights

#: name of the attention implementation registered with ``transformers.AttentionInterface``
ATTN_IMPLEMENTATION = "attnbook"

# attributes stored on each self-attention module
_STACK_ATTR = "_attnbook_interventions"  # list of active Intervention objects
_LAYER_ATTR = "_attnbook_layer"  # 0-based layer index of the module

#: families whose attention modules call transformers' AttentionInterface in BERT's layout (one module per layer,
#: ``layer_idx``): their interventions run in the registered attention function; every other family through hooks
INTERFACE_FAMILIES = frozenset({"bert", "roberta", "xlm-roberta", "electra"})

Mode = Literal["mask", "disable"]


# ----------------------------------------------------------------------------- registration


def register_attention() -> None:
    """Register the ``"attnbook"`` attention function and its (eager, additive float) mask builder.

    Idempotent. After this, ``model.set_attn_implementation("attnbook")`` or
    ``from_pretrained(..., attn_implementation="attnbook")`` select it.
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTN_IMPLEMENTATION, attnbook_attention)
    AttentionMaskInterface.register(ATTN_IMPLEMENTATION, eager_mask)


def use_attnbook_attention(model: Any) -> str:
    """Switch ``model`` (a transformers model or a LoadedModel) to the ``"attnbook"`` attention.

    Returns the implementation it had before, for :func:`restore_attention`. Without
    active interventions the attnbook function computes exactly what ``"eager"`` computes.
    """
    module = unwrap(model)
    previous = getattr(module.config, "_attn_implementation", None) or "eager"
    if not uses_attention_interface(module):  # interventions through hooks: the attention code stays as it is
        return previous
    register_attention()
    if previous != ATTN_IMPLEMENTATION:
        if not hasattr(module, "set_attn_implementation"):
            raise ModelError(f"{type(module).__name__} has no set_attn_implementation; load it with transformers 5")
        module.set_attn_implementation(ATTN_IMPLEMENTATION)
        if module.config._attn_implementation != ATTN_IMPLEMENTATION:
            raise ModelError(
                f"{type(module).__name__} does not use transformers' AttentionInterface, so attnbook "
                "cannot intervene on its heads"
            )
    return previous


def restore_attention(model: Any, implementation: str) -> None:
    """Switch ``model`` back to ``implementation`` (what :func:`use_attnbook_attention` returned)."""
    module = unwrap(model)
    if (getattr(module.config, "_attn_implementation", None) or "eager") != implementation:
        module.set_attn_implementation(implementation)


def uses_attention_interface(model: Any) -> bool:
    """Whether interventions on ``model`` run in the registered ``"attnbook"`` attention function (a family of
    :data:`INTERFACE_FAMILIES`, or a model outside the family table) rather than through hooks on the family's
    attention output projection (every other family of :mod:`attnbook.engine.families`)."""
    try:
        return family_of(unwrap(model)).name in INTERFACE_FAMILIES
    except UnsupportedModelError:
        return True


def unwrap(model: Any) -> nn.Module:
    """The ``torch.nn.Module`` inside a :class:`attnbook.engine.models.LoadedModel` (or the module itself)."""
    inner = getattr(model, "model", None)
    if isinstance(inner, nn.Module) and not isinstance(model, nn.Module):
        return inner
    if not isinstance(model, nn.Module):
        raise ModelError(f"expected a torch model or a LoadedModel, got {type(model).__name__}")
    return model


# ----------------------------------------------------------------------------- model structure


def _recorded_attention_classes(model: nn.Module) -> tuple[type, ...]:
    """Module classes whose second output transformers records as ``attentions``."""
    spec = (getattr(model, "_can_record_outputs", None) or {}).get("attentions")
    specs = spec if isinstance(spec, (list, tuple)) else [spec]
    classes = []
    for s in specs:
        target = getattr(s, "target_class", s)
        if isinstance(target, type):
            classes.append(target)
    return tuple(classes)


def attention_modules(model: Any) -> list[nn.Module]:
    """The self-attention modules of ``model``, one per layer, in layer order.

    These are the modules that call the attention interface and whose weights
    ``output_attentions`` returns (``BertSelfAttention`` for BERT).
    """
    module = unwrap(model)
    classes = _recorded_attention_classes(module)
    found = [m for m in module.modules() if classes and isinstance(m, classes)]
    if not found:
        found = [
            m
            for m in module.modules()
            if isinstance(getattr(m, "layer_idx", None), int) and hasattr(m, "num_attention_heads")
        ]
    if not found:
        raise ModelError(f"found no self-attention modules in {type(module).__name__}")
    if all(isinstance(getattr(m, "layer_idx", None), int) for m in found):
        found = sorted(found, key=lambda m: m.layer_idx)
    n_layers = getattr(module.config, "num_hidden_layers", len(found))
    if len(found) != n_layers:
        raise ModelError(f"found {len(found)} self-attention modules but the config says {n_layers} layers")
    return found


# ----------------------------------------------------------------------------- interventions


@dataclass(frozen=True)
class Intervention:
    """One active intervention.

    ``mode="mask"``: ``values`` is a float gate ``xi[layer, head]`` (one mask for the whole batch),
    ``xi[n, layer, head]`` (``n`` masks, the batch tiled ``n`` times, mask-major), or with
    ``per_token=True`` ``xi[batch, query, layer, head]`` (one gate per token; used for
    Michel's code-style importance).

    ``mode="disable"``: ``values`` is a bool ``disabled[layer, head]`` or ``disabled[n, layer, head]``.
    """

    mode: Mode
    values: torch.Tensor
    per_token: bool = False

    def __post_init__(self) -> None:
        if self.mode not in ("mask", "disable"):
            raise ParameterError(f"intervention mode is 'mask' or 'disable', got {self.mode!r}")
        want = (4,) if self.per_token else (2, 3)
        if self.values.ndim not in want:
            raise ParameterError(
                f"a {self.mode} needs shape {'[batch, query, layer, head]' if self.per_token else '[layer, head] or [n, layer, head]'}"
                f", got {tuple(self.values.shape)}"
            )


def as_mask(xi: Any, model: Any) -> torch.Tensor:
    """``xi`` as a float tensor ``[layer, head]`` or ``[n, layer, head]``, checked against the model.

    A tensor is used as is (so it keeps ``requires_grad``); arrays are converted.
    """
    n_layers, n_heads, _ = model_shape(unwrap(model))
    t = xi if isinstance(xi, torch.Tensor) else torch.as_tensor(np.asarray(xi, dtype=np.float32))
    if t.ndim not in (2, 3) or tuple(t.shape[-2:]) != (n_layers, n_heads):
        raise ParameterError(
            f"a head mask has shape [layer, head] = [{n_layers}, {n_heads}] or [n_masks, {n_layers}, {n_heads}], "
            f"got {tuple(t.shape)}"
        )
    if not torch.is_floating_point(t):
        t = t.to(torch.float32)
    return t


def as_disabled(heads: Any, model: Any) -> torch.Tensor:
    """Heads to disable as a bool tensor ``[layer, head]`` (or ``[n, layer, head]``).

    Accepts ``[(layer, head), ...]`` pairs, ``{layer: [heads]}``, 1-based labels ``["8-10", ...]``
    or a bool array of the right shape. Indices are 0-based.
    """
    n_layers, n_heads, _ = model_shape(unwrap(model))
    if isinstance(heads, (torch.Tensor, np.ndarray)):
        t = torch.as_tensor(heads)
        if t.ndim not in (2, 3) or tuple(t.shape[-2:]) != (n_layers, n_heads):
            raise ParameterError(
                f"a disabled-heads array has shape [{n_layers}, {n_heads}] or [n, {n_layers}, {n_heads}], got {tuple(t.shape)}"
            )
        return t.to(torch.bool)
    out = torch.zeros(n_layers, n_heads, dtype=torch.bool)
    pairs: Iterable
    if isinstance(heads, Mapping):
        pairs = [(layer, h) for layer, hs in heads.items() for h in hs]
    else:
        pairs = heads
    for item in pairs:
        if isinstance(item, str):

            layer, head = parse_head_label(item)
        else:
            layer, head = (int(v) for v in item)
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ParameterError(
                f"head ({layer}, {head}) is outside the model's {n_layers} layers x {n_heads} heads (0-based indices)"
            )
        out[layer, head] = True
    return out


def layers_to_heads(layers: Iterable[int], model: Any) -> torch.Tensor:
    """Bool ``[layer, head]`` with every head of the given (0-based) layers set."""
    n_layers, n_heads, _ = model_shape(unwrap(model))
    out = torch.zeros(n_layers, n_heads, dtype=torch.bool)
    for layer in layers:
        if not 0 <= int(layer) < n_layers:
            raise ParameterError(f"layer {layer} is outside the model's {n_layers} layers (0-based)")
        out[int(layer)] = True
    return out


@contextmanager
def intervene(model: Any, *interventions: Intervention) -> Iterator[None]:
    """Apply ``interventions`` to every forward pass of ``model`` inside the block.

    Switches the model to the ``"attnbook"`` attention for the block (and back after, if
    it switched); families outside :data:`INTERFACE_FAMILIES` get hooks for the block instead (module doc).
    Nested blocks compose: disabled sets are united, masks multiply.
    """
    if not uses_attention_interface(model):
        with _hooked(unwrap(model), interventions):
            yield
        return
    modules = attention_modules(model)
    previous = use_attnbook_attention(model)
    for layer, mod in enumerate(modules):
        mod.__dict__[_LAYER_ATTR] = layer
        mod.__dict__.setdefault(_STACK_ATTR, []).extend(interventions)
    try:
        yield
    finally:
        for mod in modules:
            stack = mod.__dict__.get(_STACK_ATTR, [])
            for iv in interventions:
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i] is iv:
                        del stack[i]
                        break
        if previous != ATTN_IMPLEMENTATION and not any(mod.__dict__.get(_STACK_ATTR) for mod in modules):
            restore_attention(model, previous)


@contextmanager
def head_mask(model: Any, xi: Any) -> Iterator[torch.Tensor]:
    """Michel's head mask (§2.3): each head's output is multiplied by ``xi[layer, head]``.

    ``xi`` is ``[layer, head]``, or ``[n_masks, layer, head]`` with the inputs tiled
    ``n_masks`` times (:func:`tile_batch`). Give a tensor with ``requires_grad=True`` to get
    ``∂L/∂ξ``. Yields the tensor actually used. The maps returned by
    ``output_attentions`` are the effective weights ``ξ_h · α_h`` (all zero for a removed head).
    """
    t = as_mask(xi, model)
    with intervene(model, Intervention("mask", t)):
        yield t


@contextmanager
def disable_heads(model: Any, heads: Any) -> Iterator[torch.Tensor]:
    """Kovaleva's disabling (§4.6): the listed heads attend uniformly, ``1/L`` to each real token.

    ``heads`` is ``[(layer, head), ...]``, ``{layer: [heads]}``, labels like ``"8-10"``, or a bool
    array ``[layer, head]`` / ``[n, layer, head]`` (the last with inputs tiled ``n`` times).
    Value vectors are kept, so a disabled head outputs the mean value vector over the real
    tokens — unlike :func:`head_mask` with ``ξ=0``, which outputs zero. The maps returned by
    ``output_attentions`` show the uniform rows. Yields the bool tensor used.
    """
    t = as_disabled(heads, model)
    with intervene(model, Intervention("disable", t)):
        yield t


@contextmanager
def disable_layers(model: Any, layers: Iterable[int]) -> Iterator[torch.Tensor]:
    """Disable every head of the given 0-based layers (Kovaleva §4.6, Fig. 9)."""
    with disable_heads(model, layers_to_heads(layers, model)) as t:
        yield t


def tile_batch(inputs: Mapping[str, Any], n: int) -> dict[str, Any]:
    """Repeat every tensor of a batch ``n`` times along dim 0, mask-major (rows ``m*B + b``)."""
    if n < 1:
        raise ParameterError(f"n must be at least 1, got {n}")
    out = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor) and v.ndim >= 1:
            out[k] = v.repeat(n, *([1] * (v.ndim - 1)))
        else:
            out[k] = v
    return out


# ----------------------------------------------------------------------------- the attention function

_EAGER_CACHE: dict[type, Callable] = {}


def _eager_for(module: nn.Module) -> Callable:
    """The eager attention function of the module's own model file (what ``"eager"`` would run)."""
    cls = type(module)
    fn = _EAGER_CACHE.get(cls)
    if fn is None:
        fn = getattr(sys.modules.get(cls.__module__), "eager_attention_forward", None)
        if fn is None:
            raise ModelError(
                f"{cls.__name__} ({cls.__module__}) has no eager_attention_forward; attnbook interventions need it"
            )
        _EAGER_CACHE[cls] = fn
    return fn


def uniform_from_mask(attention_mask: torch.Tensor | None, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """Kovaleva's uniform attention in the attention function: ``1/L`` on each key a query may see, 0 elsewhere
    (:func:`attnbook.engine.head_hooks.uniform_weights`).

    ``attention_mask`` is the 4D mask the attention function receives (additive float with
    the dtype's minimum on padding, or bool), or ``None`` when nothing is masked. For BERT,
    ``L`` is the number of real tokens of the example. Returns ``[batch or 1, 1, query, key]``.
    """
    q, k = int(shape[-2]), int(shape[-1])
    if attention_mask is None:
        allowed = torch.ones(1, 1, q, k, dtype=torch.bool)
    elif attention_mask.dtype == torch.bool:
        allowed = attention_mask[..., -q:, -k:]
    else:
        allowed = attention_mask[..., -q:, -k:] > torch.finfo(attention_mask.dtype).min / 2
    return uniform_weights(allowed, dtype)


def attnbook_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The registered attention function: the model's eager attention, then the layer's interventions.

    Returns ``(attn_output[batch, query, head, dim], attn_weights[batch, head, query, key])``
    like every transformers attention function; the weights are the ones actually used.
    Disabled heads get no attention dropout (interventions are meant for evaluation).
    """
    out, weights = _eager_for(module)(
        module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
    )
    stack = module.__dict__.get(_STACK_ATTR)
    if not stack:
        return out, weights
    layer = module.__dict__.get(_LAYER_ATTR, getattr(module, "layer_idx", 0))
    slices = module.__dict__.get(SLICES_ATTR)  # a pruned layer: the original head of each remaining one
    kept = None if slices is None else torch.tensor([max(int(h), 0) for h in slices])  # placeholder (-1): inert
    n_rows, n_heads = query.shape[0], query.shape[1]

    def layer_values(values: torch.Tensor, per_token: bool) -> torch.Tensor:
        v = values[..., layer, :]  # [..., heads_original]
        if kept is not None:
            v = v[..., kept.to(v.device)]
        if v.shape[-1] != n_heads:
            raise ModelError(
                f"layer {layer} has {n_heads} heads but the intervention gives {v.shape[-1]} "
                "(interventions use the original head numbering)"
            )
        return v

    # 1. Kovaleva: uniform weights for disabled heads, value path kept
    disabled = None
    for iv in stack:
        if iv.mode == "disable":
            d = layer_values(iv.values, False).to(out.device)
            d = d.reshape(1, n_heads) if d.ndim == 1 else _rows(d, n_rows, "disable")
            disabled = d if disabled is None else (disabled | d)
    if disabled is not None and bool(disabled.any()):
        uniform = uniform_from_mask(attention_mask, weights.shape, weights.dtype).to(weights.device)
        v = value
        if v.shape[1] != n_heads:  # grouped-query attention: share key/value heads
            v = v.repeat_interleave(n_heads // v.shape[1], dim=1)
        if bool((uniform == uniform[..., :1, :]).all()):  # every query sees the same keys (BERT): one row
            uniform_out = torch.matmul(uniform[..., :1, :], v).expand(-1, -1, uniform.shape[-2], -1)
        else:
            uniform_out = torch.matmul(uniform, v)
        uniform_out = uniform_out.transpose(1, 2)  # [rows, query, head, dim]
        out = torch.where(disabled[:, None, :, None], uniform_out.to(out.dtype), out)
        rows_heads = disabled.expand(weights.shape[0], n_heads)
        if torch.is_grad_enabled() and weights.requires_grad:
            weights = torch.where(disabled[:, :, None, None], uniform.expand_as(weights), weights)
        else:  # no autograd: overwrite only the disabled heads' maps, in place
            weights[rows_heads] = uniform.expand_as(weights)[rows_heads]

    # 2. Michel: gate each head's output
    for iv in stack:
        if iv.mode != "mask":
            continue
        m = layer_values(iv.values, iv.per_token).to(device=out.device, dtype=out.dtype)
        if iv.per_token:  # [batch, query, head]
            if m.shape[0] != n_rows or m.shape[1] != out.shape[1]:
                raise ParameterError(
                    f"a per-token mask has shape [batch, query] = {tuple(m.shape[:2])}, the batch is "
                    f"{n_rows} x {out.shape[1]}"
                )
            out = out * m[..., None]
            weights = weights * m.transpose(1, 2)[..., None].to(weights.dtype)
        else:
            m = m.reshape(1, n_heads) if m.ndim == 1 else _rows(m, n_rows, "mask")
            out = out * m[:, None, :, None]
            weights = weights * m[:, :, None, None].to(weights.dtype)
    return out, weights
