"""Disabling heads and layers of fine-tuned classifiers (Kovaleva et al. §4.6, Fig. 8-9): chapter 5's numbers.

Kovaleva et al. *disable* a head by giving it uniform attention over the real tokens
(:func:`attnbook.engine.interventions.disable_heads`) and score the fine-tuned model on the dev set with
each head (Fig. 8) or layer (Fig. 9) disabled. The sweeps are
:func:`attnbook.studies.heads_off.effects.switched_off` (cached, shared with chapter 6); this module checks the
intervention on one input (:func:`disable_check`) and summarises the sweeps: the classifiers' baselines
against a constant predictor (:func:`baselines`), the best and worst head per task (:func:`head_summary`),
the heads whose change survives the Holm correction (:func:`significance_summary`) and the layer table
(:func:`layer_table`). Heads are shown 1-based (``layer-head``).
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

from attnbook.core.heads import head_label
from attnbook.engine.inputs import Batch
from attnbook.studies.heads_off.effects import extreme_heads, random_head_effect, trivial_score
from attnbook.studies.kovaleva.table1 import metric_label


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
    from attnbook.engine.extract import stream_batches
    from attnbook.engine.interventions import disable_heads

    one = Batch(batch.input_ids[:1], batch.attention_mask[:1],
                None if batch.token_type_ids is None else batch.token_type_ids[:1])
    n = int(one.attention_mask.sum())
    plain = stream_batches(classifier, [one], [_LayerMaps(layer)])[0]
    with disable_heads(classifier.model, [(layer, head)]):
        off = stream_batches(classifier, [one], [_LayerMaps(layer)])[0]
    others = [h for h in range(off.shape[0]) if h != head]
    return {"L": n, "uniform_error": float((off[head, :, :n] - 1.0 / n).abs().max()),
            "other_heads_change": float((off[others] - plain[others]).abs().max())}


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


def dev_cap(caps: Mapping[str, int | None], task: str) -> int | None:
    """The dev examples scored for ``task``: its own entry of ``caps``, else ``caps["default"]`` (None: all)."""
    return caps.get(task, caps.get("default"))
