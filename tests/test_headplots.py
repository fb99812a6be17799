"""Charts of switched-off heads: data behind each chart, 1-based labels, baseline and band."""
from __future__ import annotations

import numpy as np

from attnbook.studies.kovaleva import charts as kovaleva_charts
from attnbook.studies.michel import charts as michel_charts
import pandas as pd
import pytest

from attnbook.studies.heads_off import charts as headplots


def values_of(chart_dict):
    """All inline data rows of a (layered / concatenated) Vega-Lite spec."""
    rows = []
    for ds in chart_dict.get("datasets", {}).values():
        rows.extend(ds)
    return rows


def test_sweep_frame_marks_better_and_significant_heads():
    scores = np.array([[80.0, 82.0, 79.0], [81.0, 80.0, 75.0]])
    sig = np.zeros_like(scores, dtype=bool)
    sig[1, 2] = True
    df = headplots.sweep_frame(scores, 80.0, sig)
    row = df.set_index("label")
    assert row.loc["1-2", "delta"] == pytest.approx(2.0) and bool(row.loc["1-2", "better"])
    assert bool(row.loc["2-3", "significant"]) and not bool(row.loc["1-1", "significant"])
    assert not bool(row.loc["1-1", "better"])  # equal to the baseline is not better
    with pytest.raises(ValueError):
        headplots.sweep_frame(scores, 80.0, sig[:1])


def test_sweep_heatmap_centres_colour_on_the_baseline():
    scores = np.array([[80.0, 82.0], [79.0, 80.5]])
    spec = headplots.sweep_heatmap(scores, 80.0, "t").to_dict()
    assert "baseline 80.00" in str(spec["title"])
    rows = values_of(spec)
    assert {r["label"] for r in rows} == {"1-1", "1-2", "2-1", "2-2"}
    assert sorted(r["mark"] for r in rows if r["label"] in ("1-2", "2-2")) == ["+", "+"]
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domainMid"] == 0 and scale["domain"] == [-2.0, 2.0]


def test_layer_bars_draw_the_baseline_rule():
    spec = headplots.layer_sweep_bars(np.array([60.0, 63.2, 58.0]), 60.0, "RTE").to_dict()
    rows = values_of(spec)
    assert any(r.get("baseline") == 60.0 for r in rows)
    bars = [r for r in rows if "layer" in r]
    assert [r["layer"] for r in bars] == [1, 2, 3] and bars[1]["delta"] == pytest.approx(3.2)


def test_random_band_aggregates_over_seeds():
    curves = pd.DataFrame({
        "ordering": ["random"] * 4 + ["importance"] * 2,
        "seed": [0, 0, 1, 1, None, None],
        "share_pruned": [0.0, 0.5, 0.0, 0.5, 0.0, 0.5],
        "score": [90.0, 70.0, 90.0, 80.0, 90.0, 88.0],
    })
    band = michel_charts.random_band(curves)
    assert band["share_pruned"].tolist() == [0.0, 0.5]
    assert band.loc[1, "mean"] == pytest.approx(75.0) and band.loc[1, "min"] == 70 and band.loc[1, "max"] == 80
    assert band.loc[1, "n_runs"] == 2 and band.loc[0, "std"] == 0
    assert michel_charts.random_band(curves[curves["ordering"] != "random"]).empty
    spec = michel_charts.pruning_chart(curves.assign(newly_pruned=""), 90.0, "p").to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert "area" in marks and marks.count("rule") == 1


def test_importance_heatmap_and_scatter_use_one_based_labels():
    v = np.arange(6.0).reshape(2, 3)
    rows = values_of(michel_charts.importance_heatmap(v).to_dict())
    assert {r["label"]: r["value"] for r in rows}["2-3"] == 5.0
    rows = values_of(headplots.method_scatter(v, -v, "x", "y").to_dict())
    pts = [r for r in rows if "label" in r]
    assert {r["label"]: (r["x"], r["y"]) for r in pts}["1-2"] == (1.0, -1.0)


def test_share_strip_highlights_the_given_heads():
    v = np.arange(6.0).reshape(2, 3) / 10
    rows = values_of(kovaleva_charts.share_strip(v, [(1, 0)], chance=0.05).to_dict())
    picked = {r["label"] for r in rows if r.get("picked")}
    assert picked == {"2-1"}
    assert any(r.get("v") == 0.05 for r in rows)
