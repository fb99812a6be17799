"""Michel et al.'s figures: head importance, pruning curves (Figs. 3-5)."""
from __future__ import annotations


import altair as alt
import numpy as np
import pandas as pd

from attnbook.charts import LAYER_SCHEME, head_heatmap  # noqa: F401


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
