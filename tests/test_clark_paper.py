"""Clark et al.'s numbers and the "paper vs this run" rows of chapters 1-3: verdicts follow the numbers."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform
from toy_clark import planted
from toy_gum import toy_files

from attnbook import verdict
from attnbook.core.errors import EmptyDataError
from attnbook.data import gum
from attnbook.studies.clark import clusters, coref, embedding, paper, syntax
from attnbook.studies.clark.wordmaps import SplitWords


@pytest.fixture
def toy_window(tmp_path, tokenizer) -> coref.CorefWindow:
    (win,) = coref.windows([gum.load_document(*toy_files(tmp_path))], tokenizer, max_tokens=128, first_only=True)
    return win


# ----------------------------------------------------------------------------- §3 surface patterns


def surface_stats(n_layers=6, n_heads=12, sink="sep"):
    """Per-head statistics shaped like chapter 1's: a [SEP] (or [CLS]) sink in the middle layers."""
    z = np.zeros((n_layers, n_heads))
    s = {k: z.copy() for k in ("self", "prev", "next", "cls", "sep", "punct", "sep_sep", "rest_sep", "entropy",
                                "entropy_cls", "max_weight")}
    s["prev"][1, 0] = 0.8  # one previous-token head (paper: 4 of 144, i.e. 2 of 72)
    s["next"][0, 3] = s["next"][2, 5] = 0.7  # two next-token heads (paper: 5 of 144, 2.5 of 72)
    s["cls"][0] = 0.3  # [CLS] early, [SEP] in the middle, punctuation deep
    s[sink][:] = np.array([0.01, 0.05, 0.7, 0.7, 0.2, 0.1])[:, None]
    s["punct"][5] = 0.2
    s["sep_sep"][:] = 0.95
    s["entropy"][0] = 3.5
    s["entropy_cls"][-1] = 3.9
    s["uniform_entropy"] = np.array(4.0)
    return s


def test_surface_comparison_on_a_bert_like_model():
    stats = surface_stats()
    grads = {"grad_sep": np.full((6, 12), 0.1), "grad_other": np.full((6, 12), 1.0)}
    grads["grad_sep"][:2] = 2.0  # large where little attention goes to [SEP]
    rows = paper.surface_comparison(stats, grads)
    by = {r["quantity"]: r for r in rows}
    prev = by["heads with >50% attention to the previous token (layers)"]
    assert prev["ours"] == "1 of 72 (layers 2)" and prev["verdict"] == verdict.AGREES  # 1 vs 2 expected
    assert by["heads with >50% attention to the next token (layers)"]["verdict"] == verdict.AGREES
    peaks = by["layer where mean attention peaks: [CLS] / [SEP] / . or ,"]
    assert peaks["ours"] == "1 / 3 / 6 of 6" and peaks["verdict"] == verdict.AGREES
    sep = by["layers where over half of the attention goes to [SEP]"]
    assert sep["paper"] == "6-10 of 12" and sep["ours"] == "3, 4 of 6" and sep["verdict"] == verdict.AGREES
    share = by["[SEP]->[SEP] share in heads that attend mostly to [SEP]"]
    assert share["paper"] == "> 0.90" and share["ours"] == 0.95 and share["verdict"] == verdict.AGREES
    grad = [r for r in rows if r["experiment"] == "§3.2 gradients"][0]
    assert grad["paper"] == "small where [SEP] attention is high (layer 5 on)" and grad["verdict"] == verdict.AGREES
    cls = by["mean entropy from [CLS] in the last layer (nats)"]
    assert cls["paper"] == 3.89 and cls["verdict"] == verdict.AGREES  # 3.9 within 10%
    assert "where the spare attention goes instead" not in by
    assert all(r["verdict"] in verdict.OUTCOMES for r in rows)
    assert len(paper.surface_comparison(stats)) == len(rows) - 1  # no gradients: no gradient row


def test_surface_comparison_names_a_cls_sink():
    stats = surface_stats(sink="cls")
    by = {r["quantity"]: r for r in paper.surface_comparison(stats)}
    assert by["where the spare attention goes instead"]["verdict"] == verdict.DISAGREES
    assert by["layers where over half of the attention goes to [SEP]"]["verdict"] == verdict.DISAGREES
    text = paper.surface_findings(stats, None, "tiny")
    assert text.startswith("**What this run shows.** On tiny,") and "no-op target" in text
    assert "Differences: " in text and "paper 6-10 of 12" in text


def test_mlm_head_row_only_for_a_fitted_head():
    class Fit:
        source, heldout_accuracy = "fitted on the frozen encoder", 0.25

    (row,) = paper.mlm_head_rows(Fit())
    assert row["verdict"] == verdict.NOT_COMPARABLE and row["ours"] == "fitted, top-1 25.0%"
    Fit.source = "pretrained"
    assert paper.mlm_head_rows(Fit()) == []


# ----------------------------------------------------------------------------- §4-5


def test_split_words_text_names_the_papers_share():
    assert paper.split_words_text(SplitWords(3, 40)) == (
        "7.5% of the 40 words of the evaluated sentences are split into several pieces "
        "(Clark et al.: about 8% in their data)")


def make_sentence(rows):
    from attnbook.data.conllu import Sentence

    n = len(rows)
    words, heads, rels, xpos = (list(c) for c in zip(*rows))
    return Sentence(ids=list(range(1, n + 1)), words=words, lemmas=words, upos=["X"] * n, xpos=xpos,
                    feats=["_"] * n, head=heads, deprel=rels, deps=["_"] * n, misc=["_"] * n)


def test_table1_has_paper_numbers_and_labels(tokenizer):
    rels = ("All", "prep", "pobj", "det", "nsubj", "poss")
    cat = make_sentence([("the", 2, "det", "DT"), ("cat", 3, "nsubj", "NN"), ("sat", 0, "root", "VBD"),
                         ("on", 6, "case", "IN"), ("the", 6, "det", "DT"), ("mat", 3, "obl", "NN"),
                         (".", 3, "punct", ".")])
    encoded = syntax.encode_sentences(tokenizer, [cat, cat], relations=rels)
    maps = np.full((1, 1, 9, 9), 0.01)
    for dep, head in ((1, 2), (2, 3), (4, 6), (5, 6), (6, 3), (7, 3)):  # every word attends to its head
        maps[0, 0, dep, head] = 0.9
    acc = syntax.evaluate_word_maps([maps, maps], encoded, rels)
    t = paper.table1_frame(acc)
    row = t.set_index("relation").loc["det"]
    assert row["head"] == "1-1" and row["accuracy"] == 100.0
    assert row["paper_accuracy"] == 94.3 and row["paper_head"] == "8-11" and row["paper_offset"] == 1
    assert list(t.columns[-4:]) == ["paper_head", "paper_accuracy", "paper_baseline", "paper_offset"]
    report = paper.table1(acc, 0.25)
    assert report.numbers["right_branching_uas"] == 25.0 and report.numbers["n_sentences_syntax"] == 2
    assert report.numbers["table1"][0]["paper_baseline"] == 26.3 and "ud" not in report.numbers["table1"][0]
    assert "paper acc. %" in report.table.columns and "ud" not in report.table.columns
    assert report.text.endswith("right-branching UAS 25.0% (paper: 26.3%)")


def accuracy_for(rows: dict[str, tuple[int, str, int]], total: int = 100) -> syntax.HeadAccuracy:
    """HeadAccuracy with one 1x2-head model: ``rows[rel] = (best head's right edges, direction, offset +1 hits)``."""
    rels = list(rows)
    correct = np.zeros((len(rels), 1, 2, 2), dtype=np.int64)
    base = np.zeros((len(rels), len(syntax.OFFSETS)), dtype=np.int64)
    for r, (right, direction, hits) in enumerate(rows.values()):
        correct[r, 0, 1, syntax.DIRECTIONS.index(direction)] = right
        correct[r, 0, 0, 0] = right // 2  # a weaker head that must not be chosen
        base[r, syntax.OFFSETS.index(1)] = hits
    return syntax.HeadAccuracy(rels, correct, np.full(len(rels), total), base)


def test_syntax_comparison_verdicts_follow_the_numbers():
    acc = accuracy_for({
        "All": (40, "dep->head", 30),       # +10 over right-branching: paper +8.2 -> partly
        "det": (90, "dep->head", 50),       # +40: paper +42.6 -> agrees
        "pobj": (60, "dep->head", 70),      # below the offset, wrong direction: paper +41.7 -> disagrees
        "nn": (72, "head->dep", 70),        # +2, not a specialist as in the paper; wrong direction
    })
    rows = {r["quantity"].split(":")[0]: r for r in paper.syntax_comparison(acc)}
    assert rows["best single head, every relation (UAS) vs right-branching"]["verdict"] == "partly agrees"
    assert rows["det"]["verdict"] == "agrees" and rows["det"]["ours"] == "90.0 (1-2) vs 50.0 (+1)"
    assert rows["pobj"]["verdict"] == "disagrees"
    spec = next(r for q, r in rows.items() if q.startswith("relations with a specialist head"))
    assert spec["paper"] == "2 of 3" and spec["ours"] == "1 of 3" and spec["verdict"] == "partly agrees"
    assert "pobj" in spec["note"]
    direction = next(r for q, r in rows.items() if q.startswith("best head reads"))
    assert direction["ours"] == "1 of 3" and direction["verdict"] == "disagrees"
    assert "nn" in direction["note"] and "pobj" in direction["note"]
    assert all(r["verdict"] in ("agrees", "partly agrees", "disagrees") for r in rows.values())


def test_table2_layout_and_values(toy_window):
    base = coref.baselines([toy_window])
    correct = {"all": [[1, 4]], "pronoun": [[0, 2]], "proper": [[1, 1]], "nominal": [[0, 1]]}
    heads = coref.CorefHeadAccuracy(
        {c: np.array(v) for c, v in correct.items()}, {"all": 5, "pronoun": 3, "proper": 1, "nominal": 1}
    )
    t = paper.table2_frame(heads, base)
    assert list(t.index) == ["Nearest", "Head-word match", "Rule-based", "Best head (1-2)", "mentions (n)"]
    assert t.loc["Nearest", "all"] == pytest.approx(40.0)
    assert t.loc["Best head (1-2)", "pronoun"] == pytest.approx(200 / 3)
    assert t.loc["mentions (n)", "pronoun"] == 3
    assert t.loc["Rule-based", "paper all"] == 69 and t.loc["Best head (1-2)", "paper nominal"] == 58
    assert np.isnan(t.loc["mentions (n)", "paper all"])
    assert "paper all" not in coref.table2(None, base).columns
    assert paper.paper_table2().loc["Head 5-4", "all"] == 65.0
    report = paper.table2(["toy"], [toy_window], heads, base)
    assert report.numbers["coref_counts"] == {"documents": 1, "windows": 1, "all": 5, "pronoun": 3, "proper": 1,
                                              "nominal": 1}
    assert report.numbers["table2"]["Rule-based"]["paper all"] == 69.0
    assert report.text == "1 documents, 1 windows with a coreferent mention, 5 mentions to resolve (3 pronouns)"


def test_coref_comparison_verdicts_follow_the_numbers(toy_window):
    base = coref.baselines([toy_window])
    hm = {c: 100 * base["head_match"].accuracy(c) for c in coref.COLUMNS}
    n = base["nearest"].n
    # head 1-1 is right on every query: it beats head-word match by (100 - hm) points
    correct = {c: np.array([[n[c], 0]]) for c in coref.COLUMNS}
    rows = paper.coref_comparison(coref.CorefHeadAccuracy(correct, dict(n)), base)
    by = {r["quantity"]: r for r in rows}
    assert by["best head, antecedent selection accuracy (all mentions)"]["verdict"] == "not comparable"
    hm_row = by["best head minus head-word match (points, all mentions)"]
    assert hm_row["paper"] == 13 and hm_row["ours"] == pytest.approx(round(100 - hm["all"], 1))
    expected = "agrees" if 100 - hm["all"] >= 10 else ("partly agrees" if 100 > hm["all"] else "disagrees")
    assert hm_row["verdict"] == expected
    # a head that is always wrong falls below every baseline
    wrong = {c: np.zeros((1, 2), dtype=np.int64) for c in coref.COLUMNS}
    rows = {r["quantity"]: r for r in paper.coref_comparison(coref.CorefHeadAccuracy(wrong, dict(n)), base)}
    assert rows["best head minus head-word match (points, all mentions)"]["verdict"] == "disagrees"
    assert all(r["verdict"] in ("agrees", "partly agrees", "disagrees", "not comparable") for r in rows.values())


def test_probe_comparison_verdicts_follow_the_numbers():
    uas = {"right_branching": 31.6, "distances_words": 57.0, "random_init_attn_words": 20.0, "attn": 55.9,
           "attn_words": 80.0}
    rows = {r["quantity"]: r for r in paper.probe_comparison({"uas": uas})}
    assert len(rows) == len(paper.TABLE3_FINDINGS)
    words_vs_dist = rows["Attn + word vectors minus Distances + word vectors (UAS points)"]
    assert words_vs_dist["paper"] == 19.0 and words_vs_dist["ours"] == 23.0 and words_vs_dist["verdict"] == "agrees"
    # random-init below right-branching here, barely above in the paper: a sign flip
    rnd = rows["Random-init attn + word vectors minus Right-branching (UAS points)"]
    assert rnd["ours"] == -11.6 and rnd["verdict"] == "disagrees"
    assert rows["Attn + word vectors minus Attn (UAS points)"]["verdict"] == "agrees"  # +16 vs +24.1
    assert rows["Attn minus Distances + word vectors (UAS points)"]["verdict"] == "disagrees"  # +3 vs -1.1
    without = paper.probe_comparison({"uas": {k: v for k, v in uas.items() if k != "random_init_attn_words"}})
    assert len(without) == len(paper.TABLE3_FINDINGS) - 2


def test_table3_sets_the_papers_column_beside_ours():
    res = {"uas": {"right_branching": 31.6, "attn": 55.9}, "info": {
        "train": {"n_sentences": 60}, "dev": {"oov_rate": 0.05}, "n_scored_dev": 500, "epochs": 2}}
    t = paper.table3_frame(res)
    assert list(t.columns) == ["model", "key", "paper_uas", "uas"]
    assert list(t.paper_uas) == [26.0, 58.0, 30.0, 61.0, 77.0] and np.isnan(t.uas[1]) and t.uas[3] == 55.9
    report = paper.table3(res)
    assert list(report.table.columns) == ["model", "paper UAS", "UAS here"]
    assert report.numbers["probe_info"] == {"train_sentences": 60, "dev_scored_words": 500, "epochs": 2,
                                            "glove_oov_dev": 0.05}
    assert report.numbers["table3_uas"] is res["uas"]
    assert report.text.endswith("GloVe OOV rate on dev 5.0%")


def test_random_init_paragraph_follows_the_numbers():
    below = paper.random_init_markdown({"right_branching": 30.0, "random_init_attn_words": 7.9, "attn_words": 47.1})
    assert "falls **below** right-branching" in below and "4 points above it" in below
    assert "add 39.2 UAS points" in below and "(paper: 47)" in below
    above = paper.random_init_markdown({"right_branching": 26.0, "random_init_attn_words": 30.0, "attn_words": 77.0})
    assert "a small gain over right-branching, as in the paper." in above
    assert "not run" in paper.random_init_markdown({"right_branching": 26.0, "attn_words": 77.0})


def test_findings_markdown_counts_verdicts_and_lists_differences():
    rows = [
        dict(experiment="§4.2", quantity="det", paper=1, ours=1, verdict="agrees", note=""),
        dict(experiment="§4.2", quantity="poss", paper=1, ours=2, verdict="partly agrees", note=""),
        dict(experiment="§5", quantity="random", paper=4, ours=-11, verdict="disagrees", note=""),
        dict(experiment="§5", quantity="absolute", paper=77, ours=64, verdict="not comparable", note=""),
    ]
    text = paper.findings_markdown(rows, "tiny")
    assert "§4.2: 1 of 2 findings agree, 1 partly" in text
    assert "§5: 0 of 1 findings agree, 0 partly (1 not comparable)." in text
    assert "random (disagrees: paper 4, here -11)" in text and "det (" not in text
    with pytest.raises(EmptyDataError):
        paper.findings_markdown([], "tiny")


# ----------------------------------------------------------------------------- §6


def test_clustering_comparison_verdicts_follow_the_numbers():
    d = planted(n_layers=4, n_heads=5, spread=0.05, seed=1)
    lt = clusters.layer_permutation_test(d, 4, 5, n_permutations=199)
    clus = clusters.cluster_heads(d, 4, 5, n_clusters=4)
    emb = embedding.mds_embedding(d)
    names = ["attends broadly", "attends to next", "attends to previous", "attends to [CLS]"]
    behaviours = [[names[k // 5]] for k in range(20)]  # one behaviour per planted group
    rows = paper.clustering_comparison(lt, clus, emb, clusters.behaviour_test(d, behaviours, n_permutations=199))
    assert [r["verdict"] for r in rows] == ["agrees"] * 5
    # no structure at all: random distances and a single-cluster cut
    rng = np.random.default_rng(0)
    noise = squareform(pdist(rng.normal(size=(20, 8))))
    rows = paper.clustering_comparison(clusters.layer_permutation_test(noise, 4, 5, n_permutations=199),
                               clusters.cluster_heads(noise, 4, 5, n_clusters=3), embedding.mds_embedding(noise), None)
    verdicts = {r["quantity"]: r["verdict"] for r in rows}
    assert verdicts["silhouette of the average-linkage cut at k (clusters of >= 3 heads)"] == "disagrees"
    assert rows[1]["verdict"] == "not comparable"
    assert rows[2]["verdict"] == "disagrees"
    assert rows[4]["verdict"] == "disagrees"  # 8-D noise cannot be drawn faithfully in 2-D
    # outliers split off as tiny clusters do not count as clusters
    outliers = planted(n_layers=2, n_heads=6, spread=0.05, seed=3)
    outliers[0, 1:] = outliers[1:, 0] = outliers.max() * 3
    cut = clusters.cluster_heads(outliers, 2, 6, n_clusters=3)
    assert sorted(len(m) for m in cut.members.values()) == [1, 5, 6]
    row = paper.clustering_comparison(lt, cut, emb, None)[0]
    assert row["ours"].endswith("(2)") and row["verdict"] != "agrees"
    from attnbook.chapters.results import VERDICTS

    assert all(r["verdict"] in VERDICTS for r in rows)


def test_distance_setup_row_and_agreement_sentence():
    (row,) = paper.distance_setup_rows(np.array(1234), 0.25, 0.0)
    assert row["verdict"] == verdict.NOT_COMPARABLE
    assert row["ours"] == "mean over 1,234 tokens (25% of each segment), smoothing 0.0"
    rows = [{"verdict": v} for v in (verdict.AGREES, verdict.DISAGREES, verdict.AGREES, verdict.NOT_COMPARABLE)]
    text = paper.agreement_markdown(rows, "tiny", 2, 3)
    assert text.startswith("**Agreement.** Of 4 comparisons, 2 agrees, 1 disagrees, 1 not comparable.")
    assert "tiny (2 layers x 3 heads)" in text
