"""attnbook.studies.kovaleva.charts: long tables and per-task charts of Kovaleva Fig. 5-7."""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from attnbook.studies.kovaleva import charts as kovplots
from attnbook.studies.kovaleva import patterns as PT
from attnbook.core.errors import EmptyDataError, ParameterError


def test_task_frame_labels_are_one_based_and_values_placed():
    a = np.arange(6, dtype=float).reshape(2, 3)
    df = kovplots.task_frame({"MRPC": a, "RTE": -a}, "cos")
    assert len(df) == 12
    row = df[(df.task == "RTE") & (df.layer == 2) & (df["head"] == 3)].iloc[0]
    assert row["label"] == "2-3" and row["cos"] == -5.0
    with pytest.raises(ParameterError):
        kovplots.task_frame({"A": a, "B": np.zeros((3, 3))})
    with pytest.raises(ParameterError):
        kovplots.task_frame({"A": np.zeros(4)})
    with pytest.raises(EmptyDataError):
        kovplots.task_frame({})


def test_task_heatmaps_is_faceted_by_task_in_order():
    spec = kovplots.task_heatmaps({"SST-2": np.ones((2, 2)), "MRPC": np.zeros((2, 2))}, "t").to_dict()
    assert spec["facet"]["field"] == "task"
    assert spec["facet"]["sort"] == ["SST-2", "MRPC"]


def test_wide_task_heatmaps_wrap_to_the_column():
    """Issue 21: four 12-head heatmaps side by side overflowed the column (the RTE panel was cut off)."""
    from attnbook.charts import COLUMN_WIDTH

    values = {t: np.ones((12, 12)) for t in ("MRPC", "STS-B", "SST-2", "RTE")}
    spec = kovplots.task_heatmaps(values, "t").to_dict()
    per_row = spec["columns"]
    assert 1 <= per_row < 4 and per_row * (16 * 12 + 45) <= COLUMN_WIDTH
    two = kovplots.task_heatmaps({t: np.ones((2, 2)) for t in ("A", "B")}, "t").to_dict()
    assert two["columns"] == 2  # small panels stay side by side


def test_cls_frame_skips_missing_features():
    res = {"A": {"cls/[SEP]": np.array([0.5, 0.25]), "cls/noun": np.array([0.1, 0.0])},
           "B": {"cls/[SEP]": np.array([0.2, 0.2])}}
    df = kovplots.cls_frame(res, ["[SEP]", "noun", "negation"])
    assert set(df.feature) == {"[SEP]", "noun"}
    assert len(df) == 6
    assert df[(df.task == "A") & (df.feature == "[SEP]") & (df["head"] == 2)]["value"].item() == 0.25
    with pytest.raises(EmptyDataError):
        kovplots.cls_frame(res, ["verb"])
    spec = kovplots.cls_heatmaps(res, ["[SEP]", "noun"]).to_dict()
    assert spec["facet"]["sort"] == ["A", "B"]


def test_cls_heatmaps_show_the_models_own_tokens():
    res = {"A": {"cls/[SEP]": np.array([0.5, 0.25]), "cls/[CLS]": np.array([0.1, 0.0])}}
    names = {"[CLS]": "<s>", "[SEP]": "</s>"}  # RoBERTa's
    assert set(kovplots.cls_frame(res, ["[SEP]", "[CLS]"], names).feature) == {"</s>", "<s>"}
    spec = kovplots.cls_heatmaps(res, ["[SEP]", "[CLS]"], names=names).to_dict()
    assert spec["spec"]["encoding"]["y"]["sort"] == ["</s>", "<s>"]
    assert spec["spec"]["encoding"]["color"]["title"] == "attention from <s>"


def test_feature_change_frame_is_finetuned_minus_pretrained():
    ft = {"A": {"received/noun": np.full((2, 2), 0.3), "received/verb": np.zeros((2, 2))}}
    pre = {"A": {"received/noun": np.full((2, 2), 0.1)}}
    df = kovplots.feature_change_frame(ft, pre, ["noun", "verb"])
    assert set(df.feature) == {"noun"}  # verb has no pre-trained counterpart
    assert np.allclose(df["delta"], 0.2)
    with pytest.raises(EmptyDataError):
        kovplots.feature_change_frame(ft, {"B": {}}, ["noun"])
    spec = kovplots.feature_change_heatmaps(ft, pre, ["noun"]).to_dict()
    assert spec["facet"]["row"]["field"] == "feature"


def test_shares_table_percentages_and_shape_check():
    df = kovplots.shares_table({"x": np.array([0.5, 0.25, 0.25])}, ["a", "b", "c"])
    assert df.iloc[0].to_dict() == {"maps of": "x", "a": 50.0, "b": 25.0, "c": 25.0}
    with pytest.raises(ParameterError):
        kovplots.shares_table({"x": np.array([1.0])}, ["a", "b"])


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def test_png_and_thumbnails(tmp_path):
    img = np.zeros((5, 7), dtype=np.uint8)
    img[2, 3] = 200
    data = kovplots.png_bytes(img)
    assert _png_size(data) == (7, 5)
    # the pixel data decompresses to one filter byte + 7 pixels per row
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    raw = zlib.decompress(idat)
    assert len(raw) == 5 * 8 and raw[2 * 8 + 1 + 3] == 200
    rng = np.random.default_rng(0)
    maps = [PT.synthetic_map(c, 20, rng)[0] for c in PT.CLASSES]
    path = kovplots.render_thumbnails(tmp_path / "t.png", maps, list(range(5)), cols=5, size=32)
    w, h = _png_size(path.read_bytes())
    assert w > 5 * 32 and h > 32
    # long maps are shrunk by maxima: a one-token stripe survives
    long = np.zeros((300, 300))
    long[:, 137] = 1
    assert (kovplots.map_image(long, size=64) < 128).any(axis=0).sum() == 1


def test_charts_build():
    rng = np.random.default_rng(0)
    m, _ = PT.synthetic_map("Vertical", 8, rng)
    spec = kovplots.heatmap_chart(m, [f"t{i}" for i in range(8)], title="x").to_dict()
    assert spec["mark"]["type"] == "rect"
    kovplots.class_examples_chart([m], [0]).to_dict()
    kovplots.proportions_chart({"RTE": np.array([0.2, 0.1, 0.3, 0.1, 0.3])}).to_dict()


def test_share_strip_labels_close_together_go_on_separate_lines():
    """Issue 21: the "hurts most" labels of heads with nearly equal values were drawn on top of each other."""
    from attnbook.charts import stagger

    assert stagger([0.50, 0.51, 0.90, 0.515], gap=0.05) == [0, 1, 0, 2]
    values = np.zeros((2, 3))
    values[1, 1], values[1, 2] = 0.500, 0.501
    spec = kovplots.share_strip(values, [(1, 1), (1, 2)], "t").to_dict()
    dys = sorted(layer["mark"]["dy"] for layer in spec["layer"] if layer["mark"].get("type") == "text")
    assert dys == [-21, -10]


def test_feature_change_grid_splits_tasks_to_fit_the_column():
    """Issue 21: four tasks x 12 heads side by side were drawn 930 px wide and shrunk below readability."""
    from attnbook.charts import COLUMN_WIDTH

    tasks = ("MRPC", "STS-B", "SST-2", "RTE")
    ft = {t: {"received/noun": np.full((12, 12), 0.3), "received/verb": np.full((12, 12), 0.2)} for t in tasks}
    pre = {t: {"received/noun": np.full((12, 12), 0.1), "received/verb": np.full((12, 12), 0.1)} for t in tasks}
    spec = kovplots.feature_change_heatmaps(ft, pre, ["noun", "verb"], "t").to_dict()
    grids = spec["vconcat"]
    shown = [g["facet"]["column"]["sort"] for g in grids]
    assert sum(shown, []) == list(tasks) and all(len(s) * (11 * 12 + 10) + 230 <= COLUMN_WIDTH for s in shown)


def test_proportions_chart_marks_the_papers_heterogeneous_range_with_heterogeneous_at_the_bottom():
    """Kovaleva Fig. 2: Heterogeneous is stacked first, so its share reads off the axis, beside the paper's lowest
    and highest share (two rules labelled "paper")."""
    spec = kovplots.proportions_chart({"RTE": np.array([0.2, 0.1, 0.3, 0.1, 0.3])}, paper=(0.32, 0.61)).to_dict()
    rows = [r for d in spec["datasets"].values() for r in d]
    assert [r["order"] for r in rows if r.get("class") == "Heterogeneous"] == [-1]
    labels = {r["what"] for r in rows if "what" in r}
    assert labels == {"paper: Heterogeneous 32% (MRPC)", "paper: 61% (QQP)"}


def test_received_heatmaps_share_one_colour_scale():
    """Fig. 6's two rows ([SEP] received, [CLS] received) are compared, so they are drawn on one scale from 0 to the
    largest value of either (a [SEP] row on 0-0.14 beside a [CLS] row on 0-0.9 misleads)."""
    results = {"RTE": {"received/[SEP]": np.full((2, 2), 0.14), "received/[CLS]": np.full((2, 2), 0.9)}}
    spec = kovplots.received_heatmaps(results, {"received/[SEP]": "sep", "received/[CLS]": "cls"}).to_dict()
    domains = [row["spec"]["encoding"]["color"]["scale"]["domain"] for row in spec["vconcat"]]
    assert domains == [[0.0, 0.9], [0.0, 0.9]] and spec["resolve"]["scale"]["color"] == "shared"
