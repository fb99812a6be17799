"""Michel, Levy & Neubig (2019) beside this run: the paper's numbers, the "paper vs this run" rows of chapter 6
and the chapter's sentences about its numbers.

The measurements are :mod:`attnbook.studies.michel.importance` (§3.2–§4.1), :mod:`attnbook.studies.michel.pruning`
(§4.2–§4.3) and :mod:`attnbook.studies.michel.dynamics` (§6). Every row's outcome comes from
:mod:`attnbook.verdict`; the conditions each rule checks are in the docstring of the function that makes the
row, their thresholds in :data:`THRESHOLDS`. The paper's model is bert-base fine-tuned on MNLI unless noted.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from attnbook import verdict
from attnbook.engine.sweeps import SweepResult
from attnbook.studies.michel.pruning import BY_ABLATION, BY_IMPORTANCE, RANDOM

#: Michel et al.'s numbers used by the comparisons (section or table in the comment).
PAPER: dict[str, Any] = {
    "unchanged_heads_wmt": (88, 96),  # §3.2 / Table 1: heads of the WMT model whose removal changes nothing significant
    "layers_one_head_significant": (0, 12),  # §3.3, App. A: BERT layers where one head alone differs significantly
    "ablation_pearson_across": 0.68,  # §3.4: Pearson r of the single-head Δ, MNLI-matched vs mismatched
    "prunable_share": 0.40,  # §4.2, Fig. 3: share of BERT's heads pruned by I_h with little loss
    "table4_share": 0.50,  # §4.3, Table 4: share of heads removed for the speed test
    # §4.3, Table 4 (GTX 1080Ti): batch size -> (original ex/s, pruned ex/s, gain %)
    "table4": {1: (17.0, 17.3, 1.9), 4: (67.3, 69.1, 2.7), 16: (114.0, 134.0, 17.5), 64: (124.7, 146.6, 17.5)},
}

#: The thresholds of the rules (see each ``*_rows`` function for the conditions they enter).
THRESHOLDS: dict[str, Any] = {
    "most": 0.5,  # "most heads": more than this share
    "pearson": (0.5, 0.05),  # §3.4: r >= 0.5 agrees; r > 0 with p < 0.05 partly
    "prunable_share": (0.30, 0.15),  # §4.2: safe share at least this agrees, partly
    "one_head_loss": (5.0, 1.0),  # §3.3/§4.2: a loss of more than x tolerance points agrees, partly
    "speed_gain": (5.0, 0.0),  # §4.3: gain in % above this agrees, partly
    "above_chance": 5.0,  # points above the majority class for a classifier to have learned the task
}


def _row(experiment: str, quantity: str, paper: Any, ours: Any, outcome: str, note: str = "") -> dict:
    return dict(experiment=experiment, quantity=quantity, paper=paper, ours=ours, verdict=verdict.check(outcome),
                note=note)


def _of(pair: tuple[int, int]) -> str:
    return f"{pair[0]} of {pair[1]}"


# ---------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------
def ablation_rows(ablation: SweepResult, significance: pd.DataFrame, alpha: float) -> list[dict]:
    """§3.2, one head removed: "most heads" change nothing significantly (agrees when more than
    ``THRESHOLDS["most"]`` of the heads are not significant at ``alpha``, paired t-test, no correction, as the
    paper); "some" heads' removal raises the score (agrees when at least one does)."""
    n_sig = int(significance["significant"].sum())
    n_heads = ablation.scores.size
    n_better = int((ablation.delta > 0).sum())
    return [
        _row("§3.2", "heads whose removal does not change the score significantly",
             f"most (WMT: {_of(PAPER['unchanged_heads_wmt'])})", f"{n_heads - n_sig} of {n_heads}",
             verdict.conditions(1 - n_sig / n_heads > THRESHOLDS["most"]),
             f"paired t-test, p < {alpha}, as the paper (no correction)"),
        _row("§3.2", "heads whose removal raises the score", "some", n_better, verdict.conditions(n_better > 0)),
    ]


def one_head_rows(chosen: pd.DataFrame) -> list[dict]:
    """§3.3 with App. A: no layer changes significantly when reduced to its best head (agrees when none does on
    the held-out half, partly when at most half of the layers do)."""
    n = int(chosen["significant"].sum())
    return [_row("§3.3, App. A", "layers where one head (chosen on other data) changes accuracy significantly",
                 _of(PAPER["layers_one_head_significant"]), f"{n} of {len(chosen)}",
                 verdict.conditions(n == 0, n <= len(chosen) // 2), "chosen on dev half A, tested on half B")]


def across_rows(across: Mapping[str, float], between: str, out_of_domain: bool,
                task_pairs: Sequence[tuple[str, str, float]]) -> list[dict]:
    """§3.4: the single-head Δ on two datasets correlate (Pearson r; agrees at r >= ``THRESHOLDS["pearson"][0]``,
    partly when r > 0 at p < ``THRESHOLDS["pearson"][1]``); ``between`` names the two sets (the paper's
    out-of-domain set when ``out_of_domain``, else two halves of one dev sample). The book's extra row, ρ of
    I_h across tasks (``task_pairs`` from :func:`attnbook.studies.michel.importance.task_agreement`), is not
    comparable."""
    r, p = across["pearson"], across["pearson_p"]
    agree, alpha = THRESHOLDS["pearson"]
    return [
        _row("§3.4", "Pearson r of single-head Δ across datasets", PAPER["ablation_pearson_across"], round(r, 2),
             verdict.conditions(r >= agree, r > 0 and p < alpha),
             between if out_of_domain else "quick: two halves of one dev sample, not an out-of-domain set"),
        _row("§3.4 (book)", "Spearman ρ of I_h across tasks (mean over pairs)", "not reported",
             round(float(np.mean([rho for _, _, rho in task_pairs])), 2) if task_pairs else "n/a",
             verdict.NOT_COMPARABLE, ", ".join(f"{a}/{b} {rho:.2f}" for a, b, rho in task_pairs)),
    ]


def pruning_rows(safe: Mapping[str, float], area: Mapping[str, float], one_head_delta: float, tolerance: float
                 ) -> list[dict]:
    """§4.2: about 40% of the heads go with little loss (the safe share by I_h within ``tolerance`` points
    agrees at ``THRESHOLDS["prunable_share"][0]``, partly at ``[1]``); Fig. 3: ordering by I_h is at least as
    good as by the ablation Δ, and better than random (mean accuracy up to 90% pruned); §3.3/§4.2: one head per
    layer loses much (agrees below ``-THRESHOLDS["one_head_loss"][0] x tolerance`` points, partly below
    ``-[1] x tolerance``)."""
    s = safe[BY_IMPORTANCE]
    imp, abl, rnd = area[BY_IMPORTANCE], area[BY_ABLATION], area[RANDOM]
    agree, partly = THRESHOLDS["prunable_share"]
    big, some = THRESHOLDS["one_head_loss"]
    d = float(one_head_delta)
    return [
        _row("§4.2", "share of heads prunable by I_h with little loss", f"{PAPER['prunable_share']:.0%}", f"{s:.0%}",
             verdict.conditions(s >= agree, s >= partly), f"tolerance {tolerance:g} point(s)"),
        _row("§4.2 Fig. 3", "I_h ordering at least as good as the ablation-Δ ordering (mean accuracy to 90%)",
             "yes", f"{imp:.1f} vs {abl:.1f}", verdict.conditions(imp >= abl), "the oracle here uses the dev sample itself"),
        _row("§4.2 Fig. 3", "I_h ordering better than random (mean accuracy to 90%)", "yes (implied)",
             f"{imp:.1f} vs {rnd:.1f}", verdict.conditions(imp > rnd)),
        _row("§3.3/§4.2", "one head per layer: accuracy change", "large loss", round(d, 1),
             verdict.conditions(d < -big * tolerance, d < -some * tolerance)),
    ]


def speed_share(safe_share: float) -> float:
    """The share of heads removed for the speed test: the largest share found safe, else the paper's half."""
    return safe_share if safe_share > 0 else PAPER["table4_share"]


def speed_rows(speed: pd.DataFrame, share: float) -> list[dict]:
    """§4.3, Table 4: removing heads speeds up inference (the gain at the largest batch size agrees above
    ``THRESHOLDS["speed_gain"][0]`` %, partly above ``[1]``). The paper's is a GPU, this run's a CPU."""
    gain = float(speed["gain_pct"].iloc[-1])
    agree, partly = THRESHOLDS["speed_gain"]
    best = max(g for _, _, g in PAPER["table4"].values())
    return [_row("§4.3 Table 4", f"speed gain at batch {int(speed['batch_size'].iloc[-1])}",
                 f"{best:+.1f}% ({PAPER['table4_share']:.0%} pruned, GPU)", f"{gain:+.1f}% ({share:.0%} pruned, CPU)",
                 verdict.conditions(gain > agree, gain > partly))]


def dynamics_rows(summary: pd.DataFrame, majority: float) -> list[dict]:
    """§6, Fig. 5: heads become prunable during training (the safe share at the first checkpoint that has learned
    the task is below the final one: agrees; not above it: partly). Checkpoints within
    ``THRESHOLDS["above_chance"]`` points of the majority class have nothing to lose and are left out; with fewer
    than two left, the row is not comparable."""
    learned = summary[summary["unpruned"] >= majority + THRESHOLDS["above_chance"]]
    at_chance = [c for c in summary.index if c not in learned.index]
    paper = f"lower early, ~{PAPER['prunable_share']:.0%} later"
    quantity = "safe share early in training vs at the end"
    if len(learned) < 2:
        return [_row("§6 Fig. 5", quantity, paper, "n/a", verdict.NOT_COMPARABLE,
                     "fewer than two checkpoints above chance level")]
    early, final = learned.iloc[0], learned.iloc[-1]
    return [_row("§6 Fig. 5", quantity, paper, f"{early['safe']:.0%} at {learned.index[0]}, {final['safe']:.0%} at the end",
                 verdict.conditions(early["safe"] < final["safe"], early["safe"] <= final["safe"]),
                 f"left out, at chance level: {', '.join(at_chance)}" if at_chance else "")]


def masking_rows(disable_vs_mask: Mapping[str, float]) -> list[dict]:
    """The book's question, not the paper's: do Kovaleva's disabling and Michel's masking rank heads alike
    (Spearman ρ of their Δ)? Not comparable."""
    return [_row("book", "Spearman ρ of disabling Δ vs masking Δ (same heads)", "not reported",
                 round(disable_vs_mask["spearman"], 2), verdict.NOT_COMPARABLE,
                 "Kovaleva's uniform attention vs Michel's zero gate")]


def comparisons(*, ablation: SweepResult, significance: pd.DataFrame, chosen: pd.DataFrame,
                across: Mapping[str, float], between: str, out_of_domain: bool,
                task_pairs: Sequence[tuple[str, str, float]], safe: Mapping[str, float], area: Mapping[str, float],
                one_head_delta: float, speed: pd.DataFrame, share: float, dynamics: pd.DataFrame, majority: float,
                disable_vs_mask: Mapping[str, float], alpha: float, tolerance: float) -> list[dict]:
    """Chapter 6's "paper vs this run" rows, in the order of the paper: :func:`ablation_rows`,
    :func:`one_head_rows`, :func:`across_rows`, :func:`pruning_rows`, :func:`speed_rows`, :func:`dynamics_rows`,
    :func:`masking_rows`. Each row is a dict for :meth:`attnbook.chapters.results.ChapterResults.compare`."""
    return [*ablation_rows(ablation, significance, alpha), *one_head_rows(chosen),
            *across_rows(across, between, out_of_domain, task_pairs), *pruning_rows(safe, area, one_head_delta, tolerance),
            *speed_rows(speed, share), *dynamics_rows(dynamics, majority), *masking_rows(disable_vs_mask)]


# ---------------------------------------------------------------------------------------------
# Table 4 beside this run's speeds
# ---------------------------------------------------------------------------------------------
def table4(speed: pd.DataFrame, share: float) -> pd.DataFrame:
    """This run's examples per second (mean ± sd over repeats) of the original and the pruned model per batch
    size (:func:`attnbook.engine.pruning.pruning_speed`), with the paper's Table 4 beside (— where it has no row)."""
    paper = PAPER["table4"]
    return pd.DataFrame({
        "batch size": speed["batch_size"],
        "original (ex/s)": [f"{m:.1f} ± {s:.1f}" for m, s in zip(speed["original_mean"], speed["original_std"])],
        f"pruned {share:.0%} (ex/s)": [f"{m:.1f} ± {s:.1f}" for m, s in zip(speed["pruned_mean"], speed["pruned_std"])],
        "gain": [f"{g:+.1f}%" for g in speed["gain_pct"]],
        "paper original": [f"{paper[int(b)][0]:.1f}" if int(b) in paper else "—" for b in speed["batch_size"]],
        f"paper pruned {PAPER['table4_share']:.0%}": [
            f"{paper[int(b)][1]:.1f} ({paper[int(b)][2]:+.1f}%)" if int(b) in paper else "—" for b in speed["batch_size"]],
    })


# ---------------------------------------------------------------------------------------------
# the chapter's sentences
# ---------------------------------------------------------------------------------------------
def ablation_markdown(ablation: SweepResult, significance: pd.DataFrame, alpha: float) -> str:
    """§3.2 in words: the baseline, how many heads change the accuracy significantly, in which direction, the range of Δ."""
    sig, delta = significance["significant"], significance["delta"]
    return (f"Baseline accuracy {ablation.baseline_score:.1f}. Of {ablation.scores.size} heads, **{int(sig.sum())}** "
            f"change the accuracy significantly (t-test, p < {alpha}): {int((sig & (delta < 0)).sum())} lower it, "
            f"{int((sig & (delta > 0)).sum())} raise it; {int((ablation.delta > 0).sum())} heads' removal raises the "
            f"score at all. Δ ranges from {ablation.delta.min():+.2f} to {ablation.delta.max():+.2f} points.")


def one_head_markdown(chosen: pd.DataFrame, one_head_delta: float) -> str:
    """§3.3 in words: layers where the kept head differs significantly, and one head per layer everywhere at once."""
    return (f"Layers where keeping only the chosen head changes accuracy significantly on the other half: "
            f"**{int(chosen['significant'].sum())} of {len(chosen)}**. Keeping only those heads in *every* layer at "
            f"once (one head per layer, {len(chosen)} heads in all) changes accuracy by **{one_head_delta:+.1f}** points.")


def agreement_markdown(table: pd.DataFrame, model_name: str, task: str, baseline: float, n_dev: int,
                       majority: float) -> str:
    """The paragraph under the comparison table (``table``: :meth:`ChapterResults.table`): the outcomes counted,
    the classifier compared with the paper's, and a caution when it is within ``THRESHOLDS["above_chance"]``
    points of the majority class."""
    counts = table["agreement"].value_counts().to_dict()
    return (
        f"**Agreement.** Of {len(table)} comparisons, " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
        + f". The classifier here is {model_name} fine-tuned on {task} (accuracy {baseline:.1f} on {n_dev} dev "
        f"examples, majority class {majority:.1f}); the paper's is bert-base fine-tuned on MNLI."
        + (f" This classifier is within {THRESHOLDS['above_chance']:g} points of always predicting the majority class: "
           "its heads have little to "
           "contribute, so its ablation and pruning numbers say little about the paper's claims; they are reported as "
           "measured." if baseline < majority + THRESHOLDS["above_chance"] else "")
    )
