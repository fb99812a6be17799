"""Kovaleva §4.1: the book's labelled maps (loading, regenerating the maps) and the annotation widget."""
from __future__ import annotations

import json

import numpy as np
import pytest

from attnbook.core.errors import MalformedInputError, ParameterError
from attnbook.studies.kovaleva import inputs as I
from attnbook.studies.kovaleva import labels as L
from attnbook.studies.kovaleva import patterns as PT


def test_shipped_labels_load_and_are_consistent():
    header, labels = L.load_pattern_labels()
    assert 350 <= len(labels) <= 450
    assert header["classes"] == list(PT.CLASSES)
    keys = [(m.task, m.split, m.row, m.layer, m.head) for m in labels]
    assert len(set(keys)) == len(keys), "a map is listed twice"
    for m in labels:
        assert m.task in {"SST-2", "MRPC", "RTE", "STS-B", "QNLI"} and m.split == "dev"
        assert 0 <= m.layer < 6 and 0 <= m.head < 12 and m.row >= 0
        assert 2 < (m.n_tokens or 0) <= 128
        assert m.proposed in PT.CLASS_INDEX
    # the file's sampling note is what sample_label_ids gives (16 rows x 5 heads per task)
    assert len({(m.task, m.row) for m in labels}) == 5 * 16


def test_label_record_is_a_review_that_can_be_checked():
    """Issue 17 defect 6: the old file gave every map a 'label' and a 'how' derived from label == proposed, so
    it recorded no review that could be checked. Now only the maps of a stated blind review carry a class
    (``reviewed``), the header's review record (how many, the sample, counts, the rules' agreement) must equal
    the maps, and a map nobody reviewed has no label. On the old file this fails: there is no header["review"],
    and every map has a label."""
    header, labels = L.load_pattern_labels()
    review = header["review"]
    rev = L.reviewed_maps(labels)
    assert len(rev) == review["how_many"] >= 200
    assert review["blind"] is True and review["who"] and review["when"]
    # the stated sample is the reviewed set
    picked = L.review_sample(labels, per_task=50, seed=17)
    assert "per_task=50, seed=17" in review["sample"]
    assert sorted(picked) == [i for i, m in enumerate(labels) if m.reviewed is not None]
    assert {c: sum(m.reviewed == c for m in rev) for c in PT.CLASSES} == review["counts"]
    agr = L.agreement(labels)
    assert (agr["k"], agr["n"]) == (review["rules_agree"]["k"], review["rules_agree"]["n"])
    assert agr["k"] < agr["n"], "a review that never disagrees with the rules is not evidence of a review"
    assert agr["low"] < agr["share"] < agr["high"]
    unreviewed = [m for m in labels if m.reviewed is None]
    assert len(unreviewed) == len(labels) - len(rev)
    with pytest.raises(ParameterError, match="not reviewed"):
        unreviewed[0].label
    text = L.review_markdown(header, labels)
    assert f"{agr['k']} of {agr['n']} maps" in text and "blind" in text


def test_malformed_label_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"header": {},\n "maps": [\n  {"task": "RTE",, }\n]}')
    with pytest.raises(MalformedInputError) as exc:
        L.load_pattern_labels(bad)
    assert exc.value.line == 3
    entry = {"task": "RTE", "split": "dev", "row": 0, "layer": 0, "head": 0, "reviewed": "Spiral",
             "proposed": "Vertical", "agrees": False}
    bad.write_text(json.dumps({"header": {}, "maps": [entry]}))
    with pytest.raises(MalformedInputError, match="unknown class"):
        L.load_pattern_labels(bad)
    del entry["proposed"]
    entry["reviewed"] = "Block"
    bad.write_text(json.dumps({"header": {}, "maps": [entry]}))
    with pytest.raises(MalformedInputError, match="proposed"):
        L.load_pattern_labels(bad)
    entry["proposed"] = "Block"  # reviewed == proposed, but the record says they differ
    bad.write_text(json.dumps({"header": {}, "maps": [entry]}))
    with pytest.raises(MalformedInputError, match="agrees"):
        L.load_pattern_labels(bad)
    entry["agrees"] = True
    bad.write_text(json.dumps({"header": {}, "maps": [entry]}))
    assert L.load_pattern_labels(bad)[1][0].label == "Block"


@pytest.fixture
def glue_dir(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "glue" / "RTE").mkdir(parents=True)
    rows = ["index\tsentence1\tsentence2\tlabel",
            "0\tThe cat sat on the mat.\tA cat sat.\tentailment",
            "1\tDogs bark loudly at night.\tCats bark.\tnot_entailment",
            "2\tIt rained.\tThe ground is wet, probably.\tentailment"]
    (root / "glue" / "RTE" / "dev.tsv").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("ATTNBOOK_DATA", str(root))
    return root


def test_labelled_maps_are_regenerated_in_order(tiny_bert, glue_dir):
    texts = I.read_glue_texts("RTE")
    assert texts[1] == ("Dogs bark loudly at night.", "Cats bark.")
    lens = [len(I.encode_text(tiny_bert.tokenizer, *t)) for t in texts]
    labels = [L.LabelledMap("RTE", "dev", 2, 1, 3, "Block", "Block", lens[2]),
              L.LabelledMap("RTE", "dev", 0, 0, 1, "Diagonal", "Vertical", lens[0]),
              L.LabelledMap("RTE", "dev", 2, 0, 0, "Diagonal", None, lens[2])]
    maps, segs, y = L.labelled_maps(tiny_bert, labels)
    assert [m.shape[0] for m in maps] == [lens[2], lens[0], lens[2]]
    assert y.tolist() == [PT.CLASS_INDEX["Block"], PT.CLASS_INDEX["Vertical"], -1]  # the last was not reviewed
    from attnbook.engine.extract import collect_maps

    full = collect_maps(tiny_bert, [I.encode_text(tiny_bert.tokenizer, *texts[2])])[0]
    np.testing.assert_allclose(maps[0], full[1, 3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(maps[2], full[0, 0], rtol=1e-5, atol=1e-6)
    assert segs[0].tolist() == I.encode_text(tiny_bert.tokenizer, *texts[2]).token_type_ids

    wrong = [L.LabelledMap("RTE", "dev", 0, 0, 0, "Block", "Block", lens[0] + 1)]
    with pytest.raises(MalformedInputError, match="tokens"):
        L.labelled_maps(tiny_bert, wrong)
    # issue 19: maps of another model than the labels describe are refused, never labelled silently (a warning before)
    with pytest.raises(ParameterError, match="labels were made on maps of other.*label_model"):
        L.labelled_maps(tiny_bert, labels[:1], header={"model": {"name": "other", "fingerprint": "0" * 16}})


def test_labels_of_another_model_are_transferred_with_the_rows_not_comparable(tiny_bert):
    """Chapter 4 on a model the shipped labels do not describe (issue 19): the maps are regenerated from the
    embedded model the labels were made on, the transfer is stated, and §4.1's rows are not comparable."""
    from attnbook.stats import Estimate
    from attnbook.studies.kovaleva import paper as K

    header, _ = L.load_pattern_labels()
    source, note = L.label_model(tiny_bert, header)
    assert source.fingerprint == header["model"]["fingerprint"] and "applied" in note and tiny_bert.name in note
    assert L.label_model(source, header) == (source, "")
    with pytest.raises(ParameterError, match="neither"):
        L.label_model(tiny_bert, {"model": {"name": "x", "fingerprint": "f" * 16}})
    f1, share = Estimate(0.9, 0.85, 0.95), Estimate(0.3, 0.25, 0.35)
    shares = {"SST-2": {"Heterogeneous": Estimate(0.45, 0.4, 0.5), "Vertical": Estimate(0.4, 0.35, 0.45)}}
    plain = K.taxonomy_comparisons(f1, share, reviewed=True, n_maps=250) + K.fig2_comparisons(shares)
    moved = (K.taxonomy_comparisons(f1, share, reviewed=True, n_maps=250, transfer=note)
             + K.fig2_comparisons(shares, transfer=note))
    assert all(r.verdict != "not comparable" for r in plain)
    assert [r.verdict for r in moved] == ["not comparable"] * len(moved)
    assert all("another model" in r.rule for r in moved)


def test_annotation_widget_writes_labels_atomically_and_resumes(tmp_path):
    rng = np.random.default_rng(0)
    maps = [PT.synthetic_map(c, 12, rng)[0] for c in ("Vertical", "Diagonal", "Block")]
    ids = [{"task": "RTE", "row": i, "layer": 0, "head": i} for i in range(3)]
    out = tmp_path / "labels.json"
    w = L.annotation_widget(maps, ids, out, proposed=[0, 1, 3])
    w.buttons["Vertical"].click()
    w.buttons["Diagonal"].click()
    saved = json.loads(out.read_text())
    assert [e["label"] for e in saved["maps"]] == ["Vertical", "Diagonal"]
    assert saved["maps"][1]["row"] == 1
    assert list(tmp_path.iterdir()) == [out]  # no temporary files left behind
    # a new widget resumes at the first unlabelled map
    w2 = L.annotation_widget(maps, ids, out)
    assert w2.state["index"] == 2
    w2.buttons["Block"].click()
    assert [e["label"] for e in json.loads(out.read_text())["maps"]] == ["Vertical", "Diagonal", "Block"]
    with pytest.raises(ParameterError):
        L.annotation_widget(maps, ids[:2], out)


def test_source_files_and_proposals(glue_dir):
    labels = [L.LabelledMap("RTE", "dev", 2, 1, 3, "Diagonal", "Block"),
              L.LabelledMap("RTE", "dev", 0, 0, 1, "Vertical", "Vertical")]
    assert L.source_files(labels) == [glue_dir / "glue" / "RTE" / "dev.tsv"]
    assert L.proposed_classes(labels).tolist() == [PT.CLASS_INDEX["Diagonal"], PT.CLASS_INDEX["Vertical"]]


def test_learnable_subset_keeps_reviewed_learnable_maps():
    maps = [np.eye(4) * i for i in range(6)]
    segs = [np.zeros(4, dtype=np.int64)] * 6
    y = np.array([0, 0, -1, 1, 4, 4])  # one unreviewed map, one Diagonal (fewer than k = 2)
    labels = [L.LabelledMap("RTE", "dev", i, 0, 0, "Vertical", None if c < 0 else PT.CLASSES[c]) for i, c in enumerate(y)]
    sub = L.learnable_subset(maps, segs, y, labels, 2)
    assert sub["index"].tolist() == [0, 1, 4, 5] and sub["y"].tolist() == [0, 0, 4, 4]
    assert len(sub["maps"]) == 4 and sub["proposed"].tolist() == [0, 0, 0, 0]
    assert "Diagonal (1 maps) dropped" in sub["note"] and "Block" in sub["note"]


def test_the_tool_names_a_map_with_the_papers_head_label():
    assert L.map_description({"task": "RTE", "split": "dev", "row": 3, "layer": 7, "head": 9}) == \
        "RTE, split dev, row 3, head 8-10"
    assert L.map_description({"row": 0}) == "row 0"


def test_chapter_4s_tool_shows_the_learnable_reviewed_maps_without_suggestions(tmp_path):
    from attnbook.studies.kovaleva.pipeline import Labelled

    rng = np.random.default_rng(0)
    maps = [PT.synthetic_map(c, 12, rng)[0] for c in ("Vertical", "Diagonal")]
    labels = [L.LabelledMap("RTE", "dev", 0, 0, 1, "Block", "Vertical"),
              L.LabelledMap("RTE", "dev", 1, 2, 3, "Diagonal", None),
              L.LabelledMap("MRPC", "dev", 5, 4, 5, "Diagonal", "Diagonal")]
    learn = {"maps": maps, "index": np.array([0, 2]), "proposed": np.array([3, 1])}
    lab = Labelled({}, labels, None, "", learn, {})
    out = tmp_path / "mine.json"
    w = lab.annotation_widget(out)
    assert "map 1 of 2: RTE, split dev, row 0, head 1-2" in w.children[0].value
    assert not any(b.button_style for b in w.buttons.values())  # blind, as the review was
    w.buttons["Block"].click()
    assert json.loads(out.read_text())["maps"] == [
        {"task": "RTE", "split": "dev", "row": 0, "layer": 0, "head": 1, "label": "Block"}]
    assert "MRPC, split dev, row 5, head 5-6" in w.children[0].value
    suggested = lab.annotation_widget(tmp_path / "other.json", suggest=True)
    assert suggested.buttons["Block"].button_style == "info"


def test_the_review_record_says_what_a_reader_needs_and_nothing_of_how_the_book_was_made():
    """The header names the reviewer as a reader needs it (one reviewer, an AI model with an image viewer, not the
    paper's annotators, blind to the rules' proposals) and says nothing about how the repository was built: no
    history of earlier versions, no work sessions or helpers. The page's sentence carries the same description."""
    header, labels = L.load_pattern_labels()
    review = header["review"]
    assert "history" not in header
    assert "AI model" in review["who"] and "image viewer" in review["who"] and "Kovaleva" in review["who"]
    assert "proposals" in review["how"] and review["blind"] is True
    text = json.dumps(header)
    for word in ("issue", "session", "helper", "earlier version", "printout", "repository"):
        assert word not in text, f"the labels' header mentions {word!r}"
    page = L.review_markdown(header, labels)
    assert review["who"] in page and "without the rule set's proposals" in page
