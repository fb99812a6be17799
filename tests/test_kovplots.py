"""attnbook.studies.kovaleva.charts: long tables and per-task charts of Kovaleva Fig. 5-7."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.studies.kovaleva import charts as kovplots
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
    assert spec["facet"]["column"]["field"] == "task"
    assert spec["facet"]["column"]["sort"] == ["SST-2", "MRPC"]


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
    assert spec["facet"]["column"]["sort"] == ["A", "B"]


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
