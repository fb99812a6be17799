"""Michel et al.'s figures and the chapter's tables: ablation and importance heatmaps (§3.2, §4.1), pruning
curves (Fig. 3), pruning during training (Fig. 5).

Pure functions from arrays / DataFrames to Altair charts (or styled tables); every label a reader sees is
the 1-based ``layer-head`` name. Render them with :func:`attnbook.charts.enable` active.
"""
from __future__ import annotations

from typing import Mapping

import altair as alt
import numpy as np
import pandas as pd

from attnbook.charts import head_heatmap, reference_rule
from attnbook.engine.sweeps import SweepResult
from attnbook.studies.heads_off.charts import sweep_heatmap
from attnbook.studies.michel.pruning import RANDOM, RANDOM_MEAN, random_band


def ablation_heatmap(sweep: SweepResult, significance: pd.DataFrame, title: str = "") -> alt.Chart:
    """Michel §3.2: accuracy with each head masked alone (``sweep.scores[layer, head]``), coloured by the change
    from the baseline; heads the :func:`~attnbook.studies.michel.importance.ablation_significance` table marks
    significant are outlined."""
    sig = significance["significant"].to_numpy().reshape(sweep.scores.shape)
    return sweep_heatmap(sweep.scores, sweep.baseline_score, title, significant=sig, value_title="accuracy")


def importance_heatmap(values: np.ndarray, title: str = "", *, value_title: str = "importance", cell: int = 24) -> alt.Chart:
    """Layer x head heatmap of Michel's importance scores I_h (§4.1), darker = more important."""
    return head_heatmap(values, title, value_title=value_title, scheme="greens", cell=cell)


def pruning_chart(
    curves: pd.DataFrame,
    baseline: float | None = None,
    title: str = "",
    *,
    value_title: str = "accuracy",
    width: int = 380,
    height: int = 240,
    color_field: str = "ordering",
    paper: tuple[float, str] | None = None,
) -> alt.Chart:
    """Score against the share of heads pruned (Michel Fig. 3): one line per non-random ordering,
    random orderings as their mean (dashed) with a min–max band over seeds; baseline as a rule. ``paper``: the
    paper's prunable share and where it is from (:func:`attnbook.studies.michel.paper.paper_prunable_share`),
    drawn as a vertical rule labelled "paper"."""
    rest = curves[curves["ordering"] != RANDOM].copy()
    rest["percent"] = 100 * rest["share_pruned"]
    layers = []
    band = random_band(curves)
    if len(band):
        band = band.assign(percent=100 * band["share_pruned"], ordering="random (mean, min–max)")
        layers.append(
            alt.Chart(band).mark_area(opacity=0.2, color="gray").encode(
                x=alt.X("percent:Q", title="heads pruned (%)"), y=alt.Y("min:Q", title=value_title), y2="max:Q"
            )
        )
        layers.append(
            alt.Chart(band).mark_line(color="gray", strokeDash=[4, 3]).encode(
                x="percent:Q", y="mean:Q",
                tooltip=[alt.Tooltip("percent:Q", format=".0f"), alt.Tooltip("mean:Q", format=".2f"),
                         alt.Tooltip("std:Q", format=".2f"), "n_runs:Q"],
            )
        )
    if len(rest):
        layers.append(
            alt.Chart(rest).mark_line(point=True).encode(
                x=alt.X("percent:Q", title="heads pruned (%)"),
                y=alt.Y("score:Q", title=value_title),
                color=alt.Color(f"{color_field}:N", title=None),
                tooltip=[f"{color_field}:N", alt.Tooltip("percent:Q", format=".1f"), alt.Tooltip("score:Q", format=".2f"),
                         alt.Tooltip("newly_pruned:N", title="heads pruned at this step")]
                if "newly_pruned" in rest else [f"{color_field}:N", "percent:Q", "score:Q"],
            )
        )
    if baseline is not None:
        layers.append(alt.Chart(pd.DataFrame({"baseline": [float(baseline)]})).mark_rule(
            color="orange", strokeDash=[5, 3]).encode(y="baseline:Q"))
    if paper is not None:
        share, where = paper
        low = float(min(rest["score"].min() if len(rest) else np.inf, band["min"].min() if len(band) else np.inf,
                        baseline if baseline is not None else np.inf))
        layers.append(reference_rule(100 * share, f"paper: {share:.0%} prunable ({where})", axis="x",
                                     y=min(low, 0.0), color="firebrick"))  # written low, clear of the curves
    return alt.layer(*layers).properties(title=title, width=width, height=height)


def dynamics_chart(curves: pd.DataFrame, *, width: int = 380, height: int = 240) -> alt.Chart:
    """Michel Fig. 5: per checkpoint, the score in % of its own unpruned score against the share of heads pruned
    (``curves`` from :func:`attnbook.studies.michel.dynamics.training_dynamics`)."""
    return alt.Chart(curves.assign(percent=100 * curves["share_pruned"])).mark_line(point=True).encode(
        x=alt.X("percent:Q", title="heads pruned (%)"), y=alt.Y("relative:Q", title="% of the checkpoint's accuracy"),
        color=alt.Color("checkpoint:N", sort=None), tooltip=["checkpoint:N", "percent:Q", alt.Tooltip("score:Q", format=".1f")],
    ).properties(title="Pruning curves during fine-tuning (Michel Fig. 5)", width=width, height=height)


# ----------------------------------------------------------------------------- tables


def chosen_heads_table(chosen: pd.DataFrame):
    """The head kept per layer (:func:`attnbook.studies.michel.importance.chosen_heads`), Δ on both halves, styled."""
    return (chosen.rename(columns={"delta_selection": "Δ on half A (chosen)", "delta_evaluation": "Δ on half B"})
            .style.format({"Δ on half A (chosen)": "{:+.2f}", "Δ on half B": "{:+.2f}", "p (half B)": "{:.3g}"})
            .hide(axis="index"))


#: the columns of :func:`attnbook.studies.michel.runs.seed_agreement`'s pairs, as a reader reads them
SEED_PAIR_COLUMNS = {"rho_importance": "ρ of I_h", "top_importance": "top-k overlap, I_h", "rho_ablation": "ρ of Δ",
                     "top_ablation": "top-k overlap, Δ", "chance": "chance overlap"}


def seed_agreement_table(pairs: pd.DataFrame):
    """Agreement between two fine-tuning seeds' head rankings (:func:`attnbook.studies.michel.runs.seed_agreement`'s
    ``pairs``: Spearman ρ and top-k overlap of the importance I_h and of the masking Δ), named for a reader, styled."""
    shown = pairs.rename(columns=SEED_PAIR_COLUMNS)
    return shown.style.format({c: "{:.2f}" for c in SEED_PAIR_COLUMNS.values() if c in shown}).hide(axis="index")


def task_agreement_table(rho: pd.DataFrame):
    """Spearman ρ of I_h between tasks (:func:`attnbook.studies.michel.importance.task_agreement`), styled."""
    return rho.style.format("{:.2f}").set_caption("Spearman ρ of I_h between tasks")


def pruning_table(safe: Mapping[str, float], area: Mapping[str, float], tolerance: float) -> pd.DataFrame:
    """Per ordering, the largest share pruned within ``tolerance`` points and the mean accuracy up to 90% pruned
    (:func:`~attnbook.studies.michel.pruning.safe_shares`, :func:`~attnbook.studies.michel.pruning.curve_areas`)."""
    return pd.DataFrame({f"largest share pruned within {tolerance:g} point(s)": {k: f"{v:.0%}" for k, v in safe.items()},
                         "mean accuracy up to 90% pruned": {k: round(area.get(k if k != RANDOM_MEAN else RANDOM), 2)
                                                            for k in safe}})


def dynamics_table(summary: pd.DataFrame, tolerance: float):
    """Per checkpoint: accuracy, safe share and ρ of its I_h with the final one
    (:func:`attnbook.studies.michel.dynamics.training_dynamics`'s summary), styled."""
    safe = f"safe share ({tolerance:g} pt)"
    return summary.rename(columns={"unpruned": "accuracy", "safe": safe, "rho_final": "ρ(I_h, final I_h)"}).style.format(
        {"accuracy": "{:.1f}", safe: "{:.0%}", "ρ(I_h, final I_h)": "{:.2f}"})


# ----------------------------------------------------------------------------- figure captions
def ablation_caption(effects: pd.DataFrame, task: str, seed: int) -> str:
    """Caption of :func:`ablation_heatmap`: how many heads change the accuracy beyond their interval."""
    n_sig = int(effects["significant"].sum())
    return (f"Accuracy on {task} with each head masked alone (seed {seed}), coloured by the change from all heads; "
            f"{n_sig} of {len(effects)} heads are outlined, their interval excluding no change. Michel et al. find "
            f"that most heads can be removed alone without a significant change (§3.2).")


def pruning_caption(summary: pd.DataFrame, paper: tuple[float, str], tolerance: float) -> str:
    """Caption of :func:`pruning_chart` from the pruning summary (safe share per ordering and seed, as text with its
    interval) and the paper's share (:func:`attnbook.studies.michel.paper.paper_prunable_share`)."""
    column = next((c for c in summary.columns if str(c).startswith("safe share")), None)
    ours = ""
    if column is not None:
        rows = summary[summary["ordering"].astype(str).str.startswith("importance")]
        if len(rows):
            unit = "point" if tolerance == 1 else "points"
            ours = f" Pruned by importance, the share that loses at most {tolerance:g} {unit} is {rows[column].iloc[0]}."
    share, where = paper
    return (f"Accuracy as more and more heads are masked: least important first, in the order of the single-head Δ, "
            f"and at random (gray band).{ours} The red rule is Michel et al.'s prunable share, {share:.0%} ({where}).")


def dynamics_caption(summary: pd.DataFrame) -> str:
    """Caption of :func:`dynamics_chart` from :func:`attnbook.studies.michel.dynamics` summary (``safe`` per
    checkpoint)."""
    frame = summary.reset_index()
    parts = [f"{r['checkpoint']}: {r['safe']:.0%}" for _, r in frame.iterrows() if "safe" in frame]
    return (f"Pruning curves at each fine-tuning checkpoint, as a share of that checkpoint's own accuracy; the share "
            f"of heads that can go within the tolerance: {'; '.join(parts)}. Michel et al. §6 (a translation model "
            f"trained from scratch) find the score falling with the share pruned in the first epochs.")
