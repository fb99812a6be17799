"""The charts of the Niven & Kao chapter are valid Altair and are fed the right numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from arct_items import fake_runs, toy_items
from attnbook.studies.niven_kao import charts as M
from attnbook.studies.niven_kao import cues


def test_charts_are_valid_altair():
    spec = M.cue_scatter(cues.cue_statistics(toy_items()), min_applicability=1).to_dict()
    assert "layer" in spec
    frame = pd.DataFrame({"input": ["W", "full"] * 2, "accuracy": [0.6, 0.7, 0.5, 0.5],
                          "source": ["paper", "paper", "this run", "this run"]})
    assert "layer" in M.accuracy_bars(frame).to_dict()


def test_probe_bars_frame():
    bars = M.probe_bars_frame({"full": fake_runs([0.6]), "W": fake_runs([0.55], "W")})
    assert list(bars["input"]) == ["C, R, W", "C, R, W", "W", "W"] and bars["accuracy"].iloc[0] == 0.77
    assert list(bars["source"]) == ["paper (max)", "this run (max)"] * 2 and bars["accuracy"].iloc[3] == 0.55


def test_halves_per_seed():
    adv = {"full": fake_runs([0.5, 0.5], original_half_accuracy=[0.6, 0.7], negated_half_accuracy=[0.4, 0.3])}
    frame = M.halves_frame(adv)
    assert list(frame["input"]) == ["C, R, W, seed 0", "C, R, W, seed 1"] * 2
    assert list(frame["source"]) == ["original half"] * 2 + ["negated half"] * 2
    assert list(frame["accuracy"]) == [0.6, 0.7, 0.4, 0.3]
    assert "layer" in M.halves_bars(adv).to_dict()
    assert M.halves_bars({}) is None


def test_cue_labels_are_moved_apart_until_none_overlap():
    """Issue 21: "will not" and "can not" sat on top of each other in the §4 scatter."""
    import pandas as pd

    from attnbook.studies.niven_kao.charts import label_positions

    pts = pd.DataFrame({"cue": ["will not", "can not", "not", "far"], "coverage": [0.05, 0.051, 0.052, 0.5],
                        "productivity": [0.6, 0.6, 0.61, 0.6]})
    out = label_positions(pts, "coverage", "productivity", 0.5, 0.2)
    near = out[out["cue"] != "far"]["label_y"].sort_values().to_numpy()
    assert (np.diff(near) >= 0.06 * 0.2 - 1e-12).all()  # one box height apart
    assert out.set_index("cue").loc["far", "label_y"] == 0.6  # a label with room stays at its point
