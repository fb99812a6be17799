"""Michel, Levy & Neubig (2019) in chapter 6's sentences: prose generated from this run's numbers and rows.

Which seeds are analysed (:func:`seeds_markdown`), the §3-§4 measurements in words, what of the paper is not
reproduced (:func:`not_reproduced_markdown`) and the closing summary: :func:`agreement_markdown` is
:func:`attnbook.verdict.summary_markdown` of the rows, :func:`setting_markdown` the
sentence of setting that goes with it (what was fine-tuned, on how many seeds and dev examples).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from attnbook import verdict
from attnbook.stats import Estimate
from attnbook.studies.michel.paper.claims import NOT_REPRODUCED
from attnbook.studies.michel.paper.rows import no_effect_counts
from attnbook.studies.michel.runs import status_text
from attnbook.verdict import Comparison


# ---------------------------------------------------------------------------------------------
# the chapter's sentences
# ---------------------------------------------------------------------------------------------
def not_reproduced_markdown() -> str:
    """What of the paper this chapter does not reproduce (:data:`NOT_REPRODUCED`)."""
    return f"**Not reproduced here:** {NOT_REPRODUCED}."


def seeds_markdown(runs: Sequence[Any], task: str, analysable: bool) -> str:
    """Which fine-tuning seeds are analysed, and which are skipped because their classifier did not learn the task
    (with the numbers: the dev score's interval against the constant predictor's score)."""
    good = [r for r in runs if r.learned]
    bad = [r for r in runs if not r.learned]
    parts = []
    if good:
        parts.append(f"Analysed: {'; '.join(status_text(r, task) for r in good)}.")
    if bad and analysable:
        parts.append("Skipped, not better than always giving one answer: "
                     f"{'; '.join(status_text(r, task) for r in bad)}.")
    if not analysable:
        parts.append(f"**No seed learned {task}** ({'; '.join(status_text(r, task) for r in bad)}): the analyses below "
                     "run on these classifiers to show the method, but no finding is compared with the paper "
                     "(every row is marked not comparable).")
    return " ".join(parts)


def ablation_markdown(run: Any, tolerance: float) -> str:
    """§3.2 in words for one seed: the baseline, how many heads surely change the score by less than ``tolerance``
    points, how many surely change it (up or down), how many the data cannot decide, the range of Δ."""
    a, u, n = no_effect_counts(run.effects, tolerance)
    e = run.effects
    down, up = int((e["high"] < 0).sum()), int((e["low"] > 0).sum())
    d = run.ablation.delta
    return (f"Seed {run.seed}: baseline {run.ablation.baseline_score:.1f} on {len(run.ablation.gold)} dev examples. "
            f"Of {n} heads, **{a}** surely change the score by less than {tolerance:g} point(s) (paired interval), "
            f"**{u}** cannot be decided on this sample; {down} surely lower it and {up} surely raise it. "
            f"Δ ranges from {d.min():+.2f} to {d.max():+.2f} points.")


def one_head_markdown(chosen: pd.DataFrame, one_head: Estimate, tolerance: float) -> str:
    """§3.3 in words: layers where keeping only the chosen head surely changes nothing / is undecided, and one head
    per layer everywhere at once."""
    a, u, n = no_effect_counts(chosen, tolerance)
    return (f"Layers where keeping only the chosen head surely changes the score by less than {tolerance:g} point(s) "
            f"on the other half: **{a} of {n}** ({u} undecided). Keeping only those heads in *every* layer at once "
            f"({n} heads in all) changes the score by **{one_head.text('+.1f')}** points.")


def seeds_agreement_markdown(agreement: Mapping[str, Any], band: pd.DataFrame) -> str:
    """The cross-seed agreement in words: ρ of I_h and of Δ between seeds, top-k overlap, the spread of the I_h
    pruning curves over seeds."""
    if agreement.get("rho_importance") is None:
        return "Only one fine-tuning seed was analysed: no agreement across seeds to report."
    k = agreement["k"]
    f = lambda e: "n/a" if e is None else e.text(".2f")  # noqa: E731
    worst = band.loc[band["spread"].idxmax()]
    return (f"Across fine-tuning seeds (mean over {len(agreement['pairs'])} pair(s)): Spearman ρ of I_h "
            f"{f(agreement['rho_importance'])}, of the single-head Δ {f(agreement['rho_ablation'])}; of the top {k} "
            f"heads, {f(agreement['top_importance'])} are shared by I_h and {f(agreement['top_ablation'])} by cost "
            f"of removal (chance {agreement['chance']:.2f}). The I_h pruning curves of the seeds differ by up to "
            f"{worst['spread']:.1f} points (at {worst['share_pruned']:.0%} pruned).")


def across_markdown(between: str, runs: Sequence[Any], across: Sequence[Estimate]) -> str:
    """The correlation of single-head Δ across two sets of data, per seed (§3.4)."""
    return (f"{between}, Pearson r (95% interval over the dev examples): "
            + "; ".join(f"seed {r.seed} {e.text('.2f')}" for r, e in zip(runs, across)) + ".")


def importance_markdown(seed: int, vs_ablation: Mapping[str, float]) -> str:
    """How far I_h (§4.1) ranks heads like the cost of removing them one at a time (§3.2), for one seed."""
    return (f"Seed {seed}: importance against the single-head ablation (−Δ, how much removing the head costs): "
            f"Spearman ρ = {vs_ablation['spearman']:.2f}.")


def halves_markdown(task: str, halves: Mapping[str, float], not_learned: Sequence[str]) -> str:
    """Importance on two halves of the training sample, and the tasks left out of the comparison across tasks."""
    return (f"Importance on two disjoint halves of the {task} training sample: Spearman ρ = {halves['spearman']:.2f}; "
            f"top-10 heads shared: {halves['top_k_overlap']:.0%} (chance {halves['top_k_chance']:.0%}). "
            + (f"Left out of the comparison across tasks, not learned: {'; '.join(not_learned)}." if not_learned else ""))


def disable_vs_mask_markdown(km: Mapping[str, float], disabled_delta, masked_delta) -> str:
    """Disabling (uniform attention) against masking (a zero gate) of the same heads."""
    return (f"Spearman ρ = **{km['spearman']:.2f}** (p = {km['spearman_p']:.2g}), Pearson r = {km['pearson']:.2f}; "
            f"of the 10 heads whose removal costs most, {km['top_k_overlap']:.0%} are shared (chance "
            f"{km['top_k_chance']:.0%}). Mean Δ: disabled {float(disabled_delta.mean()):+.2f}, masked "
            f"{float(masked_delta.mean()):+.2f}.")


# ---------------------------------------------------------------------------------------------
# the closing summary
# ---------------------------------------------------------------------------------------------
def setting_markdown(model_name: str, task: str, n_dev: int, n_seeds: int, analysable: bool) -> str:
    """The setting of the chapter's closing summary: the classifiers compared with the paper's (``model_name``
    fine-tuned on ``task``, ``n_seeds`` analysed seeds, ``n_dev`` dev examples scored after each intervention), and
    that no row is compared when none of them learned the task."""
    return (f"The classifiers here are {model_name} fine-tuned on {task} ({n_seeds} analysed seed(s), {n_dev} dev "
            "examples scored after each intervention); the paper's is bert-base fine-tuned on MNLI."
            + ("" if analysable else " None of them is better than its constant predictor, so no row is compared."))


def agreement_markdown(rows: Sequence[Comparison], setting: str = "") -> str:
    """The chapter's closing summary, computed from its rows by :func:`attnbook.verdict.summary_markdown` (outcomes
    counted per experiment, the rows that differ or cannot be decided listed with their numbers), with ``setting``
    (:func:`setting_markdown`) as its sentence of context when given."""
    return verdict.summary_markdown(rows, setting)
