"""Michel et al.'s charts and the chapter's tables: data behind each chart, 1-based labels, the random band."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnbook.engine.sweeps import SweepResult
from attnbook.studies.michel import charts as michel_charts
from attnbook.studies.michel import pruning as mp

from test_headplots import values_of


def test_random_band_aggregates_over_seeds_and_is_drawn_behind_the_curves():
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


def test_importance_heatmap_uses_one_based_labels():
    v = np.arange(6.0).reshape(2, 3)
    rows = values_of(michel_charts.importance_heatmap(v).to_dict())
    assert {r["label"]: r["value"] for r in rows}["2-3"] == 5.0


def test_ablation_heatmap_outlines_the_significant_heads():
    scores = np.array([[50.0, 56.25], [43.75, 50.0]])
    sweep = SweepResult("single_heads", "mask", scores, 50.0, np.zeros((2, 2, 1, 2)), np.zeros((1, 2)), np.zeros(1),
                        ["1-1", "1-2", "2-1", "2-2"])
    sig = pd.DataFrame({"name": sweep.names, "significant": [False, False, True, False]})
    spec = michel_charts.ablation_heatmap(sweep, sig, "t").to_dict()
    rows = {r["label"]: r for r in values_of(spec)}
    assert rows["2-1"]["significant"] and not rows["1-2"]["significant"]
    assert rows["1-2"]["delta"] == pytest.approx(6.25)
    assert "baseline 50.00" in str(spec["title"])


def test_dynamics_chart_and_tables():
    curves = pd.DataFrame({"share_pruned": [0.0, 0.5], "relative": [100.0, 90.0], "score": [50.0, 45.0],
                           "checkpoint": ["50% of training"] * 2})
    rows = values_of(michel_charts.dynamics_chart(curves).to_dict())
    assert [r["percent"] for r in rows] == [0.0, 50.0]
    safe = {mp.BY_ABLATION: 0.25, mp.BY_IMPORTANCE: 0.5, mp.RANDOM_MEAN: 0.0}
    area = {mp.BY_ABLATION: 80.123, mp.BY_IMPORTANCE: 81.0, mp.RANDOM: 70.456}
    table = michel_charts.pruning_table(safe, area, 1.0)
    assert list(table.columns) == ["largest share pruned within 1 point(s)", "mean accuracy up to 90% pruned"]
    assert table.loc[mp.BY_IMPORTANCE].tolist() == ["50%", 81.0]
    assert table.loc[mp.RANDOM_MEAN, "mean accuracy up to 90% pruned"] == 70.46
    summary = pd.DataFrame({"unpruned": [50.0], "safe": [0.25], "rho_final": [0.5]},
                           index=pd.Index(["50% of training"], name="checkpoint"))
    html = michel_charts.dynamics_table(summary, 1.0).to_html()
    assert "safe share (1 pt)" in html and "25%" in html and "ρ(I_h, final I_h)" in html
    chosen = pd.DataFrame({"layer": [1], "head": [2], "label": ["1-2"], "delta_selection": [1.0],
                           "delta_evaluation": [-2.0], "p (half B)": [0.5], "significant": [False]})
    html = michel_charts.chosen_heads_table(chosen).to_html()
    assert "Δ on half A (chosen)" in html and "+1.00" in html and "-2.00" in html
    rho = pd.DataFrame([[1.0, 0.123], [0.123, 1.0]], index=["A", "B"], columns=["A", "B"])
    assert "0.12" in michel_charts.task_agreement_table(rho).to_html()


def test_pruning_chart_marks_the_papers_prunable_share():
    """Michel §4.2 / App. B: the paper's prunable share is drawn where a reader compares it, a vertical rule at that
    share labelled "paper"."""
    curves = pd.DataFrame({"ordering": ["importance"] * 3, "seed": [None] * 3, "share_pruned": [0.0, 0.5, 0.9],
                           "score": [90.0, 88.0, 60.0]})
    spec = michel_charts.pruning_chart(curves, 90.0, "p", paper=(0.6, "App. B, SST-2")).to_dict()
    rows = values_of(spec)
    assert {"v": 60.0, "what": "paper: 60% prunable (App. B, SST-2)"} in rows
    caption = michel_charts.pruning_caption(
        pd.DataFrame([{"ordering": "importance I_h", "safe share (1 pt)": "50% [19%, 69%]", "seed": 0}]),
        (0.6, "App. B, SST-2"), 1.0)
    assert "at most 1 point is 50% [19%, 69%]" in caption and "prunable share, 60% (App. B, SST-2)" in caption


def test_seed_agreement_table_names_its_columns_for_a_reader():
    pairs = pd.DataFrame([{"seeds": "0 vs 1", "rho_importance": 0.7251, "top_importance": 0.5, "rho_ablation": 0.0978,
                           "top_ablation": 0.3, "chance": 0.1389}])
    html = michel_charts.seed_agreement_table(pairs).to_html()
    assert "rho_importance" not in html and "ρ of I_h" in html and "0.73" in html
