"""Kovaleva et al.'s Table 1: each GLUE task scored by three initialisations, this run beside the paper.

Kovaleva et al. (§3, §4.3, Table 1) score three models per task on the dev set
(:data:`attnbook.engine.finetune.INITS`):

* ``"pretrained"``: the pre-trained encoder with a freshly initialised, *untrained* classification head;
* ``"random_ft"``: every weight re-drawn from a normal distribution, then fine-tuned;
* ``"pretrained_ft"``: the pre-trained encoder fine-tuned (the usual recipe).

The classifiers come from :func:`attnbook.engine.finetune.get_finetuned` (trained once, cached); the
score is the task's Table 1 metric x 100 (:data:`attnbook.data.glue_metrics.TABLE1_METRIC`) on the dev set
(whole by default: :func:`seed_outputs`), with its 95% interval over dev examples (:func:`score_estimate`: exact
for accuracy, bootstrap for F1 and Pearson r), combined over the fine-tuning seeds by
:func:`attnbook.stats.over_seeds` (the seed-to-seed spread and each run's own error over its examples; a cell with one
seed borrows the pooled seed-to-seed spread of the table's cells with several, :func:`seed_spread`, so every
fine-tuned cell has the same estimand; the untrained classifier, scored once, counts its examples), and a paired comparison with the task's constant predictor
(:func:`versus_constant`: majority class, always "paraphrase" for F1, Pearson 0). The paper's numbers are
:data:`attnbook.studies.kovaleva.paper.PAPER_TABLE1`, set beside ours here so the table reads "ours (paper)";
the verdicts are :func:`attnbook.studies.kovaleva.paper.table1_comparisons`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from attnbook.core.errors import ParameterError
from attnbook.data.glue import KOVALEVA_TASKS, available, task_path, task_spec
from attnbook.data.glue_metrics import F1_TASKS, TABLE1_METRIC
from attnbook.engine.classifiers import INITS, check_init
from attnbook.engine.evaluate import metrics_from_logits, scored_dev
from attnbook.engine.finetune import FinetuneParams, base_encoder, get_finetuned
from attnbook.engine.jobs import seeds_for
from attnbook.engine.models import LoadedModel
from attnbook.stats import (Estimate, bootstrap_counts, over_seeds, percentile_interval, pooled_seed_sd,
                            proportion_interval)
from attnbook.studies.heads_off.learned import (
    constant_outputs,
    learned,
    metric_label,
    score_of,
    versus_constant,
)
from attnbook.studies.heads_off.learned import resampled_scores as _resampled
from attnbook.studies.kovaleva.reference import PAPER_TABLE1

#: bootstrap resamples of the intervals over dev examples
N_RESAMPLES = 2000

#: the column titles of the three initialisations, in the table's order
INIT_LABELS = {
    "pretrained": "pre-trained, no fine-tuning",
    "random_ft": "random init + fine-tuning",
    "pretrained_ft": "pre-trained + fine-tuning",
}


def dev_cap_of(caps: Mapping[str, int | None] | int | None, task: str) -> int | None:
    """The dev examples scored for ``task``: ``caps`` itself when it is a number (or None: all), else its entry for
    the task or its ``"default"`` (None: the whole dev set)."""
    if caps is None or isinstance(caps, int):
        return caps
    return caps.get(task, caps.get("default"))


def score_estimate(task: str, logits: np.ndarray, labels: np.ndarray, *, n_resamples: int = N_RESAMPLES,
                   seed: int = 0) -> Estimate:
    """The task's Table 1 score (x 100) of ``logits`` with its 95% interval over the dev examples: exact
    (Clopper-Pearson) for accuracy, the percentile bootstrap for F1 and Pearson r."""
    spec = task_spec(task)
    labels = np.asarray(labels)
    value = score_of(spec.name, logits, labels)
    if TABLE1_METRIC[spec.name] == "accuracy":
        k = int(np.sum(np.argmax(logits, -1) == labels))
        lo, hi = proportion_interval(k, len(labels))
        return Estimate(value, 100 * lo, 100 * hi, len(labels), "dev examples")
    lo, hi = percentile_interval(_resampled(spec.name, logits, labels, bootstrap_counts(len(labels), n_resamples, seed)))
    return Estimate(value, float(lo), float(hi), len(labels), "dev examples")


def paired_mean_difference(task: str, outputs_a: Sequence[tuple[np.ndarray, np.ndarray]],
                           outputs_b: Sequence[tuple[np.ndarray, np.ndarray]], *, n_resamples: int = N_RESAMPLES,
                           seed: int = 0) -> tuple[Estimate, np.ndarray]:
    """Mean score over the seeds of ``outputs_a`` minus the mean over the seeds of ``outputs_b`` (each a list of
    ``(logits, labels)`` on the same dev examples), with its paired bootstrap 95% interval over the dev examples
    (the same draws for every seed of both); also returns the resampled differences. With one seed on each side
    this is :func:`attnbook.studies.heads_off.learned.paired_difference`."""
    spec = task_spec(task)
    labels = np.asarray(outputs_a[0][1])
    counts = bootstrap_counts(len(labels), n_resamples, seed)
    mean = lambda outs, w: np.mean([_resampled(spec.name, lo, labels, w) for lo, _ in outs], axis=0)  # noqa: E731
    value = float(mean(outputs_a, np.ones((1, len(labels))))[0] - mean(outputs_b, np.ones((1, len(labels))))[0])
    d = mean(outputs_a, counts) - mean(outputs_b, counts)
    lo, hi = percentile_interval(d)
    seeds = "" if len(outputs_a) == len(outputs_b) == 1 else f" (mean over {len(outputs_a)} and {len(outputs_b)} seeds)"
    return Estimate(value, float(lo), float(hi), len(labels), "dev examples" + seeds), d


def seed_outputs(classifier: LoadedModel, task: str, params: Mapping[str, Any], dev_caps, *,
                 progress: bool = False) -> dict[str, np.ndarray]:
    """The dev outputs of one fine-tuned classifier as :func:`table1` scores it
    (:func:`attnbook.engine.evaluate.scored_dev` with the recipe's ``max_length`` and evaluation batch, ``dev_caps``
    as :func:`dev_cap_of` reads them): the cached outputs behind its Table 1 cell."""
    p = FinetuneParams.from_mapping(params)
    return scored_dev(classifier, task, cap=dev_cap_of(dev_caps, task_spec(task).name), max_length=p.max_length,
                      batch_size=p.eval_batch_size, progress=progress)


def seed_learned_reason(task: str, outputs: Mapping[str, np.ndarray], *, n_resamples: int = N_RESAMPLES) -> str:
    """The book's one verdict (:func:`attnbook.studies.heads_off.learned.learned`) on a classifier from its
    :func:`seed_outputs`, as its reason (``""``: it learned its task): what Table 1's ``learned`` column holds, and
    what the head atlas reads back."""
    return learned(task, outputs["logits"], outputs["labels"], n_resamples=n_resamples).reason


def jobs(tasks: Sequence[str], recipe: Mapping[str, Any], inits: Sequence[str] = INITS) -> list[tuple[str, str, int]]:
    """The ``(task, init, seed)`` classifiers :func:`table1` fine-tunes for ``tasks`` under ``recipe``: every seed of
    ``pretrained_ft`` (:func:`~attnbook.engine.finetune.seeds_for`: fewer where ``task_seeds`` says) and every random
    seed of ``random_ft``, for the tasks whose training file is in the data
    directory (a task without one gets a "not run" row and trains nothing)."""

    seeds, random_seeds = list(recipe["seeds"]), list(recipe.get("random_seeds") or recipe["seeds"])
    out = []
    for task in tasks:
        if not available(task, "train"):
            continue
        out += [(task_spec(task).name, "pretrained_ft", s) for s in seeds_for(recipe, task, seeds)
                if "pretrained_ft" in inits]
        out += [(task_spec(task).name, "random_ft", s) for s in random_seeds if "random_ft" in inits]
    return out


def table1(
    model: str | LoadedModel,
    tasks: Sequence[str] = KOVALEVA_TASKS,
    params: Mapping[str, Any] | FinetuneParams | None = None,
    *,
    seeds: Sequence[int] = (0,),
    random_seeds: Sequence[int] | None = None,
    inits: Sequence[str] = INITS,
    dev_caps: Mapping[str, int | None] | int | None = "params",
    missing: str = "skip",
    progress: bool = True,
    n_resamples: int = N_RESAMPLES,
):
    """Kovaleva et al.'s Table 1 for ``model``: one row per (task, init), the paper's numbers beside ours.

    Columns: ``task``, ``init``, ``metric`` (what ``ours``/``paper`` measure),
    ``paper``, ``ours`` (mean over ``seeds``) with ``ours_low``/``ours_high`` (its 95% interval,
    :func:`attnbook.stats.over_seeds`: the seed-to-seed spread and the dev examples' own error; a fine-tuned
    one-seed cell borrows the pooled seed spread of the table's multi-seed cells, :func:`seed_spread`, recorded in
    ``seed_sd`` as ``(sd, degrees of freedom)``, None where there is none to borrow or for the untrained cell;
    ``unit`` says which), ``ours_std``,
    ``paper_acc`` / ``ours_acc`` (MRPC and QQP, whose cell is "F1/Acc"), ``top_class_share``
    (share of the most frequent prediction; 1.0 = a constant classifier, NaN for STS-B), ``constant`` (the
    constant predictor's score) and ``vs_constant_low``/``vs_constant_high`` (the paired 95% interval of ours
    minus it, first seed), ``learned`` (seed -> ``""`` when that seed's classifier is better than its constant
    predictor, else the reason: :func:`attnbook.studies.kovaleva.paper.constant_reason`), ``n_train``, ``n_dev``
    (of ``n_dev_total``), ``seeds``, ``note`` and ``outputs`` (per seed ``(logits, labels)``, for paired
    comparisons between the inits). Seeds: ``seeds`` for ``"pretrained_ft"``, ``random_seeds`` (default: ``seeds``)
    for ``"random_ft"``, the first of ``seeds`` for the untrained ``"pretrained"`` classifier. ``dev_caps``: dev examples
    scored per task (:func:`dev_cap_of`; ``"params"``: the recipe's ``dev_cap``). A task whose files are not in
    the data directory gets a row with ``ours`` = NaN and a note (``missing="skip"``) or raises
    :class:`~attnbook.core.errors.MissingDataError` (``missing="raise"``). ``"pretrained"`` rows need
    only the dev file.
    """
    import pandas as pd

    if missing not in ("skip", "raise"):
        raise ParameterError("missing must be 'skip' or 'raise'")
    p = FinetuneParams.from_mapping(params or {})
    save_at = (params or {}).get("save_at", ()) if not isinstance(params, FinetuneParams) else ()
    caps = p.dev_cap if dev_caps == "params" else dev_caps
    base = base_encoder(model)
    rows = []
    seeds_of = {"pretrained": list(seeds)[:1], "random_ft": list(random_seeds if random_seeds else seeds),
                "pretrained_ft": list(seeds)}
    for task in tasks:
        spec = task_spec(task)
        for init in inits:
            check_init(init)
            init_seeds = seeds_of[init]
            if init == "pretrained_ft" and not isinstance(params, FinetuneParams):
                init_seeds = seeds_for(params or {}, spec, init_seeds)  # fewer seeds for a task the recipe says
            paper = PAPER_TABLE1.get(spec.name, {}).get(init, (float("nan"), None))
            row = {
                "task": spec.name, "init": init, "metric": metric_label(spec.name),
                "paper": paper[0], "ours": float("nan"), "ours_low": float("nan"), "ours_high": float("nan"),
                "unit": "", "ours_std": float("nan"),
                "paper_acc": paper[1] if paper[1] is not None else float("nan"), "ours_acc": float("nan"),
                "top_class_share": float("nan"), "constant": float("nan"), "vs_constant_low": float("nan"),
                "vs_constant_high": float("nan"), "n_train": 0, "n_dev": 0, "n_dev_total": 0,
                "seeds": ",".join(map(str, init_seeds)), "note": "", "outputs": None, "learned": {},
                "seed_scores": {}, "seed_runs": {}, "seed_sd": None,
            }
            needed = ["dev"] + ([] if init == "pretrained" else ["train"])
            absent = [s for s in needed if not available(spec, s)]
            if absent:
                if missing == "raise":
                    task_path(spec, absent[0])  # raises MissingDataError naming the fetch command
                row["note"] = f"not run: {' and '.join(spec.file(s) for s in absent)} not in the data directory"
                rows.append(row)
                continue
            scores, accs, shares, outputs, runs, learned = [], [], [], [], [], {}
            for seed in init_seeds:
                # the recipe's snapshots too, so chapters 5-6 (which ask for them) load this run, never retrain it
                clf, _ = get_finetuned(base, spec, init, p, seed, progress=progress,
                                       evaluate_dev=False, save_at=save_at)
                out = seed_outputs(clf, spec.name, p, caps, progress=progress)
                m = metrics_from_logits(spec, out["logits"], out["labels"])
                outputs.append((out["logits"], out["labels"]))
                scores.append(m["score"])
                shares.append(m.get("top_class_share", float("nan")))
                if "accuracy" in m and spec.name in F1_TASKS:
                    accs.append(100.0 * m["accuracy"])
                row["n_dev"], row["n_dev_total"] = m["n"], int(out["n_total"])
                learned[int(seed)] = seed_learned_reason(spec.name, out, n_resamples=n_resamples)
                log = clf.classifier.train_log or {}
                row["n_train"] = int(log.get("n_train", 0))
                one = score_estimate(spec.name, out["logits"], out["labels"], n_resamples=n_resamples)
                runs.append(one)
                row["seed_runs"][int(seed)] = {"score": one.value, "low": one.low, "high": one.high,
                                               "train_seconds": float(log.get("seconds", 0.0))}
            row["ours"] = float(np.mean(scores))
            row["ours_std"] = float(np.std(scores)) if len(scores) > 1 else float("nan")
            logits, labels = outputs[0]
            row.update(outputs=outputs, learned=learned, runs=runs,
                       seed_scores={int(s): float(v) for s, v in zip(init_seeds, scores)})
            vs = versus_constant(spec.name, logits, labels, n_resamples=n_resamples)
            row["constant"] = score_of(spec.name, constant_outputs(spec.name, labels), labels)
            row["vs_constant_low"], row["vs_constant_high"] = vs.low, vs.high
            if accs:
                row["ours_acc"] = float(np.mean(accs))
            row["top_class_share"] = float(np.mean(shares))
            rows.append(row)
    return pd.DataFrame(combine_seeds(rows))


def combine_seeds(rows: list[dict]) -> list[dict]:
    """Each Table 1 row's interval from its seeds' runs (``runs``: one :class:`~attnbook.stats.Estimate` per seed,
    its interval over the dev examples; removed from the row): :func:`attnbook.stats.over_seeds`, the seed-to-seed
    spread and the examples' own error together, clipped to the metric's range; a fine-tuned row with one seed
    borrows :func:`seed_spread` of the table's rows with several (``seed_sd``), so every fine-tuned cell has the
    same estimand. The untrained ``"pretrained"`` cell is not fine-tuned, so no fine-tuning spread applies to it:
    its interval counts its dev examples. Sets ``ours_low``, ``ours_high``, ``unit`` and ``seed_sd``; returns
    ``rows``."""
    pooled = seed_spread(rows)
    for row in rows:
        runs = row.pop("runs", None)
        if not runs:
            continue
        borrowed = pooled if len(runs) == 1 and row.get("init") != "pretrained" else None
        bounds = (-100.0, 100.0) if TABLE1_METRIC[task_spec(row["task"]).name] == "pearson" else (0.0, 100.0)
        est = over_seeds(runs, seed_sd=borrowed, bounds=bounds)
        row.update(ours_low=est.low, ours_high=est.high, unit=est.unit, seed_sd=borrowed)
    return rows


def seed_spread(rows: Sequence[Mapping[str, Any]]) -> tuple[float, float] | None:
    """The pooled seed-to-seed standard deviation of a Table 1's cells run with several seeds
    (:func:`attnbook.stats.pooled_seed_sd` of their ``seed_scores``) and its degrees of freedom: what a cell with one
    seed borrows, so that its interval, like the others', counts the spread of fine-tuning seeds; ``None`` when no
    cell has two seeds."""
    return pooled_seed_sd([list(r["seed_scores"].values()) for r in rows
                           if isinstance(r.get("seed_scores"), Mapping) and len(r["seed_scores"]) >= 2])


def table1_wide(df) -> Any:
    """Table 1 laid out as in the paper: one row per task, one column per init, cells ``"ours (paper)"`` (with
    ``ours_low``/``ours_high``: ``"ours [low, high] (paper)"``)."""
    import pandas as pd

    def cell(r) -> str:
        ours = "n/a" if np.isnan(r["ours"]) else f"{r['ours']:.1f}"
        if not np.isnan(r["ours"]) and "ours_low" in r and r["ours_low"] == r["ours_low"]:
            ours += f" [{r['ours_low']:.1f}, {r['ours_high']:.1f}]"
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
    """What a chapter records of a Table 1: ``table1`` (``"task/init"`` -> ours), ``table1_sizes``
    (``"task/init"`` -> [training examples, dev examples]) and, when the table has them, ``table1_intervals``
    (-> [low, high, what was resampled]), ``table1_seeds`` (-> seed -> score), ``table1_seed_runs`` (-> seed ->
    score with its 95% interval over the dev examples and the training seconds, taken from the checkpoint's
    training log, so a cached run reports the cost of the run that made it) and ``table1_not_learned``
    (-> seed -> why that seed's classifier is no better than its constant predictor)."""
    out = {"table1": {f"{r.task}/{r.init}": r.ours for r in df.itertuples()},
           "table1_sizes": {f"{r.task}/{r.init}": [int(r.n_train), int(r.n_dev)] for r in df.itertuples()}}
    if "ours_low" in df:
        out["table1_intervals"] = {f"{r.task}/{r.init}": [r.ours_low, r.ours_high, r.unit] for r in df.itertuples()
                                   if r.ours_low == r.ours_low}
    if "seed_scores" in df:
        out["table1_seeds"] = {f"{r.task}/{r.init}": dict(r.seed_scores) for r in df.itertuples() if r.seed_scores}
    if "seed_runs" in df:
        out["table1_seed_runs"] = {f"{r.task}/{r.init}": {s: dict(v) for s, v in r.seed_runs.items()}
                                   for r in df.itertuples() if r.seed_runs}
    if "learned" in df:
        out["table1_not_learned"] = {f"{r.task}/{r.init}": {s: w for s, w in r.learned.items() if w}
                                     for r in df.itertuples() if isinstance(r.learned, dict) and any(r.learned.values())}
    return out


def sizes(df):
    """Training and dev examples of each task run with fine-tuning (one row per task; ``of`` the dev set's size)."""
    cols = ["task", "n_train", "n_dev"] + (["n_dev_total"] if "n_dev_total" in df else [])
    out = df[df["init"] != "pretrained"].dropna(subset=["ours"])[cols].drop_duplicates("task")
    return out.rename(columns={"n_dev_total": "of"})
