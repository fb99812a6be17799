"""Charts of switched-off heads (Kovaleva §4.6 Figs. 8-9; Michel §3-§4 Figs. 1-3).

Pure functions from arrays / DataFrames to Altair charts; every label a reader sees is the
1-based ``layer-head`` name. Render them with :func:`attnbook.charts.enable` active.
"""
from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from attnbook.charts import LAYER_SCHEME, head_heatmap, heads_frame


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
    cell: int = 24,
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
        chart = rect + base.mark_text(fontSize=11, color="black").encode(text="mark:N")
    return chart.properties(
        title={"text": title, "subtitle": f"baseline {baseline:.2f}; + = better than baseline"},
        width=cell * n_heads, height=cell * n_layers,
    )


def layer_sweep_bars(
    scores: np.ndarray, baseline: float, title: str = "", *, value_title: str = "score", width: int = 220, height: int = 160
) -> alt.Chart:
    """One bar per disabled layer (Kovaleva Fig. 9), drawn from the baseline (a dashed orange rule) to the score."""
    s = np.asarray(scores, dtype=np.float64)
    df = pd.DataFrame({"layer": np.arange(1, len(s) + 1), "score": s, "delta": s - float(baseline),
                       "baseline": float(baseline)})
    lo = float(min(s.min(), baseline))
    hi = float(max(s.max(), baseline))
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
    return (bars + rule).properties(title=title, width=width, height=height)


def importance_heatmap(values: np.ndarray, title: str = "", *, value_title: str = "importance", cell: int = 24) -> alt.Chart:
    """Layer x head heatmap of Michel's importance scores I_h (§4.1), darker = more important."""
    return head_heatmap(values, title, value_title=value_title, scheme="greens", cell=cell)


def random_band(curves: pd.DataFrame, ordering: str = "random") -> pd.DataFrame:
    """Per pruning share, the mean, standard deviation, min and max score of the ``ordering`` runs
    (one run per seed): the band drawn behind the other curves."""
    runs = curves[curves["ordering"] == ordering]
    if runs.empty:
        return pd.DataFrame(columns=["share_pruned", "mean", "std", "min", "max", "n_runs"])
    g = runs.groupby("share_pruned")["score"]
    out = g.agg(["mean", "std", "min", "max", "count"]).reset_index().rename(columns={"count": "n_runs"})
    out["std"] = out["std"].fillna(0.0)
    return out.sort_values("share_pruned", kind="stable").reset_index(drop=True)


def pruning_chart(
    curves: pd.DataFrame,
    baseline: float | None = None,
    title: str = "",
    *,
    value_title: str = "accuracy",
    width: int = 380,
    height: int = 240,
    color_field: str = "ordering",
) -> alt.Chart:
    """Score against the share of heads pruned (Michel Fig. 3): one line per non-random ordering,
    random orderings as their mean (dashed) with a min–max band over seeds; baseline as a rule."""
    rest = curves[curves["ordering"] != "random"].copy()
    rest["percent"] = 100 * rest["share_pruned"]
    layers = []
    band = random_band(curves)
    if len(band):
        band = band.assign(percent=100 * band["share_pruned"], ordering="random (mean, min–max)")
        layers.append(
            alt.Chart(band).mark_area(opacity=0.2, color="gray").encode(
                x=alt.X("percent:Q", title="heads pruned (%)"), y=alt.Y("min:Q", title=value_title), y2="max:Q"
            )
        )
        layers.append(
            alt.Chart(band).mark_line(color="gray", strokeDash=[4, 3]).encode(
                x="percent:Q", y="mean:Q",
                tooltip=[alt.Tooltip("percent:Q", format=".0f"), alt.Tooltip("mean:Q", format=".2f"),
                         alt.Tooltip("std:Q", format=".2f"), "n_runs:Q"],
            )
        )
    if len(rest):
        layers.append(
            alt.Chart(rest).mark_line(point=True).encode(
                x=alt.X("percent:Q", title="heads pruned (%)"),
                y=alt.Y("score:Q", title=value_title),
                color=alt.Color(f"{color_field}:N", title=None),
                tooltip=[f"{color_field}:N", alt.Tooltip("percent:Q", format=".1f"), alt.Tooltip("score:Q", format=".2f"),
                         alt.Tooltip("newly_pruned:N", title="heads pruned at this step")]
                if "newly_pruned" in rest else [f"{color_field}:N", "percent:Q", "score:Q"],
            )
        )
    if baseline is not None:
        layers.append(alt.Chart(pd.DataFrame({"baseline": [float(baseline)]})).mark_rule(
            color="orange", strokeDash=[5, 3]).encode(y="baseline:Q"))
    return alt.layer(*layers).properties(title=title, width=width, height=height)


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


def share_strip(values: np.ndarray, highlight: Sequence[tuple[int, int]], title: str = "", *,
                value_title: str = "value", chance: float | None = None, width: int = 360) -> alt.Chart:
    """Every head's ``values[layer, head]`` as a strip of points, the ``highlight`` heads marked and named
    (Kovaleva §5: word-matching attention of the heads whose disabling hurts most, against all heads)."""
    df = heads_frame({"value": values})
    keys = {(l + 1, h + 1) for l, h in highlight}
    df["picked"] = [(l, h) in keys for l, h in zip(df["layer"], df["head"])]
    df["group"] = np.where(df["picked"], "hurts most when disabled", "other heads")
    points = alt.Chart(df).mark_circle(size=60).encode(
        x=alt.X("value:Q", title=value_title),
        y=alt.Y("group:N", title=None),
        color=alt.Color("group:N", legend=None, scale=alt.Scale(domain=["hurts most when disabled", "other heads"],
                                                              range=["#d62728", "#9e9e9e"])),
        tooltip=[alt.Tooltip("label:N", title="head"), alt.Tooltip("value:Q", format=".3f")],
    )
    text = alt.Chart(df[df["picked"]]).mark_text(dy=-10, fontSize=10).encode(x="value:Q", y="group:N", text="label:N")
    chart = points + text
    if chance is not None:
        chart = alt.Chart(pd.DataFrame({"v": [float(chance)]})).mark_rule(color="orange", strokeDash=[4, 3]).encode(
            x="v:Q") + chart
    return chart.properties(title=title, width=width, height=90)
