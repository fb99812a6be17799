"""Charts of the Clark study: heads as parsers and probes (chapter 2), clusters and MDS (chapter 3)."""
from __future__ import annotations

import numpy as np
import pytest
from toy_clark import planted, stats_2x3

from attnbook.studies.clark import charts, clusters, embedding, syntax


def test_relation_heatmaps_show_the_best_direction_in_percent():
    correct = np.zeros((2, 2, 3, 2), dtype=np.int64)
    correct[0, 1, 2, 1] = 9  # det: head 2-3 head->dep
    correct[1, 0, 0, 0] = 4  # nsubj: head 1-1 dep->head
    acc = syntax.HeadAccuracy(["det", "nsubj"], correct, np.array([10, 8]), np.zeros((2, 6), dtype=np.int64))
    spec = charts.relation_heatmaps(acc, ["det", "nsubj"]).to_dict()
    titles = [p["title"] for p in spec["hconcat"]]
    assert titles == ["det (head->dep)", "nsubj (dep->head)"]
    peaks = sorted((max(d["value"] for d in ds), max(ds, key=lambda d: d["value"])["label"])
                   for ds in spec["datasets"].values())
    assert peaks == [(50.0, "1-1"), (90.0, "2-3")]


def test_probe_weight_heatmap_places_each_head():
    import pandas as pd

    w = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "weight": [0.1, -0.2, 0.3, 0.0]})
    spec = charts.probe_weight_heatmap(w).to_dict()
    rows = {d["label"]: d["value"] for d in next(iter(spec["datasets"].values()))}
    assert rows == {"1-1": 0.1, "1-2": -0.2, "2-1": 0.3, "2-2": 0.0}


def test_loss_curves_one_point_per_epoch():
    spec = charts.loss_curves({"attn": [2.0, 1.5], "attn_words": [2.1]}, {"attn": "Attn"}).to_dict()
    data = next(iter(spec["datasets"].values()))
    assert sorted((d["probe"], d["epoch"]) for d in data) == [("Attn", 1), ("Attn", 2), ("attn_words", 1)]


def test_charts_build_valid_specs_with_head_labels():
    d = planted(n_layers=2, n_heads=3, spread=0.3)
    emb = embedding.mds_embedding(d, seed=0, orient_by=clusters.layer_labels(2, 3))
    clus = clusters.cluster_heads(d, 2, 3, n_clusters=2)
    b = clusters.head_behaviours(stats_2x3())
    frame = charts.embedding_frame(emb.coords, 2, 3, b, clus.labels)
    assert list(frame["label"]) == ["1-1", "1-2", "1-3", "2-1", "2-2", "2-3"]
    assert frame.loc[0, "behaviours"] == "attends to previous, attends broadly"
    for chart in (charts.mds_layer_chart(frame), charts.mds_behaviour_chart(frame),
                  charts.dendrogram_chart(clus, 2, 3, cut=1.0), charts.cluster_grid_chart(clus, 2, 3, b),
                  charts.distance_heatmap(d, 2, 3)):
        spec = chart.to_dict()
        assert "$schema" in spec
    segs, leaves = charts.dendrogram_frames(clus, 2, 3)
    assert len(segs) == 3 * 5 and sorted(leaves["label"]) == sorted(frame["label"])
    with pytest.raises(ValueError):
        charts.embedding_frame(emb.coords[:4], 2, 3)


def test_silhouette_chart():
    d = planted(n_layers=3, n_heads=4, spread=0.05, seed=2)
    scores = clusters.silhouette_by_k(d, 3, 4, ks=range(2, 6))
    assert "$schema" in charts.silhouette_chart(scores, chosen=clusters.best_k(scores)).to_dict()


def test_cut_height_separates_the_chosen_number_of_clusters():
    from scipy.cluster.hierarchy import fcluster

    d = planted(n_layers=4, n_heads=3, spread=0.2, seed=5)
    for k in (2, 3, 4):
        c = clusters.cluster_heads(d, 4, 3, n_clusters=k)
        h = charts.cut_height(c)
        assert len(set(fcluster(c.linkage, h, "distance"))) == k
    assert charts.cut_height(clusters.cluster_heads(d, 4, 3, n_clusters=1)) is None


def accuracy_with(totals):
    """A 2x2-head HeadAccuracy over det/dobj/pobj/poss with the given edge counts."""
    rels = ["det", "dobj", "pobj", "poss"]
    correct = np.zeros((4, 2, 2, 2), dtype=np.int64)
    for r, n in enumerate(totals):
        correct[r, r % 2, 1, r % 2] = n // 2
    return syntax.HeadAccuracy(rels, correct, np.array(totals), np.zeros((4, 6), dtype=np.int64))


def test_relation_grid_and_best_head_views_skip_relations_without_edges():
    from attnbook.studies.clark.wordmaps import WordMapExample

    acc = accuracy_with([10, 8, 0, 6])
    assert charts.drawn_relations(acc) == ["det", "dobj", "poss"]
    grid = charts.relation_heatmap_grid(acc).to_dict()
    assert [len(row["hconcat"]) for row in grid["vconcat"]] == [2, 1]
    assert len(charts.relation_heatmap_grid(accuracy_with([10, 0, 0, 0])).to_dict()["hconcat"]) == 1
    maps = np.full((2, 2, 5, 5), 0.2)
    example = WordMapExample(None, None, None, maps, ["[CLS]", "a", "b", "c", "[SEP]"])
    views = charts.best_head_views(acc, example).to_dict()
    titles = [v["title"] for row in views["vconcat"] for v in row["hconcat"]]
    assert titles == ["det: head 1-2 (dep->head, 50%)", "dobj: head 2-2 (head->dep, 50%)",
                      "poss: head 2-2 (head->dep, 50%)"]


def test_probe_weight_heatmaps_show_both_weights():
    import pandas as pd

    w = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "w_head_to_dep": [0.1, -0.2, 0.3, 0.0],
                      "u_dep_to_head": [1.0, 2.0, 3.0, 4.0]})
    spec = charts.probe_weight_heatmaps(w).to_dict()
    assert [p["title"] for p in spec["hconcat"]] == ["w: candidate head → dependent", "u: dependent → candidate head"]


def test_example_heads_chart_draws_two_heads_per_row():
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    maps = np.full((2, 2, 4, 4), 0.25)
    picks = {"broad": (0, 0), "next token": (0, 1), "[SEP]": (1, 0), "punctuation": (1, 1)}
    spec = charts.example_heads_chart(tokens, maps, picks).to_dict()
    titles = [[v["title"] for v in row["hconcat"]] for row in spec["vconcat"]]
    assert titles == [["broad: head 1-1", "next token: head 1-2"], ["[SEP]: head 2-1", "punctuation: head 2-2"]]
    assert "hconcat" in charts.example_heads_chart(tokens, maps, {"broad": (0, 0)}).to_dict()


def test_the_sink_panel_draws_the_token_the_row_tests():
    """Clark Fig. 2 (bottom) is drawn for the model's sink token: with a [CLS] sink the panel shows [CLS]->[CLS]
    (the row's claim), not [SEP]->[SEP], and its caption says so."""
    from test_clark_paper import surface_stats

    from attnbook.studies.clark import charts as clark_charts

    for sink, token, series in (("cls", "[CLS]", {"[CLS] -> [CLS]", "all -> [CLS]"}),
                                ("sep", "[SEP]", {"[SEP] -> [SEP]", "other -> [SEP]"})):
        spec = clark_charts.sink_self_chart(surface_stats(sink=sink)).to_dict()
        title = spec["title"]
        assert title["text"].startswith(f"Attention to {token} from {token}")
        subtitle = title["subtitle"]
        assert f"sink token is {token}" in (" ".join(subtitle) if isinstance(subtitle, list) else subtitle)
        shown = {v for d in spec["datasets"].values() for row in d for v in row.values() if isinstance(v, str)}
        assert series <= shown, shown
        # the paper's share is drawn as a labelled reference: more than 90% from [SEP] to [SEP] (Clark §3.2)
        assert any(v.startswith("paper: [SEP]->[SEP] > 90%") for v in shown), shown


def test_special_tokens_chart_marks_the_papers_sep_layers_at_relative_depth():
    """Clark Fig. 2 (top) with the paper's value drawn: over half of the attention of bert-base's layers 6-10 goes to
    [SEP] (§3.2), a segment at 0.5 over the same layers at relative depth (layers 3-5 of a 6-layer model)."""
    from test_clark_paper import surface_stats

    from attnbook.studies.clark import charts as clark_charts

    spec = clark_charts.special_tokens_chart(surface_stats(sink="cls"), {"[SEP]": "</s>"}).to_dict()
    marks = [row for d in spec["datasets"].values() for row in d if "x2" in row]
    assert len(marks) == 1 and marks[0]["y"] == 0.5
    assert (marks[0]["x"], marks[0]["x2"]) == (3 - 0.45, 5 + 0.45)
    assert marks[0]["what"] == "paper: </s> over half, layers 6-10 of 12"


def test_best_head_views_leave_out_the_special_tokens():
    """Clark Fig. 5's analogue: [CLS] and [SEP] are left out of the line views and each word's attention is
    renormalised over the words, so a determiner edge is not drowned by lines to [CLS] (footnote 2)."""
    from attnbook.studies.clark import charts as clark_charts

    word_map = np.array([[0.9, 0.05, 0.05, 0.0], [0.8, 0.0, 0.15, 0.05], [0.7, 0.3, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    inner = clark_charts.words_only(word_map)
    assert inner.shape == (2, 2)
    np.testing.assert_allclose(inner, [[0.0, 1.0], [1.0, 0.0]])
