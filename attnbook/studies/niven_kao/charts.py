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
    applicable); the cues in ``highlight`` are labelled; a rule marks π = 1/2 (chance), a red cross the paper's
    "not" (Table 2, all splits).
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
    ref = PAPER["not_cue"]["all"]  # Niven & Kao Table 2: "not" over train, dev and test together
    paper = alt.Chart({"values": [{"coverage": ref["coverage"], "productivity": ref["productivity"],
                                   "what": "paper: \"not\""}]})
    paper = (paper.mark_point(shape="cross", size=120, color="firebrick", filled=True).encode(
        x="coverage:Q", y="productivity:Q", tooltip=["what:N", "coverage:Q", "productivity:Q"])
        + paper.mark_text(dx=-8, align="right", color="firebrick", fontSize=10).encode(
            x="coverage:Q", y="productivity:Q", text="what:N"))
    return (points + labels + chance + paper).properties(
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


# ---------------------------------------------------------------------------------------------
# figure captions: one sentence each, every number from the run's values or the paper's table
# ---------------------------------------------------------------------------------------------
def cue_caption(table, *, min_applicability: int, cue: str = "not") -> str:
    """Caption of :func:`cue_scatter`: the cue ``cue`` on all the data beside the paper's Table 2 (all splits)."""
    rows = table[table["cue"] == cue]
    paper = PAPER["not_cue"]["all"]
    ours = (f"\"{cue}\" marks the correct warrant in {float(rows['productivity'].iloc[0]):.0%} of the "
            f"{int(rows['applicability'].iloc[0])} items it applies to (coverage {float(rows['coverage'].iloc[0]):.0%})"
            if len(rows) else f"\"{cue}\" applies to no item")
    return (f"Every warrant cue that applies to at least {min_applicability} items, by coverage and productivity, "
            f"chance dashed: {ours}; Niven & Kao's Table 2 gives productivity {paper['productivity']:.0%} and coverage "
            f"{paper['coverage']:.0%} over all splits (red cross).")


def probe_caption(frame) -> str:
    """Caption of the §5 bars from :func:`probe_bars_frame`: this run's accuracy per input beside the paper's."""
    ours = frame[frame["source"].str.startswith("this run")].set_index("input")["accuracy"]
    paper = frame[frame["source"].str.startswith("paper")].set_index("input")["accuracy"]
    parts = "; ".join(f"{k} {ours[k]:.0%} (paper {paper[k]:.0%})" for k in ours.index if k in paper.index)
    return (f"Mean test accuracy over seeds by what the model sees, this run beside Niven & Kao's BERT Large (Table 3), "
            f"chance dashed: {parts}. A model that reads the warrants alone close to the full input's score learned "
            f"the warrants' cues.")


def halves_caption(adversarial: Mapping[str, Any]) -> str:
    """Caption of :func:`halves_bars`: the mean sum of the two halves' accuracies per input (1: the claim ignored)."""
    parts = []
    for k, f in adversarial.items():
        total = np.asarray(f[f"{HALVES[0]}_accuracy"], dtype=float) + np.asarray(f[f"{HALVES[1]}_accuracy"], dtype=float)
        parts.append(f"{INPUTS[k]} {float(np.mean(total)):.2f}")
    return (f"Each seed's accuracy on the two halves of the adversarial test set (originals and their claim-negated "
            f"copies): a model that ignores the claim gives both copies one answer, so its two accuracies sum to one. "
            f"Mean sum per input: {'; '.join(parts)}.")
