"""The gradient of a loss with respect to the head gates ξ: one forward and one backward pass per batch.

Michel et al. (§2.3, §4.1) gate each head's output by ``ξ[layer, head]``
(:func:`attnbook.engine.interventions.head_mask`); ``∂L/∂ξ_h`` says how sensitive the loss is to
head ``h``. :func:`mask_gradients` returns the mean absolute gradient for every head at once:
each example (or each token) gets its own copy of the gates, so the absolute value is taken per
example (per token) before averaging. The head-importance score of Michel §4.1 normalises it
(:func:`attnbook.studies.michel.importance.head_importance`). :func:`batch_gradients` is the same gradient for
any scalar loss a caller computes from the model (a sentence encoder's, with no labels): ``attnbook.heads.importance``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np
import torch

from attnbook.core.errors import ParameterError
from attnbook.engine.families import model_shape
from attnbook.engine.interventions import (
    Intervention,
    as_mask,
    intervene,
    restore_attention,
    unwrap,
    use_attnbook_attention,
)
from attnbook.engine.pruning import kept_heads
from attnbook.engine.sweeps import as_batches, output_of

#: ``loss_fn(outputs[batch, ...], labels[batch]) -> losses[batch]`` (one loss per example)
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

#: where the absolute value of the gradient is taken: per example (Michel Eq. 2) or per token (their code)
GRANULARITIES = ("example", "token")


def mask_gradients(
    model: Any,
    batches: Iterable[Any],
    loss_fn: LossFn,
    *,
    granularity: str = "example",
    base_mask: Any = None,
    progress: bool = False,
) -> np.ndarray:
    """``E |∂L/∂ξ[layer, head]|`` over the examples (or real tokens) of ``batches``, as ``float64[layer, head]``.

    The gates are ones (or ``base_mask[layer, head]``, for a partly pruned model) with
    ``requires_grad``, one set per example (``granularity="example"``) or per token (``"token"``:
    ``|∂L/∂ξ|`` summed over real tokens, divided by their number). Dropout is off; every batch
    needs gold labels; ``loss_fn`` returns one loss per example (the losses are summed, so each
    example's gates get the gradient of its own loss).
    """
    if granularity not in GRANULARITIES:
        raise ParameterError(f"granularity is 'example' (Michel Eq. 2) or 'token' (their code), got {granularity!r}")
    module = unwrap(model)
    data = as_batches(batches)
    n_layers, n_heads, _ = model_shape(module)
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
    return (total / max(count, 1.0)).numpy()


def batch_gradients(model: Any, batches: Iterable[Mapping[str, Any]],
                    loss_fn: Callable[[torch.nn.Module, Mapping[str, Any]], torch.Tensor] | None = None) -> np.ndarray:
    """``sum over batches |d loss / d xi[layer, head]|`` at ``xi = 1`` (float64 ``[layer, head]``, original
    numbering; NaN for pruned heads), for a scalar loss per batch: ``loss_fn(model, batch)``, by default
    ``model(**batch).loss`` (give labels in the batch). One gate set per batch, through the same masking as
    :func:`mask_gradients` (:func:`attnbook.engine.interventions.intervene`); only the gates are differentiated, the
    parameters' ``.grad`` are left untouched. Put the model in ``eval()`` mode first unless dropout noise is wanted."""
    module = unwrap(model)
    n_layers, n_heads, _ = model_shape(module)
    loss_fn = loss_fn or (lambda m, batch: m(**batch).loss)
    param = next(module.parameters(), None)
    dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
    gate = torch.ones(n_layers, n_heads, dtype=dtype, requires_grad=True)
    total = torch.zeros(n_layers, n_heads, dtype=torch.float64)
    count = 0
    with intervene(module, Intervention("mask", gate)), torch.enable_grad():
        for batch in batches:
            loss = loss_fn(module, batch)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ParameterError("loss_fn(model, batch) must return a scalar loss tensor")
            (grad,) = torch.autograd.grad(loss.reshape(()), gate, allow_unused=True)
            if grad is not None:
                total += grad.detach().abs().to(torch.float64).cpu()
            count += 1
    if count == 0:
        raise ParameterError("importance needs at least one batch")
    out = total.numpy()
    for layer, present in kept_heads(module).items():
        out[layer, [h for h in range(n_heads) if h not in present]] = np.nan
    return out
