"""Chapter 6's head findings over several fine-tuning seeds (issue 18), with 95% intervals over the dev examples.

For each seed the task's classifier is fine-tuned (shared and cached, :func:`attnbook.studies.heads_off.effects.
classifier`), checked for having learned the task (:func:`attnbook.studies.heads_off.learned.learned_status`: a
classifier no better than its constant predictor is skipped, with its numbers), and analysed: every head masked
alone (Michel §3.2) with paired intervals (:func:`~attnbook.studies.heads_off.effects.effect_intervals`), the
importance scores ``I_h`` (§4.1), and the pruning curves by ``I_h``, by the single-head Δ (the oracle) and in
random orders (§4.2, Fig. 3) with their intervals (:func:`~attnbook.studies.michel.pruning.curve_statistics`).

Across seeds: :func:`seed_agreement` (Spearman ρ of the importance scores and of the single-head Δ between seeds,
overlap of their top heads), :func:`curve_band` (the spread of the pruning curves), and :func:`across_seeds`,
which combines per-seed estimates by the book's one seed rule (:data:`attnbook.stats.SEED_POLICY`: the seeds' spread
and each run's own error over the dev examples, with its resolution floor, :func:`with_floor`, in one interval).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from attnbook.core.errors import EmptyDataError
from attnbook.engine.jobs import seeds_for
from attnbook.engine.inputs import Batch
from attnbook.engine.models import LoadedModel
from attnbook.engine.scores import ScoreFn
from attnbook.engine.sweeps import SweepResult
from attnbook.stats import Estimate, mean_interval, over_seeds, rank_agreement
from attnbook.studies.heads_off import effects as heads_off
from attnbook.studies.heads_off.learned import Learned, learned_status
from attnbook.studies.michel import pruning as mp
from attnbook.studies.michel.importance import importance_of


@dataclass(frozen=True)
class SeedRun:
    """One fine-tuning seed's classifier and what chapter 6 measures on it (see the module's docstring): made with
    the classifier and its status (:func:`classifiers`), measured by :func:`analyse`, which returns a new, filled
    run (a stage's result is never changed afterwards)."""

    seed: int
    classifier: LoadedModel
    status: Learned
    ablation: SweepResult | None = None
    effects: pd.DataFrame | None = None
    effect_draws: np.ndarray | None = None
    importance: np.ndarray | None = None
    sweeps: dict = field(default_factory=dict)
    curves: pd.DataFrame | None = None
    curve_stats: dict = field(default_factory=dict)

    @property
    def learned(self) -> bool:
        return self.status.learned


def status_text(run: SeedRun, task: str) -> str:
    """``"seed 1: SST-2 50.2 [46.8, 53.6] on 872 dev examples, constant predictor 50.9"``: why a seed is (not)
    analysed."""
    return run.status.text(f"seed {run.seed}")


def classifiers(base: LoadedModel, task: str, recipe: Mapping[str, Any], seeds: Sequence[int]
                ) -> list[SeedRun]:
    """The classifier of every seed with its :func:`~attnbook.studies.heads_off.learned.learned_status`."""
    runs = []
    for s in seeds_for(recipe, task, seeds):
        clf = heads_off.classifier(base, task, dict(recipe), int(s))
        runs.append(SeedRun(int(s), clf, learned_status(clf, task, dict(recipe))))
    return runs


def analysed(runs: Sequence[SeedRun]) -> tuple[list[SeedRun], bool]:
    """The runs to analyse: the learned ones; when none learned, all of them (``False`` as second value: then no
    finding can be compared with the paper, and the chapter says so)."""
    good = [r for r in runs if r.learned]
    return (good, True) if good else (list(runs), False)


def analyse(run: SeedRun, task: str, dev_b: Sequence[Batch], imp_b: Sequence[Batch], score_fn: ScoreFn, *,
            step: float, random_seeds: Sequence[int], tolerance: float, n_resamples: int = 1000, seed: int = 0) -> SeedRun:
    """``run`` with its single-head ablation (paired intervals), ``I_h`` and the pruning curves (by ``I_h``, by the
    oracle -Δ, one random order per ``random_seeds``) with their :func:`~attnbook.studies.michel.pruning.
    curve_statistics`: a new :class:`SeedRun` (``run`` is left as it was). Every seed is scored on the same ``dev_b``
    with the same bootstrap draws (``seed``)."""
    clf = run.classifier
    ablation = heads_off.switched_off(clf, dev_b, "single_heads", "mask", score_fn)
    effects, effect_draws = heads_off.effect_intervals(ablation, task, n_resamples=n_resamples, seed=seed)
    importance = importance_of(clf, imp_b)
    kw = dict(step=step)
    sweeps = {mp.BY_IMPORTANCE: [mp.pruning_sweep(clf, dev_b, importance, score_fn, **kw)],
              mp.BY_ABLATION: [mp.pruning_sweep(clf, dev_b, -ablation.delta, score_fn, **kw)],
              mp.RANDOM: [mp.pruning_sweep(clf, dev_b, int(r), score_fn, **kw) for r in random_seeds]}
    frames = [mp.curve_frame(s, name, int(r) if name == mp.RANDOM else None, step=step)
              for name, group in sweeps.items()
              for r, s in zip(random_seeds if name == mp.RANDOM else [None], group)]
    curves = pd.concat(frames, ignore_index=True).assign(ft_seed=run.seed)
    curve_stats = mp.curve_statistics(sweeps, task, tolerance, n_resamples=n_resamples, seed=seed)
    return replace(run, ablation=ablation, effects=effects, effect_draws=effect_draws, importance=importance,
                   sweeps=sweeps, curves=curves, curve_stats=curve_stats)


# ----------------------------------------------------------------------------- across seeds


def with_floor(est: Estimate, floor: float | None) -> Estimate:
    """``est`` with its interval widened to at least ``floor`` either side of its value (a resolution floor: what
    the sample could not resolve, e.g. :func:`attnbook.studies.heads_off.effects.resolution` points on ``n``
    examples, or half a pruning step for a share read on the pruning grid); unchanged without ``floor`` or without
    an interval; every other field kept."""
    if not floor or not est.has_interval:
        return est
    v = float(est.value)
    return replace(est, low=min(float(est.low), v - floor), high=max(float(est.high), v + floor))


def across_seeds(estimates: Sequence[Estimate], unit: str | None = None, *, floor: float | None = None,
                 bounds: tuple[float, float] | None = None) -> Estimate:
    """Per-seed estimates combined by the book's seed rule (:func:`attnbook.stats.over_seeds`): each seed enters with
    its own interval over the dev examples (widened to ``floor`` first, :func:`with_floor`, so a run's resolution
    floor reaches the combined interval), and the result counts both the seed-to-seed spread and the examples' own
    error; clipped to ``bounds``. ``unit`` renames the result's unit (its degrees of freedom and variance components
    are kept)."""
    if not estimates:
        raise EmptyDataError("no seeds")
    est = over_seeds([with_floor(e, floor) for e in estimates], bounds=bounds)
    return replace(est, unit=unit) if unit else est


def seed_agreement(runs: Sequence[SeedRun], k: int = 10) -> dict:
    """How much the seeds agree on the heads: for every two seeds, Spearman ρ of ``I_h`` and of the single-head Δ
    (−Δ: cost of removing a head) and the share of the ``k`` most important (most costly) heads they share.

    Returns ``pairs`` (a DataFrame, one row per pair) and the means over pairs as :class:`~attnbook.stats.Estimate`
    s with a t-interval over the pairs (``rho_importance``, ``rho_ablation``, ``top_importance``, ``top_ablation``;
    no interval with fewer than two pairs; the pairs share seeds, so the interval is only indicative), and
    ``chance`` (the overlap expected at random)."""
    rows = []
    for a, b in combinations(runs, 2):
        ri = rank_agreement(a.importance, b.importance, k=k)
        ra = rank_agreement(-a.ablation.delta, -b.ablation.delta, k=k)
        rows.append({"seeds": f"{a.seed} vs {b.seed}", "rho_importance": ri["spearman"], "top_importance": ri["top_k_overlap"],
                     "rho_ablation": ra["spearman"], "top_ablation": ra["top_k_overlap"], "chance": ri["top_k_chance"]})
    pairs = pd.DataFrame(rows, columns=["seeds", "rho_importance", "top_importance", "rho_ablation", "top_ablation",
                                        "chance"])
    out: dict[str, Any] = {"pairs": pairs, "k": k}
    for col in ("rho_importance", "top_importance", "rho_ablation", "top_ablation"):
        vals = pairs[col].dropna().to_numpy()
        out[col] = mean_interval(vals, unit="seed pairs") if len(vals) else None
    out["chance"] = float(pairs["chance"].iloc[0]) if len(pairs) else None
    return out


def curve_band(runs: Sequence[SeedRun], ordering: str = mp.BY_IMPORTANCE) -> pd.DataFrame:
    """Per pruning share, the mean, min and max over seeds of the ``ordering`` curve (the spread of Fig. 3 across
    fine-tuning seeds), and the largest spread (max − min) as column ``spread``."""
    cur = pd.concat([r.curves[r.curves["ordering"] == ordering] for r in runs], ignore_index=True)
    g = cur.groupby("share_pruned")["score"]
    band = g.agg(["mean", "min", "max", "count"]).reset_index().rename(columns={"count": "n_seeds"})
    band["spread"] = band["max"] - band["min"]
    return band


def all_curves(runs: Sequence[SeedRun]) -> pd.DataFrame:
    """Every seed's curves in one frame; orderings named ``"<ordering>, seed <s>"`` except the random orders,
    which stay ``"random"`` (so a chart draws them as one band over random orders and seeds)."""
    frames = []
    for r in runs:
        c = r.curves.copy()
        named = c["ordering"] != mp.RANDOM
        if len(runs) > 1:
            c.loc[named, "ordering"] = c.loc[named, "ordering"] + f", seed {r.seed}"
        frames.append(c)
    return pd.concat(frames, ignore_index=True)


def agreement_tasks(base: LoadedModel, tasks: Sequence[str], recipe: Mapping[str, Any], seed: int, *, known: Sequence[str] = ()
                    ) -> tuple[list[str], list[str]]:
    """The ``tasks`` whose classifier (fine-tuning seed ``seed``) has learned its task, and a sentence for each one
    skipped (with its dev score and the constant predictor's). ``known`` tasks are kept without a check."""
    kept, skipped = [], []
    for task in tasks:
        if task in known:
            kept.append(task)
            continue
        run = classifiers(base, task, recipe, [seed])[0]
        (kept if run.learned else skipped).append(task if run.learned else status_text(run, task))
    return kept, skipped


# ---------------------------------------------------------------------------------------------- key numbers


def ablation_numbers(runs: Sequence[SeedRun]) -> dict:
    """Chapter 6's results-file entries of the single-head masking sweeps, per analysed seed: the unpruned
    accuracy, every head's Δ and its 95% interval."""
    return {"baseline_accuracy": {str(r.seed): r.ablation.baseline_score for r in runs},
            "ablation_delta": {str(r.seed): r.ablation.delta.round(4).tolist() for r in runs},
            "ablation_intervals": {str(r.seed): r.effects[["low", "high"]].round(3).to_numpy().tolist() for r in runs}}


def importance_numbers(runs: Sequence[SeedRun], vs_ablation: Mapping[str, Any], agreement: Mapping[str, Any]) -> dict:
    """The importance scores per seed, their agreement with the ablation (first seed) and across seeds."""
    return {"importance": {str(r.seed): r.importance.round(5).tolist() for r in runs},
            "importance_vs_ablation": dict(vs_ablation),
            "seed_agreement": agreement["pairs"].to_dict("records")}


def pruning_numbers(curves: pd.DataFrame, band: pd.DataFrame, summary: pd.DataFrame) -> dict:
    """The pruning curves of every seed and ordering, their band over seeds and the per-seed summary."""
    return {"pruning_curves": curves[["ordering", "ft_seed", "seed", "share_pruned", "score"]].to_dict("records"),
            "pruning_band_over_seeds": band.to_dict("records"), "pruning_intervals": summary.to_dict("records")}


def seed_numbers(runs: Sequence[SeedRun]) -> dict:
    """Chapter 6's results-file entries of the fine-tuning seeds: each seed's learned status (its dev score beside
    the constant predictor's) and the seeds analysed (none when no classifier learned the task, :func:`analysed`)."""
    todo, analysable = analysed(runs)
    return {"seed_status": {str(r.seed): r.status.as_dict() for r in runs},
            "analysed_seeds": [r.seed for r in todo] if analysable else []}


def one_head_numbers(best: pd.DataFrame, chosen: pd.DataFrame, one_head: Estimate) -> dict:
    """Michel §3.3's entries: the best head of each layer with the others masked (chosen on dev half A), its Δ judged
    on half B, and the Δ of keeping one head in every layer at once."""
    return {"all_but_one": best.to_dict("records"), "chosen_on_half_b": chosen.to_dict("records"),
            "one_head_per_layer_delta": one_head.as_dict()}


def across_numbers(between: str, runs: Sequence[SeedRun], across: Sequence[Estimate]) -> dict:
    """Michel §3.4's entry: per analysed seed (``runs``, in the order of ``across``), the correlation of the
    single-head Δ measured on the two sets that ``between`` names."""
    return {"ablation_agreement": {"between": between, **{str(r.seed): e.as_dict() for r, e in zip(runs, across)}}}


def task_agreement_numbers(task_pairs: Sequence[tuple[str, str, float]], halves: Mapping[str, Any],
                           skipped: Sequence[str]) -> dict:
    """Michel §3.4's agreement of ``I_h`` (Spearman ρ) between the tasks' classifiers (``task_pairs``: ``(task,
    task, rho)``) and between two halves of the importance sample, and the tasks left out (not learned)."""
    return {"importance_across_tasks": {f"{a} vs {b}": r for a, b, r in task_pairs},
            "importance_across_halves": halves, "agreement_tasks_skipped": skipped}
