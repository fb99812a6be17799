"""Chapter 2 chart and text helpers: right data in the charts, example choice, computed findings."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.studies.clark import charts as probeplots
from attnbook.studies.clark import syntax
from attnbook.data.conllu import Sentence
from attnbook.core.errors import EmptyDataError


def sentence(deprels: list[str]) -> Sentence:
    n = len(deprels)
    words = [f"w{i}" for i in range(n)]
    heads = [0 if r == "root" else 1 for r in deprels]
    return Sentence(ids=list(range(1, n + 1)), words=words, lemmas=words, upos=["X"] * n, xpos=["X"] * n,
                    feats=["_"] * n, head=heads, deprel=deprels, deps=["_"] * n, misc=["_"] * n)


def test_find_example_sentence_needs_every_relation_and_the_length():
    short = sentence(["root", "det", "obj"])
    long_ok = sentence(["root", "det", "obj", "case"] + ["punct"] * 30)
    good = sentence(["root", "det", "obj", "case"] + ["punct"] * 6)
    partial = sentence(["root", "det"] + ["punct"] * 8)
    sents = [short, long_ok, partial, good]
    assert probeplots.find_example_sentence(sents, ["det", "obj", "case"]) == 3
    # no sentence has everything: the one with most of the relations, preferring the length range
    assert probeplots.find_example_sentence([partial, short], ["det", "obj", "nmod:poss"]) == 1
    with pytest.raises(EmptyDataError):
        probeplots.find_example_sentence([], ["det"])


def test_relation_heatmaps_show_the_best_direction_in_percent():
    correct = np.zeros((2, 2, 3, 2), dtype=np.int64)
    correct[0, 1, 2, 1] = 9  # det: head 2-3 head->dep
    correct[1, 0, 0, 0] = 4  # nsubj: head 1-1 dep->head
    acc = syntax.HeadAccuracy(["det", "nsubj"], correct, np.array([10, 8]), np.zeros((2, 6), dtype=np.int64))
    spec = probeplots.relation_heatmaps(acc, ["det", "nsubj"]).to_dict()
    titles = [p["title"] for p in spec["hconcat"]]
    assert titles == ["det (head->dep)", "nsubj (dep->head)"]
    peaks = sorted((max(d["value"] for d in ds), max(ds, key=lambda d: d["value"])["label"])
                   for ds in spec["datasets"].values())
    assert peaks == [(50.0, "1-1"), (90.0, "2-3")]


def test_probe_weight_heatmap_places_each_head():
    import pandas as pd

    w = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "weight": [0.1, -0.2, 0.3, 0.0]})
    spec = probeplots.probe_weight_heatmap(w).to_dict()
    rows = {d["label"]: d["value"] for d in next(iter(spec["datasets"].values()))}
    assert rows == {"1-1": 0.1, "1-2": -0.2, "2-1": 0.3, "2-2": 0.0}


def test_findings_markdown_counts_verdicts_and_lists_differences():
    rows = [
        dict(experiment="§4.2", quantity="det", paper=1, ours=1, verdict="agrees", note=""),
        dict(experiment="§4.2", quantity="poss", paper=1, ours=2, verdict="partly agrees", note=""),
        dict(experiment="§5", quantity="random", paper=4, ours=-11, verdict="disagrees", note=""),
        dict(experiment="§5", quantity="absolute", paper=77, ours=64, verdict="not comparable", note=""),
    ]
    text = probeplots.findings_markdown(rows, "tiny")
    assert "§4.2: 1 of 2 findings agree, 1 partly" in text
    assert "§5: 0 of 1 findings agree, 0 partly (1 not comparable)." in text
    assert "random (disagrees: paper 4, here -11)" in text and "det (" not in text
    with pytest.raises(EmptyDataError):
        probeplots.findings_markdown([], "tiny")


def test_loss_curves_one_point_per_epoch():
    spec = probeplots.loss_curves({"attn": [2.0, 1.5], "attn_words": [2.1]}, {"attn": "Attn"}).to_dict()
    data = next(iter(spec["datasets"].values()))
    assert sorted((d["probe"], d["epoch"]) for d in data) == [("Attn", 1), ("Attn", 2), ("attn_words", 1)]
