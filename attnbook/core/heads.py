"""Naming heads the way the papers do.

Inside the package every array is 0-based: ``attn[layer, head, query, key]``.
Every label a reader sees uses the papers' 1-based ``layer-head`` form, so
layer index 7, head index 9 is shown as ``"8-10"`` (Clark et al.'s direct-object head).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

#: the papers' model, bert-base: its number of layers, against which a layer finding is placed by relative depth
PAPER_N_LAYERS = 12


def head_label(layer: int, head: int) -> str:
    """1-based ``layer-head`` label for 0-based indices: ``head_label(7, 9) == "8-10"``."""
    if layer < 0 or head < 0:
        raise ValueError(f"layer and head are 0-based indices, got {layer}, {head}")
    return f"{int(layer) + 1}-{int(head) + 1}"


def parse_head_label(label: str) -> tuple[int, int]:
    """Inverse of :func:`head_label`: ``"8-10"`` -> ``(7, 9)`` (0-based)."""
    try:
        layer_s, head_s = label.strip().split("-")
        layer, head = int(layer_s) - 1, int(head_s) - 1
    except ValueError as exc:
        raise ValueError(f"a head label looks like '8-10' (1-based layer-head), got {label!r}") from exc
    if layer < 0 or head < 0:
        raise ValueError(f"head labels are 1-based, got {label!r}")
    return layer, head


def relative_layers(paper_layers: Sequence[int], n_layers: int, paper_n_layers: int = PAPER_N_LAYERS) -> list[int]:
    """The layers (1-based, sorted, distinct) of an ``n_layers`` model at the relative depth of the paper's
    ``paper_layers`` of bert-base: layer ``l`` of 12 is layer ``ceil(l * n_layers / 12)`` here (the identity
    for a 12-layer model; two bert-base layers share one layer of a 6-layer model). The book's one rule for a paper's
    layer finding on a model of another depth (Clark's layers in chapter 1, Kovaleva's "last two layers" in chapter 4)."""
    return sorted({max(1, math.ceil(l * n_layers / paper_n_layers - 1e-9)) for l in paper_layers})


def all_head_labels(n_layers: int, n_heads: int) -> list[str]:
    """Labels of every head in layer-major order (the order of ``array.reshape(-1)``)."""
    return [head_label(layer, head) for layer in range(n_layers) for head in range(n_heads)]


def heads_table(values: np.ndarray, name: str = "value"):
    """A long table (pandas DataFrame) from ``values[layer, head]``: layer, head (1-based), label, value."""
    import pandas as pd

    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"expected values[layer, head], got shape {values.shape}")
    n_layers, n_heads = values.shape
    rows = [
        {"layer": layer + 1, "head": head + 1, "label": head_label(layer, head), name: float(values[layer, head])}
        for layer in range(n_layers)
        for head in range(n_heads)
    ]
    return pd.DataFrame(rows)
