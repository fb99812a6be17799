"""Michel et al. §3.3 and §4.2-4.3 around the pruning engine: safe shares, curve areas, masks and inputs."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.inputs import Batch


def largest_safe_share(curve, baseline: float, tolerance: float) -> float:
    """Michel §4.2: the largest ``share_pruned`` of ``curve`` (rows of one ordering, ascending shares,
    columns ``share_pruned`` and ``score``) such that every step up to it keeps
    ``score >= baseline - tolerance``; 0 when even the first pruning step loses more."""
    safe = 0.0
    for share, score in zip(curve["share_pruned"], curve["score"]):
        if score < baseline - tolerance:
            break
        safe = float(share)
    return safe


def one_head_per_layer_mask(keep: Sequence[int], n_heads: int) -> np.ndarray:
    """``mask[layer, head]`` keeping only head ``keep[layer]`` (0-based) in every layer (Michel §3.3/§4.2)."""
    mask = np.zeros((len(keep), n_heads), dtype=np.float32)
    for layer, head in enumerate(keep):
        if not 0 <= int(head) < n_heads:
            raise ParameterError(f"head {head} of layer {layer} is outside 0..{n_heads - 1}")
        mask[layer, int(head)] = 1.0
    return mask


def throughput_pool(batches: Sequence[Batch], n: int, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Up to ``n`` examples of ``batches`` as one right-padded input dict (the speed test's pool, Michel §4.3)."""
    rows: list[dict[str, torch.Tensor]] = []
    for b in batches:
        for i in range(b.size):
            length = int(b.inputs["attention_mask"][i].sum()) if "attention_mask" in b.inputs else b.inputs["input_ids"].shape[1]
            rows.append({k: v[i, :length] for k, v in b.inputs.items()})
            if len(rows) >= n:
                break
        if len(rows) >= n:
            break
    if not rows:
        raise EmptyDataError("no examples for the throughput pool")
    width = max(r["input_ids"].shape[0] for r in rows)
    out = {}
    for k in rows[0]:
        fill = pad_id if k == "input_ids" else 0
        t = torch.full((len(rows), width), fill, dtype=rows[0][k].dtype)
        for j, r in enumerate(rows):
            t[j, : r[k].shape[0]] = r[k]
        out[k] = t
    return out


def curve_area(curve, max_share: float = 0.9) -> float:
    """Mean score of a pruning curve over the steps with ``share_pruned <= max_share`` (higher = pruning hurts less)."""
    sel = curve[curve["share_pruned"] <= max_share + 1e-9]
    if sel.empty:
        raise EmptyDataError("no pruning step at or below the share")
    return float(sel.groupby("share_pruned")["score"].mean().mean())
