"""Which Table 1 classifiers learned their task, and so which of chapter 4 and 5's rows can be compared.

A row scored on a classifier no better than its constant predictor (majority class, always "paraphrase" for F1,
Pearson 0) cannot fail and is ``not comparable`` with the reason - ours (:func:`row_reason`, per seed
:func:`not_learned_seeds`; the criterion is :func:`attnbook.studies.kovaleva.reference.constant_reason`) or, in Table 1,
the paper's (:func:`paper_constant_reason`). :func:`learned_tasks` gives the reason per task to every later section,
:func:`constant_predictors` lists the classifiers no better than a constant predictor. The rows are
:func:`attnbook.studies.kovaleva.table1.table1`'s.
"""
from __future__ import annotations

import math
from typing import Any

from attnbook.data.glue_metrics import constant_baselines
from attnbook.studies.kovaleva.reference import constant_reason
from attnbook.studies.kovaleva.table1 import INIT_LABELS


def is_missing(x: Any) -> bool:
    """Whether ``x`` is None or a float NaN (a cell or a score that was not measured)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def row_reason(row) -> str:
    """Why a Table 1 row's cell is not comparable because of our classifier, or ``""``: with per-seed flags
    (``row["learned"]``, seed -> reason) only when no seed's classifier beats its constant predictor; else
    :func:`~attnbook.studies.kovaleva.reference.constant_reason` of the row."""
    learned = row.get("learned") or {}
    if learned:
        bad = {s: why for s, why in learned.items() if why}
        if len(bad) < len(learned):
            return ""
        if len(bad) == 1:
            return next(iter(bad.values()))
        return f"no seed's classifier beats its constant predictor (seeds {', '.join(map(str, bad))}): " + \
            next(iter(bad.values()))
    return constant_reason(row)


def not_learned_seeds(row) -> list[int]:
    """The seeds of a Table 1 row whose classifier is no better than its constant predictor."""
    return [int(s) for s, why in (row.get("learned") or {}).items() if why]


def paper_constant_reason(row) -> str:
    """Why the paper's Table 1 cell is a constant predictor's score, or ``""``: it equals (within 0.05) the score
    of always answering one class on this dev set (needs the whole dev set scored here: ``n_dev == n_dev_total``)."""
    outputs = row.get("outputs")
    if not outputs or is_missing(row.get("paper")) or row.get("n_dev") != row.get("n_dev_total"):
        return ""
    labels = outputs[0][1]
    for name, score in constant_baselines(row["task"], labels).items():
        if abs(score - float(row["paper"])) <= 0.05:
            return f"the paper's cell is the score of always answering '{name}' on this dev set: a constant predictor"
    return ""


def learned_tasks(df, init: str = "pretrained_ft", seed: int | None = None) -> dict[str, str]:
    """Task -> ``""`` when its ``init`` classifier of :func:`~attnbook.studies.kovaleva.table1.table1` is better
    than its constant predictor, else the reason (``"not run"`` when it was not run). With ``seed``: that seed's
    classifier (the one a chapter analyses); without: the row as a whole (:func:`row_reason`)."""
    out = {}
    for _, r in df[df["init"] == init].iterrows():
        if is_missing(r["ours"]):
            out[r["task"]] = "not run"
        elif seed is not None and int(seed) in (r.get("learned") or {}):
            why = r["learned"][int(seed)]
            out[r["task"]] = f"seed {seed}: {why}" if why else ""
        else:
            out[r["task"]] = row_reason(r)
    return out


def constant_predictors(df) -> list[str]:
    """``"task (init)"`` of the fine-tuned rows of :func:`attnbook.studies.kovaleva.table1.table1` that are no better
    than their constant predictor (:func:`row_reason`), or ``"task (init, seeds ... of n)"`` when only some seeds
    are."""
    out = []
    for _, r in df.iterrows():
        if r["init"] == "pretrained" or is_missing(r["ours"]):
            continue
        bad, seeds = not_learned_seeds(r), r.get("learned") or {}
        if row_reason(r):
            out.append(f"{r['task']} ({INIT_LABELS.get(r['init'], r['init'])})")
        elif bad:
            out.append(f"{r['task']} ({INIT_LABELS.get(r['init'], r['init'])}, seed{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} "
                       f"of {len(seeds)})")
    return out
