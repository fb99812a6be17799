"""Pieces of a BERT layer the engine runs on their own.

A classifier reads only the ``[CLS]`` position of the last layer, so that layer can be computed for one
query: keys and values of every token, the query, attention output and feed-forward block of position 0
(:func:`first_query_only`). The fast head sweeps (:mod:`attnbook.engine.sweeps`) and partial fine-tuning
(Niven & Kao's pairwise scorer) both use it.
"""
from __future__ import annotations

import torch


def has_bert_layer_parts(layer: torch.nn.Module) -> bool:
    """Whether ``layer`` is built like transformers' ``BertLayer`` (self-attention, output, feed-forward)."""
    att = getattr(layer, "attention", None)
    sa = getattr(att, "self", None)
    return (
        all(hasattr(sa, n) for n in ("query", "key", "value", "scaling", "attention_head_size", "config"))
        and hasattr(att, "output") and hasattr(layer, "intermediate") and hasattr(layer, "output")
        and not getattr(layer, "add_cross_attention", False)
    )


def first_query_only(layer: torch.nn.Module, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """A ``BertLayer``'s output at position 0 only: ``layer(hidden, mask)[:, :1]``, computed for one query.

    Keys and values come from every position; the query, the attention output, the residual and the
    feed-forward block from position 0. The attention function is the one the model is configured with
    (so interventions apply as in a whole-layer pass)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.bert.modeling_bert import eager_attention_forward

    sa = layer.attention.self
    n_batch, n_tokens, _ = hidden.shape
    d = sa.attention_head_size
    first = hidden[:, :1]
    query = sa.query(first).view(n_batch, 1, -1, d).transpose(1, 2)
    key = sa.key(hidden).view(n_batch, n_tokens, -1, d).transpose(1, 2)
    value = sa.value(hidden).view(n_batch, n_tokens, -1, d).transpose(1, 2)
    attention = ALL_ATTENTION_FUNCTIONS.get_interface(sa.config._attn_implementation, eager_attention_forward)
    context, _ = attention(sa, query, key, value, None if mask is None else mask[:, :, :1, :],
                           dropout=sa.dropout.p if sa.training else 0.0, scaling=sa.scaling)
    attended = layer.attention.output(context.reshape(n_batch, 1, -1).contiguous(), first)
    return layer.output(layer.intermediate(attended), attended)
