"""Every Altair chart of the Niven & Kao chapter: the warrant cues (§4) and the accuracies (§5, §6).

* :func:`cue_scatter`: coverage against productivity of every warrant cue (§4);
* :func:`accuracy_bars`: grouped bars of accuracy with a chance line, fed by :func:`probe_bars_frame`
  (Table 3's BERT beside this run, §5) or :func:`halves_frame` (the two halves of the adversarial
  test set per seed, §6; :func:`halves_bars`).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from attnbook.studies.niven_kao.pairwise import INPUTS, summarize
from attnbook.studies.niven_kao.cues import top_cues
from attnbook.studies.niven_kao.paper import PAPER


def label_positions(points, x: str, y: str, x_range: float, y_range: float, *, width: float = 0.12,
                    height: float = 0.06):
    """``points`` with a ``label_y`` column: where each point's text label goes so that no two labels overlap.

    Labels start at their point's ``y``; taken by increasing ``x``, a label whose box (``width`` x ``height``, as
    shares of ``x_range`` and ``y_range``) would overlap an already placed one moves up by one box height until it
    is clear. Returns a copy, sorted by ``x``."""
    out = points.sort_values(x).copy()
    w, h = width * (x_range or 1.0), height * (y_range or 1.0)
    placed: list[tuple[float, float]] = []
    ys = []
    for px, py in zip(out[x].astype(float), out[y].astype(float)):
        ly = py
        while any(abs(px - qx) < w and abs(ly - qy) < h for qx, qy in placed):
            ly += h
        placed.append((px, ly))
        ys.append(ly)
    out["label_y"] = ys
    return out


def cue_scatter(table, *, min_applicability: int = 20, highlight: Iterable[str] = ("not",), n_max: int = 400):
    """Altair scatter of cue coverage (x) against productivity (y), one point per cue (§4).

    Shows cues with applicability ≥ ``min_applicability`` (at most ``n_max``, the most
    applicable); the cues in ``highlight`` are labelled; a rule marks π = 1/2 (chance).
    """
    import altair as alt

    data = top_cues(table, min_applicability=min_applicability, by="applicability", n=n_max).copy()
    data["kind"] = np.where(data["order"] == 1, "unigram", "bigram")
    data["highlight"] = data["cue"].isin(list(highlight))
    base = alt.Chart(data)
    points = base.mark_circle(opacity=0.6).encode(
        x=alt.X("coverage:Q", title="coverage ξ (share of items the cue applies to)"),
        y=alt.Y("productivity:Q", title="productivity π (share where it marks the correct warrant)",
                scale=alt.Scale(zero=False)),
        color=alt.Color("kind:N", title="cue"),
        size=alt.Size("applicability:Q", legend=None, scale=alt.Scale(range=[15, 200])),
        tooltip=["cue", "applicability", alt.Tooltip("productivity:Q", format=".3f"),
                 alt.Tooltip("coverage:Q", format=".3f")],
    )
    placed = label_positions(data[data["highlight"]], "coverage", "productivity", data["coverage"].max(),
                             data["productivity"].max() - data["productivity"].min())
    labels = alt.Chart(placed).mark_text(dx=8, align="left", fontWeight="bold").encode(
        x="coverage:Q", y="label_y:Q", text="cue:N"
    )
    chance = alt.Chart({"values": [{"y": 0.5}]}).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    return (points + labels + chance).properties(
        width=480, height=320, title=f"Warrant cues with applicability ≥ {min_applicability}"
    )


def accuracy_bars(frame, *, x: str = "input", y: str = "accuracy", color: str = "source", chance: float = 0.5):
    """Altair grouped bars of accuracy by input (or model), one bar per ``color`` group, with a chance rule.

    ``frame`` is a pandas DataFrame with columns ``x``, ``y`` and ``color``
    (e.g. input ∈ {W, R+W, C+W, full}, source ∈ {paper, this run}).
    """
    import altair as alt

    order = list(dict.fromkeys(frame[x]))
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X(f"{x}:N", sort=order, title=None),
        xOffset=alt.XOffset(f"{color}:N"),
        y=alt.Y(f"{y}:Q", scale=alt.Scale(domain=[0, 1]), title=y),
        color=alt.Color(f"{color}:N", title=None),
        tooltip=[x, color, alt.Tooltip(f"{y}:Q", format=".3f")],
    )
    rule = alt.Chart({"values": [{"y": chance}]}).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    return (bars + rule).properties(width=360, height=260)


def probe_bars_frame(bert: Mapping[str, Any], column: str = "test_accuracy", stat: str = "max"):
    """Long frame for :func:`accuracy_bars`: the paper's Table 3 BERT ``stat`` and ours, by input (§5)."""
    import pandas as pd

    rows = []
    for inputs in INPUTS:
        if inputs not in bert:
            continue
        paper, ours = PAPER["table3"]["BERT"][inputs][stat], summarize(bert[inputs][column])[stat]
        rows.append({"input": INPUTS[inputs], "accuracy": paper, "source": f"paper ({stat})"})
        rows.append({"input": INPUTS[inputs], "accuracy": ours, "source": f"this run ({stat})"})
    return pd.DataFrame(rows)


#: the two halves of the adversarial test set, as columns ``<half>_accuracy`` of a run's frame
HALVES = ("original_half", "negated_half")


def halves_frame(adversarial: Mapping[str, Any]):
    """Long frame for :func:`accuracy_bars`: every seed's accuracy on each half of the adversarial test set (§6)."""
    import pandas as pd

    return pd.DataFrame(
        [{"input": f"{INPUTS[k]}, seed {s}", "accuracy": a, "source": half.replace("_", " ")}
         for k, f in adversarial.items() for half in HALVES
         for s, a in zip(f["seed"], f[f"{half}_accuracy"])]
    )


def halves_bars(adversarial: Mapping[str, Any]):
    """Bars of :func:`halves_frame` per seed, or ``None`` when no adversarial run was made."""
    frame = halves_frame(adversarial)
    if not len(frame):
        return None
    return accuracy_bars(frame).properties(title="Adversarial test accuracy on the two halves, per seed")
