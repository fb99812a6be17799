"""Every chart of the Clark et al. study (chapters 1-3): example heads, parsers, probes, clusters (§3-6).

Pure drawing over the results of the measurement modules of :mod:`attnbook.studies.clark`;
labels are 1-based ``layer-head`` as everywhere in the book. Generic per-head charts
(heatmaps, layer scatters, line views) are :mod:`attnbook.charts`'.
"""
from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from attnbook.charts import COLUMN_WIDTH, head_heatmap, layer_scatter, line_view
from attnbook.core.errors import EmptyDataError
from attnbook.core.heads import all_head_labels, head_label, relative_layers
from attnbook.studies.clark.clusters import BROAD, NO_BEHAVIOUR, Clustering, primary_behaviour
from attnbook.studies.clark.paper.claims import SURFACE
from attnbook.studies.clark.surface import sink_token


# ---------------------------------------------------------------------------------------------
# §3 surface patterns
# ---------------------------------------------------------------------------------------------


def sink_self_chart(stats: dict[str, np.ndarray], names: dict[str, str] | None = None) -> alt.Chart:
    """Clark Fig. 2 (bottom) drawn for the token the §3.2 row tests: the model's sink token
    (:func:`attnbook.studies.clark.surface.sink_token`; [SEP] in bert-base, [CLS] in a model that parks its attention
    there), one point per head: the attention the sink token keeps on itself beside the attention other tokens give
    it ([SEP]: from the other tokens; [CLS]: from all tokens, [CLS] among them, the statistic measured). The title
    says which token is drawn and why. ``names`` maps "[CLS]" / "[SEP]" to the model's own spelling of the token."""
    sink = sink_token(stats)
    token = "[SEP]" if sink == "sep" else "[CLS]"
    shown = (names or {}).get(token, token)
    if sink == "sep":
        series = {f"{shown} -> {shown}": stats["sep_sep"], f"other -> {shown}": stats["rest_sep"]}
        subtitle = "The model's sink token is [SEP], as in bert-base: the token the [SEP]->[SEP] row tests."
    else:
        series = {f"{shown} -> {shown}": stats["cls_cls"], f"all -> {shown}": stats["cls"]}
        subtitle = ["The model's sink token is [CLS], not bert-base's [SEP]:",
                    "the paper's [SEP]->[SEP] claim is tested on [CLS]->[CLS], so that is what is drawn."]
    chart = layer_scatter(series, y_title="avg. attention",
                          title=f"Attention to {token} from {token} and from other tokens (Clark Fig. 2, bottom)",
                          reference=SURFACE["sep_sep_share"],
                          reference_label=f"paper: [SEP]->[SEP] > {SURFACE['sep_sep_share']:.0%} (Clark §3.2)")
    return chart.properties(title=alt.TitleParams(
        f"Attention to {token} from {token} and from other tokens (Clark Fig. 2, bottom)", subtitle=subtitle))


def special_tokens_chart(stats: dict[str, np.ndarray], names: dict[str, str] | None = None) -> alt.LayerChart:
    """Clark Fig. 2 (top): every head's attention to ``[CLS]``, ``[SEP]`` and ". or ,", by layer (``names``: the model's
    own spelling of the two tokens), with the paper's value marked: in bert-base, over half of the attention of
    layers 6-10 goes to ``[SEP]`` (§3.2), drawn as a red segment at one half over the same layers at relative
    depth (:func:`attnbook.core.heads.relative_layers`)."""
    names = dict(names or {})
    cls, sep = names.get("[CLS]", "[CLS]"), names.get("[SEP]", "[SEP]")
    layers = relative_layers(SURFACE["sep_majority_layers"], stats["sep"].shape[0], SURFACE["n_layers"])
    paper = SURFACE["sep_majority_layers"]
    mark = pd.DataFrame({"x": [min(layers) - 0.45], "x2": [max(layers) + 0.45], "y": [0.5],
                         "what": [f"paper: {sep} over half, layers {paper[0]}-{paper[-1]} of {SURFACE['n_layers']}"]})
    segment = alt.Chart(mark).mark_rule(color="firebrick", strokeDash=[5, 3], size=2).encode(
        x="x:Q", x2="x2:Q", y="y:Q", tooltip=["what:N"])
    label = alt.Chart(mark).mark_text(align="left", baseline="bottom", dy=-3, fontSize=10, color="firebrick").encode(
        x="x:Q", y="y:Q", text="what:N")
    return layer_scatter({cls: stats["cls"], sep: stats["sep"], ". or ,": stats["punct"]}, y_title="avg. attention",
                         title="Attention to special tokens and punctuation, by head (Clark Fig. 2, top)",
                         marks=[segment, label])


def example_heads_chart(tokens: Sequence[str], maps: np.ndarray, picks: dict[str, tuple[int, int]],
                        threshold: float = 0.05, width: int = 170):
    """Clark Fig. 1: one line view per example head (``picks``: kind -> 0-based ``(layer, head)``), two per row.

    ``maps[layer, head, query, key]`` are one segment's maps over ``tokens``.
    """
    views = [line_view(tokens, maps, title=f"{kind}: head {head_label(*lh)}", layer_head=lh, threshold=threshold,
                       width=width, interactive=False)
             for kind, lh in picks.items()]
    if not views:
        raise EmptyDataError("no example heads to draw")
    rows = [alt.hconcat(*views[i:i + 2]) for i in range(0, len(views), 2)]
    return rows[0] if len(rows) == 1 else alt.vconcat(*rows)


# ---------------------------------------------------------------------------------------------
# §4.2 heads as parsers, §5 probes
# ---------------------------------------------------------------------------------------------
#: relations whose heads chapter 2 draws (Clark Fig. 5's det, dobj, pobj, poss)
DRAWN_RELATIONS = ("det", "dobj", "pobj", "poss")


def relation_heatmaps(acc, relations: Sequence[str], cell: int = 18) -> alt.HConcatChart:
    """Layer x head heatmaps of each head's accuracy (%) at ``relations``, one panel per relation.

    ``acc`` is a :class:`attnbook.studies.clark.syntax.HeadAccuracy`; each panel shows the direction of that
    relation's best head (Clark §4.2 evaluates both and reports the better one). The panels share one colour scale,
    so a dark cell means the same accuracy in every panel.
    """
    panels = []
    for rel in relations:
        _, _, direction, _ = acc.best(rel)
        values = 100 * acc.for_relation(rel, direction)
        panels.append(head_heatmap(values, title=f"{rel} ({direction})", value_title="accuracy %",
                                   fmt=".1f", cell=cell))
    if not panels:
        raise EmptyDataError("no relations to draw")
    return alt.hconcat(*panels).resolve_scale(color="shared")


def drawn_relations(acc, relations: Sequence[str] = DRAWN_RELATIONS) -> list[str]:
    """The ``relations`` that have edges in ``acc`` (a relation without edges has no best head to draw)."""
    return [r for r in relations if acc.total[acc.relations.index(r)] > 0]


def relation_heatmap_grid(acc, relations: Sequence[str] = DRAWN_RELATIONS, cell: int = 18):
    """:func:`relation_heatmaps` of the ``relations`` with edges, two per row."""
    drawn = drawn_relations(acc, relations)
    if len(drawn) > 2:
        return relation_heatmaps(acc, drawn[:2], cell) & relation_heatmaps(acc, drawn[2:], cell)
    return relation_heatmaps(acc, drawn, cell)


def best_head_views(acc, example, relations: Sequence[str] = DRAWN_RELATIONS, threshold: float = 0.1,
                    width: int = 150) -> alt.VConcatChart:
    """Clark Fig. 5: each relation's best head on one sentence, two line views per row.

    ``example`` is a :class:`attnbook.studies.clark.wordmaps.WordMapExample`; each title gives the
    head, its direction and its accuracy. ``[CLS]`` and ``[SEP]`` are left out and each word's attention is
    renormalised over the other words (:func:`words_only`), as the heads' predictions never pick them (Clark
    footnote 2): otherwise most lines of a sink-heavy model go to ``[CLS]`` and hide the relation's edge.
    """
    views = []
    for rel in drawn_relations(acc, relations):
        layer, head, direction, a = acc.best(rel)
        views.append(line_view(example.labels[1:-1], words_only(example.word_maps[layer, head]),
                               title=f"{rel}: head {head_label(layer, head)} ({direction}, {100 * a:.0f}%)",
                               threshold=threshold, width=width, interactive=False))
    rows = [views[i:i + 2] for i in range(0, len(views), 2)]
    return alt.vconcat(*[alt.hconcat(*r) for r in rows])


def words_only(word_map: np.ndarray) -> np.ndarray:
    """One head's word map ``[word, word]`` over ``[CLS], words..., [SEP]`` without its first and last rows and
    columns, each row renormalised to sum to 1 over the words (a row with no weight on words stays 0)."""
    inner = np.asarray(word_map, dtype=float)[1:-1, 1:-1]
    total = inner.sum(-1, keepdims=True)
    return np.divide(inner, total, out=np.zeros_like(inner), where=total > 0)


#: the legend title of each weight column of the attention-only probe
WEIGHT_TITLES = {"w_head_to_dep": "weight w", "u_dep_to_head": "weight u"}


def probe_weight_heatmap(weights: pd.DataFrame, column: str = "weight", title: str = "") -> alt.Chart:
    """Layer x head heatmap of an :func:`attnbook.studies.clark.probes.attention_weights_table` column."""
    n_layers, n_heads = int(weights["layer"].max()), int(weights["head"].max())
    values = np.zeros((n_layers, n_heads))
    values[weights["layer"].to_numpy() - 1, weights["head"].to_numpy() - 1] = weights[column].to_numpy()
    return head_heatmap(values, title=title, value_title=WEIGHT_TITLES.get(column, column), scheme="redblue",
                        domain_mid=0.0, fmt=".3f")


def probe_weight_heatmaps(weights: pd.DataFrame) -> alt.HConcatChart:
    """The attention-only probe's two weights per head side by side (``w``: head -> dependent, ``u``: back)."""
    return (probe_weight_heatmap(weights, "w_head_to_dep", "w: candidate head → dependent")
            | probe_weight_heatmap(weights, "u_dep_to_head", "u: dependent → candidate head"))


def loss_curves(losses: dict[str, Sequence[float]], names: dict[str, str] | None = None,
                width: int = 360, height: int = 200) -> alt.Chart:
    """Per-epoch mean training loss (nats) of each probe; ``names`` maps keys to legend labels."""
    rows = [{"probe": (names or {}).get(k, k), "epoch": e + 1, "loss": float(v)}
            for k, vals in losses.items() for e, v in enumerate(vals)]
    if not rows:
        raise EmptyDataError("no training losses to draw")
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_line(point=True)
        .encode(x=alt.X("epoch:O"), y=alt.Y("loss:Q", title="training loss (nats)"), color="probe:N",
                tooltip=["probe:N", "epoch:O", alt.Tooltip("loss:Q", format=".3f")])
        .properties(width=width, height=height, title="Probe training loss per epoch")
    )


# ---------------------------------------------------------------------------------------------
# §6 clusters
# ---------------------------------------------------------------------------------------------
#: a fixed colour per (primary) behaviour, in legend order
BEHAVIOUR_COLOURS = {
    "syntactic head": "#d62728", "attends to previous": "#ff7f0e", "attends to next": "#1f77b4",
    "attends to itself": "#8c564b", "attends to . or ,": "#e377c2", BROAD: "#9467bd",
    "attends to [CLS]": "#2ca02c", "attends to [SEP]": "#bcbd22", NO_BEHAVIOUR: "#c7c7c7",
}


def embedding_frame(
    coords: np.ndarray,
    n_layers: int,
    n_heads: int,
    behaviours: list[list[str]] | None = None,
    clusters: np.ndarray | None = None,
):
    """One row per head: label, layer, head (1-based), x, y, behaviours, primary behaviour (and cluster, if given)."""
    coords = np.asarray(coords)
    n = n_layers * n_heads
    if coords.shape != (n, 2):
        raise ValueError(f"expected coords[{n}, 2], got {coords.shape}")
    behaviours = behaviours or [[] for _ in range(n)]
    primary = primary_behaviour(behaviours)
    rows = []
    for k in range(n):
        layer, head = divmod(k, n_heads)
        rows.append({
            "label": head_label(layer, head), "layer": layer + 1, "head": head + 1,
            "x": float(coords[k, 0]), "y": float(coords[k, 1]),
            "behaviours": ", ".join(behaviours[k]) if behaviours[k] else "-",
            "behaviour": primary[k],
        })
        if clusters is not None:
            rows[-1]["cluster"] = int(clusters[k])
    return pd.DataFrame(rows)


def _tooltip(frame):

    tips = [alt.Tooltip("label:N", title="head"), alt.Tooltip("layer:O"), alt.Tooltip("behaviours:N")]
    if "cluster" in frame.columns:
        tips.append(alt.Tooltip("cluster:O"))
    return tips


def mds_layer_chart(frame, title: str = "", size: int = 380):
    """Clark Fig. 6 style: heads in the MDS plane, coloured by layer, labelled on hover."""
    n_layers = int(frame["layer"].max())
    return (
        alt.Chart(frame)
        .mark_circle(size=70, opacity=0.85, stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("x:Q", title="MDS 1", axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("y:Q", title="MDS 2", axis=alt.Axis(labels=False, ticks=False)),
            color=alt.Color("layer:O", title="layer", scale=alt.Scale(scheme="viridis"),
                            sort=list(range(1, n_layers + 1))),
            tooltip=_tooltip(frame),
        )
        .properties(title=title, width=size, height=size)
    )


def mds_behaviour_chart(frame, title: str = "", size: int = 380):
    """Heads in the MDS plane coloured by their (primary) behaviour; grey heads have none; layer as text."""
    present = set(frame["behaviour"])
    domain = [n for n in BEHAVIOUR_COLOURS if n in present] + sorted(present - set(BEHAVIOUR_COLOURS))
    colours = [BEHAVIOUR_COLOURS.get(n, "#17becf") for n in domain]
    base = alt.Chart(frame).encode(
        x=alt.X("x:Q", title="MDS 1", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("y:Q", title="MDS 2", axis=alt.Axis(labels=False, ticks=False)),
    )
    points = base.mark_circle(size=90, opacity=0.85).encode(
        color=alt.Color("behaviour:N", title="behaviour", scale=alt.Scale(domain=domain, range=colours)),
        tooltip=_tooltip(frame),
    )
    text = base.mark_text(fontSize=7, color="black").encode(text="layer:O", tooltip=_tooltip(frame))
    return (points + text).properties(title=title, width=size, height=size)


#: the height (px) of one head's row in the sideways dendrogram
LEAF_ROW = 11


def dendrogram_frames(clustering: Clustering, n_layers: int, n_heads: int):
    """Segments and leaves of the clustering's dendrogram (scipy's layout) as two DataFrames."""
    from scipy.cluster.hierarchy import dendrogram

    names = all_head_labels(n_layers, n_heads)
    tree = dendrogram(clustering.linkage, no_plot=True, labels=names)
    segs = []
    for xs, ys in zip(tree["icoord"], tree["dcoord"]):
        for k in range(3):
            segs.append({"x": xs[k], "x2": xs[k + 1], "y": ys[k], "y2": ys[k + 1]})
    leaves = []
    for pos, leaf in enumerate(tree["leaves"]):
        layer, head = divmod(int(leaf), n_heads)
        leaves.append({"x": 5.0 + 10.0 * pos, "label": names[leaf], "layer": layer + 1,
                       "cluster": int(clustering.labels[leaf])})
    return pd.DataFrame(segs), pd.DataFrame(leaves)


def cut_height(clustering: Clustering) -> float | None:
    """A tree height that cuts the dendrogram into ``clustering.n_clusters`` clusters (midway between merges)."""
    heights = np.sort(clustering.linkage[:, 2])
    k = clustering.n_clusters
    if k <= 1 or k > len(heights):
        return None
    return float((heights[-k] + heights[-k + 1]) / 2)


def dendrogram_chart(clustering: Clustering, n_layers: int, n_heads: int, title: str = "",
                     width: int | None = None, height: int | None = None, cut: float | str | None = "auto"):
    """The average-linkage tree drawn sideways: one row per head, its ``layer-head`` label to the left of its leaf
    (9 px type, a row of :data:`LEAF_ROW` px, so the labels stay legible however many heads there are), leaves
    coloured by cluster, the merge distance running right; ``width`` defaults to the book's column less the labels
    and the legend, ``height`` to one row per head.

    A dashed line marks the cut: ``"auto"`` places it between the merges that give the clusters.
    """

    width = width or COLUMN_WIDTH - 200
    segs, leaves = dendrogram_frames(clustering, n_layers, n_heads)
    height = height or LEAF_ROW * len(leaves)
    y = alt.Y("x:Q", axis=None, scale=alt.Scale(domain=[0, 10 * len(leaves)]))
    tree = alt.Chart(segs).mark_rule(color="#555").encode(
        y=y, y2="x2:Q", x=alt.X("y:Q", title="distance (mean JS, nats)", axis=alt.Axis(orient="top")), x2="y2:Q")
    dots = alt.Chart(leaves).mark_circle(size=40).encode(
        y=y, x=alt.datum(0), color=alt.Color("cluster:N", title="cluster"),
        tooltip=[alt.Tooltip("label:N", title="head"), "layer:O", "cluster:N"])
    labels = alt.Chart(leaves).mark_text(align="right", baseline="middle", dx=-6, fontSize=9, color="#222").encode(
        y=y, x=alt.datum(0), text="label:N")
    chart = tree + dots + labels
    if cut == "auto":
        cut = cut_height(clustering)
    if cut is not None:
        chart = chart + alt.Chart(pd.DataFrame({"y": [cut]})).mark_rule(strokeDash=[4, 4], color="red").encode(x="y:Q")
    return chart.properties(title=title, width=width, height=height)


def cluster_grid_chart(clustering: Clustering, n_layers: int, n_heads: int, behaviours: list[list[str]] | None = None,
                       title: str = "", cell: int = 24):
    """Layer x head grid, each head coloured (and numbered) by its cluster."""
    frame = embedding_frame(np.zeros((n_layers * n_heads, 2)), n_layers, n_heads, behaviours, clustering.labels)
    base = alt.Chart(frame).encode(x=alt.X("head:O", title="head"), y=alt.Y("layer:O", title="layer"))
    rect = base.mark_rect().encode(color=alt.Color("cluster:N", title="cluster"), tooltip=_tooltip(frame))
    text = base.mark_text(fontSize=9).encode(text="cluster:N", tooltip=_tooltip(frame))
    return (rect + text).properties(title=title, width=cell * n_heads, height=cell * n_layers)


def distance_heatmap(distances: np.ndarray, n_layers: int, n_heads: int, title: str = "", cell: int = 5):
    """The head-by-head distance matrix, heads in layer-major order (layer blocks show as squares)."""
    names = all_head_labels(n_layers, n_heads)
    d = np.asarray(distances)
    i, j = np.meshgrid(np.arange(len(names)), np.arange(len(names)), indexing="ij")
    frame = pd.DataFrame({"a": np.array(names)[i.ravel()], "b": np.array(names)[j.ravel()], "js": d.ravel()})
    firsts = [head_label(layer, 0) for layer in range(n_layers)]  # one tick per layer
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("b:N", sort=names, title="head", axis=alt.Axis(values=firsts, labelAngle=0)),
            y=alt.Y("a:N", sort=names, title="head", axis=alt.Axis(values=firsts)),
            color=alt.Color("js:Q", title="mean JS", scale=alt.Scale(scheme="viridis", reverse=True)),
            tooltip=[alt.Tooltip("a:N", title="head"), alt.Tooltip("b:N", title="other"),
                     alt.Tooltip("js:Q", format=".3f")],
        )
        .properties(title=title, width=cell * len(names), height=cell * len(names))
    )


def silhouette_chart(scores: dict[int, float], chosen: int | None = None, title: str = "", width: int = 320,
                     height: int = 160):
    """Silhouette of the average-linkage cut against the number of clusters ``k`` (the chosen k marked)."""
    frame = pd.DataFrame({"k": list(scores), "silhouette": list(scores.values())})
    frame["chosen"] = frame["k"] == chosen
    line = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("k:O", title="clusters k"), y=alt.Y("silhouette:Q", title="mean silhouette"),
        tooltip=["k:O", alt.Tooltip("silhouette:Q", format=".3f")])
    mark = alt.Chart(frame[frame["chosen"]]).mark_point(size=140, color="red", filled=False).encode(
        x="k:O", y="silhouette:Q")
    return (line + mark).properties(title=title, width=width, height=height)


def mlm_curve_chart(curve: Sequence[dict], unigram: float, best_step: int, title: str = "") -> alt.Chart:
    """The fitted MLM head's validation curve (``curve``: ``{"step", "loss", "top1"}`` per evaluation, from
    :class:`attnbook.engine.gradients.MLMHeadFit`): loss and top-1 accuracy by update, the unigram baseline's
    accuracy as a dashed line and the kept (best) step as a rule."""
    if not curve:
        raise EmptyDataError("the MLM head was not fitted here: no curve")
    df = pd.DataFrame(curve)
    base = alt.Chart(df).encode(x=alt.X("step:Q", title="update"))
    tip = [alt.Tooltip("step:Q"), alt.Tooltip("loss:Q", format=".3f"), alt.Tooltip("top1:Q", format=".1%")]
    kept = alt.Chart(pd.DataFrame({"step": [best_step]})).mark_rule(color="gray").encode(x="step:Q")
    loss = (base.mark_line(point=True).encode(y=alt.Y("loss:Q", title="validation loss (nats)",
                                                      scale=alt.Scale(zero=False)), tooltip=tip) + kept)
    uni = alt.Chart(pd.DataFrame({"top1": [unigram], "what": ["unigram baseline"]})).mark_rule(
        strokeDash=[4, 3], color="firebrick").encode(y="top1:Q", tooltip=["what:N", alt.Tooltip("top1:Q", format=".1%")])
    acc = (base.mark_line(point=True).encode(y=alt.Y("top1:Q", title="validation top-1", axis=alt.Axis(format="%")),
                                             tooltip=tip) + uni + kept)
    return alt.hconcat(loss.properties(width=260, height=180), acc.properties(width=260, height=180),
                       title=title or "Fitting the MLM head: validation loss and top-1 by update (gray: kept)")


# ---------------------------------------------------------------------------------------------
# figure captions: one sentence each, every number from the run's values
# ---------------------------------------------------------------------------------------------
def _sink_series(stats: dict[str, np.ndarray], names: dict[str, str] | None = None):
    sink = sink_token(stats)
    token = "[SEP]" if sink == "sep" else "[CLS]"
    shown = (names or {}).get(token, token)
    if sink == "sep":
        return shown, stats["sep_sep"], stats["rest_sep"], "from the other tokens"
    return shown, stats["cls_cls"], stats["cls"], "from all tokens"


def sink_self_caption(stats: dict[str, np.ndarray], names: dict[str, str] | None = None) -> str:
    """Caption of :func:`sink_self_chart`: what the sink token keeps on itself against what it gets from others, and
    the paper's share (Clark §3.2)."""
    shown, own, other, whence = _sink_series(stats, names)
    reading = ("it mostly looks at itself rather than gathering a summary of the segment" if np.mean(own) > np.mean(other)
               else "it looks at itself no more than other tokens look at it")
    return (f"The sink token {shown} keeps on average {np.mean(own):.0%} of its own attention on itself, against "
            f"{np.mean(other):.0%} it gets {whence}: {reading}. The dashed line is Clark et al.'s share for [SEP] to "
            f"[SEP] in bert-base, over {SURFACE['sep_sep_share']:.0%} (§3.2).")


def gradient_caption(grads: dict[str, np.ndarray], names: dict[str, str], stats: dict[str, np.ndarray]) -> str:
    """Caption of the gradient figure (Clark Fig. 3): the sink's gradient against other tokens' in the upper half of
    the layers."""
    sink = sink_token(stats)
    token = "[SEP]" if sink == "sep" else "[CLS]"
    upper = slice(grads[f"grad_{sink}"].shape[0] // 2, None)
    ratio = float(np.mean(grads[f"grad_{sink}"][upper]) / max(np.mean(grads["grad_other"][upper]), 1e-30))
    return (f"How much the MLM loss changes with each attention weight, by layer and by the token attended to: in the "
            f"upper half of the layers the gradient to the sink token {names.get(token, token)} is {ratio:.2g} times "
            f"that to other unmasked tokens (Clark et al. Fig. 3: small for [SEP] from layer "
            f"{SURFACE['grad_sep_small_from_layer']} of bert-base on, where attention to it is large).")


def best_heads_text(acc, relations: Sequence[str] = DRAWN_RELATIONS) -> str:
    """``"det 3-4 (dep→head, 71%), ..."``: each drawn relation's best head, direction and accuracy."""
    parts = []
    for rel in drawn_relations(acc, relations):
        layer, head, direction, a = acc.best(rel)
        parts.append(f"{rel} {head_label(layer, head)} ({direction}, {100 * a:.0f}%)")
    return ", ".join(parts)


def top_heads_view(top: pd.DataFrame) -> pd.DataFrame:
    """The probe's most weighted heads (:func:`attnbook.studies.clark.probes.top_heads`) with the columns named for
    a reader."""
    return top.rename(columns={"label": "head", "w_head_to_dep": "w (candidate head → dependent)",
                               "u_dep_to_head": "u (dependent → candidate head)"})


def distance_caption(distances: np.ndarray, n_layers: int, n_heads: int) -> str:
    """Caption of :func:`distance_heatmap`: the mean divergence within a layer against between layers."""
    d = np.asarray(distances, dtype=float)
    layer = np.repeat(np.arange(n_layers), n_heads)
    same = (layer[:, None] == layer[None, :]) & ~np.eye(len(layer), dtype=bool)
    other = layer[:, None] != layer[None, :]
    return (f"Mean Jensen-Shannon divergence between every two heads, in layer order (darker: farther apart); light squares on "
            f"the diagonal would be layers whose heads attend alike. Heads of one layer are {d[same].mean():.3f} "
            f"apart on average, heads of different layers {d[other].mean():.3f}.")


def cluster_layer_caption(clustering: Clustering, n_layers: int, n_heads: int) -> str:
    """Caption of :func:`cluster_grid_chart`: how closely the clusters follow the layers (the share of heads in
    their layer's most common cluster)."""
    labels = np.asarray(clustering.labels).reshape(n_layers, n_heads)
    in_main = sum(int(np.bincount(row).max()) for row in labels)
    return (f"The cluster of every head, by layer and head: clusters that followed the layers would show as "
            f"horizontal bands. {in_main / labels.size:.0%} of the heads are in the cluster most common in their "
            f"layer, with {clustering.n_clusters} clusters.")
