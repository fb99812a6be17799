"""Kovaleva §4.1 pattern taxonomy: synthetic classes, features, rules, CNN, labelled set, widget."""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest
import torch

from attnbook.studies.kovaleva import taxonomy as T
from attnbook.core.errors import EmptyDataError, MalformedInputError, ParameterError


# ---------------------------------------------------------------------------------------------
# synthetic maps and features
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", T.CLASSES)
def test_synthetic_maps_are_distributions(kind):
    rng = np.random.default_rng(3)
    for n in (7, 20, 63):
        m, seg = T.synthetic_map(kind, n, rng, noise=0.1)
        assert m.shape == (n, n) and seg.shape == (n,)
        np.testing.assert_allclose(m.sum(1), 1.0, rtol=1e-5)
        assert (m >= 0).all()
        if kind == "Block":
            assert set(seg.tolist()) == {0, 1}  # Block maps are always two-sentence inputs


@pytest.mark.parametrize("kind", T.CLASSES)
def test_rules_recognise_each_synthetic_class(kind):
    rng = np.random.default_rng(11)
    preds = []
    for _ in range(25):
        n = int(rng.integers(12, 60))
        m, seg = T.synthetic_map(kind, n, rng, noise=float(rng.uniform(0, 0.2)))
        preds.append(T.classify_rules(m, seg))
    share = np.mean([p == kind for p in preds])
    assert share >= 0.8, (kind, preds)


def _layout(n: int, first_sep: int | None = None) -> np.ndarray:
    seg = np.zeros(n, dtype=np.int64)
    if first_sep is not None:
        seg[first_sep + 1 :] = 1
    return seg


def test_features_of_hand_built_maps():
    n = 20
    seg = _layout(n)
    cls_only = np.zeros((n, n))
    cls_only[:, 0] = 1
    f = T.map_features(cls_only, seg)
    assert f["special"] == pytest.approx(1) and f["cls"] == pytest.approx(1) and f["sep"] == pytest.approx(0)
    assert f["diag"] == pytest.approx(0) and f["entropy"] == pytest.approx(0, abs=1e-4)
    assert f["pair"] == 0 and f["block"] == 0

    prev = np.zeros((n, n))
    prev[0, 0] = 1  # [CLS] looks at itself (a special column)
    for i in range(1, n):
        prev[i, i - 1] = 1
    f = T.map_features(prev, seg)
    # rows 2..n-1 put all their weight on an ordinary previous token; row 1 on [CLS]; row 0 on itself ([CLS])
    assert f["prev"] == pytest.approx((n - 2) / n)
    assert f["special"] == pytest.approx(2 / n)
    assert f["next"] == pytest.approx(0) and f["self"] == pytest.approx(0)
    assert T.classify_rules(prev, seg) == "Diagonal"

    uniform = np.full((n, n), 1 / n)
    f = T.map_features(uniform, seg)
    assert f["entropy"] == pytest.approx(1, abs=1e-5)
    assert f["special"] == pytest.approx(2 / n)
    assert f["diag_lift"] == pytest.approx(1, rel=1e-4)


def test_block_feature_needs_a_pair():
    n, first_sep = 40, 18  # long enough that neither [CLS]/[SEP] nor the diagonal stand out
    seg = _layout(n, first_sep)
    block = (seg[:, None] == seg[None, :]).astype(float)
    block /= block.sum(1, keepdims=True)
    f = T.map_features(block, seg)
    assert f["pair"] == 1
    assert f["block"] == pytest.approx(1)
    assert 0 < f["block_chance"] < 1
    assert T.classify_rules(block, seg) == "Block"
    # the same picture on a one-sentence input is not a Block
    assert T.map_features(block, _layout(n))["block"] == 0


def test_batched_features_ignore_padding():
    rng = np.random.default_rng(0)
    maps = [T.synthetic_map(k, n, rng)[0] for k, n in (("Vertical", 9), ("Block", 14))]
    segs = [_layout(9), _layout(14, 6)]
    width = 14
    attn = torch.zeros(2, width, width)
    qm = torch.zeros(2, width)
    sm = torch.zeros(2, width)
    sg = torch.zeros(2, width, dtype=torch.long)
    for b, (m, s) in enumerate(zip(maps, segs)):
        n = len(s)
        attn[b, :n, :n] = torch.tensor(m)
        attn[b, n:, :n] = 1.0 / n  # padded query rows hold garbage, as a real model's do
        qm[b, :n] = 1
        sm[b, T.special_positions(s)] = 1
        sg[b, :n] = torch.tensor(s)
    batched = T.map_features_batch(attn, qm, sm, sg)
    for b, (m, s) in enumerate(zip(maps, segs)):
        single = T.map_features(m, s)
        np.testing.assert_allclose(batched[b].numpy(), [single[k] for k in T.FEATURES], rtol=1e-4, atol=1e-6)


def test_bad_inputs_raise():
    with pytest.raises(ParameterError):
        T.synthetic_map("Spiral", 10, np.random.default_rng(0))
    with pytest.raises(ParameterError):
        T.map_features(np.ones((3, 4)), np.zeros(3))
    with pytest.raises(ParameterError):
        T.synthetic_map("Block", 4, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------
# the CNN
# ---------------------------------------------------------------------------------------------
def test_cnn_has_eight_conv_layers():
    model = T.PatternCNN(size=32)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 8
    assert model(torch.zeros(3, 1, 32, 32)).shape == (3, len(T.CLASSES))
    with pytest.raises(ParameterError):
        T.PatternCNN(size=30)


def test_images_are_resized_and_scaled():
    rng = np.random.default_rng(0)
    maps = [T.synthetic_map("Diagonal", n, rng)[0] for n in (9, 40, 100)]
    imgs = T.maps_to_images(maps, size=32)
    assert imgs.shape == (3, 1, 32, 32)
    np.testing.assert_allclose(imgs.amax(dim=(-1, -2)).squeeze().numpy(), 1.0, rtol=1e-6)
    # a diagonal map stays diagonal: the diagonal of the image is darker than the far corner
    for img in imgs[:, 0]:
        assert img.diagonal().mean() > 3 * img[0, -8:].mean()


def test_cnn_learns_synthetic_classes():
    torch.set_num_threads(1)
    maps, _, y = T.synthetic_dataset(24, seed=1, lengths=(10, 48))
    test_maps, _, test_y = T.synthetic_dataset(8, seed=2, lengths=(10, 48))
    model = T.train_cnn(T.maps_to_images(maps, 32), y, epochs=15, seed=0)
    pred = T.predict_cnn(model, T.maps_to_images(test_maps, 32))
    assert T.macro_f1(test_y, pred) >= 0.8, T.confusion(test_y, pred)


def test_cross_validation_reports_and_checks_counts():
    torch.set_num_threads(1)
    maps, _, y = T.synthetic_dataset(6, seed=5, lengths=(10, 24))
    imgs = T.maps_to_images(maps, 16)
    cv = T.cross_validate_cnn(imgs, y, k=3, seed=0, epochs=2)
    assert cv["confusion"].sum() == len(y) and len(cv["fold_f1"]) == 3
    assert 0 <= cv["macro_f1"] <= 1 and cv["predictions"].shape == y.shape
    with pytest.raises(EmptyDataError):
        T.cross_validate_cnn(imgs, y, k=7, seed=0, epochs=1)  # only 6 maps per class
    tree = T.cross_validate_features(T.features_matrix(maps, [T.synthetic_layout(len(m), False, np.random.default_rng(0))
                                                              for m in maps]), y, k=3)
    assert tree["confusion"].sum() == len(y)


# ---------------------------------------------------------------------------------------------
# counting classes over a corpus
# ---------------------------------------------------------------------------------------------
TEXTS = [("The cat sat on the mat.", "It was happy."), ("A short one.", None),
         ("Paris is the capital of France.", "Berlin is the capital of Germany, and it is large.")]


def test_pattern_counter_counts_every_map(tiny_bert):
    tok = tiny_bert.tokenizer
    examples = [T.encode_text(tok, a, b) for a, b in TEXTS]
    classify = T.rule_classifier(tok.cls_token_id, tok.sep_token_id)
    res = T.pattern_proportions(tiny_bert, examples, classify, batch_size=2)
    assert res["counts"].shape == (tiny_bert.n_layers, tiny_bert.n_heads, len(T.CLASSES))
    assert res["counts"].sum() == len(examples) * tiny_bert.n_layers * tiny_bert.n_heads
    assert res["fractions"].sum() == pytest.approx(1)
    # the batched rule classifier agrees with classifying each unpadded map on its own
    from attnbook.engine.extract import collect_maps

    maps = collect_maps(tiny_bert, examples)
    expected = np.zeros_like(res["counts"])
    for ex, m in zip(examples, maps):
        for layer in range(m.shape[0]):
            for head in range(m.shape[1]):
                expected[layer, head, T.CLASS_INDEX[T.classify_rules(m[layer, head], np.array(ex.token_type_ids))]] += 1
    np.testing.assert_array_equal(res["counts"], expected)


def test_cnn_classifier_in_counter(tiny_bert):
    tok = tiny_bert.tokenizer
    examples = [T.encode_text(tok, a, b) for a, b in TEXTS]
    model = T.PatternCNN(size=16)
    res = T.pattern_proportions(tiny_bert, examples, T.cnn_classifier(model, size=16), batch_size=3)
    assert res["counts"].sum() == len(examples) * tiny_bert.n_layers * tiny_bert.n_heads


# ---------------------------------------------------------------------------------------------
# the shipped labelled set
# ---------------------------------------------------------------------------------------------
def test_shipped_labels_load_and_are_consistent():
    header, labels = T.load_pattern_labels()
    assert 350 <= len(labels) <= 450
    assert header["classes"] == list(T.CLASSES)
    keys = [(m.task, m.split, m.row, m.layer, m.head) for m in labels]
    assert len(set(keys)) == len(keys), "a map is labelled twice"
    counts = {c: sum(m.label == c for m in labels) for c in T.CLASSES}
    assert counts == header["counts"]
    assert all(n > 0 for n in counts.values()), counts
    assert sum(m.label != m.proposed for m in labels) == header["changed_by_eye"]
    for m in labels:
        assert m.task in {"SST-2", "MRPC", "RTE", "STS-B", "QNLI"} and m.split == "dev"
        assert 0 <= m.layer < 6 and 0 <= m.head < 12 and m.row >= 0
        assert 2 < (m.n_tokens or 0) <= 128
        assert m.how == ("rules, confirmed by eye" if m.label == m.proposed else "rules, corrected by eye")
    # the file's sampling note is what sample_label_ids gives (16 rows x 5 heads per task)
    assert len({(m.task, m.row) for m in labels}) == 5 * 16


def test_malformed_label_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"header": {},\n "maps": [\n  {"task": "RTE",, }\n]}')
    with pytest.raises(MalformedInputError) as exc:
        T.load_pattern_labels(bad)
    assert exc.value.line == 3
    entry = {"task": "RTE", "split": "dev", "row": 0, "layer": 0, "head": 0, "label": "Spiral",
             "proposed": "Vertical", "how": "x"}
    bad.write_text(json.dumps({"header": {}, "maps": [entry]}))
    with pytest.raises(MalformedInputError, match="unknown class"):
        T.load_pattern_labels(bad)
    del entry["how"]
    entry["label"] = "Block"
    bad.write_text(json.dumps({"header": {}, "maps": [entry]}))
    with pytest.raises(MalformedInputError, match="how"):
        T.load_pattern_labels(bad)


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
    texts = T.read_glue_texts("RTE")
    assert texts[1] == ("Dogs bark loudly at night.", "Cats bark.")
    lens = [len(T.encode_text(tiny_bert.tokenizer, *t)) for t in texts]
    labels = [T.LabelledMap("RTE", "dev", 2, 1, 3, "Block", "Block", "rules, confirmed by eye", lens[2]),
              T.LabelledMap("RTE", "dev", 0, 0, 1, "Vertical", "Diagonal", "rules, corrected by eye", lens[0]),
              T.LabelledMap("RTE", "dev", 2, 0, 0, "Diagonal", "Diagonal", "rules, confirmed by eye", lens[2])]
    maps, segs, y = T.labelled_maps(tiny_bert, labels)
    assert [m.shape[0] for m in maps] == [lens[2], lens[0], lens[2]]
    assert y.tolist() == [T.CLASS_INDEX["Block"], T.CLASS_INDEX["Vertical"], T.CLASS_INDEX["Diagonal"]]
    from attnbook.engine.extract import collect_maps

    full = collect_maps(tiny_bert, [T.encode_text(tiny_bert.tokenizer, *texts[2])])[0]
    np.testing.assert_allclose(maps[0], full[1, 3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(maps[2], full[0, 0], rtol=1e-5, atol=1e-6)
    assert segs[0].tolist() == T.encode_text(tiny_bert.tokenizer, *texts[2]).token_type_ids

    wrong = [T.LabelledMap("RTE", "dev", 0, 0, 0, "Block", "Block", "x", lens[0] + 1)]
    with pytest.raises(MalformedInputError, match="tokens"):
        T.labelled_maps(tiny_bert, wrong)
    with pytest.warns(UserWarning, match="labels were made on"):
        T.labelled_maps(tiny_bert, labels[:1], header={"model": {"name": "other", "fingerprint": "0" * 16}})


def test_glue_examples_are_seeded_samples(tokenizer, glue_dir):
    a = T.glue_examples(tokenizer, "RTE", 2, seed=4)
    b = T.glue_examples(tokenizer, "RTE", 2, seed=4)
    assert [e.meta["row"] for e in a] == [e.meta["row"] for e in b]
    assert len(T.glue_examples(tokenizer, "RTE")) == 3
    ids = T.sample_label_ids(["RTE"], rows_per_task=2, heads_per_row=3, n_layers=2, n_heads=4, seed=0)
    assert len(ids) == 6 and len(set(ids)) == 6
    assert all(0 <= r < 3 and 0 <= l < 2 and 0 <= h < 4 for _, r, l, h in ids)


# ---------------------------------------------------------------------------------------------
# pictures and the annotation widget
# ---------------------------------------------------------------------------------------------
def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def test_png_and_thumbnails(tmp_path):
    img = np.zeros((5, 7), dtype=np.uint8)
    img[2, 3] = 200
    data = T.png_bytes(img)
    assert _png_size(data) == (7, 5)
    # the pixel data decompresses to one filter byte + 7 pixels per row
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    raw = zlib.decompress(idat)
    assert len(raw) == 5 * 8 and raw[2 * 8 + 1 + 3] == 200
    rng = np.random.default_rng(0)
    maps = [T.synthetic_map(c, 20, rng)[0] for c in T.CLASSES]
    path = T.render_thumbnails(tmp_path / "t.png", maps, list(range(5)), cols=5, size=32)
    w, h = _png_size(path.read_bytes())
    assert w > 5 * 32 and h > 32
    # long maps are shrunk by maxima: a one-token stripe survives
    long = np.zeros((300, 300))
    long[:, 137] = 1
    assert (T.map_image(long, size=64) < 128).any(axis=0).sum() == 1


def test_charts_build():
    rng = np.random.default_rng(0)
    m, _ = T.synthetic_map("Vertical", 8, rng)
    spec = T.heatmap_chart(m, [f"t{i}" for i in range(8)], title="x").to_dict()
    assert spec["mark"]["type"] == "rect"
    T.class_examples_chart([m], [0]).to_dict()
    T.proportions_chart({"RTE": np.array([0.2, 0.1, 0.3, 0.1, 0.3])}).to_dict()


def test_annotation_widget_writes_labels_atomically_and_resumes(tmp_path):
    rng = np.random.default_rng(0)
    maps = [T.synthetic_map(c, 12, rng)[0] for c in ("Vertical", "Diagonal", "Block")]
    ids = [{"task": "RTE", "row": i, "layer": 0, "head": i} for i in range(3)]
    out = tmp_path / "labels.json"
    w = T.annotation_widget(maps, ids, out, proposed=[0, 1, 3])
    w.buttons["Vertical"].click()
    w.buttons["Diagonal"].click()
    saved = json.loads(out.read_text())
    assert [e["label"] for e in saved["maps"]] == ["Vertical", "Diagonal"]
    assert saved["maps"][1]["row"] == 1
    assert list(tmp_path.iterdir()) == [out]  # no temporary files left behind
    # a new widget resumes at the first unlabelled map
    w2 = T.annotation_widget(maps, ids, out)
    assert w2.state["index"] == 2
    w2.buttons["Block"].click()
    assert [e["label"] for e in json.loads(out.read_text())["maps"]] == ["Vertical", "Diagonal", "Block"]
    with pytest.raises(ParameterError):
        T.annotation_widget(maps, ids[:2], out)
