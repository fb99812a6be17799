"""Chapter 9's figures: the same per-head statistics of several models side by side, on a relative-depth axis; and
the table of each model's sample sizes (:func:`sizes_table`).

Models differ in depth (6 layers for all-MiniLM-L6-v2, 12 for bert-base and MPNet), so every figure places a layer at
its *relative depth*, layer / number of layers (1-based: a model's last layer is at 1). Each function takes the
chapter's measurements keyed by model label (:func:`attnbook.atlas.encoders.model_labels`) and returns an Altair chart
(:mod:`attnbook.charts` renders it offline).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from attnbook.atlas.encoders import CLUSTERING, PROBING, SURFACE, TAXONOMY
from attnbook.charts import COLUMN_WIDTH, LAYER_SCHEME
from attnbook.core.heads import head_label

DEPTH = "relative depth (layer / layers)"
PAPER = "bert-base (Clark et al. Table 1)"


def heads_frame(values: Mapping[str, Mapping[str, np.ndarray]]) -> pd.DataFrame:
    """Long table of ``values[model][series][layer, head]``: model, series, layer and head (1-based), label, depth
    (layer / layers) and value, one row per head of each model and series."""
    rows = []
    for model, series in values.items():
        for name, v in series.items():
            v = np.asarray(v, dtype=float)
            n_layers = v.shape[0]
            rows += [{"model": model, "series": name, "layer": l + 1, "head": h + 1, "label": head_label(l, h),
                      "depth": (l + 1) / n_layers, "value": float(v[l, h])}
                     for l in range(n_layers) for h in range(v.shape[1])]
    return pd.DataFrame(rows)


def _panel_width(n_models: int) -> int:
    return max(150, (COLUMN_WIDTH - 150) // max(n_models, 1) - 20)


def side_by_side(values: Mapping[str, Mapping[str, np.ndarray]], y_title: str, title: str,
                 reference: float | None = None) -> alt.FacetChart:
    """One panel per model, one point per head and series at its layer's relative depth (jittered per series)."""
    df = heads_frame(values)
    names = list(dict.fromkeys(df["series"]))
    offsets = {n: (i - (len(names) - 1) / 2) * 0.015 for i, n in enumerate(names)}
    df["x"] = df["depth"] + df["series"].map(offsets)
    df["reference"] = reference
    points = alt.Chart().mark_circle(size=28, opacity=0.7).encode(
        x=alt.X("x:Q", title=DEPTH, scale=alt.Scale(domain=[0, 1.05])),
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("series:N", title=None, sort=names),
        tooltip=["model:N", alt.Tooltip("label:N", title="head"), "series:N", alt.Tooltip("value:Q", format=".3f")])
    layers = [points] if reference is None else [
        alt.Chart().mark_rule(strokeDash=[4, 4], color="gray").encode(y="mean(reference):Q"), points]
    return alt.layer(*layers, data=df).properties(width=_panel_width(len(values)), height=200).facet(
        column=alt.Column("model:N", title=None, sort=list(values))).properties(title=title)


def relative_position_chart(stats: Mapping[str, Mapping[str, np.ndarray]]) -> alt.FacetChart:
    """Attention to the previous, current and next token of every head, each model beside the others (Clark §3.1)."""
    return side_by_side({m: {"previous": s["prev"], "current": s["self"], "next": s["next"]} for m, s in stats.items()},
                        "avg. attention", "Attention to the previous, current and next token", reference=0.5)


def special_tokens_chart(stats: Mapping[str, Mapping[str, np.ndarray]],
                         names: Mapping[str, Mapping[str, str]]) -> alt.FacetChart:
    """Attention to the start token, the separator and ". or ," of every head (Clark §3.2), each model's panel
    naming its own tokens (``names[model]``: :func:`attnbook.engine.inputs.role_names`)."""
    return side_by_side({f"{m} ({names[m]['[CLS]']}, {names[m]['[SEP]']})":
                         {"[CLS] (start)": s["cls"], "[SEP] (separator)": s["sep"], ". or ,": s["punct"]}
                         for m, s in stats.items()}, "avg. attention", "Attention to special tokens and punctuation")


def entropy_chart(stats: Mapping[str, Mapping[str, Any]]) -> alt.LayerChart:
    """Mean attention entropy of each layer's heads (nats) at the layer's relative depth, one line per model, and
    each model's entropy of uniform attention over its segments, dashed (Clark §3.3)."""
    rows = []
    for m, s in stats.items():
        means = np.asarray(s["entropy"], dtype=float).mean(1)
        rows += [{"model": m, "depth": (l + 1) / len(means), "layer": l + 1, "entropy": float(v),
                  "what": "mean over the layer's heads"} for l, v in enumerate(means)]
        rows += [{"model": m, "depth": d, "layer": None, "entropy": float(s["uniform_entropy"]),
                  "what": "uniform attention"} for d in (0.0, 1.0)]
    df = pd.DataFrame(rows)
    return alt.Chart(df).mark_line(point=True).encode(
        x=alt.X("depth:Q", title=DEPTH, scale=alt.Scale(domain=[0, 1.05])),
        y=alt.Y("entropy:Q", title="avg. attention entropy (nats)"),
        color=alt.Color("model:N", title=None, sort=list(stats)),
        strokeDash=alt.StrokeDash("what:N", title=None, legend=alt.Legend(symbolType="stroke")),
        detail="what:N",
        tooltip=["model:N", "layer:Q", "what:N", alt.Tooltip("entropy:Q", format=".3f")],
    ).properties(width=COLUMN_WIDTH - 260, height=220, title="Entropy by layer, at relative depth")


def dependency_frame(best: Mapping[str, Mapping[str, tuple[int, int]]], n_layers: Mapping[str, int],
                     paper: Mapping[str, tuple[int, int]], order: Sequence[str]) -> pd.DataFrame:
    """Each relation's best head per model (``best[model][relation]``, 0-based ``(layer, head)``) and the paper's
    (bert-base, 12 layers), with its relative depth; relations in ``order``."""
    rows = [{"model": PAPER, "relation": r, "head": head_label(*paper[r]), "depth": (paper[r][0] + 1) / 12}
            for r in order if r in paper]
    for m, heads in best.items():
        rows += [{"model": m, "relation": r, "head": head_label(*heads[r]), "depth": (heads[r][0] + 1) / n_layers[m]}
                 for r in order if r in heads]
    return pd.DataFrame(rows)


def dependency_depth_chart(frame: pd.DataFrame) -> alt.Chart:
    """The relative depth of each relation's best head (Clark §4.2, Table 1): the paper's and each model's."""
    order = list(dict.fromkeys(frame["relation"]))
    return alt.Chart(frame).mark_point(size=70, filled=True, opacity=0.8).encode(
        x=alt.X("depth:Q", title=DEPTH, scale=alt.Scale(domain=[0, 1.05])),
        y=alt.Y("relation:N", title=None, sort=order),
        color=alt.Color("model:N", title=None, sort=list(dict.fromkeys(frame["model"]))),
        shape=alt.Shape("model:N", title=None, sort=list(dict.fromkeys(frame["model"]))),
        tooltip=["model:N", "relation:N", "head:N", alt.Tooltip("depth:Q", format=".2f")],
    ).properties(width=COLUMN_WIDTH - 300, height=18 * len(order),
                 title="Where each relation's best head sits, at relative depth")


def relative_depth(joint: Mapping[str, Any]) -> np.ndarray:
    """Every head's relative depth in :func:`attnbook.atlas.encoders.joint_distances`' arrays."""
    return np.asarray(joint["layer"], dtype=float) / np.asarray(joint["n_layers"], dtype=float)


def joint_mds_chart(joint: Mapping[str, Any], coords: np.ndarray, labels: Mapping[str, str]) -> alt.Chart:
    """Every model's heads in one MDS picture of their Jensen-Shannon divergences (Clark Fig. 6 across models):
    colour by relative depth, shape by model (``labels``: model name -> label)."""
    df = pd.DataFrame({"model": [labels[m] for m in joint["model"]], "head": joint["label"],
                       "layer": joint["layer"], "depth": relative_depth(joint),
                       "x": np.asarray(coords)[:, 0], "y": np.asarray(coords)[:, 1]})
    return alt.Chart(df).mark_point(size=60, filled=True, opacity=0.85).encode(
        x=alt.X("x:Q", title="MDS 1", axis=alt.Axis(labels=False)),
        y=alt.Y("y:Q", title="MDS 2", axis=alt.Axis(labels=False)),
        color=alt.Color("depth:Q", title="relative depth", scale=alt.Scale(scheme=LAYER_SCHEME)),
        shape=alt.Shape("model:N", title=None, sort=list(labels.values())),
        tooltip=["model:N", "head:N", "layer:Q", alt.Tooltip("depth:Q", format=".2f")],
    ).properties(width=COLUMN_WIDTH - 220, height=380, title="All models' heads on one map (JS divergence, MDS)")


def sizes_table(sources: Mapping[str, Mapping[str, Mapping[str, Any]]], labels: Mapping[str, str]) -> pd.DataFrame:
    """The sample sizes each model runs with (the source chapters' parameters that set how much data is read)."""
    keys = {SURFACE: ("n_segments", "grad_segments"), PROBING: ("syntax_sentences", "coref_max_docs",
            "probe_train_sentences", "probe_dev_sentences"), CLUSTERING: ("n_segments", "query_fraction"),
            TAXONOMY: ("percentile",)}
    return pd.DataFrame([{"chapter": c[:2], "parameter": k,
                          **{labels[m]: "all" if getattr(src[c], k) is None else f"{getattr(src[c], k):,}" for m, src in sources.items()}}
                         for c, ks in keys.items() for k in ks])


# ---------------------------------------------------------------------------------------------
# figure captions: one sentence each, every number from the run's values
# ---------------------------------------------------------------------------------------------
def positional_caption(stats: Mapping[str, Mapping[str, np.ndarray]], threshold: float = 0.5) -> str:
    """Caption of :func:`relative_position_chart`: each model's heads above ``threshold`` on the previous or next
    token."""
    parts = [f"{m} {int((np.asarray(s['prev']) > threshold).sum())} previous, {int((np.asarray(s['next']) > threshold).sum())} next"
             for m, s in stats.items()]
    return (f"Attention to the previous, current and next token of every head, each model at relative depth; heads "
            f"above the dashed line put more than {threshold:.0%} on one position: {'; '.join(parts)}.")


def special_tokens_caption(stats: Mapping[str, Mapping[str, np.ndarray]],
                           names: Mapping[str, Mapping[str, str]]) -> str:
    """Caption of :func:`special_tokens_chart`: each model's mean attention to its start and separator tokens."""
    parts = [f"{m} {float(np.mean(s['cls'])):.0%} to {names[m]['[CLS]']}, {float(np.mean(s['sep'])):.0%} to "
             f"{names[m]['[SEP]']}" for m, s in stats.items()]
    return (f"Attention to the start token, the separator and . or , of every head, each model at relative depth; "
            f"what the average head gives them: {'; '.join(parts)}. The token a model piles its attention on, its "
            f"sink, need not be the same in every model.")


def entropy_caption(stats: Mapping[str, Mapping[str, Any]]) -> str:
    """Caption of :func:`entropy_chart`: each model's broadest layer."""
    parts = []
    for m, s in stats.items():
        means = np.asarray(s["entropy"], dtype=float).mean(1)
        parts.append(f"{m} layer {int(np.argmax(means)) + 1} of {len(means)} ({float(means.max()):.2f} nats, uniform "
                     f"{float(s['uniform_entropy']):.2f})")
    return (f"Mean attention entropy of each layer's heads at relative depth, uniform attention dashed; the broadest "
            f"layer: {'; '.join(parts)}. Clark et al. find broad heads mostly in bert-base's lower layers.")


def dependency_caption(frame: pd.DataFrame) -> str:
    """Caption of :func:`dependency_depth_chart`: each model's mean relative depth of its best heads."""
    means = frame.groupby("model", sort=False)["depth"].mean()
    return (f"Where each model's best head for each relation of Clark et al.'s Table 1 sits, at relative depth, beside "
            f"the paper's bert-base head; mean depth: {'; '.join(f'{m} {d:.2f}' for m, d in means.items())}.")


def joint_caption(joint: Mapping[str, Any], stress1: float) -> str:
    """Caption of :func:`joint_mds_chart`."""
    return (f"All {len(joint['model'])} heads of the models on one MDS map of their word-level attention over "
            f"{joint['n_sentences']} sentences (stress-1 {stress1:.2f}): heads that attend alike land together, "
            f"whatever their model; the colour is the head's relative depth.")
