"""Surface-level patterns of attention heads (Clark et al. §3).

:class:`SurfaceStats` is a streaming reducer. For every head it measures, per
segment, the average over query tokens of

* the attention to the **current**, **previous** and **next** token (§3.1);
* the attention to ``[CLS]``, to ``[SEP]`` and to ``.`` or ``,`` (§3.2, Fig. 2 top);
* the attention from ``[SEP]`` to ``[SEP]`` and from every other token to ``[SEP]``
  (§3.2, Fig. 2 bottom), and from ``[CLS]`` to ``[CLS]`` (the same claim for a model whose sink token is
  ``[CLS]``, :func:`sink_token`);
* the entropy of the attention distribution, and the entropy from ``[CLS]`` only (§3.3, Fig. 4);
* the largest single attention weight (how "broad" a head is);

and then averages the per-segment values over segments, as Clark et al. do (a
segment counts once whatever its length). The per-segment values are kept too
(``per_segment[segment, stat, layer, head]``, float32: about 6 MB for 1000 segments of
bert-base), so every number the chapter compares with the paper can be bootstrapped over
segments. Positions: "previous" is
``attn[q, q-1]``; the first token has no previous token and the last no next
one, and they count as 0 (the denominators are the segment length).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.heads import head_label
from attnbook.engine.extract import Batch, stream_attention

#: the statistics a :class:`SurfaceStats` returns, each ``values[layer, head]``
STAT_NAMES = (
    "self", "prev", "next", "cls", "sep", "punct", "sep_sep", "rest_sep", "entropy", "entropy_cls", "max_weight",
    "cls_cls",
)
PUNCT_TOKENS = (".", ",")


def punct_ids(tokenizer) -> list[int]:
    """Vocabulary ids of a period and a comma: the pieces themselves and, in vocabularies that mark a preceding
    space (SentencePiece ``▁``, byte-level BPE ``Ġ``), their spaced forms; pieces a vocabulary lacks are left out
    (never its unknown token)."""
    out = []
    for mark in ("", "\u2581", "\u0120"):
        for p in PUNCT_TOKENS:
            i = tokenizer.convert_tokens_to_ids(mark + p)
            if i is not None and i != tokenizer.unk_token_id and i not in out:
                out.append(int(i))
    return out


class SurfaceStats:
    """Streaming reducer of Clark §3 statistics; ``result()`` maps name -> ``values[layer, head]``.

    ``cls_id``, ``sep_id`` and ``punct_ids`` are vocabulary ids. ``result()`` also has
    ``uniform_entropy`` (the mean over segments of ``log(n_tokens)``, the entropy of
    uniform attention), ``n_segments``, and the per-segment values behind every mean:
    ``per_segment[segment, stat, layer, head]`` (stats in :data:`STAT_NAMES` order, segments in
    input order) and ``per_segment_uniform_entropy[segment]``.
    """

    def __init__(self, cls_id: int, sep_id: int, punct_ids: list[int]):
        self.cls_id, self.sep_id, self.punct_ids = cls_id, sep_id, list(punct_ids)
        self.sums: dict[str, torch.Tensor] = {}
        self.uniform_entropy = 0.0
        self.n_segments = 0
        self.segments: dict[int, np.ndarray] = {}  # input index -> [stat, layer, head] float32
        self.segment_log_n: dict[int, float] = {}
        self._scratch: torch.Tensor | None = None  # one layer-sized buffer for the entropy, reused

    @classmethod
    def for_tokenizer(cls, tokenizer) -> "SurfaceStats":
        return cls(tokenizer.cls_token_id, tokenizer.sep_token_id, punct_ids(tokenizer))

    def _scratch_like(self, a: torch.Tensor) -> torch.Tensor:
        """A buffer shaped like ``a``, reused across layers and batches (fresh memory costs page faults)."""
        buf = self._scratch
        if buf is None or buf.numel() < a.numel() or buf.dtype != a.dtype:
            buf = self._scratch = torch.empty(a.numel(), dtype=a.dtype)
        return buf[: a.numel()].view(a.shape)

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        """Fold in ``attn[batch, layer, head, query, key]``."""
        self.update_layers(attn.unbind(1), batch)

    def update_layers(self, layers, batch: Batch) -> None:
        """Fold in the per-layer maps ``layers[layer][batch, head, query, key]``.

        Works one layer at a time so every temporary is one layer's size. The entropy
        takes the vectorised ``log`` of the weights clamped at 1e-30 (a smaller weight adds
        under 1e-28 nats; exact zeros and subnormals would take a slow path), not the much
        slower ``xlogy``.
        """
        q_mask = batch.query_mask  # [batch, query]
        n = q_mask.sum(1)  # [batch]
        ids = batch.input_ids
        sep = (ids == self.sep_id).float() * q_mask
        cls_ = (ids == self.cls_id).float() * q_mask
        punct = batch.id_mask(self.punct_ids)
        keys = torch.stack([cls_, sep, punct], dim=-1)  # [batch, key, 3]
        # The few key positions that are [CLS], [SEP] or punctuation, gathered instead of a matmul over every key:
        # position[batch, slot] (slots past a segment's count point at key 0 with weight 0) and category[batch, slot, 3].
        special = keys.sum(-1) > 0  # [batch, key]
        n_slots = max(1, int(special.sum(1).max()))
        position = torch.zeros((ids.shape[0], n_slots), dtype=torch.long)
        category = torch.zeros((ids.shape[0], n_slots, 3))
        for b in range(ids.shape[0]):
            where = special[b].nonzero().flatten()
            position[b, : len(where)] = where
            category[b, : len(where)] = keys[b, where]
        n_sep = sep.sum(1)
        weights = {  # name -> (query weights [batch, 1, query], per-segment count [batch, 1])
            "all": (q_mask[:, None, :], n[:, None]),
            "sep": (sep[:, None, :], n_sep[:, None]),
            "cls": (cls_[:, None, :], cls_.sum(1)[:, None]),
            "rest": ((q_mask - sep)[:, None, :], (n - n_sep)[:, None]),
            "pairs": ((q_mask[:, 1:] * q_mask[:, :-1])[:, None, :], n[:, None]),
        }

        def segment_sum(values: torch.Tensor, weight: str) -> torch.Tensor:
            """Per-segment weighted mean over queries: [batch, head, query] -> [batch, head]."""
            w, count = weights[weight]
            return (values * w).sum(-1) / count.clamp(min=1)

        per_layer: dict[str, list[torch.Tensor]] = {name: [] for name in STAT_NAMES}
        for a in layers:
            a = a.float()  # [batch, head, query, key]
            n_batch, n_heads, n_query, _ = a.shape
            picked = torch.gather(a, -1, position[:, None, None, :].expand(n_batch, n_heads, n_query, n_slots))
            mass = torch.bmm(picked.view(n_batch, n_heads * n_query, n_slots), category).view(n_batch, n_heads, n_query, 3)
            per_layer["cls"].append(segment_sum(mass[..., 0], "all"))
            per_layer["sep"].append(segment_sum(mass[..., 1], "all"))
            per_layer["punct"].append(segment_sum(mass[..., 2], "all"))
            per_layer["sep_sep"].append(segment_sum(mass[..., 1], "sep"))
            per_layer["cls_cls"].append(segment_sum(mass[..., 0], "cls"))
            per_layer["rest_sep"].append(segment_sum(mass[..., 1], "rest"))
            per_layer["self"].append(segment_sum(torch.diagonal(a, 0, -2, -1), "all"))  # attn[q, q]
            per_layer["prev"].append(segment_sum(torch.diagonal(a, -1, -2, -1), "pairs"))  # attn[q, q-1], q = 1..
            per_layer["next"].append(segment_sum(torch.diagonal(a, 1, -2, -1), "pairs"))  # attn[q, q+1], q = 0..
            plogp = torch.clamp_min(a, 1e-30, out=self._scratch_like(a))  # no log(0), no slow subnormals
            plogp.log_().mul_(a)  # p log p
            entropy = plogp.sum(-1).neg_()  # [batch, head, query]
            per_layer["entropy"].append(segment_sum(entropy, "all"))
            per_layer["entropy_cls"].append(entropy[..., 0])
            per_layer["max_weight"].append(segment_sum(a.amax(-1), "all"))
        per_segment = torch.stack([torch.stack(per_layer[name], dim=1) for name in STAT_NAMES], dim=1)
        for name, values in zip(STAT_NAMES, per_segment.unbind(1)):  # values[batch, layer, head]
            total = values.sum(0).to(torch.float64)
            self.sums[name] = self.sums[name] + total if name in self.sums else total
        kept = per_segment.numpy().astype(np.float32)  # [batch, stat, layer, head]
        log_n = torch.log(n.to(torch.float64))
        indices = batch.index if batch.index is not None else range(self.n_segments, self.n_segments + len(kept))
        for b, index in enumerate(indices):
            self.segments[int(index)] = kept[b]
            self.segment_log_n[int(index)] = float(log_n[b])
        self.uniform_entropy += float(log_n.sum())
        self.n_segments += int(n.shape[0])

    def result(self) -> dict[str, np.ndarray]:
        if self.n_segments == 0:
            raise ValueError("SurfaceStats saw no segments")
        out = {name: (self.sums[name] / self.n_segments).numpy() for name in STAT_NAMES}
        out["uniform_entropy"] = np.array(self.uniform_entropy / self.n_segments)
        out["n_segments"] = np.array(self.n_segments)
        order = sorted(self.segments)
        out["per_segment"] = np.stack([self.segments[i] for i in order])
        out["per_segment_uniform_entropy"] = np.array([self.segment_log_n[i] for i in order])
        return out


def surface_stats_reference(maps: list[np.ndarray], tokens: list[list[str]], tokenizer) -> dict[str, np.ndarray]:
    """Slow, loop-based reference of :class:`SurfaceStats` on full unpadded maps ``attn[layer, head, q, k]`` of the
    segments whose pieces are ``tokens``; the start, separator and punctuation pieces are ``tokenizer``'s, as
    :meth:`SurfaceStats.for_tokenizer` takes them (``[CLS]``/``[SEP]`` in BERT, ``<s>``/``</s>`` in RoBERTa).

    Used by the tests (and the benchmark's naive baseline); the definitions are the same.
    """
    n_layers, n_heads = maps[0].shape[:2]
    acc = {name: np.zeros((n_layers, n_heads)) for name in STAT_NAMES}
    uniform = 0.0
    marks = set(tokenizer.convert_ids_to_tokens(punct_ids(tokenizer)))
    for attn, toks in zip(maps, tokens):
        n = len(toks)
        sep = [i for i, t in enumerate(toks) if t == tokenizer.sep_token]
        cls_ = [i for i, t in enumerate(toks) if t == tokenizer.cls_token]
        punct = [i for i, t in enumerate(toks) if t in marks]
        rest = [i for i in range(n) if i not in sep]
        for layer in range(n_layers):
            for head in range(n_heads):
                a = attn[layer, head].astype(np.float64)
                acc["self"][layer, head] += np.mean([a[i, i] for i in range(n)])
                acc["prev"][layer, head] += sum(a[i, i - 1] for i in range(1, n)) / n
                acc["next"][layer, head] += sum(a[i, i + 1] for i in range(n - 1)) / n
                acc["cls"][layer, head] += a[:, cls_].sum() / n
                acc["sep"][layer, head] += a[:, sep].sum() / n
                acc["punct"][layer, head] += a[:, punct].sum() / n
                acc["sep_sep"][layer, head] += a[np.ix_(sep, sep)].sum() / max(len(sep), 1)
                acc["cls_cls"][layer, head] += a[np.ix_(cls_, cls_)].sum() / max(len(cls_), 1)
                acc["rest_sep"][layer, head] += a[np.ix_(rest, sep)].sum() / max(len(rest), 1)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ent = -np.nansum(np.where(a > 0, a * np.log(a), 0.0), axis=-1)
                acc["entropy"][layer, head] += ent.mean()
                acc["entropy_cls"][layer, head] += ent[0]
                acc["max_weight"][layer, head] += a.max(-1).mean()
        uniform += np.log(n)
    out = {k: v / len(maps) for k, v in acc.items()}
    out["uniform_entropy"] = np.array(uniform / len(maps))
    out["n_segments"] = np.array(len(maps))
    return out


@dataclass
class PositionalHeads:
    """Heads that put more than ``threshold`` of their attention on the previous / next token (§3.1)."""

    previous: list[tuple[int, int]]
    next: list[tuple[int, int]]


def positional_heads(stats: dict[str, np.ndarray], threshold: float = 0.5) -> PositionalHeads:
    """The (layer, head) pairs, 0-based, whose average attention to prev/next exceeds ``threshold``."""
    prev = [tuple(map(int, x)) for x in np.argwhere(stats["prev"] > threshold)]
    nxt = [tuple(map(int, x)) for x in np.argwhere(stats["next"] > threshold)]
    return PositionalHeads(prev, nxt)


def layer_means(values: np.ndarray) -> np.ndarray:
    """Average of ``values[layer, head]`` over each layer's heads."""
    return np.asarray(values).mean(axis=1)


def pick_example_heads(stats: dict[str, np.ndarray]) -> dict[str, tuple[int, int]]:
    """Heads to draw as examples (Clark Fig. 1), chosen from the measurements:

    * ``broad`` - the highest average entropy;
    * ``next token`` - the largest average attention to the next token;
    * ``[SEP]`` - the largest average attention to [SEP];
    * ``punctuation`` - the largest average attention to "." or ",".
    """
    def argmax(a: np.ndarray) -> tuple[int, int]:
        idx = np.unravel_index(int(np.argmax(a)), a.shape)
        return int(idx[0]), int(idx[1])

    return {
        "broad": argmax(stats["entropy"]),
        "next token": argmax(stats["next"]),
        "[SEP]": argmax(stats["sep"]),
        "punctuation": argmax(stats["punct"]),
    }


def sink_token(stats: dict[str, np.ndarray]) -> str:
    """``"sep"`` or ``"cls"``: the special token the model's middle-to-deep heads pile their attention on.

    bert-base uses [SEP] (Clark §3.2); other models may use [CLS] for the same purpose.
    """
    return "sep" if stats["sep"].mean() >= stats["cls"].mean() else "cls"


def positional_table(stats: dict[str, np.ndarray], threshold: float = 0.5):
    """The heads of :func:`positional_heads` as a table: direction, head (1-based ``layer-head``), avg. attention."""
    import pandas as pd


    positional = positional_heads(stats, threshold)
    return pd.DataFrame(
        [{"direction": d, "head": head_label(l, h), "avg. attention": round(float(stats[key][l, h]), 3)}
         for d, key, heads in (("previous", "prev", positional.previous), ("next", "next", positional.next))
         for l, h in heads]
    )


@cache.memoized("surface", ignore=("batch_size", "progress"))
def surface_statistics(loaded, segments, *, batch_size: int = 16, progress: bool = True) -> dict[str, np.ndarray]:
    """Clark §3 statistics of ``loaded`` over ``segments`` (streamed; cached by model and input content).

    The cache key leaves out ``batch_size``: chapter 3 calls this function on chapter 1's segments and
    reads chapter 1's measurement back from the cache.
    """
    return stream_attention(loaded, segments, [SurfaceStats.for_tokenizer(loaded.tokenizer)],
                            batch_size=batch_size, progress=progress)[0]
