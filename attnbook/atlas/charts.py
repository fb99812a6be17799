"""The atlas figures: a layer-by-head grid where clicking a head shows its card and highlights it in linked charts.

One Vega-Lite spec, rendered offline by :func:`attnbook.charts.enable`'s renderer (the book's shipped Vega bundle;
the static SVG fallback shows the first head's card). Labels are the papers' 1-based ``layer-head``.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import altair as alt
import pandas as pd

from attnbook.atlas.cards import show_columns

#: the selection's name, also what the browser test looks for in the page
SELECTION = "atlas_head"


def _fill(frame: pd.DataFrame, color: str) -> tuple[str, str]:
    if color in frame and frame[color].notna().any():
        return color, color
    fallback = "entropy" if "entropy" in frame and frame["entropy"].notna().any() else "layer"
    return fallback, fallback


def atlas_chart(frame: pd.DataFrame, *, color: str = "importance", scatter: tuple[str, str] | None = None,
                title: str = "Head atlas: click a head") -> alt.VConcatChart:
    """The grid (cells coloured by ``color``; the chosen head outlined), the chosen head's card (every ``show:``
    field of :func:`attnbook.atlas.cards.flat_frame`) and a linked scatter of two per-head numbers (``scatter``,
    default: the syntax margin against the importance) where the chosen head is drawn large and red."""
    first = frame["label"].iloc[0]
    pick = alt.selection_point(name=SELECTION, fields=["label"], on="click", value=[{"label": first}],
                               clear=False, empty=False)
    field, name = _fill(frame, color)
    n_layers, n_heads = int(frame["layer"].max()), int(frame["index"].max())
    cell = max(14, min(28, 360 // n_heads))
    grid = alt.Chart(frame).mark_rect(stroke="white", strokeWidth=1).encode(
        x=alt.X("index:O", title="head"),
        y=alt.Y("layer:O", title="layer"),
        color=alt.Color(f"{field}:Q", title=name, scale=alt.Scale(scheme="viridis"),
                        legend=alt.Legend(orient="bottom", direction="horizontal")),
        stroke=alt.condition(pick, alt.value("red"), alt.value("white")),
        strokeWidth=alt.condition(pick, alt.value(3), alt.value(1)),
        tooltip=["label:N", alt.Tooltip(f"{field}:Q", format=".3g")],
    ).add_params(pick).properties(width=cell * n_heads, height=cell * n_layers, title=title)
    cols = show_columns(frame)
    card = alt.Chart(frame).transform_filter(pick).transform_fold(cols, as_=["field", "value"]).transform_calculate(
        line="datum.label + ' · ' + slice(datum.field, 6) + ': ' + datum.value"
    ).mark_text(align="left", baseline="middle", fontSize=11, limit=600).encode(
        x=alt.value(0), y=alt.Y("field:N", sort=cols, axis=None), text="line:N",
    ).properties(width=600, height=16 * len(cols), title="card of the chosen head")
    xs, ys = scatter or ("syntax_margin", "importance")
    charts = [grid, card]
    if xs in frame and ys in frame and frame[xs].notna().any() and frame[ys].notna().any():
        points = alt.Chart(frame).mark_circle().encode(
            x=alt.X(f"{xs}:Q"), y=alt.Y(f"{ys}:Q"),
            color=alt.condition(pick, alt.value("red"), alt.value("steelblue")),
            size=alt.condition(pick, alt.value(160), alt.value(30)),
            tooltip=["label:N", alt.Tooltip(f"{xs}:Q", format=".3g"), alt.Tooltip(f"{ys}:Q", format=".3g")],
        ).properties(width=300, height=220, title=f"{ys} against {xs} (chosen head in red)")
        charts.append(points)
    # stacked, not side by side: every part fits the book's column (about 690 px) and the printed page
    return alt.vconcat(*([charts[0]] + charts[2:] + [charts[1]]))


def linked_scatter(frame: pd.DataFrame, x: str, y: str, title: str = "") -> alt.Chart | None:
    """A static scatter of two per-head numbers (for the cross-paper questions); ``None`` when either is not run."""
    if x not in frame or y not in frame or frame[x].isna().all() or frame[y].isna().all():
        return None
    return alt.Chart(frame.dropna(subset=[x, y])).mark_circle(size=40).encode(
        x=alt.X(f"{x}:Q"), y=alt.Y(f"{y}:Q"), color=alt.Color("layer:O", scale=alt.Scale(scheme="viridis")),
        tooltip=["label:N", alt.Tooltip(f"{x}:Q", format=".3g"), alt.Tooltip(f"{y}:Q", format=".3g")],
    ).properties(width=300, height=220, title=title or f"{y} against {x}")


def rank_caption(shown: str, answers: Sequence[Mapping], key: str) -> str:
    """A caption for a :func:`linked_scatter`: what it ``shown``, then each measured answer's rank correlation with
    its interval (``key``: the answer's field that names it, ``"task"`` or ``"kind"``)."""
    parts = [f"{a[key]} ρ = {a['estimate'].text('.2f')}" for a in answers if a.get("measured") and key in a]
    return f"{shown}: " + ("; ".join(parts) if parts else "not measured in this profile") + "."
