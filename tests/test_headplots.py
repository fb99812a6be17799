"""Charts of switched-off heads shared by chapters 5 and 6: data behind each chart, 1-based labels, baseline."""
from __future__ import annotations

import numpy as np

from attnbook.studies.kovaleva import charts as kovaleva_charts
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


def test_method_scatter_uses_one_based_labels():
    v = np.arange(6.0).reshape(2, 3)
    rows = values_of(headplots.method_scatter(v, -v, "x", "y").to_dict())
    pts = [r for r in rows if "label" in r]
    assert {r["label"]: (r["x"], r["y"]) for r in pts}["1-2"] == (1.0, -1.0)


def test_share_strip_highlights_the_given_heads():
    v = np.arange(6.0).reshape(2, 3) / 10
    rows = values_of(kovaleva_charts.share_strip(v, [(1, 0)], chance=0.05).to_dict())
    picked = {r["label"] for r in rows if r.get("picked")}
    assert picked == {"2-1"}
    assert any(r.get("v") == 0.05 for r in rows)


def test_layer_bars_mark_the_papers_change():
    """Kovaleva Fig. 9: the paper's change for a layer is a point at baseline + change, labelled "paper"."""
    spec = headplots.layer_sweep_bars(np.array([60.0, 63.2, 58.0]), 60.0, "RTE", paper=(1, 3.2, "paper +3.2")).to_dict()
    marks = [r for r in values_of(spec) if r.get("what") == "paper +3.2"]
    assert marks and marks[0]["layer"] == 1 and marks[0]["score"] == pytest.approx(63.2)
