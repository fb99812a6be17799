"""Disabling heads and layers of fine-tuned classifiers (Kovaleva et al. §4.6, Fig. 8-9): chapter 5's numbers.

Kovaleva et al. *disable* a head by giving it uniform attention over the real tokens
(:func:`attnbook.engine.interventions.disable_heads`) and score the fine-tuned model on the dev set with
each head (Fig. 8) or layer (Fig. 9) disabled. The sweeps are
:func:`attnbook.studies.heads_off.effects.switched_off` (cached, shared with chapter 6); this module checks the
intervention on one input (:func:`disable_check`) and summarises the sweeps: the classifiers' scores on the
whole dev set against a constant predictor (:func:`dev_baselines`), the best and worst head per task
(:func:`head_summary`), the heads whose change survives the Holm correction (:func:`significance_summary`), the
layer table (:func:`layer_table`) and the changes with paired intervals over the swept dev examples
(:func:`resampled_deltas`, :func:`sweep_effects`, :func:`shared_hurting_heads`). Heads are shown 1-based
(``layer-head``).

The best head and the best layer to disable are chosen, so their gain where they were chosen is biased upwards (the
largest of many noisy changes: :func:`same_data_best` measures it that way, for the notes only). Two honest
estimates: **cross-fitting** (:func:`split_changes`, :func:`cross_fitted`) chooses on one half of the swept examples
and scores the choice on the other half, both ways, and averages the two, its interval re-doing the split, the
choice and the scoring in every bootstrap resample; and, where the sweep left dev examples out, a **held-out test**
(:func:`chosen_configs`, :func:`held_out_test`) disables the pick again on dev examples the sweep did not see
(:func:`attnbook.data.glue.load_rest`), one forward pass each.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.data.glue import GlueSplit, load_rest
from attnbook.engine import sweeps
from attnbook.engine.sweep_result import SweepResult
from attnbook.engine.extract import stream_batches
from attnbook.engine.evaluate import scored_dev
from attnbook.engine.inputs import Batch
from attnbook.engine.interventions import disable_heads
from attnbook.stats import Estimate, bootstrap_counts, percentile_interval, rank_agreement
from attnbook.studies.heads_off.effects import (dev_batches, effect_estimates, extreme_heads, halves,
                                                random_head_effect, resolution, trivial_score, weighted_scores)
from attnbook.studies.heads_off.learned import constant_outputs, metric_label, score_of, versus_constant
from attnbook.studies.heads_off.learned import learned as decide_learned
from attnbook.studies.kovaleva.crossfit import CROSS_FITTED, CrossFit, SplitChanges, cross_fitted, split_changes
from attnbook.studies.kovaleva.paper import holds_estimate
from attnbook.studies.kovaleva.table1 import score_estimate
from attnbook.studies.kovaleva.word_match import match_estimate


class _LayerMaps:
    """Reducer keeping one layer's maps ``[head, query, key]`` of a batch's first row."""

    def __init__(self, layer: int):
        self.layer = layer
        self.maps: torch.Tensor | None = None

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        self.maps = attn[0, self.layer].clone()

    def result(self) -> torch.Tensor:
        return self.maps


def disable_check(classifier: Any, batch: Batch, layer: int = 0, head: int = 0) -> dict[str, float]:
    """Kovaleva's disabling on the first input of ``batch`` (kept at the batch's padded width): with head
    ``(layer, head)`` disabled, its weights must be exactly ``1/L`` on the ``L`` real tokens and the layer's
    other heads unchanged.

    Returns ``L``, ``uniform_error`` (largest ``|alpha - 1/L|`` of the disabled head over every query row and the
    real keys) and ``other_heads_change`` (largest change of the layer's other heads).
    """

    one = Batch(batch.input_ids[:1], batch.attention_mask[:1],
                None if batch.token_type_ids is None else batch.token_type_ids[:1])
    n = int(one.attention_mask.sum())
    plain = stream_batches(classifier, [one], [_LayerMaps(layer)])[0]
    with disable_heads(classifier.model, [(layer, head)]):
        off = stream_batches(classifier, [one], [_LayerMaps(layer)])[0]
    others = [h for h in range(off.shape[0]) if h != head]
    return {"L": n, "uniform_error": float((off[head, :, :n] - 1.0 / n).abs().max()),
            "other_heads_change": float((off[others] - plain[others]).abs().max())}


def check_numbers(check: Mapping[str, float]) -> dict[str, dict]:
    """What the chapter records of :func:`disable_check`."""
    return {"disable_check": {k: check[k] for k in ("uniform_error", "other_heads_change")}}


def check_text(check: Mapping[str, float], task: str, label: str = "1-1") -> str:
    """:func:`disable_check` in one sentence (the head is the papers' 1-based ``label``)."""
    return (f"{task} example with L = {check['L']} tokens: max |alpha - 1/L| of disabled head {label} = "
            f"{check['uniform_error']:.1e}; largest change in the layer's other heads = "
            f"{check['other_heads_change']:.1e}")


def baseline_numbers(dev_table: Any, learned: Mapping[tuple[str, int], str],
                     dev_sets: Mapping[str, Any]) -> dict[str, Any]:
    """What the chapter records of :func:`dev_baselines` and the sweeps' dev sets: each classifier's dev score,
    the runs that did not learn (with the reason) and the dev examples each task's sweeps score."""
    return {"dev_baselines": dev_table.to_dict("records"),
            "not_learned": {f"{t}/seed {s}": why for (t, s), why in learned.items() if why},
            "dev_examples_swept": {t: len(d) for t, d in dev_sets.items()}}


def dev_baselines(classifiers: Mapping[str, Any], *, max_length: int = 128, batch_size: int = 64,
                  n_resamples: int = 2000, seed: int = 0,
                  caps: Mapping[str, int | None] | None = None):
    """Each task's classifier on its **whole** dev set (``caps``: a seeded sample per task instead, for the smoke
    profile; :func:`attnbook.engine.evaluate.scored_dev` caches the logits, shared with chapter 4's
    Table 1): ``(table, learned)``.

    ``classifiers`` is keyed by task or by ``(task, seed)``; ``learned`` has the same keys.
    ``table``: one row per classifier with the metric, the dev examples, this run's score with its 95% interval over
    them (:func:`attnbook.studies.kovaleva.table1.score_estimate`), the constant predictor's score and this run
    minus it, paired (:func:`~attnbook.studies.kovaleva.table1.versus_constant`). ``learned[key]``: ``""`` when the
    classifier is better than its constant predictor, else the reason (the book's one decision,
    :func:`attnbook.studies.heads_off.learned.learned`).
    """
    import pandas as pd


    rows, learned = [], {}
    for key, clf in classifiers.items():
        t, seed_of = (key if isinstance(key, tuple) else (key, None))
        out = scored_dev(clf, t, cap=dev_cap(caps, t) if caps else None, max_length=max_length,
                         batch_size=batch_size)
        logits, labels = out["logits"], out["labels"]
        est = score_estimate(t, logits, labels, n_resamples=n_resamples, seed=seed)
        verdict = decide_learned(t, logits, labels, n_resamples=n_resamples, seed=seed)
        vs = versus_constant(t, logits, labels, n_resamples=n_resamples, seed=seed)
        learned[key] = verdict.reason
        rows.append({"task": t} | ({} if seed_of is None else {"seed": seed_of}) | {
                     "metric": metric_label(t), "dev examples": f"{len(labels):,} of {int(out['n_total']):,}",
                     "this run": est.text(".1f"), "constant predictor": round(score_of(t, constant_outputs(t, labels),
                                                                                       labels), 1),
                     "this run minus constant": vs.text("+.1f"), "learned": "no" if learned[key] else "yes"})
    return pd.DataFrame(rows), learned


def baselines(single: Mapping[str, Any], dev_sets: Mapping[str, Any]):
    """One row per task: the metric, dev examples scored (of the split's total), the classifier's score with no
    head disabled (``"this run"``, 1 decimal) and a constant predictor's (:func:`~attnbook.studies.heads_off.effects.
    trivial_score`, 1 decimal). ``single[task]`` is a sweep result, ``dev_sets[task]`` the scored split."""
    import pandas as pd

    return pd.DataFrame([
        {"task": t, "metric": metric_label(t), "dev examples": len(dev_sets[t]), "of": dev_sets[t].n_total,
         "this run": round(single[t].baseline_score, 1),
         "constant predictor": round(trivial_score(t, single[t].gold), 1)}
        for t in single])


def head_summary(single: Mapping[str, Any]) -> tuple[Any, dict[str, dict]]:
    """Fig. 8 per task: ``(table, numbers)``. The table has the baseline, the best and the worst head to disable
    with their changes, the mean change of a random head and the shares of heads that help and hurt
    (:func:`~attnbook.studies.heads_off.effects.random_head_effect`); ``numbers[task]`` is what the chapter records
    (best and worst head, the effect numbers and every head's change, 4 decimals)."""
    import pandas as pd

    rows, numbers = [], {}
    for t, sweep in single.items():
        eff = random_head_effect(sweep.delta)
        best = head_label(*extreme_heads(sweep.delta, 1, largest=True)[0])
        worst = head_label(*extreme_heads(sweep.delta, 1, largest=False)[0])
        rows.append({"task": t, "baseline": sweep.baseline_score, "best head off": best, "best gain": eff["best"],
                     "worst head off": worst, "worst change": eff["worst"], "mean change (random head)": eff["mean"],
                     "heads that help": eff["share_better"], "heads that hurt": eff["share_worse"]})
        numbers[t] = {"best_head": best, "worst_head": worst, **eff, "delta": sweep.delta.round(4).tolist()}
    return pd.DataFrame(rows), numbers


def significance_summary(tables: Mapping[str, Any]) -> tuple[Any, dict[str, list[str]], dict[str, list[str]]]:
    """From each task's :func:`~attnbook.studies.heads_off.effects.holm_table`: ``(picked, gains, losses)``.

    ``picked``: the best and the worst head of each task with its change, 95% interval, test, p-value, Holm
    p-value and whether it survives; ``gains[task]`` / ``losses[task]``: the heads whose removal significantly
    helps / hurts after the correction.
    """
    import pandas as pd

    picked = []
    for t, tab in tables.items():
        for which, row in (("best", tab.loc[tab["delta"].idxmax()]), ("worst", tab.loc[tab["delta"].idxmin()])):
            picked.append({"task": t, "which": which, "head off": row["name"], "change": row["delta"],
                           "95% interval": f"[{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]", "test": row["test"],
                           "p": row.get("p_mcnemar", row["p_normal"]), "p (Holm)": row["p_holm"],
                           "survives": bool(row["significant"])})
    gains = {t: tab[(tab["delta"] > 0) & tab["significant"]]["name"].tolist() for t, tab in tables.items()}
    losses = {t: tab[(tab["delta"] < 0) & tab["significant"]]["name"].tolist() for t, tab in tables.items()}
    return pd.DataFrame(picked), gains, losses


def layer_table(layers: Mapping[str, Any], tables: Mapping[str, Any], n_layers: int):
    """Fig. 9 as a table: one row per disabled layer (1-based), one column per task, the change in points with
    ``*`` where it is significant after the Holm correction over the task's layers."""
    import pandas as pd

    return pd.DataFrame({t: [f"{d:+.2f}{'*' if s else ''}" for d, s in zip(layers[t].delta, tables[t]["significant"])]
                         for t in layers}, index=[f"layer {l + 1} off" for l in range(n_layers)])


def layer_numbers(layers: Mapping[str, Any], tables: Mapping[str, Any]) -> dict[str, dict]:
    """What the chapter records per task of Fig. 9: every layer's change and Holm p-value (4 decimals)."""
    return {t: {"delta": layers[t].delta.round(4).tolist(), "p_holm": tables[t]["p_holm"].round(4).tolist()}
            for t in layers}


def resampled_deltas(sweep: Any, task: str, *, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """Every configuration's change (points) in every bootstrap resample of the swept dev examples:
    ``[resample, *sweep.scores.shape]``; the same draws as :func:`attnbook.studies.heads_off.effects.paired_bootstrap`
    with the same ``seed`` (and as :class:`~attnbook.studies.kovaleva.word_match.WordMatchShare`'s units, which
    follow the same examples)."""
    gold = sweep.gold
    counts = bootstrap_counts(len(gold), n_resamples, seed)
    base = np.nan_to_num(weighted_scores(task, sweep.baseline_outputs, gold, counts))
    d = np.stack([np.nan_to_num(weighted_scores(task, o, gold, counts)) - base for o in sweep.flat_outputs()], axis=1)
    return d.reshape((len(counts),) + sweep.scores.shape)


def _estimate(value: float, draws: np.ndarray, n: int, *, floor: bool = True) -> Estimate:
    """A change (points) with the percentile interval of its paired bootstrap ``draws``, widened where needed to
    at least ``±`` :func:`~attnbook.studies.heads_off.effects.resolution` of ``n`` examples around it (``floor``),
    as :func:`~attnbook.studies.heads_off.effects.effect_intervals` does: a sample on which nothing flips is not
    evidence of no change."""
    lo, hi = percentile_interval(draws)
    if floor:
        f = resolution(n)
        lo, hi = min(float(lo), value - f), max(float(hi), value + f)
    return Estimate(float(value), float(lo), float(hi), int(n), "dev examples (paired)")


def same_data_best(sweep: Any, task: str, *, n_resamples: int = 2000, seed: int = 0) -> tuple[str, Estimate]:
    """The configuration whose removal helps most on all swept examples and its change there, with its own paired
    bootstrap interval (floored, :func:`_estimate`): chosen and scored on the same examples, so biased upwards
    (with 144 heads of no effect its interval lies above 0 most of the time). The notes quote it beside the
    cross-fitted or held-out gain; no row judges it."""
    delta = np.asarray(sweep.delta, dtype=np.float64).ravel()
    best = int(np.argmax(delta))
    gold = np.asarray(sweep.gold)
    counts = bootstrap_counts(len(gold), n_resamples, seed)
    base = np.nan_to_num(weighted_scores(task, sweep.baseline_outputs, gold, counts))
    d = np.nan_to_num(weighted_scores(task, sweep.flat_outputs()[best], gold, counts)) - base
    return str(sweep.names[best]), _estimate(float(delta[best]), d, len(gold))


def sweep_effects(single: Any, layers: Any, task: str, holm: Any = None, *, n_resamples: int = 2000,
                  seed: int = 0) -> dict[str, Any]:
    """Kovaleva §4.6's numbers for one task with paired 95% intervals over the ``n`` swept dev examples.

    * ``best``: the best single head's gain, **cross-fitted** (:func:`cross_fitted` on :func:`split_changes`:
      chosen on one half of the examples, scored on the other, both ways, averaged; the interval re-does the choice
      in every resample); ``best_choice``, the :class:`CrossFit` behind it (the heads each half chose);
      ``best_head``, the head chosen on all examples (the figures' pick), and ``best_same_data``, its gain there
      (:func:`same_data_best`: biased upwards, for the notes);
    * ``best_layer`` and ``best_layer_choice``: the same for the best layer to disable;
    * ``mean``: the mean change over heads (a random head's), no choice involved;
    * ``layers``: one estimate per disabled layer (floored at the sample's resolution);
    * ``head_split`` / ``layer_split``: the :class:`SplitChanges` behind the cross-fitted numbers, for choices
      across tasks (:func:`cross_fitted` over several parts);
    * ``survives``: the head chosen on all examples has a gain significant after Holm (from ``holm``, a
      :func:`~attnbook.studies.heads_off.effects.holm_table`); ``resampled``: every head's resampled changes
      (:func:`resampled_deltas`), for the §5 choices re-made in every resample; ``n``.
    """
    n = len(single.gold)
    heads = resampled_deltas(single, task, n_resamples=n_resamples, seed=seed)
    lay = resampled_deltas(layers, task, n_resamples=n_resamples, seed=seed)
    head_split = split_changes(single, task, n_resamples=n_resamples, seed=seed)
    layer_split = split_changes(layers, task, n_resamples=n_resamples, seed=seed)
    best_head = cross_fitted([head_split])
    best_layer = cross_fitted([layer_split])
    label, same = same_data_best(single, task, n_resamples=n_resamples, seed=seed)
    survives = False
    if holm is not None:
        row = holm[holm["name"] == label]
        survives = bool(len(row) and row["significant"].iloc[0] and row["delta"].iloc[0] > 0)
    return {"best_head": label, "best": best_head.estimate, "best_choice": best_head, "best_same_data": same,
            "best_layer": best_layer.estimate, "best_layer_choice": best_layer,
            "mean": _estimate(float(np.mean(single.delta)), heads.reshape(len(heads), -1).mean(1), n, floor=False),
            "layers": [_estimate(float(layers.delta[i]), lay[:, i], n) for i in range(layers.delta.shape[0])],
            "head_split": head_split, "layer_split": layer_split, "survives": survives, "resampled": heads, "n": n}


def hurting_in_resamples(resampled: np.ndarray, top_k: int) -> np.ndarray:
    """``[resample, top_k]`` flat indices of the ``top_k`` heads whose removal hurts most in each resample."""
    flat = resampled.reshape(len(resampled), -1)
    return np.argsort(flat, axis=1, kind="stable")[:, :top_k]


def shared_hurting_heads(deltas: Sequence[np.ndarray], resampled: Sequence[np.ndarray], top_k: int, needed: int
                         ) -> tuple[list[str], np.ndarray]:
    """Kovaleva §5's claim that two tasks depend on the same heads: the heads among the ``top_k`` most harmful to
    disable for both tasks (labels, on all examples) and, in each bootstrap resample (each task's examples drawn
    on their own), whether at least ``needed`` heads are shared."""
    a, b = (set(int(i) for i in np.argsort(np.asarray(d).ravel(), kind="stable")[:top_k]) for d in deltas)
    shape = np.asarray(deltas[0]).shape
    shared = sorted(head_label(*np.unravel_index(i, shape)) for i in a & b)
    ha, hb = (hurting_in_resamples(r, top_k) for r in resampled)
    n = min(len(ha), len(hb))
    hits = np.array([len(set(ha[r].tolist()) & set(hb[r].tolist())) >= needed for r in range(n)])
    return shared, hits


def match_estimates(match: Mapping[str, Mapping[str, Any]], effects: Mapping[str, Mapping[str, Any]], top_k: int, *,
                    n_resamples: int = 2000, seed: int = 0) -> dict[str, dict]:
    """Per task of ``match`` (:func:`attnbook.studies.kovaleva.word_match.hurting_heads_match`): the hurting heads'
    ``percentiles`` and their ``mean_percentile`` with its interval
    (:func:`~attnbook.studies.kovaleva.word_match.match_estimate` on the task's :func:`sweep_effects` resamples)."""

    return {t: {"percentiles": m["percentiles"],
                "mean_percentile": match_estimate(m, effects[t]["resampled"], top_k, n_resamples=n_resamples,
                                                  seed=seed)}
            for t, m in match.items()}


def shared_estimate(single: Mapping[str, Any], effects: Mapping[str, Mapping[str, Any]], tasks: Sequence[str],
                    top_k: int, needed: int) -> tuple[Estimate | None, str]:
    """Kovaleva §5 for two tasks: the share of bootstrap resamples in which they share at least ``needed`` of their
    ``top_k`` most harmful heads (:func:`shared_hurting_heads`) and the heads shared on all examples (``"none"``);
    ``(None, "")`` unless there are exactly two tasks."""

    if len(tasks) != 2:
        return None, ""
    heads, hits = shared_hurting_heads([single[t].delta for t in tasks], [effects[t]["resampled"] for t in tasks],
                                       top_k, needed)
    n = min(len(single[t].gold) for t in tasks)
    return holds_estimate(hits, n, "dev examples"), ", ".join(heads) or "none"


def dev_cap(caps: Mapping[str, int | None], task: str) -> int | None:
    """The dev examples scored for ``task``: its own entry of ``caps``, else ``caps["default"]`` (None: all)."""
    return caps.get(task, caps.get("default"))


def runs_to_sweep(learned: Mapping[tuple[str, int], str], include_unlearned: bool = False) -> list[tuple[str, int]]:
    """The ``(task, seed)`` classifiers whose head findings are analysed: those better than their constant
    predictor (``learned[key] == ""``, :func:`dev_baselines`); the others are skipped with their reason.
    ``include_unlearned`` (the smoke profile, whose classifiers learn nothing) sweeps them all, and their rows
    stay ``not comparable``."""
    return [k for k, why in learned.items() if include_unlearned or not why]


def by_task(effects: Mapping[tuple[str, int], Any]) -> dict[str, dict[int, Any]]:
    """``{(task, seed): x}`` regrouped as ``{task: {seed: x}}``."""
    out: dict[str, dict[int, Any]] = {}
    for (t, s), x in effects.items():
        out.setdefault(t, {})[s] = x
    return out


def task_reasons(learned: Mapping[tuple[str, int], str], tasks: Sequence[str]) -> dict[str, str]:
    """Task -> ``""`` when at least one of its seeds gave a classifier better than its constant predictor, else
    the reasons of its seeds (so its rows are ``not comparable``)."""
    out = {}
    for t in tasks:
        why = {s: r for (u, s), r in learned.items() if u == t}
        out[t] = "" if any(not r for r in why.values()) else "; ".join(f"seed {s}: {r}" for s, r in why.items())
    return out


def primary_runs(runs: Sequence[tuple[str, int]], tasks: Sequence[str],
                 learned: Mapping[tuple[str, int], str] | None = None) -> dict[str, tuple[str, int]]:
    """Task -> its first analysed ``(task, seed)`` (the run the figures show), a learned one first when
    ``learned`` is given; tasks with none are left out."""
    out: dict[str, tuple[str, int]] = {}
    ordered = sorted(runs, key=lambda k: bool((learned or {}).get(k)))  # stable: learned runs first
    for t, s in ordered:
        if t in tasks and t not in out:
            out[t] = (t, s)
    return {t: out[t] for t in tasks if t in out}


def verdict_inputs(effects: Mapping[tuple[str, int], Any], learned: Mapping[tuple[str, int], str],
                   main: Mapping[str, tuple[str, int]], tasks: Sequence[str]) -> tuple[dict, dict, dict]:
    """What :func:`attnbook.studies.kovaleva.paper.disabling_comparisons` takes: ``(effects, learned, seed_effects)``
    per task: the primary run's effects, the reason a task's rows are not comparable (its primary run's, or every
    seed's when none was analysed) and the effects of every *learned* seed (the cross-seed verdicts use only
    those)."""
    reasons = task_reasons(learned, tasks)
    why = {t: (learned[main[t]] if t in main else reasons[t]) for t in tasks}
    seed_effects = by_task({k: e for k, e in effects.items() if not learned.get(k)})
    return {t: effects[k] for t, k in main.items()}, why, seed_effects


def cross_seed_agreement(deltas: Mapping[int, np.ndarray], top_k: int):
    """How much the head findings of one task agree between fine-tuning seeds: one row per pair of seeds with the
    Spearman rank correlation of the per-head changes (``deltas[seed][layer, head]``) and the overlap of the
    ``top_k`` heads whose removal hurts most (shared / ``top_k``; chance ``top_k`` / heads)
    (:func:`attnbook.stats.rank_agreement` on the negated changes). Empty with fewer than two seeds."""
    import itertools

    import pandas as pd


    rows = []
    for a, b in itertools.combinations(sorted(deltas), 2):
        r = rank_agreement(-np.asarray(deltas[a]), -np.asarray(deltas[b]), k=top_k)
        rows.append({"seeds": f"{a} vs {b}", "Spearman": r["spearman"], "top-k overlap": r["top_k_overlap"],
                     "chance overlap": r["top_k_chance"]})
    return pd.DataFrame(rows, columns=["seeds", "Spearman", "top-k overlap", "chance overlap"])


def agreement_summary(tables: Mapping[str, Any]) -> dict[str, dict]:
    """Task -> mean Spearman and mean top-k overlap over its seed pairs (:func:`cross_seed_agreement`), and the
    number of pairs; tasks with fewer than two analysed seeds are left out."""
    return {t: {"spearman": float(df["Spearman"].mean()), "overlap": float(df["top-k overlap"].mean()),
                "chance": float(df["chance overlap"].mean()), "pairs": int(len(df))}
            for t, df in tables.items() if len(df)}


def agreement_table(tables: Mapping[str, Any]):
    """All tasks' :func:`cross_seed_agreement` rows in one table (a ``task`` column first)."""
    import pandas as pd

    parts = [df.assign(task=t)[["task"] + list(df.columns)] for t, df in tables.items() if len(df)]
    return pd.concat(parts, ignore_index=True).round(3) if parts else pd.DataFrame(
        columns=["task", "seeds", "Spearman", "top-k overlap", "chance overlap"])


def skipped_markdown(learned: Mapping[tuple[str, int], str], runs: Sequence[tuple[str, int]],
                     main: Mapping[str, tuple[str, int]]) -> str:
    """What the head analyses below use: the runs skipped because their classifier is no better than its constant
    predictor, the ones swept anyway (then not comparable), and the seed each figure shows."""
    skipped = [f"{t} seed {s}" for (t, s) in learned if (t, s) not in runs]
    anyway = [f"{t} seed {s}" for (t, s) in runs if learned.get((t, s))]
    text = ""
    if skipped:
        text += " Not swept (no learned classifier): " + ", ".join(skipped) + "."
    if anyway:
        text += (" Swept anyway to exercise the code (this profile's `analyse_unlearned`), their rows not comparable: "
                 + ", ".join(anyway) + ".")
    if main:
        text += " The figures show " + ", ".join(f"{t} seed {s}" for t, (_, s) in main.items()) + "."
    return text


# ---------------------------------------------------------------------------------------------- held-out test (§4.6)


def held_out_data(tokenizer: Any, task: str, cap: int | None, limit: int | None, seed: int, *, batch_size: int = 32,
                  max_length: int = 128) -> tuple[GlueSplit, list[Batch]] | None:
    """The dev examples of ``task`` outside the swept sample (``cap`` examples drawn with ``seed``), at most
    ``limit`` of them, and their batches; ``None`` when the sweep scored the whole dev set."""
    rest = load_rest(task, "dev", cap=cap, seed=seed, limit=limit)
    if not len(rest):
        return None
    return rest, dev_batches(tokenizer, rest, batch_size=batch_size, max_length=max_length)


def chosen_configs(single: SweepResult, layers: SweepResult) -> tuple[np.ndarray, list[str]]:
    """The head and the layer whose removal helped most in the sweeps ``single`` and ``layers`` as two
    configurations ``[2, layer, head]`` (True: disabled) and their labels (``"2-11"``, ``"layer 3"``); ties go to
    the first, layer-major, as in :func:`sweep_effects`."""
    n_layers, n_heads = single.scores.shape
    head = extreme_heads(single.delta, 1, largest=True)[0]
    layer = int(np.argmax(layers.delta))
    configs = np.zeros((2, n_layers, n_heads), dtype=bool)
    configs[0, head[0], head[1]] = True
    configs[1, layer, :] = True
    return configs, [head_label(*head), f"layer {layer + 1}"]


@cache.memoized("kovaleva_held_out")
def configs_off(classifier: Any, batches: Sequence[Batch], configs: np.ndarray, names: Sequence[str],
                score_fn) -> SweepResult:
    """The classifier (a :class:`~attnbook.engine.models.LoadedModel`) on ``batches`` with each configuration's
    heads disabled (Kovaleva's uniform attention), and with none (the baseline); cached by the classifier's
    weights, the batches, the configurations and the score function's name."""
    return sweeps.sweep_configs(classifier.model, batches, configs, "disable", score_fn, names=list(names),
                                kind="held_out")


@dataclass(frozen=True)
class HeldOut:
    """The best head and layer to disable, chosen on ``n_chosen`` swept dev examples, tested on ``n_tested``
    others: each one's change (points) with its paired 95% interval over the held-out examples."""

    head: str
    head_gain: Estimate
    layer: int  #: 0-based
    layer_gain: Estimate
    n_chosen: int
    n_tested: int


def held_out_test(classifier: Any, single: SweepResult, layers: SweepResult, batches: Sequence[Batch], task: str,
                  score_fn, *, n_resamples: int = 2000, seed: int = 0) -> HeldOut:
    """The best head and the best layer of the sweeps (:func:`chosen_configs`) disabled on held-out ``batches``
    (:func:`configs_off`), each change with its paired interval
    (:func:`~attnbook.studies.heads_off.effects.effect_estimates`)."""
    configs, names = chosen_configs(single, layers)
    tested = configs_off(classifier, batches, configs, names, score_fn)
    head, layer = effect_estimates(tested, task, n_resamples=n_resamples, seed=seed)
    return HeldOut(names[0], head, int(names[1].split()[1]) - 1, layer, len(single.gold), len(tested.gold))


def held_out_table(tests: Mapping[tuple[str, int], HeldOut]):
    """One row per (task, seed): the chosen head and layer, their gains on the swept examples' complement with
    the intervals, and the examples each was chosen and tested on."""
    import pandas as pd

    return pd.DataFrame([{"task": t, "seed": s, "best head off (chosen)": h.head,
                          "its change, held out": h.head_gain.text("+.2f"), "best layer off (chosen)": h.layer + 1,
                          "the layer's change, held out": h.layer_gain.text("+.2f"), "chosen on": h.n_chosen,
                          "tested on": h.n_tested} for (t, s), h in tests.items()])


def held_out_numbers(tests: Mapping[tuple[str, int], HeldOut]) -> dict[str, dict]:
    """What the chapter records of the held-out tests, per ``task/seed``."""
    return {f"held_out_{t}_seed{s}": {"head": h.head, "head_gain": h.head_gain.as_dict(), "layer": h.layer + 1,
                                      "layer_gain": h.layer_gain.as_dict(), "n_chosen": h.n_chosen,
                                      "n_tested": h.n_tested}
            for (t, s), h in tests.items()}
