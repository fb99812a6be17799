"""Clark et al. §6 beside this run's numbers (chapter 3): the "paper vs this run" rows about head clusters.

The paper's claims are qualitative ("several clear clusters", Fig. 6), so each row judges a statistic of this run's
distances against a threshold from the literature or a ratio of 1 (:class:`~attnbook.verdict.Beyond`), with a 95%
bootstrap interval over groups of segments; the docstring of :func:`clustering_comparison` states every rule. The
number of clusters the chapter chose on its data is chosen again in every resample. Nothing here measures.
"""
from __future__ import annotations

import numpy as np

from attnbook import verdict
from attnbook.stats import Estimate, GroupTest
from attnbook.studies.clark.clusters import BROAD, NO_BEHAVIOUR, Clustering, best_k, cut_silhouettes, primary_behaviour
from attnbook.studies.clark.embedding import MDSResult
from attnbook.studies.clark.embedding import stress as stress_of
from attnbook.studies.clark.paper.detect import interval_row
from attnbook.studies.clark.paper.rows import _interval
from attnbook.verdict import Comparison

#: bootstrap resamples of chapter 3 (each one re-clusters the heads)
N_RESAMPLES_CLUSTERS = 200

#: the numbers of clusters the chapter chooses among by the silhouette (``k_range`` of ``profiles/ch03.py``: from 3,
#: "several" clusters), chosen again in every resample
K_RANGE = (3, 12)

#: Kaufman & Rousseeuw (1990)'s reading of a mean silhouette: above 0.5 reasonable structure, 0.25-0.5 weak
SILHOUETTE_RULE = verdict.Beyond(0.25, strong=0.5, what="silhouette",
                                 source="Kaufman & Rousseeuw (1990): above 0.5 reasonable structure, 0.25-0.5 weak")

#: Kruskal (1964)'s verbal scale of stress-1: 0.05 good, 0.1 fair, 0.2 poor
STRESS_RULE = verdict.Beyond(0.2, above=False, strong=0.1, what="stress-1",
                             source="Kruskal (1964): stress-1 of 0.05 good, 0.1 fair, 0.2 poor")


def _within_between(d: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean distance between same-label heads over the mean between different-label heads, for every
    ``d[resample, i, j]``."""
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(len(labels), dtype=bool)
    return d[:, same & off].mean(-1) / d[:, ~same].mean(-1)


def _nn_same(d: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Share of heads whose nearest other head has the same label, for every ``d[resample, i, j]``."""
    x = d + np.diag(np.full(len(labels), np.inf))[None]
    return (labels[x.argmin(-1)] == labels[None, :]).mean(-1)


def _several(c: Clustering, min_size: int) -> float:
    """The silhouette of a cut, counted as 0 when it has fewer than two clusters of at least ``min_size`` heads
    ("several clusters": odd heads split off are no clusters)."""
    real = sum(1 for m in c.members.values() if len(m) >= min_size)
    return float(c.silhouette) if real >= 2 else 0.0


def best_cut(d: np.ndarray, k_range, min_size: int) -> tuple[int, float]:
    """The number of clusters the chapter's rule chooses on the distances ``d`` (the best silhouette over ``k_range``,
    the smallest ``k`` on ties, as :func:`~attnbook.studies.clark.clusters.choose_clusters`; at most one fewer than
    the heads; an int ``k_range`` is a number fixed in advance) and that cut's silhouette as :func:`_several` counts
    it (0 with fewer than two clusters of ``min_size`` heads)."""
    n = d.shape[0]
    if isinstance(k_range, (int, np.integer)):
        ks = [int(k_range)]
    else:
        hi = min(int(k_range[1]), n - 1)
        ks = list(range(min(int(k_range[0]), hi), hi + 1))
    cuts = cut_silhouettes(d, ks)
    scores = {k: v for k, (v, _) in cuts.items()}
    if all(np.isnan(v) for v in scores.values()):
        return ks[0], 0.0
    k = best_k(scores)
    value, sizes = cuts[k]
    return k, (float(value) if int(np.sum(sizes >= min_size)) >= 2 else 0.0)


def clustering_comparison(
    layer_test: GroupTest,
    clusters: Clustering,
    mds: MDSResult,
    behaviours: GroupTest | None,
    min_size: int = 3,
    *,
    resampled: np.ndarray,
    head_behaviours: list[list[str]] | None = None,
    n_groups: int | None = None,
    k_range=K_RANGE,
    n_segments: int | None = None,
) -> list[Comparison]:
    """Clark §6's claims beside this run's numbers (:func:`attnbook.verdict.row`), each with a 95% bootstrap
    interval over groups of segments: ``resampled[resample, i, j]`` are the mean JS divergences recomputed in every
    resample (:func:`attnbook.studies.clark.distances.resampled_distances`, ``n_groups`` groups).

    * "several clear clusters": the silhouette of the average-linkage cut into the number of clusters the silhouette
      chooses over ``k_range`` (the chapter's rule, :func:`~attnbook.studies.clark.clusters.choose_clusters`), the
      tree rebuilt and the number chosen again in every resample, so the interval is for the best cut's silhouette
      (an int ``k_range`` fixes the number, for a cut chosen before seeing the data): :data:`SILHOUETTE_RULE`
      (Kaufman & Rousseeuw: above 0.5 reasonable structure, 0.25-0.5 weak); a cut with fewer than two clusters of
      ``min_size`` heads counts as 0 (odd heads split off are no clusters);
    * clusters "often corresponding to behaviours": same-behaviour over other-behaviour mean JS below 1, on the heads
      with a behaviour other than "attends broadly" (two near-uniform heads are close by construction, so broad heads
      would make the claim hold by definition; ``behaviours`` must come from
      :func:`attnbook.studies.clark.clusters.behaviour_test` with that exclusion, ``head_behaviours`` are the labels);
    * "heads within the same layer are often fairly close": same-layer over other-layer mean JS below 1 (the paper
      gives no magnitude, so the row checks the direction only), and the share of heads whose nearest head is in
      their own layer above chance (at least half and twice chance to agree fully);
    * Fig. 6's 2-D distances "approximately match" the divergences: the paper gives no stress, so Kruskal stress-1 of
      this run's plane against the resampled divergences is one of the book's own questions (kind
      :data:`~attnbook.verdict.OWN`): below 0.2, below 0.1 to be fully supported (:data:`STRESS_RULE`).

    ``n_segments``: the segments behind the groups; given, the rows count their sample in segments (what a reader can
    add to: the number of groups is fixed), else in groups.

    The permutation p-values (labels shuffled, distances fixed) are in the notes, with what each rule compared; an
    undecided row says what its sample could detect (:mod:`~attnbook.studies.clark.paper.detect`). How this run's
    distance differs from the paper's is a setting, not a claim:
    :func:`~attnbook.studies.clark.paper.text.distance_setting` says it in the chapter's closing summary.
    """
    boot = np.asarray(resampled, dtype=np.float64)
    n_heads = boot.shape[1]
    n_layers = max(int(m.split("-")[0]) for ms in clusters.members.values() for m in ms)
    n_units = int(n_groups) if n_groups else int(boot.shape[0])
    how = f"{boot.shape[0]} bootstrap resamples of {n_units} groups of segments"
    # the groups are a fixed number of runs of segments: a sample grows by its segments, each group's mean getting
    # less noisy, so the rows count segments (the variance of a mean over groups falls as one over the segments)
    unit = f"segments (resampled in {n_units} groups)" if n_segments else "groups of segments"
    n_units = int(n_segments) if n_segments else n_units
    rows = []
    per_layer = n_heads // n_layers
    cut, value = clusters, _several(clusters, min_size)  # the chapter's cut, chosen by the same rule on all groups
    resampled_cuts = [best_cut(d, k_range, min_size) for d in boot]
    sil = np.array([v for _, v in resampled_cuts])
    ks = np.array([k for k, _ in resampled_cuts])
    est = _interval(value, sil, n_units, unit)
    sizes = [len(m) for m in cut.members.values()]
    n_real = sum(1 for n in sizes if n >= min_size)
    fixed = isinstance(k_range, (int, np.integer))
    choice = (f"k = {cut.n_clusters} fixed in advance" if fixed else
              f"k = {cut.n_clusters} chosen by the silhouette over {k_range[0]}-{k_range[1]}, and chosen again in "
              f"every resample (k from {ks.min()} to {ks.max()}, the chapter's k in "
              f"{np.mean(ks == cut.n_clusters):.0%} of them): the interval is for the best cut's silhouette")
    rows.append(interval_row(
        "§6 clusters", "silhouette of the average-linkage cut (tree rebuilt in every resample)",
        paper="several clear clusters (Fig. 6)",
        ours=(f"{est.text('.2f')} at k = {cut.n_clusters} ({n_real} cluster{'s' if n_real != 1 else ''} of "
              f">= {min_size} heads" + (f"; silhouette {cut.silhouette:.2f} counted as 0" if n_real < 2 else "")
              + ")"),
        estimate=est, rule=SILHOUETTE_RULE,
        note=(f"{choice}; a cut with fewer than two clusters of >= {min_size} heads counts as 0 (not several "
              f"clusters); {how}"),
    ))
    if behaviours is None or head_behaviours is None:
        rows.append(verdict.row(
            "§6 clusters", "same-behaviour / other-behaviour mean JS (broad heads left out)",
            paper="clusters often correspond to behaviours", ours="too few heads with a shared behaviour",
            estimate=Estimate(float("nan")),
            rule=verdict.NotComparable("fewer than two heads share a behaviour other than attending broadly"),
            note="behaviours from chapters 1-2",
        ))
    else:
        primary = np.array(primary_behaviour(head_behaviours))
        keep = np.flatnonzero((primary != NO_BEHAVIOUR) & (primary != BROAD))
        labels = primary[keep]
        r = _within_between(boot[:, keep][:, :, keep], labels)
        est = _interval(behaviours.ratio, r, n_units, unit)
        rows.append(interval_row(
            "§6 clusters", "same-behaviour / other-behaviour mean JS (broad heads left out)",
            paper="clusters often correspond to behaviours", ours=est, fmt=".2f",
            rule=verdict.Beyond(1.0, above=False, what="same / other behaviour mean JS"),
            note=(f"{len(keep)} heads with {len(behaviours.group_within)} behaviours shared by >= 2 heads; "
                  f"permutation p = {behaviours.p_value:.4f} ({behaviours.n_permutations} shuffles); {how}"),
        ))
    lt = layer_test
    layers = np.repeat(np.arange(n_layers), per_layer)
    est = _interval(lt.ratio, _within_between(boot, layers), n_units, unit)
    rows.append(interval_row(
        "§6 layers", "same-layer / other-layer mean JS",
        paper="heads in the same layer are often fairly close (no magnitude given)", ours=est, fmt=".2f",
        rule=verdict.Beyond(1.0, above=False, what="same / other layer mean JS"),
        note=f"the paper gives no size for 'fairly close' (§6, Fig. 6), so the row checks the direction only; "
             f"{lt.within_mean:.3f} / {lt.between_mean:.3f}; permutation p = {lt.p_value:.4f} "
             f"({lt.n_permutations} shuffles of the layer labels); {how}",
    ))
    est = _interval(lt.nn_same, _nn_same(boot, layers), n_units, unit)
    rows.append(interval_row(
        "§6 layers", "heads whose nearest head is in the same layer (share)",
        paper="often", ours=est, fmt=".2f",
        rule=verdict.Beyond(lt.nn_chance, strong=max(0.5, 2 * lt.nn_chance), what="share"),
        note=f"chance {lt.nn_chance:.2f}; nearest by JS distance; {how}",
    ))
    s1 = np.array([stress_of(d, mds.coords).stress1 for d in boot])
    est = _interval(mds.stress.stress1, s1, n_units, unit)
    rows.append(interval_row(
        "§6 MDS", "Kruskal stress-1 of the 2-D embedding",
        paper="distances approximately match (Fig. 6); no stress given", ours=est, fmt=".3f",
        rule=STRESS_RULE, kind=verdict.OWN,
        note=f"the book's own question: the paper gives no stress, so none of its claims is tested here; Kruskal: "
             f"0.05 good, 0.1 fair, 0.2 poor; correlation of the distances r = {mds.stress.correlation:.2f}; the "
             f"plane fixed, the divergences resampled ({how})",
    ))
    return rows

