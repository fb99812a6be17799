"""Kovaleva et al.'s Table 1: each GLUE task scored by three initialisations, this run beside the paper.

Kovaleva et al. (§3, §4.3, Table 1) score three models per task on the dev set
(:data:`attnbook.engine.finetune.INITS`):

* ``"pretrained"``: the pre-trained encoder with a freshly initialised, *untrained* classification head;
* ``"random_ft"``: every weight re-drawn from a normal distribution, then fine-tuned;
* ``"pretrained_ft"``: the pre-trained encoder fine-tuned (the usual recipe).

The classifiers come from :func:`attnbook.engine.finetune.get_finetuned` (trained once, cached); the
score is the task's Table 1 metric x 100 (:data:`attnbook.data.glue_metrics.TABLE1_METRIC`). The
paper's numbers are :data:`attnbook.studies.kovaleva.paper.PAPER_TABLE1`, set beside ours here so
the table reads "ours (paper)"; the verdicts are :func:`attnbook.studies.kovaleva.paper.table1_comparisons`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from attnbook.core.errors import ParameterError
from attnbook.data.glue import KOVALEVA_TASKS, available, task_path, task_spec
from attnbook.data.glue_metrics import F1_TASKS, TABLE1_METRIC
from attnbook.engine.finetune import INITS, FinetuneParams, base_encoder, check_init, get_finetuned
from attnbook.engine.models import LoadedModel
from attnbook.studies.kovaleva.paper import PAPER_TABLE1

#: the column titles of the three initialisations, in the table's order
INIT_LABELS = {
    "pretrained": "pre-trained, no fine-tuning",
    "random_ft": "random init + fine-tuning",
    "pretrained_ft": "pre-trained + fine-tuning",
}


def metric_label(task: str) -> str:
    """What a task's Table 1 score measures: ``"F1"``, ``"Pearson r"`` or ``"accuracy"``."""
    return {"f1": "F1", "pearson": "Pearson r", "accuracy": "accuracy"}[TABLE1_METRIC[task]]


def table1(
    model: str | LoadedModel,
    tasks: Sequence[str] = KOVALEVA_TASKS,
    params: Mapping[str, Any] | FinetuneParams | None = None,
    *,
    seeds: Sequence[int] = (0,),
    inits: Sequence[str] = INITS,
    missing: str = "skip",
    use_cache: bool = True,
    progress: bool = True,
):
    """Kovaleva et al.'s Table 1 for ``model``: one row per (task, init), the paper's numbers beside ours.

    Columns: ``task``, ``init``, ``metric`` (what ``ours``/``paper`` measure),
    ``paper``, ``ours`` (mean over ``seeds``), ``ours_std``, ``paper_acc`` /
    ``ours_acc`` (MRPC and QQP, whose cell is "F1/Acc"), ``top_class_share``
    (share of the most frequent prediction; 1.0 = a constant classifier, NaN for
    STS-B), ``n_train``, ``n_dev``, ``seeds`` and ``note``. A task whose files are not in the data directory gets
    a row with ``ours`` = NaN and a note (``missing="skip"``) or raises
    :class:`~attnbook.core.errors.MissingDataError` (``missing="raise"``). ``"pretrained"`` rows need
    only the dev file.
    """
    import pandas as pd

    if missing not in ("skip", "raise"):
        raise ParameterError("missing must be 'skip' or 'raise'")
    p = FinetuneParams.from_mapping(params or {})
    base = base_encoder(model)
    rows = []
    for task in tasks:
        spec = task_spec(task)
        for init in inits:
            check_init(init)
            paper = PAPER_TABLE1.get(spec.name, {}).get(init, (float("nan"), None))
            row = {
                "task": spec.name, "init": init, "metric": metric_label(spec.name),
                "paper": paper[0], "ours": float("nan"), "ours_std": float("nan"),
                "paper_acc": paper[1] if paper[1] is not None else float("nan"), "ours_acc": float("nan"),
                "top_class_share": float("nan"), "n_train": 0, "n_dev": 0, "seeds": ",".join(map(str, seeds)),
                "note": "",
            }
            needed = ["dev"] + ([] if init == "pretrained" else ["train"])
            absent = [s for s in needed if not available(spec, s)]
            if absent:
                if missing == "raise":
                    task_path(spec, absent[0])  # raises MissingDataError naming the fetch command
                row["note"] = f"not run: {' and '.join(spec.file(s) for s in absent)} not in the data directory"
                rows.append(row)
                continue
            scores, accs, shares = [], [], []
            for seed in seeds:
                clf, m = get_finetuned(base, spec, init, p, seed, use_cache=use_cache, progress=progress)
                scores.append(m["score"])
                shares.append(m.get("top_class_share", float("nan")))
                if "accuracy" in m and spec.name in F1_TASKS:
                    accs.append(100.0 * m["accuracy"])
                row["n_dev"] = m["n"]
                log = clf.extra.get("train_log") or {}
                row["n_train"] = int(log.get("n_train", 0))
            row["ours"] = float(np.mean(scores))
            row["ours_std"] = float(np.std(scores)) if len(scores) > 1 else float("nan")
            if accs:
                row["ours_acc"] = float(np.mean(accs))
            row["top_class_share"] = float(np.mean(shares))
            rows.append(row)
    return pd.DataFrame(rows)


def table1_wide(df) -> Any:
    """Table 1 laid out as in the paper: one row per task, one column per init, cells ``"ours (paper)"``."""
    import pandas as pd

    def cell(r) -> str:
        ours = "n/a" if np.isnan(r["ours"]) else f"{r['ours']:.1f}"
        paper = "n/a" if np.isnan(r["paper"]) else f"{r['paper']:g}"
        if r["task"] in F1_TASKS:
            oa = "n/a" if np.isnan(r["ours_acc"]) else f"{r['ours_acc']:.1f}"
            pa = "n/a" if np.isnan(r["paper_acc"]) else f"{r['paper_acc']:g}"
            return f"{ours}/{oa} ({paper}/{pa})"
        return f"{ours} ({paper})"

    cells = df.assign(cell=df.apply(cell, axis=1))
    wide = cells.pivot(index="task", columns="init", values="cell")
    order_rows = [t for t in df["task"].drop_duplicates()]
    order_cols = [i for i in INITS if i in wide.columns]
    wide = wide.loc[order_rows, order_cols].rename(columns=INIT_LABELS)
    wide.insert(0, "metric", [metric_label(t) + ("/accuracy" if t in F1_TASKS else "") for t in order_rows])
    return pd.DataFrame(wide)


def data_files(tasks: Sequence[str]) -> list[Path]:
    """The GLUE files a Table 1 over ``tasks`` reads (train and dev, where present), for the provenance."""
    return [task_path(task, split) for task in tasks for split in ("train", "dev") if available(task, split)]


def numbers(df) -> dict[str, dict]:
    """What a chapter records of a Table 1: ``table1`` (``"task/init"`` -> ours) and ``table1_sizes``
    (``"task/init"`` -> [training examples, dev examples])."""
    return {"table1": {f"{r.task}/{r.init}": r.ours for r in df.itertuples()},
            "table1_sizes": {f"{r.task}/{r.init}": [int(r.n_train), int(r.n_dev)] for r in df.itertuples()}}


def sizes(df):
    """Training and dev examples of each task run with fine-tuning (one row per task)."""
    return df[df["init"] != "pretrained"].dropna(subset=["ours"])[["task", "n_train", "n_dev"]].drop_duplicates("task")
