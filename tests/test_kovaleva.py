"""attnbook.studies.kovaleva.paper: the paper's numbers and the comparison rows of chapters 4 and 5."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnbook.studies.kovaleva import paper as kovaleva
from attnbook import verdict
from attnbook.core.errors import EmptyDataError
from attnbook.chapters.results import VERDICTS
from attnbook.studies.kovaleva.patterns import CLASSES


def test_most_changed_layers_and_change_comparisons():
    cos = np.ones((6, 4))
    cos[5] = 0.2  # last layer changed most
    cos[4] = 0.5
    assert kovaleva.most_changed_layers(cos) == [5, 4]
    other = np.ones((6, 4))
    other[0] = 0.1  # first layer changed most
    other[5] = 0.6
    rows = kovaleva.change_comparisons({"A": cos, "B": other})
    assert rows[0]["verdict"] == "partly agrees"  # A hits, B misses
    assert "A: 5+6" in rows[0]["ours"] and "B: 1+6" in rows[0]["ours"]
    assert rows[1]["verdict"] == "partly agrees" and rows[1]["ours"] == "1 of 2 tasks"
    assert kovaleva.change_comparisons({"A": cos})[0]["verdict"] == "agrees"


def _table(ours: dict) -> pd.DataFrame:
    rows = []
    for (task, init), value in ours.items():
        rows.append({"task": task, "init": init, "metric": "accuracy", "paper": {"pretrained": 50.0, "random_ft": 60.0,
                     "pretrained_ft": 90.0}[init], "ours": value, "note": "", "n_dev": 10, "n_train": 20})
    return pd.DataFrame(rows)


def test_table1_comparisons_cells_wins_and_gain():
    df = _table({("A", "pretrained"): 52.0, ("A", "random_ft"): 70.0, ("A", "pretrained_ft"): 88.0,
                 ("B", "pretrained"): 50.0, ("B", "random_ft"): 75.0, ("B", "pretrained_ft"): 60.0,
                 ("C", "pretrained"): 49.0, ("C", "random_ft"): float("nan"), ("C", "pretrained_ft"): float("nan")})
    rows = kovaleva.table1_comparisons(df)
    cells = {r["quantity"]: r["verdict"] for r in rows}
    assert cells["A, pretrained"] == "agrees"
    assert cells["A, random_ft"] == "partly agrees"  # 10 points off
    assert cells["B, pretrained_ft"] == "disagrees"  # 30 points off
    assert cells["C, random_ft"] == "not comparable"
    wins = next(r for r in rows if r["quantity"].startswith("pre-trained + FT beats"))
    assert wins["ours"] == "1 of 2" and wins["verdict"] == "partly agrees"
    gain = next(r for r in rows if r["quantity"].startswith("mean gain"))
    assert gain["paper"] == pytest.approx(40.0)  # A and B only: (90-50) each
    assert gain["ours"] == pytest.approx(((88 - 52) + (60 - 50)) / 2)
    assert all(r["verdict"] in VERDICTS for r in rows)


def test_taxonomy_comparisons_ranges():
    f_in = np.array([0.4, 0.05, 0.1, 0.0, 0.45])  # vertical 40 %, heterogeneous 45 %
    f_out = np.array([0.1, 0.05, 0.05, 0.0, 0.8])
    rows = kovaleva.taxonomy_comparisons(0.8, {"A": f_in, "B": f_out}, CLASSES, label_share_vertical=0.38)
    by = {r["quantity"]: r for r in rows}
    assert by["CNN F1 on the labelled maps"]["verdict"] == "partly agrees"
    assert by["Vertical share of the labelled maps"]["verdict"] == "partly agrees"
    assert by["Heterogeneous share per task"]["verdict"] == "partly agrees"
    assert by["Vertical share per task"]["verdict"] == "partly agrees"
    only_in = kovaleva.taxonomy_comparisons(0.86, {"A": f_in}, CLASSES)
    assert all(r["verdict"] == "agrees" for r in only_in)


def test_framenet_comparisons():
    mean = np.full((2, 3), 0.1)
    mean[1, 2] = 0.22
    heads = {"mean": mean, "heads": [(1, 2, 0.22)], "lift": np.full((2, 3), 1.5)}
    rows = kovaleva.framenet_comparisons(heads, 51, 6)
    by = {r["quantity"]: r for r in rows}
    assert by["annotated instances after the filter"]["verdict"] == "not comparable"
    assert by["heads above the 99th percentile"]["ours"] == "1 of 6"
    assert by["largest mean max-attention on a frame link"]["verdict"] == "agrees"  # 0.22 vs 0.209
    assert by["top head: frame elements / other words"]["ours"] == 1.5
    none = kovaleva.framenet_comparisons({"mean": mean, "heads": []}, 0, 6)
    assert none[1]["verdict"] == "disagrees"


def _features(cls_peak_layer: int, sep_peak_layer: int, cls_top: str, diag_head: bool) -> dict:
    shape = (4, 3)
    r = {f"received/{f}": np.full(shape, 0.01) for f in kovaleva.LINGUISTIC}
    r["received/[CLS]"] = np.full(shape, 0.1)
    r["received/[CLS]"][cls_peak_layer] = 0.5
    r["received/[SEP]"] = np.full(shape, 0.1)
    r["received/[SEP]"][sep_peak_layer] = 0.4
    for f in ("[SEP]", "[CLS]", "punctuation") + kovaleva.LINGUISTIC:
        r[f"cls/{f}"] = np.full(3, 0.01)
    r[f"cls/{cls_top}"] = np.full(3, 0.5)
    r["pair/verb_subject"] = np.zeros(shape)
    r["pair/verb_subject"][2, 1] = 0.3
    r["prev"] = np.zeros(shape)
    r["next"] = np.zeros(shape)
    (r["prev"] if diag_head else r["next"])[2, 1 if diag_head else 0] = 0.9
    return r


def test_feature_comparisons_rules():
    ft = {"MRPC": _features(0, 3, "[SEP]", True), "RTE": _features(3, 0, "[SEP]", False)}
    pre = {t: {k: v.copy() for k, v in r.items()} for t, r in ft.items()}
    pre["MRPC"]["received/noun"] = pre["MRPC"]["received/noun"] - 0.4  # a large gain on MRPC
    rows = {r["quantity"]: r for r in kovaleva.feature_comparisons(ft, pre)}
    assert rows["[CLS]/[SEP] dominate linguistic features (max head, x)"]["verdict"] == "agrees"
    assert rows["[CLS] peaks in an earlier layer than [SEP]"]["ours"] == "1 of 2 tasks"
    assert rows["largest fine-tuning gain of a linguistic feature"]["verdict"] == "partly agrees"
    assert rows["last-layer [CLS] attends most to"]["verdict"] == "partly agrees"  # RTE: paper says punctuation
    assert rows["best verb->subject head is a previous/next-word head"]["ours"] == "1 of 2 tasks"


def test_top_cls_feature_and_peak_layer():
    r = {"cls/a": np.array([0.1, 0.2]), "cls/b": np.array([0.3, 0.3])}
    assert kovaleva.top_cls_feature(r, ["a", "b", "c"]) == "b"
    with pytest.raises(EmptyDataError):
        kovaleva.top_cls_feature({}, ["a"])
    assert kovaleva.peak_layer(np.array([[0.1, 0.1], [0.3, 0.0], [0.2, 0.2]])) == 2


def test_agreement_markdown_counts_and_names():
    rows = [dict(experiment="Table 1", quantity="A, pretrained", verdict="agrees"),
            dict(experiment="Table 1", quantity="A, random_ft", verdict="disagrees"),
            dict(experiment="§4.3 Fig. 5", quantity="last layers", verdict="disagrees"),
            dict(experiment="§4.1", quantity="F1", verdict="agrees")]
    text = kovaleva.agreement_markdown(rows, "tiny")
    assert "Of 4 comparisons" in text and "2 agrees" in text and "2 disagrees" in text
    assert "within 5 points of the paper: 1 of the 2 run here" in text
    assert "§4.3 Fig. 5: last layers" in text and "§4.1: F1" in text
    assert kovaleva.agreement_markdown([], "tiny").startswith("*No")


def test_constant_predictor_flagged_in_table1_rows():
    import pandas as pd

    from attnbook.studies.kovaleva import paper as kovaleva

    df = pd.DataFrame([
        dict(task="MRPC", init="pretrained_ft", ours=81.2, paper=87.9, metric="F1", n_dev=408, n_train=1000,
             note="", top_class_share=1.0),
        dict(task="SST-2", init="pretrained_ft", ours=79.2, paper=92.0, metric="accuracy", n_dev=500, n_train=2000,
             note="", top_class_share=0.55),
        dict(task="MRPC", init="pretrained", ours=36.2, paper=0.0, metric="F1", n_dev=408, n_train=0,
             note="", top_class_share=1.0),
    ])
    assert kovaleva.constant_predictors(df) == ["MRPC (pretrained_ft)"]
    rows = kovaleva.table1_comparisons(df)
    notes = {r["quantity"]: r["note"] for r in rows}
    assert "constant" in notes["MRPC, pretrained_ft"]
    assert "constant" not in notes["SST-2, pretrained_ft"] and "constant" not in notes["MRPC, pretrained"]


def test_fig2_comparisons_are_the_taxonomy_rows_of_fig2():
    f = {"A": np.array([0.4, 0.05, 0.1, 0.0, 0.45])}
    assert kovaleva.fig2_comparisons({}, CLASSES) == []
    rows = kovaleva.fig2_comparisons(f, CLASSES)
    assert [r["quantity"] for r in rows] == ["Heterogeneous share per task", "Vertical share per task"]
    assert rows == [r for r in kovaleva.taxonomy_comparisons(0.8, f, CLASSES) if r["experiment"] == "§4.1 Fig. 2"]


def test_table1_note_names_missing_tasks_and_constant_predictors():
    df = pd.DataFrame([
        dict(task="SST-2", init="pretrained_ft", ours=50.0, paper=92.0, note="", top_class_share=1.0),
        dict(task="QQP", init="pretrained", ours=float("nan"), paper=0.0,
             note="not run: dev.tsv not in the data directory", top_class_share=float("nan")),
        dict(task="QQP", init="random_ft", ours=float("nan"), paper=0.0,
             note="not run: dev.tsv and train.tsv not in the data directory", top_class_share=float("nan")),
    ])
    text = kovaleva.table1_note(df, 12.4)
    assert "took 12 CPU seconds" in text and "Not run: QQP (dev.tsv not in the data directory)" in text
    assert "**Warning:** SST-2 (pretrained_ft) answer one class for at least 95%" in text
    assert "Warning" not in kovaleva.table1_note(df.assign(top_class_share=0.5), 0)


def _baselines(scores: dict, trivial: dict) -> pd.DataFrame:
    return pd.DataFrame([{"task": t, "metric": "accuracy", "this run": s, "constant predictor": trivial[t]}
                         for t, s in scores.items()])


def test_baselines_beside_table1_and_weak_classifiers():
    b = _baselines({"SST-2": 80.0, "MRPC": 81.0, "XYZ": 50.0}, {"SST-2": 50.0, "MRPC": 81.2, "XYZ": 45.0})
    out = kovaleva.beside_table1(b)
    assert list(out.columns)[-1] == "Kovaleva Table 1" and "Kovaleva Table 1" not in b
    assert out["Kovaleva Table 1"].iloc[0] == kovaleva.PAPER_TABLE1["SST-2"]["pretrained_ft"][0] == 92.0
    assert np.isnan(out["Kovaleva Table 1"].iloc[2])
    assert kovaleva.weak_classifiers(b) == ["MRPC"]  # 50.0 vs 45.0 is exactly the margin: not weak
    assert kovaleva.caution_markdown([]) == ""
    assert "MRPC score within 5 points of a constant predictor" in kovaleva.caution_markdown(["MRPC"])


def _disabling_rows(head_delta, layer_delta, matches=None, surviving=None, profile="quick"):
    tasks = list(head_delta)
    return kovaleva.disabling_comparisons(
        head_delta, layer_delta, {t: "1-1" for t in tasks}, surviving or {t: [] for t in tasks},
        {t: [True] + [False] * (len(layer_delta[t]) - 1) for t in tasks}, matches or {}, 3, profile)


def test_disabling_comparisons_rules():
    heads = {"MRPC": np.array([[0.5, -1.0], [0.0, -2.0]]), "RTE": np.array([[-0.5, -1.0], [-0.1, -2.0]])}
    layers = {"MRPC": np.array([-1.0, -3.0]), "RTE": np.array([2.0, -0.5])}
    rows = _disabling_rows(heads, layers, surviving={"MRPC": ["1-1"], "RTE": []})
    by = {r["quantity"]: r for r in rows}
    first = by["tasks where disabling some head improves the score"]
    assert first["paper"] == "7 of 7" and first["ours"] == "1 of 2" and first["verdict"] == verdict.PARTLY
    assert first["note"] == "survive Holm: 1 of 2 tasks"
    mrpc = by["MRPC: best single-head gain (points)"]
    assert mrpc["paper"] == 1.2 and mrpc["ours"] == 0.5 and mrpc["verdict"] == verdict.AGREES
    assert mrpc["note"] == "head 1-1; survives Holm"
    rte = by["RTE: best single-head gain (points)"]
    assert rte["paper"] == "> 0 (figure)" and rte["verdict"] == verdict.DISAGREES
    assert by["MRPC: mean change from disabling a random head"]["ours"] == -0.625
    assert by["MRPC: mean change from disabling a random head"]["verdict"] == verdict.DISAGREES
    layer1 = by["RTE: disabling layer 1 (points)"]
    assert layer1["paper"] == 3.2 and layer1["verdict"] == verdict.AGREES and layer1["note"] == "significant after Holm"
    assert by["tasks where disabling some layer improves the score"]["ours"] == "1 of 2"
    drop = by["largest drop from disabling a layer (points)"]
    assert drop["ours"] == -3.0 and drop["verdict"] == verdict.NOT_COMPARABLE and "quick profile" in drop["note"]
    assert _disabling_rows(heads, layers, profile="paper")[-1]["note"] == ""
    assert all(r["verdict"] in VERDICTS for r in rows)
    assert not any(r["experiment"] == "§5" for r in rows)


def test_disabling_comparisons_word_matching_rows():
    heads = {"STS-B": np.ones((2, 2)), "RTE": np.ones((2, 2))}
    layers = {"STS-B": np.ones(2), "RTE": np.ones(2)}
    matches = {"STS-B": {"percentiles": {"2-1": 0.9, "1-1": 0.7}, "hurting_heads": ["1-1", "2-1"]},
               "RTE": {"percentiles": {"2-1": 0.5, "1-2": 0.4}, "hurting_heads": ["1-2", "2-1"]}}
    rows = [r for r in _disabling_rows(heads, layers, matches) if r["experiment"] == "§5"]
    sts, rte, both = rows
    assert sts["ours"] == "80%" and sts["verdict"] == verdict.AGREES and sts["note"] == "2-1: 90%, 1-1: 70%"
    assert sts["paper"] == "high (4-1, 2-12, by inspection)"
    assert rte["ours"] == "45%" and rte["verdict"] == verdict.DISAGREES
    assert both["paper"] == "2 (4-1, 2-12)" and both["ours"] == 1 and both["note"] == "2-1"
    assert both["verdict"] == verdict.PARTLY
    assert "most harmful to disable for both STS-B and RTE" in both["quantity"]
    one = [r for r in _disabling_rows({"RTE": heads["RTE"]}, {"RTE": layers["RTE"]}, {"RTE": matches["RTE"]})
           if r["experiment"] == "§5"]
    assert len(one) == 1


def test_disabling_findings_counts_outcomes():
    rows = [dict(verdict=verdict.AGREES), dict(verdict=verdict.DISAGREES), dict(verdict=verdict.AGREES)]
    text = kovaleva.disabling_findings(rows, {"SST-2": ["3-4"], "RTE": []}, "tiny", 2, 100, ["RTE"])
    assert text.startswith("**Agreement.** Of 3 comparisons, 2 agrees, 1 disagrees.")
    assert "Holm correction: SST-2: 3-4." in text and "tiny (2 layers), scored on 100 dev examples" in text
    assert text.endswith("The classifiers for RTE are close to a constant predictor, so their rows say little about "
                         "the paper's claims.")
    assert "correction: none." in kovaleva.disabling_findings(rows, {"RTE": []}, "tiny", 2, 1, [])
