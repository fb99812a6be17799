"""Every chart of the Kovaleva et al. study (chapters 4 and 5).

* §4.1 (Fig. 1-2): one map as an Altair heatmap (:func:`heatmap_chart`), an example of each class
  (:func:`class_examples_chart`), the class shares per task (:func:`proportions_chart`), and PNG
  thumbnails without matplotlib (:func:`png_bytes`, :func:`map_image`, :func:`render_thumbnails`);
* §4.3-4.5 (Fig. 5-7): layer x head heatmaps, one panel per task on one shared colour scale;
* §5: the word-matching share of the heads whose disabling hurts most, against all heads;
* Table 1: each task's three scores with their intervals beside the paper's (:func:`table1_chart`).

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

from attnbook.charts import heads_frame, panels_per_row, reference_rule, stagger
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.core.io import atomic_write_bytes
from attnbook.studies.kovaleva.patterns import CLASSES
from attnbook.studies.kovaleva.table1 import INIT_LABELS


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


def proportions_chart(fractions: dict[str, np.ndarray], paper: tuple[float, float] | None = None):
    """Fig. 2 in Altair: a stacked bar per task of the share of each class, Heterogeneous at the bottom so that its
    share reads off the axis; ``paper``: the paper's lowest and highest Heterogeneous share over its tasks (Kovaleva
    §4.1: MRPC and QQP), drawn as two rules labelled "paper"."""
    last = CLASSES.index("Heterogeneous")
    rows = [{"task": task, "class": name, "share": float(f[c]), "order": -1 if c == last else c}
            for task, f in fractions.items() for c, name in enumerate(CLASSES)]
    colours = ["#%02x%02x%02x" % c for c in CLASS_COLOURS]
    bars = (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(
            x=alt.X("task:N", title=None),
            y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of maps"),
            color=alt.Color("class:N", sort=list(CLASSES), scale=alt.Scale(domain=list(CLASSES), range=colours)),
            order="order:Q",
            tooltip=["task", "class", alt.Tooltip("share:Q", format=".1%")],
        )
    )
    chart = bars
    if paper is not None:
        low, high = paper
        chart = bars + reference_rule(low, f"paper: Heterogeneous {low:.0%} (MRPC)", color="black") + reference_rule(
            high, f"paper: {high:.0%} (QQP)", color="black")
    return chart.properties(width=max(60 * len(fractions), 240), height=220)


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
                  fmt: str = ".3f", cell: int = 16, domain: tuple[float, float] | None = None) -> alt.FacetChart:
    """Layer x head heatmaps side by side, one per task, sharing one colour scale (Kovaleva Fig. 5-6); ``domain``
    fixes that scale's range (to share it with another figure)."""
    df = task_frame(values, "value")
    n_layers, n_heads = int(df["layer"].max()), int(df["head"].max())
    scale = alt.Scale(scheme=scheme, reverse=reverse, **({"domainMid": domain_mid} if domain_mid is not None else {}),
                      **({"domain": list(domain)} if domain is not None else {}))
    base = alt.Chart(df).mark_rect().encode(
        x=alt.X("head:O", title="head"),
        y=alt.Y("layer:O", title="layer"),
        color=alt.Color("value:Q", title=value_title, scale=scale),
        tooltip=["task:N", alt.Tooltip("label:N", title="head"), alt.Tooltip("value:Q", format=fmt, title=value_title)],
    ).properties(width=cell * n_heads, height=cell * n_layers)
    columns = panels_per_row(cell * n_heads + 45, len(values))
    return base.facet(facet=alt.Facet("task:N", sort=list(values), title=None), columns=columns, title=title)


def received_heatmaps(results: Mapping[str, Mapping[str, np.ndarray]], tokens: Mapping[str, str], *,
                      cell: int = 16):
    """Kovaleva Fig. 6: attention received by each special token (``tokens``: statistic name -> the panel's title,
    e.g. ``{"received/[SEP]": "Attention received by [SEP]"}``), one row of task heatmaps per token, all on one
    colour scale from 0 to the largest value, so the rows compare."""
    top = max(float(np.max(r[k])) for r in results.values() for k in tokens if k in r)
    rows = [task_heatmaps({t: r[k] for t, r in results.items() if k in r}, title, value_title="attention received",
                          cell=cell, domain=(0.0, top)) for k, title in tokens.items()]
    return alt.vconcat(*rows).resolve_scale(color="shared")


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


# ---------------------------------------------------------------------------------------------
# figure captions: one sentence each, every number from the run's values (the paper's passed in from its claims)
# ---------------------------------------------------------------------------------------------
def proportions_caption(fractions: Mapping[str, np.ndarray], paper: tuple[float, float]) -> str:
    """Caption of :func:`proportions_chart`: the Heterogeneous share's range over the tasks beside the paper's."""
    het = {t: float(np.asarray(f)[CLASSES.index("Heterogeneous")]) for t, f in fractions.items()}
    low, high = min(het, key=het.get), max(het, key=het.get)
    spread = (f"range from {het[low]:.0%} ({low}) to {het[high]:.0%} ({high})" if f"{het[low]:.0%}" != f"{het[high]:.0%}"
              else f"are {het[low]:.0%} on every task")
    return (f"The class of every map of the fine-tuned models, by the CNN, per task: Heterogeneous maps (bottom), the "
            f"upper bound on heads that could carry linguistic structure, {spread}; Kovaleva et al. find "
            f"{paper[0]:.0%} to {paper[1]:.0%} (dashed lines).")


def layer_change_caption(cosines: Mapping[str, np.ndarray], *, heatmap: bool) -> str:
    """Caption of the Fig. 5 figures (``heatmap``: the per-head cosines, else the per-layer change): on how many tasks
    the last layer changed most."""
    change = {t: 1.0 - np.asarray(c).mean(1) for t, c in cosines.items()}
    last = [t for t, c in change.items() if int(np.argmax(c)) == len(c) - 1]
    shown = ("Cosine similarity between every head's pre-trained and fine-tuned maps, per task (darker: changed more)"
             if heatmap else "How much each layer's maps changed under fine-tuning (1 − mean cosine), one line per task")
    return (f"{shown}: the last layer changed most on {len(last)} of {len(change)} tasks"
            f"{' (' + ', '.join(last) + ')' if last else ''}; Kovaleva et al. find the last two of bert-base's twelve "
            f"layers changing most on every task but QQP (Fig. 5).")


def received_caption(results: Mapping[str, Mapping[str, np.ndarray]], names: Mapping[str, str]) -> str:
    """Caption of :func:`received_heatmaps`: the largest attention received by each special token."""
    parts = []
    for role in ("[SEP]", "[CLS]"):
        key = f"received/{role}"
        best = max(((t, float(np.max(r[key]))) for t, r in results.items() if key in r), key=lambda x: x[1],
                   default=None)
        if best:
            parts.append(f"{names.get(role, role)} up to {best[1]:.2f} ({best[0]})")
    return (f"Attention received by the separator (top) and the start token (bottom) in each fine-tuned model, on one "
            f"colour scale so the rows compare: {', '.join(parts)}. Kovaleva et al. find the vertical stripes on "
            f"[CLS] in earlier layers and on [SEP] in later ones (Fig. 6).")


def feature_change_caption(finetuned: Mapping[str, Mapping[str, np.ndarray]],
                           pretrained: Mapping[str, Mapping[str, np.ndarray]], features: Sequence[str]) -> str:
    """Caption of :func:`feature_change_heatmaps`: the largest change and where."""
    df = feature_change_frame(finetuned, pretrained, features)
    top = df.loc[df["delta"].abs().idxmax()]
    return (f"Change of the attention each linguistic feature receives under fine-tuning, every head of every task "
            f"on one scale (red: more after fine-tuning): the largest change is {top['delta']:+.3f}, {top['feature']} "
            f"at head {top['label']} on {top['task']}, to be read beside the special tokens' shares in the figure "
            f"above.")


def cls_caption(means: pd.DataFrame, names: Mapping[str, str] | None = None) -> str:
    """Caption of :func:`cls_heatmaps` from :func:`attnbook.studies.kovaleva.features.cls_means`: the feature the
    last layer's ``[CLS]`` attends to most, per task."""
    names = dict(names or {})
    table = means.set_index("task")
    top = {t: names.get(f, f) for t, f in table.idxmax(axis=1).items()}
    return (f"What the last layer's {names.get('[CLS]', '[CLS]')} attends to, per head and task: most of all "
            f"{'; '.join(f'{f} on {t}' for t, f in top.items())}. Kovaleva et al. find [SEP] on most tasks and "
            f"punctuation on STS-B, RTE and QNLI (Fig. 7).")


def disabling_caption(sweeps: Mapping[str, object], significant: Mapping[str, np.ndarray],
                      paper_gains: Mapping[str, float]) -> str:
    """Caption of the Fig. 8 heatmaps: each task's best single-head gain and how many changes stay significant,
    beside the paper's quoted gains (``paper_gains``: task -> points, Kovaleva §4.6)."""
    parts = [f"{t} {float(np.max(np.asarray(s.scores) - s.baseline_score)):+.2f} "
             f"({int(np.sum(significant[t]))} significant)" for t, s in sweeps.items()]
    quoted = ", ".join(f"{g:+.1f} on {t}" for t, g in paper_gains.items())
    return (f"The dev score with each head disabled alone, per task; '+' marks heads whose removal helps, outlines "
            f"changes significant after Holm's correction. Best gain: {'; '.join(parts)}. Kovaleva et al. quote best "
            f"gains of {quoted} (§4.6).")


def layer_paper_mark(task: str, gains: Mapping[str, tuple[int, float]]) -> tuple[int, float, str] | None:
    """The paper's layer result for ``task`` as a mark for :func:`attnbook.studies.heads_off.charts.layer_sweep_bars`
    (``gains``: task -> (1-based layer, change in points), e.g. Kovaleva §4.6's layer 1 on RTE), else ``None``."""
    if task not in gains:
        return None
    layer, change = gains[task]
    return int(layer), float(change), f"paper {change:+.1f}"


def layer_caption(sweeps: Mapping[str, object], gains: Mapping[str, tuple[int, float]]) -> str:
    """Caption of the Fig. 9 bars: each task's best layer to disable, beside the paper's layer result."""
    parts = []
    for t, s in sweeps.items():
        d = np.asarray(s.scores) - s.baseline_score
        parts.append(f"{t} layer {int(np.argmax(d)) + 1} ({float(np.max(d)):+.2f})")
    quoted = "; ".join(f"layer {layer} on {t}: {change:+.1f}" for t, (layer, change) in gains.items())
    drawn = "the red diamond" if any(t in sweeps for t in gains) else "not among these tasks"
    return (f"The dev score with one whole layer disabled, per task (bars from the baseline, blue: better). Best layer "
            f"to disable: {'; '.join(parts)}. Kovaleva et al.'s result in bert-base ({quoted}, Fig. 9): {drawn}.")


def match_caption(match: Mapping[str, Mapping]) -> str:
    """Caption of the §5 word-matching strips: where the heads that hurt most sit among all heads."""
    parts = [f"{t} {100 * float(np.mean(list(m['percentiles'].values()))):.0f}"
             for t, m in match.items() if m.get("percentiles")]
    return (f"Every head's word-matching share (attention to copies of a token in the other sentence), the heads "
            f"whose disabling hurts most in red, uniform attention dashed. Their mean percentile among all heads by "
            f"that share: {'; '.join(parts)}. Kovaleva et al. saw the heads STS-B and RTE depend on most attend to the same word "
            f"in the other sentence (§5).")


def paper_layer_gains(disabling: Mapping[str, object]) -> dict[str, tuple[int, float]]:
    """The paper's layer result to mark in Fig. 9 from :data:`attnbook.studies.kovaleva.paper.PAPER_DISABLING`:
    task -> (1-based layer, change in points); Kovaleva §4.6 / Fig. 9: disabling layer 1 raises RTE's score."""
    return {"RTE": (1, float(disabling["rte_layer1"]))}


# ---------------------------------------------------------------------------------------------
# Table 1
# ---------------------------------------------------------------------------------------------
def table1_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The cells of a Table 1 (:func:`attnbook.studies.kovaleva.table1.table1`) that this run scored, one row each:
    task, model (:data:`~attnbook.studies.kovaleva.table1.INIT_LABELS`), this run's score with its interval (the
    score itself when the cell has none) and the paper's (NaN where the paper has none)."""
    rows = []
    for r in df.itertuples():
        if r.ours != r.ours:  # not run here
            continue
        low = getattr(r, "ours_low", float("nan"))
        high = getattr(r, "ours_high", float("nan"))
        rows.append({"task": r.task, "model": INIT_LABELS.get(r.init, r.init), "ours": float(r.ours),
                     "low": float(low) if low == low else float(r.ours),
                     "high": float(high) if high == high else float(r.ours), "paper": float(r.paper)})
    if not rows:
        raise EmptyDataError("no Table 1 cell was scored in this run")
    return pd.DataFrame(rows)


def table1_chart(df: pd.DataFrame, *, width: int = 520):
    """Table 1 as a figure: one line per task, the three models offset within it on one 0-100 scale shared by every
    task, this run's score as a dot with its 95% interval and the paper's as a black tick."""
    frame = table1_frame(df)
    models = [m for m in INIT_LABELS.values() if m in set(frame["model"])]
    tasks = list(dict.fromkeys(frame["task"]))
    lo = min(0.0, float(np.floor(frame[["low", "paper"]].min().min() / 10) * 10))
    x = alt.X("ours:Q", title="dev score (x100: accuracy, F1 or Pearson r)", scale=alt.Scale(domain=[lo, 100]))
    y = alt.Y("task:N", sort=tasks, title=None)
    off = alt.YOffset("model:N", sort=models)
    colour = alt.Color("model:N", sort=models, title=None, legend=alt.Legend(orient="bottom", columns=1))
    base = alt.Chart(frame)
    interval = base.mark_rule(strokeWidth=2).encode(x=alt.X("low:Q", scale=alt.Scale(domain=[lo, 100])), x2="high:Q",
                                                    y=y, yOffset=off, color=colour)
    dots = base.mark_point(filled=True, size=45).encode(
        x=x, y=y, yOffset=off, color=colour,
        tooltip=["task", "model", alt.Tooltip("ours:Q", format=".1f", title="this run"),
                 alt.Tooltip("low:Q", format=".1f"), alt.Tooltip("high:Q", format=".1f"),
                 alt.Tooltip("paper:Q", format=".1f")])
    paper = base.transform_filter("isValid(datum.paper)").mark_tick(color="black", thickness=2, size=9).encode(
        x=alt.X("paper:Q", scale=alt.Scale(domain=[lo, 100])), y=y, yOffset=off,
        tooltip=["task", "model", alt.Tooltip("paper:Q", format=".1f", title="paper")])
    return (interval + dots + paper).properties(width=width, height=alt.Step(9))


def table1_caption(df: pd.DataFrame) -> str:
    """Caption of :func:`table1_chart`: on how many of the tasks scored both ways pre-training + fine-tuning is
    above random init + fine-tuning with disjoint intervals, here and (by its numbers) in the paper."""
    frame = table1_frame(df)
    pt, rnd = INIT_LABELS["pretrained_ft"], INIT_LABELS["random_ft"]
    both = [t for t in dict.fromkeys(frame["task"])
            if {pt, rnd} <= set(frame.loc[frame["task"] == t, "model"])]
    cell = lambda t, m: frame[(frame["task"] == t) & (frame["model"] == m)].iloc[0]  # noqa: E731
    above = [t for t in both if cell(t, pt)["low"] > cell(t, rnd)["high"]]
    paper_above = [t for t in both if cell(t, pt)["paper"] > cell(t, rnd)["paper"]]
    lead = (f"Pre-training + fine-tuning (dots) lies above random init + fine-tuning with intervals apart on "
            f"{len(above)} of the {len(both)} tasks trained both ways here ({', '.join(above) or 'none'}); in the "
            f"paper's numbers (black ticks) it is higher on {len(paper_above)} of them.")
    return lead + (" Lines: 95% intervals; one scale for every task, so the gaps compare across tasks; the untrained "
                   "classifier (no fine-tuning) is where a constant or arbitrary read-out lands.")
