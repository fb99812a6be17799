"""Surface-level patterns of attention heads (Clark et al. §3).

:class:`SurfaceStats` is a streaming reducer. For every head it measures, per
segment, the average over query tokens of

* the attention to the **current**, **previous** and **next** token (§3.1);
* the attention to ``[CLS]``, to ``[SEP]`` and to ``.`` or ``,`` (§3.2, Fig. 2 top);
* the attention from ``[SEP]`` to ``[SEP]`` and from every other token to ``[SEP]``
  (§3.2, Fig. 2 bottom);
* the entropy of the attention distribution, and the entropy from ``[CLS]`` only (§3.3, Fig. 4);
* the largest single attention weight (how "broad" a head is);

and then averages the per-segment values over segments, as Clark et al. do (a
segment counts once whatever its length). Positions: "previous" is
``attn[q, q-1]``; the first token has no previous token and the last no next
one, and they count as 0 (the denominators are the segment length).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnbook.engine.extract import Batch
from attnbook import verdict

#: the statistics a :class:`SurfaceStats` returns, each ``values[layer, head]``
STAT_NAMES = (
    "self", "prev", "next", "cls", "sep", "punct", "sep_sep", "rest_sep", "entropy", "entropy_cls", "max_weight",
)
PUNCT_TOKENS = (".", ",")


class SurfaceStats:
    """Streaming reducer of Clark §3 statistics; ``result()`` maps name -> ``values[layer, head]``.

    ``cls_id``, ``sep_id`` and ``punct_ids`` are vocabulary ids. ``result()`` also has
    ``uniform_entropy`` (the mean over segments of ``log(n_tokens)``, the entropy of
    uniform attention) and ``n_segments``.
    """

    def __init__(self, cls_id: int, sep_id: int, punct_ids: list[int]):
        self.cls_id, self.sep_id, self.punct_ids = cls_id, sep_id, list(punct_ids)
        self.sums: dict[str, torch.Tensor] = {}
        self.uniform_entropy = 0.0
        self.n_segments = 0
        self._scratch: torch.Tensor | None = None  # one layer-sized buffer for the entropy, reused

    @classmethod
    def for_tokenizer(cls, tokenizer) -> "SurfaceStats":
        return cls(tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.convert_tokens_to_ids(list(PUNCT_TOKENS)))

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
            "rest": ((q_mask - sep)[:, None, :], (n - n_sep)[:, None]),
            "pairs": ((q_mask[:, 1:] * q_mask[:, :-1])[:, None, :], n[:, None]),
        }

        def segment_sum(values: torch.Tensor, weight: str) -> torch.Tensor:
            """Sum over segments of the per-segment weighted mean over queries: [batch, head, query] -> [head]."""
            w, count = weights[weight]
            return ((values * w).sum(-1) / count.clamp(min=1)).sum(0).to(torch.float64)

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
            per_layer["rest_sep"].append(segment_sum(mass[..., 1], "rest"))
            per_layer["self"].append(segment_sum(torch.diagonal(a, 0, -2, -1), "all"))  # attn[q, q]
            per_layer["prev"].append(segment_sum(torch.diagonal(a, -1, -2, -1), "pairs"))  # attn[q, q-1], q = 1..
            per_layer["next"].append(segment_sum(torch.diagonal(a, 1, -2, -1), "pairs"))  # attn[q, q+1], q = 0..
            plogp = torch.clamp_min(a, 1e-30, out=self._scratch_like(a))  # no log(0), no slow subnormals
            plogp.log_().mul_(a)  # p log p
            entropy = plogp.sum(-1).neg_()  # [batch, head, query]
            per_layer["entropy"].append(segment_sum(entropy, "all"))
            per_layer["entropy_cls"].append(entropy[..., 0].sum(0).to(torch.float64))
            per_layer["max_weight"].append(segment_sum(a.amax(-1), "all"))
        for name, values in per_layer.items():
            total = torch.stack(values)  # [layer, head]
            self.sums[name] = self.sums[name] + total if name in self.sums else total
        self.uniform_entropy += float(torch.log(n).sum())
        self.n_segments += int(n.shape[0])

    def result(self) -> dict[str, np.ndarray]:
        if self.n_segments == 0:
            raise ValueError("SurfaceStats saw no segments")
        out = {name: (self.sums[name] / self.n_segments).numpy() for name in STAT_NAMES}
        out["uniform_entropy"] = np.array(self.uniform_entropy / self.n_segments)
        out["n_segments"] = np.array(self.n_segments)
        return out


def surface_stats_reference(maps: list[np.ndarray], tokens: list[list[str]]) -> dict[str, np.ndarray]:
    """Slow, loop-based reference of :class:`SurfaceStats` on full unpadded maps ``attn[layer, head, q, k]``.

    Used by the tests (and the benchmark's naive baseline); the definitions are the same.
    """
    n_layers, n_heads = maps[0].shape[:2]
    acc = {name: np.zeros((n_layers, n_heads)) for name in STAT_NAMES}
    uniform = 0.0
    for attn, toks in zip(maps, tokens):
        n = len(toks)
        sep = [i for i, t in enumerate(toks) if t == "[SEP]"]
        cls_ = [i for i, t in enumerate(toks) if t == "[CLS]"]
        punct = [i for i, t in enumerate(toks) if t in PUNCT_TOKENS]
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


# ---- paper vs this run --------------------------------------------------------------------------

#: Clark et al. §3 numbers for bert-base (12 layers x 12 heads), 1-based layers.
PAPER = {
    "prev_heads_layers": [2, 4, 7, 8],
    "next_heads_layers": [1, 2, 2, 3, 6],
    "sep_majority_layers": [6, 7, 8, 9, 10],
    "sep_sep_share": 0.9,
    "cls_entropy_last_layer": 3.89,
    "grad_sep_small_from_layer": 5,
    "n_layers": 12,
}


def relative_depth(layer: int, n_layers: int) -> float:
    """Position of a 1-based layer in the network, 0 (first) to 1 (last), to compare 6- and 12-layer models."""
    return (layer - 1) / max(n_layers - 1, 1)


def sink_token(stats: dict[str, np.ndarray]) -> str:
    """``"sep"`` or ``"cls"``: the special token the model's middle-to-deep heads pile their attention on.

    bert-base uses [SEP] (Clark §3.2); other models may use [CLS] for the same purpose.
    """
    return "sep" if stats["sep"].mean() >= stats["cls"].mean() else "cls"


def _count_verdict(ours: int, paper: int, n_heads_total: int) -> tuple[str, float]:
    expected = paper * n_heads_total / 144  # the paper's count scaled to this model's number of heads
    ratio = ours / expected
    return verdict.conditions(ours > 0 and 0.5 <= ratio <= 2, ours > 0), expected


def paper_comparison(stats: dict[str, np.ndarray], grads: dict[str, np.ndarray] | None = None) -> list[dict]:
    """Rows of "paper vs this run" for Clark §3, each with a verdict computed from the numbers.

    Counts of heads are compared after scaling the paper's count to this model's number of
    heads; layers are compared by relative depth when the model's depth differs from bert-base's 12.
    """
    n_layers, n_heads = stats["sep"].shape
    rows: list[dict] = []
    pos = positional_heads(stats)
    for kind, heads in (("previous", pos.previous), ("next", pos.next)):
        paper_layers = PAPER[f"{'prev' if kind == 'previous' else 'next'}_heads_layers"]
        ours_layers = sorted(l + 1 for l, _ in heads)
        outcome, expected = _count_verdict(len(ours_layers), len(paper_layers), n_layers * n_heads)
        rows.append(dict(
            experiment="§3.1 relative position", quantity=f"heads with >50% attention to the {kind} token (layers)",
            paper=f"{len(paper_layers)} of 144 (layers {', '.join(map(str, paper_layers))})",
            ours=f"{len(ours_layers)} of {n_layers * n_heads} (layers {', '.join(map(str, ours_layers)) or '-'})",
            verdict=outcome,
            note=f"{expected:.1f} expected at the paper's rate for {n_layers * n_heads} heads",
        ))
    means = {k: layer_means(stats[k]) for k in ("cls", "sep", "punct")}
    peak = {k: int(np.argmax(v)) + 1 for k, v in means.items()}
    order_ok = peak["cls"] <= peak["sep"] <= peak["punct"]
    rows.append(dict(
        experiment="§3.2 special tokens", quantity="layer where mean attention peaks: [CLS] / [SEP] / . or ,",
        paper="early / middle / deep",
        ours=f"{peak['cls']} / {peak['sep']} / {peak['punct']} of {n_layers}",
        verdict=verdict.conditions(order_ok and peak["cls"] < peak["punct"], order_ok),
        note="order of the peaks through the layers",
    ))
    sep_layers = [i + 1 for i, v in enumerate(means["sep"]) if v > 0.5]
    rows.append(dict(
        experiment="§3.2 special tokens", quantity="layers where over half of the attention goes to [SEP]",
        paper="6-10 of 12", ours=(f"{', '.join(map(str, sep_layers))} of {n_layers}" if sep_layers
                                  else f"none (max {means['sep'].max():.2f} in layer {peak['sep']})"),
        verdict=verdict.conditions(bool(sep_layers), means["sep"].max() > 0.25),
        note="mean over the layer's heads",
    ))
    sink = sink_token(stats)
    if sink == "cls":
        cls_layers = [i + 1 for i, v in enumerate(means["cls"]) if v > 0.5]
        rows.append(dict(
            experiment="§3.2 special tokens", quantity="where the spare attention goes instead",
            paper="[SEP] (a no-op target)",
            ours=f"[CLS]: over half in layers {', '.join(map(str, cls_layers)) or '-'}, max {means['cls'].max():.2f}",
            verdict=verdict.DISAGREES, note="this model parks attention on [CLS], not [SEP]",
        ))
    sep_heads = stats["sep"] > 0.5
    if sep_heads.any():
        share = float(stats["sep_sep"][sep_heads].mean())
        rows.append(dict(
            experiment="§3.2 special tokens", quantity="[SEP]->[SEP] share in heads that attend mostly to [SEP]",
            paper="> 0.90", ours=round(share, 3), verdict=verdict.conditions(share > 0.9, share > 0.5),
            note="attention from [SEP] stays on the [SEP] tokens",
        ))
    if grads is not None:
        name = "[SEP]" if sink == "sep" else "[CLS]"
        ratio = layer_means(grads[f"grad_{sink}"]) / layer_means(grads["grad_other"])
        heavy = means[sink] >= np.median(means[sink])
        if (~heavy).any():
            low = float(ratio[heavy].mean()) < float(ratio[~heavy].mean())
            rows.append(dict(
                experiment="§3.2 gradients",
                quantity=f"|dL/d attn| to {name} / to other tokens: layers with much vs little {name} attention",
                paper="small where [SEP] attention is high (layer 5 on)",
                ours=f"{ratio[heavy].mean():.2f} vs {ratio[~heavy].mean():.2f}",
                verdict=verdict.conditions(low and sink == "sep", low),
                note=("no-op hypothesis tested on the model's own sink token " + name
                      + ("" if sink == "sep" else " (the paper tested [SEP])")),
            ))
    first = stats["entropy"][0]
    rows.append(dict(
        experiment="§3.3 entropy", quantity="highest head entropy in layer 1 / uniform entropy (nats)",
        paper="close to uniform (broad heads in lower layers)",
        ours=f"{first.max():.2f} / {float(stats['uniform_entropy']):.2f}",
        verdict=verdict.conditions(first.max() > 0.75 * float(stats["uniform_entropy"])),
        note="bag-of-vectors heads",
    ))
    last_cls = float(stats["entropy_cls"][-1].mean())
    rows.append(dict(
        experiment="§3.3 entropy", quantity="mean entropy from [CLS] in the last layer (nats)",
        paper=PAPER["cls_entropy_last_layer"], ours=round(last_cls, 3),
        verdict=verdict.closeness(PAPER["cls_entropy_last_layer"], last_cls, 0.1, 0.25, relative=True),
        note="broad attention from [CLS] in the last layer",
    ))
    return rows


def findings_markdown(stats: dict[str, np.ndarray], grads: dict[str, np.ndarray] | None, model_name: str) -> str:
    """A paragraph, computed from the numbers, saying where this run agrees with Clark §3 and where not."""
    rows = paper_comparison(stats, grads)
    agree = [r for r in rows if r["verdict"] == "agrees"]
    differ = [r for r in rows if r["verdict"] in ("disagrees", "partly agrees")]
    means = {k: layer_means(stats[k]) for k in ("cls", "sep")}
    parts = [f"**What this run shows.** On {model_name}, {len(agree)} of {len(rows)} findings agree with "
             "bert-base: " + "; ".join(r["quantity"] for r in agree) + "."]
    if sink_token(stats) == "cls":
        parts.append(
            f"The largest difference is the no-op target: this model sends up to {means['cls'].max():.0%} of a "
            f"layer's attention to [CLS] and at most {means['sep'].max():.0%} to [SEP], so the [SEP]-centred "
            "findings of §3.2 do not carry over, while the pattern behind them (a fixed special token absorbing "
            "attention a head does not need) does.")
    if differ:
        parts.append("Differences: " + "; ".join(f"{r['quantity']} (paper {r['paper']}, here {r['ours']})"
                                                for r in differ) + ".")
    return " ".join(parts)


def surface_statistics(loaded, segments, *, batch_size: int = 16, use_cache: bool = True,
                       progress: bool = True) -> dict[str, np.ndarray]:
    """Clark §3 statistics of ``loaded`` over ``segments`` (streamed, cached by model and input content)."""
    from attnbook.core import cache
    from attnbook.engine.extract import stream_attention

    parts = {"model": loaded.key, "inputs": cache.digest(segments), "code": "surface-v1"}
    return cache.cached_arrays(
        "surface", parts,
        lambda: stream_attention(loaded, segments, [SurfaceStats.for_tokenizer(loaded.tokenizer)],
                                 batch_size=batch_size, progress=progress)[0],
        enabled=use_cache,
    )
