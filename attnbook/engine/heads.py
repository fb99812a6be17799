"""Attention heads of your own encoder: the few calls a researcher needs, for every family in the family table.

Transformers 5 removed ``head_mask`` and ``prune_heads`` from its models; these calls do the same for BERT,
RoBERTa, XLM-R, DistilBERT, ALBERT, ELECTRA, MPNet, DeBERTa-v2/v3 and ModernBERT (:data:`FAMILIES`), with the very
code the chapters run: masking and disabling through :mod:`attnbook.engine.interventions` (transformers' attention
interface for the BERT-layout families, hooks placed through the family table for the others), importance through
:mod:`attnbook.engine.mask_gradients`, pruning through :mod:`attnbook.engine.pruning`, maps through
:mod:`attnbook.engine.extract`. Heads are 0-based ``(layer, head)`` pairs inside, or the papers' 1-based labels
(``"8-10"``)::

    from attnbook import heads

    model = heads.load("roberta-base")                       # or a local folder, or "embedded"
    tokens, attn = heads.attention(model, "The cat sat.")     # attn[layer, head, query, key]
    with heads.masked(model, ["1-1", (2, 3)]):                # Michel et al.'s masking (contribution zeroed)
        ...
    with heads.disabled(model, ["1-1"]):                      # Kovaleva et al.'s disabling (uniform attention)
        ...
    I = heads.importance(model, batches)                      # I[layer, head] = sum |dL / d gate|
    heads.prune(model.model, ["1-1"])                         # the weights shrink; the forward gets faster

Each is tested on a small planted model of every family against an independent computation
(``tests/test_families.py``): masking against zeroing the head's columns of the output projection, disabling
against a head whose queries and keys are zeroed, importance against finite differences, pruning against masking.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np
import torch

from attnbook.engine.extract import attention_maps
from attnbook.engine.families import FAMILIES, Family, UnsupportedModelError, family_of, family_table
from attnbook.engine.interventions import as_disabled, disable_heads, head_mask
from attnbook.engine.mask_gradients import batch_gradients
from attnbook.engine.models import LoadedModel, load_encoder
from attnbook.engine.pruning import prune_heads

#: heads as the calls take them: ``(layer, head)`` pairs (0-based) or labels ``"8-10"`` (1-based)
Heads = Iterable["tuple[int, int] | str"]

__all__ = ["FAMILIES", "Family", "UnsupportedModelError", "attention", "disabled", "embed", "families", "family",
           "importance", "inputs", "load", "masked", "paraphrase_loss", "prune"]


def load(name: str = "embedded", *, device: str | None = None) -> LoadedModel:
    """An encoder by hub name, local folder or ``"embedded"``, with its tokenizer (:func:`attnbook.load_encoder`).
    A model outside the family table is refused before its weights load, with the supported families named."""
    return load_encoder(name, device=device)


def _module(model: LoadedModel | torch.nn.Module) -> torch.nn.Module:
    """The module of ``model``, refused with the supported families named when it is outside the family table."""
    module = model.model if isinstance(model, LoadedModel) else model
    family_of(module)
    return module


def _dtype(module: torch.nn.Module) -> torch.dtype:
    param = next(module.parameters(), None)
    return param.dtype if param is not None and param.is_floating_point() else torch.float32


def attention(model: LoadedModel, text: str, pair: str | None = None) -> tuple[list[str], np.ndarray]:
    """The pieces of ``text`` (and ``pair``), framed as the model's tokenizer frames them, and every head's map
    ``attn[layer, head, query, key]`` (float32; rows sum to 1)."""
    enc = model.tokenizer(text, pair, return_tensors="pt")
    enc = {k: v.to(model.device) for k, v in enc.items()}
    maps = attention_maps(model.model, **enc)[:, 0]
    return model.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist()), maps.float().cpu().numpy()


@contextmanager
def masked(model: LoadedModel | torch.nn.Module, heads: Heads) -> Iterator[torch.nn.Module]:
    """Within the block, each of ``heads`` contributes nothing (Michel et al.'s ``xi_h = 0``); restored on exit."""
    module = _module(model)
    gate = (~as_disabled(heads, module)).to(_dtype(module))
    with head_mask(module, gate):
        yield module


@contextmanager
def disabled(model: LoadedModel | torch.nn.Module, heads: Heads) -> Iterator[torch.nn.Module]:
    """Within the block, each of ``heads`` attends uniformly to the real (unpadded) keys it may see (Kovaleva et
    al.'s disabling); restored on exit. Pass the padding ``attention_mask`` to the model."""
    module = _module(model)
    with disable_heads(module, heads):
        yield module


def importance(model: LoadedModel | torch.nn.Module, batches: Iterable[Mapping[str, Any]],
               loss_fn: Callable[[torch.nn.Module, Mapping[str, Any]], torch.Tensor] | None = None) -> np.ndarray:
    """Michel et al.'s head importance ``I[layer, head] = sum over batches |d loss / d gate[layer, head]|``
    (float64). ``batches`` are keyword inputs of the model; the default loss is ``model(**batch).loss`` (give
    ``labels``)."""
    return batch_gradients(_module(model), batches, loss_fn)


def prune(model: LoadedModel | torch.nn.Module, heads: Heads) -> torch.nn.Module:
    """Remove ``heads`` for good: their query, key and value rows and their columns of the output projection go,
    so the forward is smaller and faster; the other heads keep their numbers. Returns the model (changed in
    place). ALBERT shares one layer across depths: a head can only be pruned at every depth at once."""
    return prune_heads(_module(model), heads)


def inputs(model: LoadedModel, texts: list[str]) -> dict[str, torch.Tensor]:
    """``texts`` as one padded batch of the model's keyword inputs (``input_ids``, ``attention_mask``, ...)."""
    return {k: v.to(model.device) for k, v in model.tokenizer(texts, padding=True, return_tensors="pt").items()}


def embed(model: LoadedModel | torch.nn.Module, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Sentence embeddings ``[text, hidden]``: the final hidden states averaged over each text's real tokens
    (mean pooling, as sentence encoders such as all-MiniLM-L6-v2 are trained to be read)."""
    hidden = _module(model)(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1)


def paraphrase_loss(model: LoadedModel | torch.nn.Module, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """One minus the cosine similarity of the sentence embeddings (:func:`embed`) of the batch's first two texts:
    a sentence encoder's loss on a paraphrase pair, for :func:`importance`."""
    e = embed(model, batch)
    return 1 - torch.cosine_similarity(e[:1], e[1:2]).sum()


def families() -> list[Mapping[str, Any]]:
    """The supported families, one row each: where their layers, attention, projections and MLM head are."""
    return family_table()


def family(model: LoadedModel | torch.nn.Module) -> Family:
    """The family of ``model`` (:class:`UnsupportedModelError` for anything outside the table)."""
    return family_of(_module(model))
