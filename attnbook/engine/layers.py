"""Pieces of a BERT layer the engine runs on their own.

A classifier reads only the ``[CLS]`` position of the last layer, so that layer can be computed for one
query: keys and values of every token, the query, attention output and feed-forward block of position 0
(:func:`first_query_only`). The fast head sweeps (:mod:`attnbook.engine.sweeps`) and partial fine-tuning
(Niven & Kao's pairwise scorer) both use it.

The same for the layers of other encoder families (:func:`first_query_layer`): DistilBERT, ALBERT, MPNet,
DeBERTa-v2/v3 (its disentangled attention: content, content-to-position and position-to-content scores of query 0)
and ModernBERT (rotary positions, the layer's window), written from their transformers modeling code (the attention
function is still the one the model is configured with, and the head hooks of :mod:`attnbook.engine.interventions`
see the same modules called).
"""
from __future__ import annotations

import math
import sys
from typing import Any, Callable

import torch

from attnbook.engine.families import SLICES_ATTR


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


# ---------------------------------------------------------------------------------------- other families


def _arg(args: tuple, kwargs: dict, index: int, name: str) -> Any:
    """A layer call's argument given by position or by keyword (``None`` when absent)."""
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else None


def _first_row_mask(mask: torch.Tensor | None) -> torch.Tensor | None:
    """A 4D attention mask ``[batch, 1, query, key]`` for the first query only (a ``[batch, 1, 1, key]`` mask as is)."""
    if mask is None or mask.dim() != 4 or mask.shape[-2] == 1:
        return mask
    return mask[:, :, :1, :]


def _interface(module: torch.nn.Module) -> Callable:
    """The attention function the module's own code would call (the model's implementation, its file's eager one
    by default)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    eager = sys.modules[type(module).__module__].eager_attention_forward
    return ALL_ATTENTION_FUNCTIONS.get_interface(module.config._attn_implementation, eager)


def _heads(linear: torch.nn.Module, x: torch.Tensor, d: int) -> torch.Tensor:
    """``linear(x)`` as ``[batch, heads, seq, d]``."""
    n_batch, n_tokens, _ = x.shape
    return linear(x).view(n_batch, n_tokens, -1, d).transpose(1, 2)


def _distilbert(layer, args, kwargs):
    hidden, mask = args[0], _first_row_mask(_arg(args, kwargs, 1, "attention_mask"))
    sa, first = layer.attention, args[0][:, :1]
    d = sa.attention_head_size
    context, _ = _interface(sa)(sa, _heads(sa.q_lin, first, d), _heads(sa.k_lin, hidden, d), _heads(sa.v_lin, hidden, d),
                                mask, dropout=sa.dropout.p if sa.training else 0.0, scaling=sa.scaling)
    attended = layer.sa_layer_norm(sa.out_lin(context.reshape(hidden.shape[0], 1, -1).contiguous()) + first)
    return layer.output_layer_norm(layer.ffn(attended) + attended)


def _albert(layer, args, kwargs):
    hidden, mask = args[0], _first_row_mask(_arg(args, kwargs, 1, "attention_mask"))
    att, first = layer.attention, args[0][:, :1]
    d = att.attention_head_size
    context, _ = _interface(att)(att, _heads(att.query, first, d), _heads(att.key, hidden, d),
                                 _heads(att.value, hidden, d), mask,
                                 dropout=att.attention_dropout.p if att.training else 0.0, scaling=att.scaling)
    out = att.output_dropout(att.dense(context.reshape(hidden.shape[0], 1, -1).contiguous()))
    attended = att.LayerNorm(first + out)
    return layer.full_layer_layer_norm(layer.ff_chunk(attended) + attended)


def _mpnet(layer, args, kwargs):
    hidden, mask = args[0], _first_row_mask(_arg(args, kwargs, 1, "attention_mask"))
    bias = _arg(args, kwargs, 2, "position_bias")
    sa, first = layer.attention.attn, args[0][:, :1]
    d = sa.attention_head_size
    q, k, v = _heads(sa.q, first, d), _heads(sa.k, hidden, d), _heads(sa.v, hidden, d)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    if bias is not None:
        kept = sa.__dict__.get(SLICES_ATTR)  # pruned heads: the bias rows of the heads left (as the pruning hook)
        if kept is not None:
            bias = bias.index_select(1, torch.tensor([max(h, 0) for h in kept], device=bias.device))
        scores = scores + bias[:, :, :1, :]
    if mask is not None:
        scores = scores + mask
    probs = sa.dropout(torch.nn.functional.softmax(scores, dim=-1))
    context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(hidden.shape[0], 1, -1)
    attended = layer.attention.LayerNorm(layer.attention.dropout(sa.o(context)) + first)
    return (layer.output(layer.intermediate(attended), attended),)


def _modernbert(layer, args, kwargs):
    mod = sys.modules[type(layer.attn).__module__]
    hidden = args[0]
    mask = _first_row_mask(_arg(args, kwargs, 1, "attention_mask"))
    cos, sin = _arg(args, kwargs, 2, "position_embeddings")
    attn = layer.attn
    n_batch, n_tokens, _ = hidden.shape
    qkv = attn.Wqkv(layer.attn_norm(hidden)).view(n_batch, n_tokens, 3, -1, attn.head_dim)
    q, k, v = (t.transpose(1, 2) for t in qkv.unbind(dim=-3))
    q = mod.apply_rotary_pos_emb(q[:, :, :1], q[:, :, :1], cos[:, :1], sin[:, :1], unsqueeze_dim=1)[0]
    k = mod.apply_rotary_pos_emb(k, k, cos, sin, unsqueeze_dim=1)[0]
    context, _ = _interface(attn)(attn, q, k, v, mask, dropout=attn.attention_dropout if attn.training else 0.0,
                                  scaling=attn.head_dim**-0.5, sliding_window=attn.sliding_window,
                                  deterministic=attn.deterministic_flash_attn)
    h = hidden[:, :1] + attn.out_drop(attn.Wo(context.reshape(n_batch, 1, -1).contiguous()))
    return h + layer.mlp(layer.mlp_norm(h))


def _deberta(layer, args, kwargs):
    """DeBERTa-v2/v3's disentangled attention for query 0: content-to-content, content-to-position (the query's row
    of relative positions) and position-to-content (each key's score for query 0), as
    ``DisentangledSelfAttention.forward`` computes them for the whole layer."""
    mod = sys.modules[type(layer).__module__]
    hidden, mask = args[0], _arg(args, kwargs, 1, "attention_mask")
    if _arg(args, kwargs, 2, "query_states") is not None:  # an enhanced mask decoder's call: the whole layer
        return NotImplemented
    relative_pos = _arg(args, kwargs, 3, "relative_pos")
    rel_embeddings = _arg(args, kwargs, 4, "rel_embeddings")
    sa = layer.attention.self
    heads = sa.num_attention_heads
    first = hidden[:, :1]
    q = sa.transpose_for_scores(sa.query_proj(first), heads)  # [batch * heads, 1, d]
    k = sa.transpose_for_scores(sa.key_proj(hidden), heads)
    v = sa.transpose_for_scores(sa.value_proj(hidden), heads)
    scale_factor = 1 + ("c2p" in sa.pos_att_type) + ("p2c" in sa.pos_att_type)
    scale = mod.scaled_size_sqrt(q, scale_factor)
    scores = torch.bmm(q, k.transpose(-1, -2) / scale.to(dtype=q.dtype))
    n_keys = k.size(-2)
    if sa.relative_attention:
        if relative_pos is None:
            relative_pos = mod.build_relative_position(k, k, bucket_size=sa.position_buckets,
                                                       max_position=sa.max_relative_positions)
        if relative_pos.dim() == 2:
            relative_pos = relative_pos.unsqueeze(0).unsqueeze(0)
        elif relative_pos.dim() == 3:
            relative_pos = relative_pos.unsqueeze(1)
        relative_pos = relative_pos.to(device=q.device, dtype=torch.long)  # [1, 1, query, key]
        span = sa.pos_ebd_size
        rel = sa.pos_dropout(rel_embeddings)[0: span * 2, :].unsqueeze(0)
        repeat = q.size(0) // heads
        if sa.share_att_key:
            pos_query = sa.transpose_for_scores(sa.query_proj(rel), heads).repeat(repeat, 1, 1)
            pos_key = sa.transpose_for_scores(sa.key_proj(rel), heads).repeat(repeat, 1, 1)
        else:
            if "c2p" in sa.pos_att_type:
                pos_key = sa.transpose_for_scores(sa.pos_key_proj(rel), heads).repeat(repeat, 1, 1)
            if "p2c" in sa.pos_att_type:
                pos_query = sa.transpose_for_scores(sa.pos_query_proj(rel), heads).repeat(repeat, 1, 1)
        if "c2p" in sa.pos_att_type:
            c2p = torch.bmm(q, pos_key.transpose(-1, -2))
            index = torch.clamp(relative_pos[:, :, :1, :] + span, 0, span * 2 - 1).squeeze(0)
            c2p = torch.gather(c2p, dim=-1, index=index.expand([q.size(0), 1, n_keys]))
            scores = scores + c2p / mod.scaled_size_sqrt(pos_key, scale_factor).to(dtype=c2p.dtype)
        if "p2c" in sa.pos_att_type:
            p2c = torch.bmm(k, pos_query.transpose(-1, -2))
            index = torch.clamp(-relative_pos[:, :, :, :1] + span, 0, span * 2 - 1).squeeze(0)
            p2c = torch.gather(p2c, dim=-1, index=index.expand([q.size(0), n_keys, 1])).transpose(-1, -2)
            scores = scores + p2c / mod.scaled_size_sqrt(pos_query, scale_factor).to(dtype=p2c.dtype)
    scores = scores.view(-1, heads, 1, n_keys)
    if mask is not None:
        mask = mask.bool()
        scores = scores.masked_fill(~(mask[:, :, :1, :] if mask.dim() == 4 else mask), torch.finfo(q.dtype).min)
    probs = sa.dropout(torch.nn.functional.softmax(scores, dim=-1))
    context = torch.bmm(probs.view(-1, 1, probs.size(-1)), v)
    context = context.view(-1, heads, 1, context.size(-1)).permute(0, 2, 1, 3).contiguous()
    attended = layer.attention.output(context.view(hidden.shape[0], 1, -1), first)
    return (layer.output(layer.intermediate(attended), attended), None)


_FIRST_QUERY: dict[str, Callable[[torch.nn.Module, tuple, dict], Any]] = {
    "distilbert": _distilbert, "albert": _albert, "mpnet": _mpnet, "modernbert": _modernbert, "deberta-v2": _deberta}


def first_query_layer(family: str) -> Callable[[torch.nn.Module, tuple, dict], Any] | None:
    """``fn(layer, args, kwargs)``: the output of a call ``layer(*args, **kwargs)`` of ``family`` (the name in
    :mod:`attnbook.engine.families`) at position 0 only, of the type the layer returns (``[batch, 1, hidden]``, in a
    tuple for MPNet and DeBERTa), or ``NotImplemented`` for a call it does not cover (run the whole layer then);
    ``None`` for a family without one (BERT's layout: :func:`first_query_only`)."""
    return _FIRST_QUERY.get(family)
