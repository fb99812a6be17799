"""Charts of Kovaleva et al. §4.3-4.5 per task (Fig. 5-7): one panel per task, one shared colour scale.

Pure functions from arrays to long tables and Altair charts; every label a reader sees is the
1-based ``layer-head`` name or a 1-based layer/head number. Render them with
:func:`attnbook.charts.enable` active.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.charts import heads_frame
from attnbook.core.heads import head_label


def task_frame(values: Mapping[str, np.ndarray], name: str = "value") -> pd.DataFrame:
    """Long table of ``values[task] = array[layer, head]``: task, layer, head (1-based), label, ``name``."""
    if not values:
        raise EmptyDataError("no tasks to show")
    rows = []
    shape = None
    for task, arr in values.items():
        a = np.asarray(arr, dtype=np.float64)
        if a.ndim != 2:
            raise ParameterError(f"{task}: expected values[layer, head], got shape {a.shape}")
        if shape is not None and a.shape != shape:
            raise ParameterError(f"{task}: shape {a.shape} differs from {shape}")
        shape = a.shape
        for layer in range(a.shape[0]):
            for head in range(a.shape[1]):
                rows.append({"task": task, "layer": layer + 1, "head": head + 1,
                             "label": head_label(layer, head), name: float(a[layer, head])})
    return pd.DataFrame(rows)


def task_heatmaps(values: Mapping[str, np.ndarray], title: str = "", *, value_title: str = "value",
                  scheme: str = "blues", reverse: bool = False, domain_mid: float | None = None,
                  fmt: str = ".3f", cell: int = 16) -> alt.FacetChart:
    """Layer x head heatmaps side by side, one per task, sharing one colour scale (Kovaleva Fig. 5-6)."""
    df = task_frame(values, "value")
    n_layers, n_heads = int(df["layer"].max()), int(df["head"].max())
    scale = alt.Scale(scheme=scheme, reverse=reverse, **({"domainMid": domain_mid} if domain_mid is not None else {}))
    base = alt.Chart(df).mark_rect().encode(
        x=alt.X("head:O", title="head"),
        y=alt.Y("layer:O", title="layer"),
        color=alt.Color("value:Q", title=value_title, scale=scale),
        tooltip=["task:N", alt.Tooltip("label:N", title="head"), alt.Tooltip("value:Q", format=fmt, title=value_title)],
    ).properties(width=cell * n_heads, height=cell * n_layers)
    return base.facet(column=alt.Column("task:N", sort=list(values), title=None), title=title)


def cls_frame(results: Mapping[str, Mapping[str, np.ndarray]], features: Sequence[str]) -> pd.DataFrame:
    """Long table of the last layer's ``[CLS]`` attention (``cls/<feature>`` = ``values[head]``) per task:
    task, feature, head (1-based), value; features missing from a task's result are left out."""
    rows = []
    for task, r in results.items():
        for f in features:
            key = f"cls/{f}"
            if key not in r:
                continue
            for h, v in enumerate(np.asarray(r[key], dtype=np.float64).ravel()):
                rows.append({"task": task, "feature": f, "head": h + 1, "value": float(v)})
    if not rows:
        raise EmptyDataError("no cls/<feature> statistics to show")
    return pd.DataFrame(rows)


def cls_heatmaps(results: Mapping[str, Mapping[str, np.ndarray]], features: Sequence[str], title: str = "", *,
                 cell: int = 16) -> alt.FacetChart:
    """Kovaleva Fig. 7: feature x head heatmaps of the last layer's ``[CLS]`` attention, one per task."""
    df = cls_frame(results, features)
    present = [f for f in features if f in set(df["feature"])]
    n_heads = int(df["head"].max())
    base = alt.Chart(df).mark_rect().encode(
        x=alt.X("head:O", title="head (last layer)"),
        y=alt.Y("feature:N", sort=present, title=None),
        color=alt.Color("value:Q", title="attention from [CLS]", scale=alt.Scale(scheme="greys")),
        tooltip=["task:N", "feature:N", "head:O", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=cell * n_heads, height=cell * len(present))
    return base.facet(column=alt.Column("task:N", sort=list(results), title=None), title=title)


def feature_change_frame(finetuned: Mapping[str, Mapping[str, np.ndarray]],
                         pretrained: Mapping[str, Mapping[str, np.ndarray]], features: Sequence[str]) -> pd.DataFrame:
    """Long table of ``received/<feature>`` fine-tuned minus pre-trained: task, feature, layer, head, label, delta."""
    rows = []
    for task, r in finetuned.items():
        for f in features:
            key = f"received/{f}"
            if key not in r or key not in pretrained.get(task, {}):
                continue
            d = np.asarray(r[key], dtype=np.float64) - np.asarray(pretrained[task][key], dtype=np.float64)
            for layer in range(d.shape[0]):
                for head in range(d.shape[1]):
                    rows.append({"task": task, "feature": f, "layer": layer + 1, "head": head + 1,
                                 "label": head_label(layer, head), "delta": float(d[layer, head])})
    if not rows:
        raise EmptyDataError("no feature statistics shared by the fine-tuned and pre-trained results")
    return pd.DataFrame(rows)


def feature_change_heatmaps(finetuned: Mapping[str, Mapping[str, np.ndarray]],
                            pretrained: Mapping[str, Mapping[str, np.ndarray]], features: Sequence[str],
                            title: str = "", *, cell: int = 11) -> alt.FacetChart:
    """Grid of layer x head heatmaps (rows: features, columns: tasks) of the change under fine-tuning
    (diverging colours, white = unchanged), the comparison of Kovaleva §4.4."""
    df = feature_change_frame(finetuned, pretrained, features)
    span = float(max(np.abs(df["delta"]).max(), 1e-9))
    n_layers, n_heads = int(df["layer"].max()), int(df["head"].max())
    present = [f for f in features if f in set(df["feature"])]
    base = alt.Chart(df).mark_rect().encode(
        x=alt.X("head:O", title="head", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("layer:O", title="layer"),
        color=alt.Color("delta:Q", title="fine-tuned − pre-trained",
                        scale=alt.Scale(scheme="redblue", reverse=True, domain=[-span, span], domainMid=0)),
        tooltip=["task:N", "feature:N", alt.Tooltip("label:N", title="head"), alt.Tooltip("delta:Q", format="+.4f")],
    ).properties(width=cell * n_heads, height=cell * n_layers)
    return base.facet(row=alt.Row("feature:N", sort=present, title=None),
                      column=alt.Column("task:N", sort=list(finetuned), title=None), title=title)


def shares_table(fractions: Mapping[str, np.ndarray], classes: Sequence[str]) -> pd.DataFrame:
    """One row per task (or model/task label), one column per class, shares in percent (1 decimal)."""
    rows = []
    for name, f in fractions.items():
        f = np.asarray(f, dtype=np.float64)
        if f.shape != (len(classes),):
            raise ParameterError(f"{name}: {f.shape[0] if f.ndim else 0} shares for {len(classes)} classes")
        rows.append({"maps of": name, **{c: round(100 * float(x), 1) for c, x in zip(classes, f)}})
    return pd.DataFrame(rows)


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
