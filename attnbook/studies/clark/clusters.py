"""Which heads go together: the same-layer permutation test, hierarchical clusters, behaviours (Clark et al. §6).

Clark §6 reads two claims off its Figure 6: heads in the same layer are often fairly close, and
there are several clear clusters, often matching the behaviours found earlier in the paper.
Here each claim is a number over the distances of :mod:`attnbook.studies.clark.distances`:

* same layer: :func:`layer_permutation_test` (:func:`attnbook.stats.group_permutation_test` with
  the layers as labels);
* clusters: average-linkage clustering cut into ``k`` clusters, judged by the silhouette
  (:func:`cluster_heads`, :func:`choose_clusters`; :func:`cut_silhouettes` gives every ``k``'s silhouette in one
  pass, for the bootstrap that chooses ``k`` again in every resample);
* behaviours: every head tagged with what chapters 1-2 found for it (:func:`head_behaviours`,
  :func:`syntax_best_heads`) and tested like the layers (:func:`behaviour_test`).

Heads are layer-major (head ``k`` is layer ``k // n_heads``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from attnbook.core.errors import ParameterError
from attnbook.core.heads import all_head_labels, head_label, parse_head_label
from attnbook.stats import GroupTest, group_permutation_test
from attnbook.studies.clark.distances import condensed


# ---------------------------------------------------------------------------------------------
# "Heads in the same layer are close": a permutation test
# ---------------------------------------------------------------------------------------------
def layer_labels(n_layers: int, n_heads: int) -> np.ndarray:
    """1-based layer number of every head, layer-major."""
    return np.repeat(np.arange(1, n_layers + 1), n_heads)


def layer_permutation_test(distances: np.ndarray, n_layers: int, n_heads: int, **kw) -> GroupTest:
    """:func:`group_permutation_test` with every head labelled by its layer (Clark §6's observation)."""
    return group_permutation_test(distances, layer_labels(n_layers, n_heads), **kw)


def group_test_numbers(test: GroupTest) -> dict:
    """A permutation test's numbers for the results file (every field but the per-group means)."""
    return {k: v for k, v in test.__dict__.items() if k != "group_within"}


def layer_test_markdown(test: GroupTest) -> str:
    """The same-layer test in one paragraph (Markdown)."""
    return (
        f"Within a layer: mean JS **{test.within_mean:.3f}**; across layers **{test.between_mean:.3f}** "
        f"(ratio {test.ratio:.2f}). Shuffled labels give a gap of {test.null_mean:.4f} ± "
        f"{test.null_std:.4f} against the observed {test.statistic:.4f}: p = {test.p_value:.4g} "
        f"({test.n_permutations} shuffles). Nearest head in the same layer: {test.nn_same:.0%} of heads "
        f"(chance {test.nn_chance:.0%})."
    )


def within_layer_table(test: GroupTest):
    """Mean JS between the heads of each layer (DataFrame: layer, mean JS within the layer)."""
    import pandas as pd

    return pd.DataFrame({"layer": list(test.group_within),
                         "mean JS within the layer": np.round(list(test.group_within.values()), 3)})


# ---------------------------------------------------------------------------------------------
# Hierarchical clustering
# ---------------------------------------------------------------------------------------------


@dataclass
class Clustering:
    """Average-linkage clustering of the heads and one cut of its tree.

    ``labels[head]`` are cluster numbers 1..k (layer-major heads); ``members`` maps each
    cluster to its heads' 1-based ``layer-head`` labels. ``silhouette`` is the mean
    silhouette of the cut (-1..1; > 0.5 "reasonable", > 0.7 "strong" structure in
    Kaufman & Rousseeuw's reading) and ``cophenetic`` how faithfully the tree keeps the
    distances (Pearson correlation of cophenetic and original distances).
    """

    linkage: np.ndarray
    labels: np.ndarray
    n_clusters: int
    members: dict[int, list[str]]
    silhouette: float
    cophenetic: float
    method: str


def cluster_heads(
    distances: np.ndarray,
    n_layers: int,
    n_heads: int,
    *,
    n_clusters: int | None = None,
    threshold: float | None = None,
    method: str = "average",
) -> Clustering:
    """Cut scipy's hierarchical clustering of the heads into ``n_clusters`` or at distance ``threshold``.

    Exactly one of ``n_clusters`` / ``threshold`` must be given. Clusters are numbered in
    the order their first head appears in the dendrogram (left to right).
    """
    from scipy.cluster.hierarchy import cophenet, fcluster, leaves_list, linkage

    if (n_clusters is None) == (threshold is None):
        raise ParameterError("give exactly one of n_clusters or threshold")
    d = np.asarray(distances, dtype=np.float64)
    cond = condensed(d)
    n = d.shape[0]
    if n != n_layers * n_heads:
        raise ValueError(f"{n} heads in the distance matrix but {n_layers} x {n_heads} = {n_layers * n_heads} expected")
    if n_clusters is not None and not 1 <= n_clusters <= n:
        raise ParameterError(f"n_clusters must be between 1 and {n}, got {n_clusters}")
    z = linkage(cond, method=method)
    raw = fcluster(z, n_clusters, "maxclust") if n_clusters is not None else fcluster(z, threshold, "distance")
    order: dict[int, int] = {}
    for leaf in leaves_list(z):
        order.setdefault(int(raw[leaf]), len(order) + 1)
    labels = np.array([order[int(c)] for c in raw])
    names = all_head_labels(n_layers, n_heads)
    members = {c: [names[i] for i in np.flatnonzero(labels == c)] for c in range(1, len(order) + 1)}
    return Clustering(
        linkage=z, labels=labels, n_clusters=len(order), members=members,
        silhouette=silhouette(d, labels), cophenetic=float(cophenet(z, cond)[0]), method=method,
    )


def silhouette(distances: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of a labelling on precomputed distances (NaN for 1 or n clusters)."""
    from sklearn.metrics import silhouette_score

    k = len(np.unique(labels))
    if k < 2 or k >= len(labels):
        return float("nan")
    return float(silhouette_score(np.asarray(distances, float), labels, metric="precomputed"))


def cut_silhouettes(distances: np.ndarray, ks: Sequence[int],
                    method: str = "average") -> dict[int, tuple[float, np.ndarray]]:
    """For each ``k``: the mean silhouette of the average-linkage cut into ``k`` clusters and its cluster sizes, the
    tree built once (what :func:`silhouette_by_k` and :func:`cluster_heads` compute, in one pass: the bootstrap of
    chapter 3 chooses ``k`` again in every resample). The silhouette is scikit-learn's on precomputed distances (a head
    alone in its cluster scores 0; NaN for fewer than 2 or as many clusters as heads)."""
    from scipy.cluster.hierarchy import fcluster, linkage

    d = np.asarray(distances, dtype=np.float64)
    n = d.shape[0]
    z = linkage(condensed(d), method=method)
    out = {}
    for k in ks:
        _, labels = np.unique(fcluster(z, int(k), "maxclust"), return_inverse=True)
        sizes = np.bincount(labels)
        if not 2 <= len(sizes) < n:
            out[int(k)] = (float("nan"), sizes)
            continue
        onehot = np.zeros((n, len(sizes)))
        onehot[np.arange(n), labels] = 1.0
        sums = d @ onehot  # [head, cluster]: summed distance to each cluster
        own = sizes[labels]
        with np.errstate(invalid="ignore", divide="ignore"):
            a = sums[np.arange(n), labels] / (own - 1)
            mean_other = np.where(onehot > 0, np.inf, sums / sizes)
            b = mean_other.min(1)
            s = np.where(own > 1, (b - a) / np.maximum(a, b), 0.0)
        out[int(k)] = (float(np.mean(np.nan_to_num(s))), sizes)
    return out


def silhouette_by_k(distances: np.ndarray, n_layers: int, n_heads: int, ks: Sequence[int] = range(2, 13),
                    method: str = "average") -> dict[int, float]:
    """Silhouette of the average-linkage cut into ``k`` clusters, for each ``k`` (choose k where it peaks)."""
    out = {}
    for k in ks:
        c = cluster_heads(distances, n_layers, n_heads, n_clusters=int(k), method=method)
        out[int(k)] = c.silhouette
    return out


def best_k(scores: dict[int, float]) -> int:
    """The ``k`` with the highest silhouette (the smallest such ``k`` on ties)."""
    valid = {k: v for k, v in scores.items() if not math.isnan(v)}
    if not valid:
        raise ValueError("no valid silhouette scores")
    top = max(valid.values())
    return min(k for k, v in valid.items() if v >= top - 1e-12)


def choose_clusters(distances: np.ndarray, n_layers: int, n_heads: int, *, n_clusters: int | str = "auto",
                    k_range: Sequence[int] = (3, 12)) -> tuple[Clustering, dict[int, float]]:
    """The cut of the average-linkage tree the chapter shows, and the silhouette of every ``k`` in ``k_range``.

    ``n_clusters="auto"`` takes :func:`best_k` over ``k_range = [smallest, largest]`` (both included);
    a number fixes the cut.
    """
    k_lo, k_hi = k_range
    scores = silhouette_by_k(distances, n_layers, n_heads, ks=range(k_lo, k_hi + 1))
    k = best_k(scores) if n_clusters == "auto" else int(n_clusters)
    return cluster_heads(distances, n_layers, n_heads, n_clusters=k), scores


def cluster_numbers(clustering: Clustering, scores: dict[int, float]) -> dict:
    """The key numbers of a cut: silhouette by ``k``, the clusters' members, and the cut's quality."""
    return {
        "silhouette_by_k": {str(k): v for k, v in scores.items()},
        "clusters": {str(c): m for c, m in clustering.members.items()},
        "cluster_quality": {"k": clustering.n_clusters, "silhouette": clustering.silhouette,
                            "cophenetic": clustering.cophenetic},
    }


def describe(clustering: Clustering) -> str:
    """One sentence on the cut (Markdown)."""
    return (f"Cut into **{clustering.n_clusters}** clusters: silhouette **{clustering.silhouette:.3f}**; the tree "
            f"keeps the distances with cophenetic correlation {clustering.cophenetic:.2f}.")


# ---------------------------------------------------------------------------------------------
# Behaviours from chapters 1-2
# ---------------------------------------------------------------------------------------------

#: behaviour name -> (chapter-1 statistic, threshold on its per-head mean). "More than half of the
#: head's attention" follows Clark §3.1 (prev/next) and Fig. 2 / §3.2 ([CLS], [SEP], ". or ,").
BEHAVIOUR_RULES: dict[str, tuple[str, float]] = {
    "attends to previous": ("prev", 0.5),
    "attends to next": ("next", 0.5),
    "attends to itself": ("self", 0.5),
    "attends to . or ,": ("punct", 0.5),
    "attends to [CLS]": ("cls", 0.5),
    "attends to [SEP]": ("sep", 0.5),
}
BROAD = "attends broadly"
NO_BEHAVIOUR = "no behaviour found"
#: which behaviour colours a head that has several (most specific first)
PRIORITY = (
    "syntax", "attends to previous", "attends to next", "attends to itself", "attends to . or ,",
    BROAD, "attends to [CLS]", "attends to [SEP]",
)


def head_behaviours(
    per_head_stats: dict[str, np.ndarray],
    syntax_best: dict[str, str] | None = None,
    *,
    rules: dict[str, tuple[str, float]] | None = None,
    threshold: float | None = None,
    broad_quantile: float = 0.75,
) -> list[list[str]]:
    """Every head's behaviours (layer-major list of lists of names), from chapters 1-2.

    * ``attends to previous`` / ``next`` / ``itself`` / ``. or ,`` / ``[CLS]`` / ``[SEP]``: the
      head's average attention to that token (chapter 1, Clark §3.1-3.2) exceeds the rule's
      threshold (:data:`BEHAVIOUR_RULES`: more than half of its attention);
    * ``attends broadly``: the head's mean attention entropy (``entropy``, Clark §3.3) is at or
      above the ``broad_quantile`` quantile of all heads (default: the top quartile);
    * ``syntax: <relation>``: the head is chapter 2's best head for that relation
      (``syntax_best`` maps relation -> 1-based ``layer-head`` label, Clark §4.2).

    ``threshold`` replaces every rule's threshold (e.g. ``0.3`` for "more than 30%").
    ``per_head_stats`` maps statistic names to ``values[layer, head]`` (chapter 1's
    :func:`attnbook.studies.clark.surface.surface_statistics`; nested lists work too). A statistic a
    rule needs but that is missing raises :class:`ParameterError` naming chapter 1.
    """
    rules = BEHAVIOUR_RULES if rules is None else rules
    if threshold is not None:
        if not 0.0 <= threshold <= 1.0:
            raise ParameterError(f"threshold must be a share of attention in [0, 1], got {threshold}")
        rules = {name: (stat, float(threshold)) for name, (stat, _) in rules.items()}
    needed = {stat for stat, _ in rules.values()} | {"entropy"}
    missing = sorted(needed - set(per_head_stats))
    if missing:
        raise ParameterError(
            f"per-head statistics {missing} are missing (have: {sorted(per_head_stats)}); they are chapter 1's "
            "attnbook.studies.clark.surface.surface_statistics (chapter 01_clark_surface_patterns)"
        )
    stats = {k: np.asarray(per_head_stats[k], dtype=np.float64) for k in needed}
    shape = stats["entropy"].shape
    if len(shape) != 2 or any(v.shape != shape for v in stats.values()):
        raise ValueError(f"per-head statistics must all be values[layer, head]; got shapes "
                         f"{ {k: v.shape for k, v in stats.items()} }")
    if not 0.0 <= broad_quantile <= 1.0:
        raise ParameterError(f"broad_quantile must be in [0, 1], got {broad_quantile}")
    n_layers, n_heads = shape
    out: list[list[str]] = [[] for _ in range(n_layers * n_heads)]
    cut = np.quantile(stats["entropy"], broad_quantile)
    for layer in range(n_layers):
        for head in range(n_heads):
            tags = out[layer * n_heads + head]
            for name, (stat, threshold) in rules.items():
                if stats[stat][layer, head] > threshold:
                    tags.append(name)
            if stats["entropy"][layer, head] >= cut:
                tags.append(BROAD)
    for relation, label in sorted((syntax_best or {}).items()):
        layer, head = parse_head_label(label)
        if layer >= n_layers or head >= n_heads:
            raise ParameterError(f"syntax head {label} for {relation!r} is outside a {n_layers}x{n_heads} model")
        out[layer * n_heads + head].append(f"syntax: {relation}")
    return out


def primary_behaviour(behaviours: list[list[str]]) -> list[str]:
    """One behaviour per head for colouring: the first in :data:`PRIORITY` order, else ``no behaviour found``."""
    out = []
    for tags in behaviours:
        pick = NO_BEHAVIOUR
        for name in PRIORITY:
            hit = [t for t in tags if t == name or (name == "syntax" and t.startswith("syntax: "))]
            if hit:
                pick = "syntactic head" if name == "syntax" else name
                break
        out.append(pick)
    return out


def syntax_best_heads(accuracy, margin: float = 0.0, skip: Sequence[str] = ("All",)) -> dict[str, str]:
    """Chapter 2's best head per dependency relation (Clark §4.2, Table 1), as relation -> ``layer-head``.

    ``accuracy`` is an :class:`attnbook.studies.clark.syntax.HeadAccuracy`. A relation's best head counts as a
    syntactic head only when it beats the relation's best fixed-offset baseline by more than
    ``margin`` (a fraction: ``0.05`` = 5 points); ``skip`` leaves out pooled rows such as "All".
    """
    out = {}
    for rel in accuracy.relations:
        if rel in skip or accuracy.total[accuracy._rel(rel)] == 0:
            continue
        layer, head, _, acc = accuracy.best(rel)
        _, base = accuracy.baseline(rel)
        if acc - base > margin:
            out[rel] = head_label(layer, head)
    return out


def behaviour_test(distances: np.ndarray, behaviours: list[list[str]], *, n_permutations: int = 10000,
                   seed: int = 0, exclude: Sequence[str] = (BROAD,)) -> GroupTest | None:
    """Permutation test of "heads with the same behaviour are close", on the heads that have one.

    Heads are labelled by :func:`primary_behaviour`; heads without a behaviour, and heads whose primary behaviour is
    in ``exclude``, are left out. By default that is :data:`BROAD`: two near-uniform distributions are close by
    construction, so broad heads would make "same behaviour, close together" hold by definition.
    ``None`` when no behaviour is shared by two heads or only one behaviour occurs (nothing to test).
    """
    primary = np.array(primary_behaviour(behaviours))
    keep = np.flatnonzero((primary != NO_BEHAVIOUR) & ~np.isin(primary, list(exclude)))
    labels = primary[keep]
    _, counts = np.unique(labels, return_counts=True)
    if len(counts) < 2 or counts.max() < 2:
        return None
    d = np.asarray(distances, dtype=np.float64)[np.ix_(keep, keep)]
    return group_permutation_test(d, labels, n_permutations=n_permutations, seed=seed)


def behaviour_cluster_table(clusters: Clustering, behaviours: list[list[str]]):
    """Cross-table: for every cluster, its size, layers, and how many of its heads show each behaviour."""
    import pandas as pd

    primary = primary_behaviour(behaviours)
    if len(primary) != len(clusters.labels):
        raise ValueError(f"{len(primary)} heads with behaviours but {len(clusters.labels)} clustered")
    rows = []
    for c, members in clusters.members.items():
        idx = [k for k in range(len(primary)) if clusters.labels[k] == c]
        layers = sorted({int(m.split("-")[0]) for m in members})
        row: dict[str, Any] = {"cluster": c, "heads": len(members), "layers": ", ".join(map(str, layers))}
        for name in sorted(set(primary)):
            row[name] = sum(1 for k in idx if primary[k] == name)
        row["members"] = " ".join(members)
        rows.append(row)
    return pd.DataFrame(rows).fillna(0)


def behaviour_labels(behaviours: list[list[str]], n_layers: int, n_heads: int) -> dict[str, list[str]]:
    """1-based ``layer-head`` -> behaviours, for the heads that have any."""
    return {lab: b for lab, b in zip(all_head_labels(n_layers, n_heads), behaviours) if b}


def behaviour_counts(behaviours: list[list[str]]):
    """How many heads have each primary behaviour (DataFrame, most frequent first)."""
    import pandas as pd

    return pd.Series(primary_behaviour(behaviours)).value_counts().rename_axis("behaviour (primary)").to_frame("heads")


def behaviour_test_markdown(test: GroupTest | None) -> str:
    """The same-behaviour test in one sentence (Markdown); empty when there was nothing to test."""
    if test is None:
        return ""
    return (f"Same behaviour: mean JS **{test.within_mean:.3f}**; different behaviours **{test.between_mean:.3f}** "
            f"(ratio {test.ratio:.2f}), p = {test.p_value:.4g}; per behaviour: "
            + ", ".join(f"{b} {v:.3f}" for b, v in test.group_within.items()))
