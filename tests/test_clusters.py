"""Clark §6 groups of heads: the same-layer permutation test, hierarchical clusters, behaviours."""
from __future__ import annotations

import numpy as np
import pytest
from toy_clark import planted, stats_2x3

from attnbook import stats
from attnbook.core.errors import ParameterError
from attnbook.studies.clark import clusters


def test_layer_permutation_test_finds_planted_layers():
    d = planted()
    res = clusters.layer_permutation_test(d, 6, 8, n_permutations=999, seed=0)
    assert res.p_value == pytest.approx(1 / 1000)
    assert res.within_mean < res.between_mean and res.ratio < 0.5
    assert res.nn_same == 1.0 and res.nn_chance == pytest.approx(7 / 47)
    # statistics agree with a direct computation
    labels = clusters.layer_labels(6, 8)
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(48, dtype=bool)
    assert res.within_mean == pytest.approx(d[same & off].mean())
    assert res.between_mean == pytest.approx(d[~same].mean())
    assert res.group_within[1] == pytest.approx(d[:8, :8][~np.eye(8, dtype=bool)].mean())


def test_permutation_test_is_not_significant_for_unrelated_labels():
    d = planted()
    rng = np.random.default_rng(1)
    p_values = [stats.group_permutation_test(d, rng.permutation(clusters.layer_labels(6, 8)), n_permutations=199,
                                          seed=s).p_value for s in range(15)]
    assert np.median(p_values) > 0.2
    # labels that cut across the planted groups: every same-label pair is far apart
    across = np.tile(np.arange(8), 6)
    assert stats.group_permutation_test(d, across, n_permutations=199).p_value > 0.9


def test_permutation_null_is_computed_per_shuffle():
    d = planted(n_layers=3, n_heads=4, spread=1.0, seed=3)
    labels = clusters.layer_labels(3, 4)
    res = stats.group_permutation_test(d, labels, n_permutations=300, seed=5)
    rng = np.random.default_rng(5)
    perm = rng.permuted(np.broadcast_to(labels - 1, (300, 12)), axis=1)
    null = []
    for row in perm:
        same = (row[:, None] == row[None, :]) & ~np.eye(12, dtype=bool)
        null.append(d[~(row[:, None] == row[None, :])].mean() - d[same].mean())
    assert res.null_mean == pytest.approx(np.mean(null))
    assert res.p_value == pytest.approx((1 + np.sum(np.array(null) >= res.statistic - 1e-12)) / 301)


def test_permutation_test_rejects_degenerate_labels():
    d = planted(n_layers=2, n_heads=3)
    with pytest.raises(ParameterError):
        stats.group_permutation_test(d, np.zeros(6))
    with pytest.raises(ParameterError):
        stats.group_permutation_test(d, np.arange(6))
    with pytest.raises(ValueError):
        stats.group_permutation_test(d, np.zeros(5))


def test_cluster_heads_recovers_planted_groups_with_one_based_members():
    d = planted(n_layers=3, n_heads=4, spread=0.05, seed=2)
    c = clusters.cluster_heads(d, 3, 4, n_clusters=3)
    assert c.n_clusters == 3
    assert sorted(map(sorted, c.members.values())) == sorted(
        [sorted(f"{layer}-{h}" for h in range(1, 5)) for layer in (1, 2, 3)])
    assert all(len(set(c.labels[i * 4:(i + 1) * 4])) == 1 for i in range(3))
    assert c.silhouette > 0.8 and c.cophenetic > 0.8
    # numbering follows the dendrogram's leaf order
    from scipy.cluster.hierarchy import leaves_list

    first_seen = list(dict.fromkeys(c.labels[leaves_list(c.linkage)]))
    assert first_seen == [1, 2, 3]
    # a threshold between the within- and between-group distances gives the same groups
    t = clusters.cluster_heads(d, 3, 4, threshold=1.0)
    assert t.n_clusters == 3
    scores = clusters.silhouette_by_k(d, 3, 4, ks=range(2, 7))
    assert clusters.best_k(scores) == 3


def test_cluster_heads_rejects_bad_arguments():
    d = planted(n_layers=2, n_heads=3)
    with pytest.raises(ParameterError):
        clusters.cluster_heads(d, 2, 3)
    with pytest.raises(ParameterError):
        clusters.cluster_heads(d, 2, 3, n_clusters=2, threshold=1.0)
    with pytest.raises(ValueError):
        clusters.cluster_heads(d, 3, 3, n_clusters=2)
    with pytest.raises(ValueError, match="symmetric"):
        clusters.cluster_heads(d + np.triu(np.ones((6, 6)), 1), 2, 3, n_clusters=2)


def test_head_behaviours_thresholds_broad_and_syntax():
    b = clusters.head_behaviours(stats_2x3(), {"dobj": "2-2", "nsubj": "1-1"}, broad_quantile=0.75)
    assert b[0] == ["attends to previous", clusters.BROAD, "syntax: nsubj"]
    assert b[1] == ["attends to next"]
    assert b[3] == ["attends to [SEP]"]
    assert b[4] == ["syntax: dobj"]
    assert b[5] == ["attends to . or ,", clusters.BROAD]
    assert b[2] == []
    primary = clusters.primary_behaviour(b)
    assert primary == ["syntactic head", "attends to next", clusters.NO_BEHAVIOUR, "attends to [SEP]",
                       "syntactic head", "attends to . or ,"]
    # nested lists work the same
    as_lists = {k: v.tolist() for k, v in stats_2x3().items()}
    assert clusters.head_behaviours(as_lists) == clusters.head_behaviours(stats_2x3())


def test_head_behaviours_errors_name_chapter_one():
    s = stats_2x3()
    del s["sep"]
    with pytest.raises(ParameterError, match="01_clark_surface_patterns"):
        clusters.head_behaviours(s)
    with pytest.raises(ParameterError, match="outside"):
        clusters.head_behaviours(stats_2x3(), {"amod": "3-1"})
    with pytest.raises(ParameterError):
        clusters.head_behaviours(stats_2x3(), threshold=1.5)


def test_head_behaviours_threshold_override():
    b = clusters.head_behaviours(stats_2x3(), threshold=0.45, broad_quantile=1.0)
    assert "attends to [SEP]" in b[4]  # 0.5 > 0.45
    assert b[0] == ["attends to previous", clusters.BROAD]  # the single highest entropy is the 1.0 quantile


def test_syntax_best_heads_keeps_relations_that_beat_their_baseline():
    from attnbook.studies.clark.syntax import HeadAccuracy

    relations = ["All", "dobj", "amod", "empty"]
    correct = np.zeros((4, 2, 3, 2))
    correct[0, 0, 0, 0] = 50  # "All" is skipped whatever it scores
    correct[1, 1, 2, 1] = 80  # dobj: head 2-3 at 80% vs baseline 30%
    correct[2, 0, 1, 0] = 62  # amod: head 1-2 at 62% vs baseline 60%
    total = np.array([100, 100, 100, 0])
    baseline = np.zeros((4, 6))
    baseline[1, 0], baseline[2, 3] = 30, 60
    acc = HeadAccuracy(relations, correct, total, baseline)
    assert clusters.syntax_best_heads(acc) == {"dobj": "2-3", "amod": "1-2"}
    assert clusters.syntax_best_heads(acc, margin=0.05) == {"dobj": "2-3"}


def test_behaviour_test():
    d = planted(n_layers=3, n_heads=4, spread=0.3, seed=4)
    behaviours = [["attends to [CLS]"]] * 4 + [[]] * 4 + [["attends broadly"]] * 4
    bt = clusters.behaviour_test(d, behaviours, n_permutations=199, exclude=())
    assert bt.p_value < 0.05 and bt.ratio < 1
    assert set(bt.group_within) == {"attends to [CLS]", "attends broadly"}
    assert clusters.behaviour_test(d, behaviours, n_permutations=199) is None  # broad heads left out: one behaviour
    assert clusters.behaviour_test(d, [["attends to [CLS]"]] + [[]] * 11) is None


def test_behaviour_cluster_table():
    d = planted(n_layers=3, n_heads=4, spread=0.05, seed=2)
    clus = clusters.cluster_heads(d, 3, 4, n_clusters=3)
    behaviours = [["attends broadly"]] * 4 + [[]] * 8
    table = clusters.behaviour_cluster_table(clus, behaviours)
    assert table["heads"].sum() == 12 and table["attends broadly"].sum() == 4
    assert sorted(table["attends broadly"]) == [0, 0, 4]
    with pytest.raises(ValueError):
        clusters.behaviour_cluster_table(clus, behaviours[:5])


def test_choose_clusters_takes_the_best_silhouette_or_a_fixed_k():
    d = planted(n_layers=4, n_heads=3, spread=0.05, seed=2)
    auto, scores = clusters.choose_clusters(d, 4, 3, n_clusters="auto", k_range=[2, 6])
    assert list(scores) == [2, 3, 4, 5, 6]
    assert auto.n_clusters == clusters.best_k(scores) == 4  # the four planted layers
    fixed, same = clusters.choose_clusters(d, 4, 3, n_clusters=3, k_range=[2, 6])
    assert fixed.n_clusters == 3 and same == scores
    numbers = clusters.cluster_numbers(auto, scores)
    assert numbers["silhouette_by_k"] == {str(k): v for k, v in scores.items()}
    assert numbers["clusters"] == {str(c): m for c, m in auto.members.items()}
    assert numbers["cluster_quality"] == {"k": 4, "silhouette": auto.silhouette, "cophenetic": auto.cophenetic}
    assert clusters.describe(auto).startswith("Cut into **4** clusters: silhouette **")


@pytest.mark.parametrize("spread,seed", [(0.05, 2), (0.8, 1), (2.0, 3)])
def test_cut_silhouettes_are_the_chapters_cuts_in_one_pass(spread, seed):
    """The bootstrap of chapter 3 chooses k again in every resample with :func:`clusters.cut_silhouettes` (the tree
    built once, the silhouette in NumPy); it gives the silhouette and the cluster sizes of
    :func:`clusters.cluster_heads` (scikit-learn's silhouette) for every k, including the degenerate ones."""
    d = planted(n_layers=4, n_heads=5, spread=spread, seed=seed)
    ks = range(1, 21)
    fast = clusters.cut_silhouettes(d, ks)
    for k in ks:
        c = clusters.cluster_heads(d, 4, 5, n_clusters=k)
        value, sizes = fast[k]
        assert sorted(sizes.tolist()) == sorted(len(m) for m in c.members.values())
        assert (np.isnan(value) and np.isnan(c.silhouette)) or value == pytest.approx(c.silhouette, abs=1e-12)
    assert {k: v for k, (v, _) in fast.items() if 2 <= k <= 12} == pytest.approx(
        clusters.silhouette_by_k(d, 4, 5, ks=range(2, 13)), abs=1e-12)


def test_test_numbers_texts_and_tables():
    d = planted(n_layers=3, n_heads=4, spread=0.1, seed=4)
    lt = clusters.layer_permutation_test(d, 3, 4, n_permutations=99)
    numbers = clusters.group_test_numbers(lt)
    assert "group_within" not in numbers and numbers["p_value"] == lt.p_value and numbers["ratio"] == lt.ratio
    text = clusters.layer_test_markdown(lt)
    assert f"p = {lt.p_value:.4g} (99 shuffles)" in text and f"(chance {lt.nn_chance:.0%})" in text
    table = clusters.within_layer_table(lt)
    assert list(table["layer"]) == [1, 2, 3]
    np.testing.assert_allclose(table["mean JS within the layer"], np.round(list(lt.group_within.values()), 3))
    behaviours = [["attends to [CLS]"]] * 4 + [[]] * 4 + [[clusters.BROAD, "attends to next"]] * 4
    bt = clusters.behaviour_test(d, behaviours, n_permutations=99)
    assert "per behaviour: attends to [CLS] " in clusters.behaviour_test_markdown(bt)
    assert clusters.behaviour_test_markdown(None) == ""
    labels = clusters.behaviour_labels(behaviours, 3, 4)
    assert list(labels) == ["1-1", "1-2", "1-3", "1-4", "3-1", "3-2", "3-3", "3-4"]
    assert labels["3-1"] == [clusters.BROAD, "attends to next"]
    counts = clusters.behaviour_counts(behaviours)
    assert counts["heads"].to_dict() == {"attends to [CLS]": 4, clusters.NO_BEHAVIOUR: 4, "attends to next": 4}
    assert counts.index.name == "behaviour (primary)"


def test_the_clustering_rows_count_their_sample_in_segments_when_given():
    """Regression: chapter 3 stated its samples in groups of segments, whose number is fixed (40); a reader adds
    segments, so the rows count segments when the chapter gives them."""
    from attnbook.studies.clark import clusters as cl
    from attnbook.studies.clark import embedding
    from attnbook.studies.clark.paper import clustering_comparison

    rng = np.random.default_rng(0)
    L, H = 3, 4
    x = rng.normal(size=(L * H, 3))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    boot = np.stack([d * (1 + 0.05 * rng.normal()) for _ in range(30)])
    args = (cl.layer_permutation_test(d, L, H, n_permutations=99), cl.cluster_heads(d, L, H, n_clusters=3),
            embedding.mds_embedding(d), None)
    by_segments = clustering_comparison(*args, resampled=boot, n_groups=40, k_range=3, n_segments=1000)
    by_groups = clustering_comparison(*args, resampled=boot, n_groups=40, k_range=3)
    assert {r.n for r in by_segments if r.n} == {1000} and all("40 groups" in r.unit for r in by_segments if r.n)
    assert {r.n for r in by_groups if r.n} == {40} and all(r.unit == "groups of segments" for r in by_groups if r.n)
