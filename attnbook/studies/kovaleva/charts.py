"""Every chart of the Kovaleva et al. study (chapters 4 and 5).

* §4.1 (Fig. 1-2): one map as an Altair heatmap (:func:`heatmap_chart`), an example of each class
  (:func:`class_examples_chart`), the class shares per task (:func:`proportions_chart`), and PNG
  thumbnails without matplotlib (:func:`png_bytes`, :func:`map_image`, :func:`render_thumbnails`);
* §4.3-4.5 (Fig. 5-7): layer x head heatmaps, one panel per task on one shared colour scale;
* §5: the word-matching share of the heads whose disabling hurts most, against all heads.

Pure functions from arrays to long tables and Altair charts; every label a reader sees is the
1-based ``layer-head`` name or a 1-based layer/head number. Render them with
:func:`attnbook.charts.enable` active.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from attnbook.charts import heads_frame, panels_per_row, stagger
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.core.io import atomic_write_bytes
from attnbook.studies.kovaleva.patterns import CLASSES


# ---------------------------------------------------------------------------------------------
# §4.1: maps as pictures (PNG thumbnails without matplotlib, Altair heatmaps), Fig. 1-2
# ---------------------------------------------------------------------------------------------
#: one colour per class for thumbnail frames and charts (Vertical, Diagonal, V+D, Block, Heterogeneous)
CLASS_COLOURS: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180), (44, 160, 44), (148, 103, 189), (255, 127, 14), (214, 39, 40),
)


def png_bytes(image: np.ndarray) -> bytes:
    """Encode ``uint8`` ``image[h, w]`` (grey) or ``[h, w, 3]`` (RGB) as PNG bytes (zlib only)."""
    img = np.asarray(image, dtype=np.uint8)
    if img.ndim == 2:
        img = img[:, :, None]
    h, w, c = img.shape
    colour_type = {1: 0, 3: 2}[c]
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def map_image(attn: np.ndarray, size: int = 64, gamma: float = 1.0) -> np.ndarray:
    """A ``uint8`` grey picture of one map (dark = high weight, like the paper's Fig. 1).

    Maps shorter than ``size`` are enlarged with nearest-neighbour cells; longer maps are
    shrunk by taking the maximum over each pixel's block of cells, so one-token-wide
    stripes and diagonals never disappear. ``gamma`` < 1 brightens weak weights.
    """
    a = np.asarray(attn, dtype=np.float32)
    n = a.shape[0]
    if n <= size:
        idx = np.minimum((np.arange(size) * n) // size, n - 1)
        img = a[idx][:, idx]
    else:
        starts = (np.arange(size) * n) // size
        img = np.maximum.reduceat(np.maximum.reduceat(a, starts, axis=0), starts, axis=1)
    img = (img / max(float(img.max()), 1e-9)) ** gamma
    return (255 * (1 - img)).astype(np.uint8)


def thumbnail_mosaic(maps: Sequence[np.ndarray], labels: Sequence[int] | None = None, *, cols: int = 10,
                     size: int = 64, frame: int = 3, gap: int = 4) -> np.ndarray:
    """RGB mosaic of map thumbnails, row-major, each framed in its class colour (grey if unlabelled)."""
    rows = (len(maps) + cols - 1) // cols
    cell = size + 2 * frame + gap
    out = np.full((rows * cell + gap, cols * cell + gap, 3), 255, dtype=np.uint8)
    for i, m in enumerate(maps):
        r, c = divmod(i, cols)
        y, x = gap + r * cell, gap + c * cell
        colour = CLASS_COLOURS[int(labels[i])] if labels is not None else (150, 150, 150)
        out[y : y + size + 2 * frame, x : x + size + 2 * frame] = colour
        out[y + frame : y + frame + size, x + frame : x + frame + size] = map_image(m, size)[:, :, None]
    return out


def review_sheet(maps: Sequence[np.ndarray], segments: Sequence[np.ndarray], *, cols: int = 5, size: int = 150,
                 gap: int = 10, tick: int = 6) -> np.ndarray:
    """RGB sheet of a blind review: map thumbnails (:func:`map_image`, linear grey, each map divided by its
    maximum) row-major, with **no class shown**; a blue tick above the ``[CLS]`` column and red ticks on the
    top and left margins at each ``[SEP]`` (the last token of each segment), so sentence boundaries are seen."""
    if len(maps) != len(segments):
        raise ParameterError(f"{len(maps)} maps but {len(segments)} segment layouts")
    rows = (len(maps) + cols - 1) // cols
    cell = size + tick + gap
    img = np.full((rows * cell + gap, cols * cell + gap, 3), 255, np.uint8)
    for k, (m, seg) in enumerate(zip(maps, segments)):
        r, c = divmod(k, cols)
        y, x = gap + r * cell + tick, gap + c * cell + tick
        img[y:y + size, x:x + size] = map_image(m, size)[:, :, None]
        n = np.asarray(m).shape[0]
        seg = np.asarray(seg)
        for j in np.flatnonzero(np.r_[seg[1:] != seg[:-1], True]):
            p0, p1 = (j * size) // n, max((j * size) // n + 1, ((j + 1) * size) // n)
            img[y - tick:y - 1, x + p0:x + p1] = (220, 0, 0)
            img[y + p0:y + p1, x - tick:x - 1] = (220, 0, 0)
        img[y - tick:y - 1, x:x + max(1, size // n)] = (0, 0, 220)
    return img


def render_thumbnails(path: Path | str, maps: Sequence[np.ndarray], labels: Sequence[int] | None = None, **kw) -> Path:
    """Write :func:`thumbnail_mosaic` as a PNG file (atomically); returns the path."""
    path = Path(path)
    atomic_write_bytes(path, png_bytes(thumbnail_mosaic(maps, labels, **kw)))
    return path


def heatmap_chart(attn: np.ndarray, tokens: Sequence[str] | None = None, *, title: str = "", size: int = 220):
    """An Altair heatmap of one map (query rows, key columns; darker = more attention)."""
    a = np.asarray(attn, dtype=np.float32)
    n = a.shape[0]
    names = [f"{i:03d} {t}" for i, t in enumerate(tokens)] if tokens is not None else [f"{i:03d}" for i in range(n)]
    q, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    df = pd.DataFrame({"query": [names[i] for i in q.ravel()], "key": [names[j] for j in k.ravel()],
                       "weight": a.ravel()})
    show_axis = tokens is not None and n <= 40
    axis = alt.Axis(labels=show_axis, ticks=show_axis, labelExpr="slice(datum.label, 4)", title=None)
    return (
        alt.Chart(df, title=title)
        .mark_rect(strokeWidth=0)
        .encode(
            x=alt.X("key:O", sort=names, axis=axis),
            y=alt.Y("query:O", sort=names, axis=axis),
            color=alt.Color("weight:Q", legend=None,
                            scale=alt.Scale(range=["#ffffff", "#000000"], domain=[0, float(a.max())])),
            tooltip=["query", "key", alt.Tooltip("weight:Q", format=".3f")],
        )
        .properties(width=size, height=size)
    )


def class_examples_chart(maps: Sequence[np.ndarray], labels: Sequence[int], *, per_class: int = 1, size: int = 140):
    """Fig. 1 in Altair: the first ``per_class`` maps of each class side by side, titled by class."""
    charts = []
    for c, name in enumerate(CLASSES):
        picks = [i for i, y in enumerate(labels) if int(y) == c][:per_class]
        charts += [heatmap_chart(maps[i], title=name, size=size) for i in picks]
    if not charts:
        raise EmptyDataError("no labelled maps to show")
    return alt.hconcat(*charts)


def proportions_chart(fractions: dict[str, np.ndarray]):
    """Fig. 2 in Altair: a stacked bar per task of the share of each class."""
    rows = [{"task": task, "class": name, "share": float(f[c]), "order": c}
            for task, f in fractions.items() for c, name in enumerate(CLASSES)]
    colours = ["#%02x%02x%02x" % c for c in CLASS_COLOURS]
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(
            x=alt.X("task:N", title=None),
            y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of maps"),
            color=alt.Color("class:N", sort=list(CLASSES), scale=alt.Scale(domain=list(CLASSES), range=colours)),
            order="order:Q",
            tooltip=["task", "class", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(width=60 * len(fractions), height=220)
    )


# ---------------------------------------------------------------------------------------------
# §4.3-4.5 per task (Fig. 5-7)
# ---------------------------------------------------------------------------------------------
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
    columns = panels_per_row(cell * n_heads + 45, len(values))
    return base.facet(facet=alt.Facet("task:N", sort=list(values), title=None), columns=columns, title=title)


def cls_frame(results: Mapping[str, Mapping[str, np.ndarray]], features: Sequence[str],
              names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Long table of the last layer's ``[CLS]`` attention (``cls/<feature>`` = ``values[head]``) per task:
    task, feature, head (1-based), value; features missing from a task's result are left out. ``names`` relabels
    the special tokens' roles as the model names them (:func:`attnbook.engine.inputs.role_names`)."""
    names = dict(names or {})
    rows = []
    for task, r in results.items():
        for f in features:
            key = f"cls/{f}"
            if key not in r:
                continue
            for h, v in enumerate(np.asarray(r[key], dtype=np.float64).ravel()):
                rows.append({"task": task, "feature": names.get(f, f), "head": h + 1, "value": float(v)})
    if not rows:
        raise EmptyDataError("no cls/<feature> statistics to show")
    return pd.DataFrame(rows)


def cls_heatmaps(results: Mapping[str, Mapping[str, np.ndarray]], features: Sequence[str], title: str = "", *,
                 cell: int = 16, names: Mapping[str, str] | None = None) -> alt.FacetChart:
    """Kovaleva Fig. 7: feature x head heatmaps of the last layer's ``[CLS]`` attention, one per task; ``names``:
    the model's own tokens for the ``[CLS]`` and ``[SEP]`` roles (the labels a reader sees)."""
    names = dict(names or {})
    df = cls_frame(results, features, names)
    present = [names.get(f, f) for f in features if names.get(f, f) in set(df["feature"])]
    n_heads = int(df["head"].max())
    base = alt.Chart(df).mark_rect().encode(
        x=alt.X("head:O", title="head (last layer)"),
        y=alt.Y("feature:N", sort=present, title=None),
        color=alt.Color("value:Q", title=f"attention from {names.get('[CLS]', '[CLS]')}", scale=alt.Scale(scheme="greys")),
        tooltip=["task:N", "feature:N", "head:O", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=cell * n_heads, height=cell * len(present))
    columns = panels_per_row(cell * n_heads + 110, len(results))  # + the feature names on the y axis
    return base.facet(facet=alt.Facet("task:N", sort=list(results), title=None), columns=columns, title=title)


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
                            title: str = "", *, cell: int = 11):
    """Grid of layer x head heatmaps (rows: features, columns: tasks) of the change under fine-tuning
    (diverging colours, white = unchanged, one scale for all), the comparison of Kovaleva §4.4. The tasks are
    split into groups that fit the book's column side by side (:func:`attnbook.charts.panels_per_row`), one grid
    per group, stacked."""
    df = feature_change_frame(finetuned, pretrained, features)
    span = float(max(np.abs(df["delta"]).max(), 1e-9))
    n_layers, n_heads = int(df["layer"].max()), int(df["head"].max())
    present = [f for f in features if f in set(df["feature"])]
    tasks = [t for t in finetuned if t in set(df["task"])]
    per_row = panels_per_row(cell * n_heads + 10, len(tasks), extra=230)  # row titles and the legend: ~230 px
    grids = []
    for i in range(0, len(tasks), per_row):
        group = tasks[i:i + per_row]
        base = alt.Chart(df[df["task"].isin(group)]).mark_rect().encode(
            x=alt.X("head:O", title="head", axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color("delta:Q", title="fine-tuned − pre-trained",
                            scale=alt.Scale(scheme="redblue", reverse=True, domain=[-span, span], domainMid=0)),
            tooltip=["task:N", "feature:N", alt.Tooltip("label:N", title="head"),
                     alt.Tooltip("delta:Q", format="+.4f")],
        ).properties(width=cell * n_heads, height=cell * n_layers)
        grids.append(base.facet(row=alt.Row("feature:N", sort=present, title=None),
                                column=alt.Column("task:N", sort=group, title=None)))
    if len(grids) == 1:
        return grids[0].properties(title=title)
    return alt.vconcat(*grids, title=title)


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
    picked = df[df["picked"]].copy()
    span = float(df["value"].max() - df["value"].min()) or 1.0
    picked["level"] = stagger(picked["value"].tolist(), gap=span * 30 / width)  # a label is ~30 px wide
    chart = points
    for level in sorted(set(picked["level"])):  # labels close together go on lines above each other
        chart = chart + alt.Chart(picked[picked["level"] == level]).mark_text(dy=-10 - 11 * level, fontSize=10).encode(
            x="value:Q", y="group:N", text="label:N")
    if chance is not None:
        chart = alt.Chart(pd.DataFrame({"v": [float(chance)]})).mark_rule(color="orange", strokeDash=[4, 3]).encode(
            x="v:Q") + chart
    return chart.properties(title=title, width=width, height=90 + 11 * int(picked["level"].max() if len(picked) else 0))
