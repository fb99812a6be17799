"""Charts of switched-off heads, shared by chapters 5 and 6 (Kovaleva §4.6 Figs. 8-9; Michel §3-§4).

Pure functions from arrays / DataFrames to Altair charts; every label a reader sees is the
1-based ``layer-head`` name. Render them with :func:`attnbook.charts.enable` active.
"""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from attnbook.charts import LAYER_SCHEME, heads_frame


def sweep_frame(scores: np.ndarray, baseline: float, significant: np.ndarray | None = None) -> pd.DataFrame:
    """Long table of a single-head sweep: layer, head, label, score, delta (score − baseline),
    ``better`` (Δ > 0) and ``significant`` (False when not given)."""
    scores = np.asarray(scores, dtype=np.float64)
    sig = np.zeros(scores.shape, dtype=bool) if significant is None else np.asarray(significant, dtype=bool)
    if sig.shape != scores.shape:
        raise ValueError(f"significant has shape {sig.shape}, scores {scores.shape}")
    df = heads_frame({"score": scores, "significant": sig.astype(float)})
    df["significant"] = df["significant"] > 0
    df["delta"] = df["score"] - float(baseline)
    df["better"] = df["delta"] > 0
    return df


def sweep_heatmap(
    scores: np.ndarray,
    baseline: float,
    title: str = "",
    *,
    significant: np.ndarray | None = None,
    value_title: str = "score",
    cell: int = 14,
    show_text: bool = True,
) -> alt.Chart:
    """Layer x head heatmap of the score with each head switched off (Kovaleva Fig. 8).

    The colour is the change from the baseline (diverging, white = baseline), so the baseline is
    the scale's midpoint; heads whose removal *helps* carry a "+" and significant changes
    (``significant[layer, head]``) a black outline. The subtitle states the baseline.
    """
    df = sweep_frame(scores, baseline, significant)
    df["mark"] = np.where(df["better"], "+", "")
    span = float(max(np.abs(df["delta"]).max(), 1e-9))
    n_layers, n_heads = np.asarray(scores).shape
    base = alt.Chart(df).encode(x=alt.X("head:O", title="head"), y=alt.Y("layer:O", title="layer"))
    rect = base.mark_rect().encode(
        color=alt.Color("delta:Q", title=f"{value_title} − baseline",
                        scale=alt.Scale(scheme="redblue", domain=[-span, span], domainMid=0)),
        stroke=alt.condition("datum.significant", alt.value("black"), alt.value(None)),
        strokeWidth=alt.condition("datum.significant", alt.value(2), alt.value(0)),
        tooltip=[alt.Tooltip("label:N", title="head off"), alt.Tooltip("score:Q", format=".2f", title=value_title),
                 alt.Tooltip("delta:Q", format="+.2f", title="change"), alt.Tooltip("significant:N")],
    )
    chart = rect
    if show_text:
        chart = rect + base.mark_text(fontSize=min(11, cell - 3), color="black").encode(text="mark:N")
    return chart.properties(
        title={"text": title, "subtitle": f"baseline {baseline:.2f}; + = better than baseline"},
        width=cell * n_heads, height=cell * n_layers,
    )


def layer_sweep_bars(
    scores: np.ndarray, baseline: float, title: str = "", *, value_title: str = "score", width: int = 220, height: int = 160,
    paper: tuple[int, float, str] | None = None,
) -> alt.Chart:
    """One bar per disabled layer (Kovaleva Fig. 9), drawn from the baseline (a dashed orange rule) to the score.
    ``paper``: (1-based layer, the paper's change in points, its label): a red point at baseline + change."""
    s = np.asarray(scores, dtype=np.float64)
    df = pd.DataFrame({"layer": np.arange(1, len(s) + 1), "score": s, "delta": s - float(baseline),
                       "baseline": float(baseline)})
    marks = [float(baseline) + paper[1]] if paper is not None else []
    lo = float(min(s.min(), baseline, *marks))
    hi = float(max(s.max(), baseline, *marks))
    pad = max(0.05 * (hi - lo), 0.5)
    scale = alt.Scale(domain=[lo - pad, hi + pad], zero=False)
    bars = alt.Chart(df).mark_bar(clip=True).encode(  # bars grow from the baseline, up (better) or down (worse)
        x=alt.X("layer:O", title="layer disabled"),
        y=alt.Y("score:Q", title=value_title, scale=scale),
        y2="baseline:Q",
        color=alt.condition("datum.delta > 0", alt.value("#4c78a8"), alt.value("#bbbbbb")),
        tooltip=["layer:O", alt.Tooltip("score:Q", format=".2f"), alt.Tooltip("delta:Q", format="+.2f", title="change")],
    )
    rule = alt.Chart(pd.DataFrame({"baseline": [float(baseline)]})).mark_rule(color="orange", strokeDash=[5, 3], size=2).encode(
        y="baseline:Q", tooltip=[alt.Tooltip("baseline:Q", format=".2f")]
    )
    chart = bars + rule
    if paper is not None:
        layer, change, label = paper
        mark = pd.DataFrame({"layer": [int(layer)], "score": [float(baseline) + change], "what": [label],
                             "change": [change]})
        point = alt.Chart(mark).encode(x="layer:O", y="score:Q", tooltip=["what:N", alt.Tooltip("change:Q", format="+.1f")])
        chart = chart + point.mark_point(shape="diamond", size=70, color="firebrick", filled=True) + point.mark_text(
            align="left", dx=6, fontSize=10, color="firebrick").encode(text="what:N")
    return chart.properties(title=title, width=width, height=height)


def method_scatter(
    x: np.ndarray,
    y: np.ndarray,
    x_title: str,
    y_title: str,
    title: str = "",
    *,
    width: int = 320,
    height: int = 280,
) -> alt.Chart:
    """One point per head, ``x[layer, head]`` against ``y[layer, head]``, coloured by layer, zero lines
    drawn (Kovaleva's disabling vs Michel's masking, or one dataset against another)."""
    df = heads_frame({"x": x, "y": y})
    points = alt.Chart(df).mark_circle(size=45, opacity=0.8).encode(
        x=alt.X("x:Q", title=x_title),
        y=alt.Y("y:Q", title=y_title),
        color=alt.Color("layer:O", scale=alt.Scale(scheme=LAYER_SCHEME)),
        tooltip=[alt.Tooltip("label:N", title="head"), alt.Tooltip("x:Q", format=".3f", title=x_title),
                 alt.Tooltip("y:Q", format=".3f", title=y_title)],
    )
    zero_x = alt.Chart(pd.DataFrame({"v": [0.0]})).mark_rule(color="gray", strokeDash=[3, 3]).encode(x="v:Q")
    zero_y = alt.Chart(pd.DataFrame({"v": [0.0]})).mark_rule(color="gray", strokeDash=[3, 3]).encode(y="v:Q")
    return (zero_x + zero_y + points).properties(title=title, width=width, height=height)
