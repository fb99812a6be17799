"""Kovaleva et al.'s Table 1 beside this run: its rules and its "paper vs this run" rows (chapter 4).

:func:`table1_comparisons` turns the frame of :func:`attnbook.studies.kovaleva.table1.table1` into rows made by
:func:`attnbook.verdict.row`, this run's number an :class:`~attnbook.stats.Estimate` with its 95% interval; its cells
alone are :func:`table1_cells`, which the page's sentences read (:mod:`~attnbook.studies.kovaleva.paper.text`). A cell
scored on our classifier when it is no better than its constant predictor is ``not comparable`` with the reason
(:mod:`~attnbook.studies.kovaleva.paper.learned`); where the *paper's* cell is a constant predictor's score, its claim
is "no better than a constant predictor" and is judged on both sides (:func:`constant_rule`). Cells whose data this
book does not have (QQP, MNLI, QNLI training sets) are ``not reproduced`` (:func:`missing_data`).

Every tolerance names its source in the row's rule: the published seed-to-seed spread of BERT fine-tuning
(:data:`SEED_SD`, :func:`cell_rule`, :func:`difference_rule`, :func:`gain_rule`). Differences of two cells are
judged on the sign and the size (``signed``), their intervals counting the dev examples (paired) and both rows'
seed-to-seed spread (:func:`seed_variance`, :func:`with_seed_spread`). :func:`beside_table1` sets the paper's cells
beside chapter 5's baselines.

The rows of the other sections, and :func:`~attnbook.studies.kovaleva.paper.rows.not_run_row` which these use too,
are in :mod:`~attnbook.studies.kovaleva.paper.rows`; the paper's numbers in
:mod:`~attnbook.studies.kovaleva.paper.claims`; the measurement in :mod:`~attnbook.studies.kovaleva.table1`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from attnbook import verdict
from attnbook.stats import Estimate, percentile_interval
from attnbook.studies.kovaleva.paper.claims import PAPER, PAPER_TABLE1
from attnbook.studies.kovaleva.paper.learned import (
    is_missing,
    learned_tasks,
    not_learned_seeds,
    paper_constant_reason,
    row_reason,
)
from attnbook.studies.kovaleva.paper.rows import not_run_row
from attnbook.studies.kovaleva.table1 import INIT_LABELS, paired_mean_difference

Comparison = verdict.Comparison

# ---------------------------------------------------------------------------------------------
# the rules (stated in words in every row, see attnbook.verdict), each tolerance with its source
# ---------------------------------------------------------------------------------------------
#: The seed-to-seed standard deviation (points of the Table 1 metric) the book assumes for BERT fine-tuning on each
#: task: 1.5 points on SST-2 and the large tasks, 3 on the small ones (MRPC, RTE, STS-B). An assumption, stated as such
#: on the page: the papers that fine-tuned BERT hundreds of times over seeds (Dodge et al. 2020; Mosbach et al. 2021)
#: show that the spread is of the order of points and largest on the small tasks, where some runs fail outright; the
#: values here are the book's reading of that order, not numbers quoted from them.
SEED_SD: dict[str, float] = {"SST-2": 1.5, "MRPC": 3.0, "RTE": 3.0, "STS-B": 3.0, "QQP": 1.5, "QNLI": 1.5,
                             "MNLI-m": 1.5, "MNLI": 1.5}
#: a task not in :data:`SEED_SD` takes the small tasks' (the wider) spread
DEFAULT_SEED_SD = 3.0
_SEED_PAPERS = "the order of the spreads in Dodge et al. 2020 and Mosbach et al. 2021"


def cell_quantity(task: str, init: str) -> str:
    """A Table 1 cell's quantity as the page shows it: ``("MRPC", "random_ft")`` -> ``"MRPC, random init +
    fine-tuning"`` (:data:`attnbook.studies.kovaleva.table1.INIT_LABELS`)."""
    return f"{task}, {INIT_LABELS.get(init, init)}"


def seed_sd(task: str) -> float:
    """:data:`SEED_SD` of ``task`` (:data:`DEFAULT_SEED_SD` for a task it does not list)."""
    return SEED_SD.get(task, DEFAULT_SEED_SD)


def _seed_words(task: str) -> str:
    return f"an assumed seed-to-seed SD of BERT fine-tuning on {task} of {seed_sd(task):g} points ({_SEED_PAPERS})"


def cell_rule(task: str) -> verdict.Within:
    """A Table 1 cell of ``task`` (points): the paper's single fine-tuning run and ours differ by the seed-to-seed
    spread of fine-tuning at least, so the tolerance is that spread (:data:`SEED_SD`): agrees when the whole 95%
    interval lies within 2 SD of the paper's value, partly within 4 SD."""
    sd = seed_sd(task)
    return verdict.Within(round(2 * sd, 2), round(4 * sd, 2), unit="points",
                          source=_seed_words(task) + ": agrees within 2 SD, partly within 4 SD")


def constant_rule(task: str) -> verdict.Beyond:
    """A Table 1 cell whose paper value is a constant predictor's score claims "no better than a constant
    predictor": this run's classifier minus its own constant predictor (points, paired over the dev examples) must
    lie below :func:`cell_rule`'s agreement band (2 seed SDs); a classifier surely better by more disagrees."""
    rule = cell_rule(task)
    return verdict.Beyond(rule.agree, above=False, what="ours minus its constant predictor (points)",
                          source=_seed_words(task) + ": 2 SD")


def difference_rule(task: str) -> verdict.Within:
    """A difference of two Table 1 cells of ``task`` (points), judged on its sign and its size: each cell carries
    the seed spread of fine-tuning, so the difference carries ``sqrt(2)`` x :data:`SEED_SD`; agrees within 2 of
    those, partly within 4, and an interval surely on the other side of 0 from the paper's difference disagrees."""
    sd = math.sqrt(2) * seed_sd(task)
    return verdict.Within(round(2 * sd, 2), round(4 * sd, 2), unit="points", signed=True,
                          source=_seed_words(task) + f"; a difference of two cells: sqrt(2) x SD = {sd:.1f}; "
                                 "agrees within 2 of those, partly within 4")


def gain_rule(tasks: Sequence[str]) -> verdict.Within:
    """The mean gain of fine-tuning over ``tasks`` (points): a mean of differences of two cells, whose seed
    spread is ``sqrt(sum_t 2 SD_t^2) / k`` (:data:`SEED_SD`); agrees within 2 of those, partly within 4; signed."""
    tasks = list(tasks)
    sd = math.sqrt(sum(2 * seed_sd(t) ** 2 for t in tasks)) / max(len(tasks), 1)
    return verdict.Within(round(2 * sd, 2), round(4 * sd, 2), unit="points", signed=True,
                          source=f"assumed seed-to-seed SDs of BERT fine-tuning ({_SEED_PAPERS}: "
                                 + ", ".join(f"{t} {seed_sd(t):g}" for t in tasks)
                                 + f" points), a mean of {len(tasks)} differences of two cells: {sd:.1f}; "
                                   "agrees within 2 of those, partly within 4")


def cell_rule_words(tasks: Sequence[str]) -> str:
    """:func:`cell_rule` in one sentence for the tasks of a table."""
    return ("the whole 95% interval within 2 seed-to-seed SDs of BERT fine-tuning on the task agrees, within 4 "
            "partly (assumed SDs, points: " + ", ".join(f"{t} {seed_sd(t):g}" for t in tasks) + f"; {_SEED_PAPERS})")


# ---------------------------------------------------------------------------------------------
# the rows
# ---------------------------------------------------------------------------------------------
def missing_data(note: str) -> bool:
    """Whether a Table 1 row was not run because its GLUE files are not in the data directory
    (:func:`attnbook.studies.kovaleva.table1.table1`'s note): an experiment this book cannot reproduce."""
    return "not in the data directory" in (note or "")


def _not_reproduced(task: str, note: str) -> str:
    return (f"not reproduced: {note.replace('not run: ', '')}; this book's data has no {task} training set, so "
            "the cell cannot be run here")


def versus_constant_estimate(r) -> Estimate | None:
    """This run's Table 1 classifier minus its constant predictor (points) with the paired 95% interval over the dev
    examples that :func:`attnbook.studies.kovaleva.table1.table1` computed (first seed), or ``None`` without it."""
    low, high, constant = r.get("vs_constant_low"), r.get("vs_constant_high"), r.get("constant")
    if is_missing(low) or is_missing(high) or is_missing(constant):
        return None
    seeds = r.get("seed_scores")
    score = next(iter(seeds.values())) if isinstance(seeds, dict) and seeds else float(r["ours"])
    return Estimate(float(score) - float(constant), float(low), float(high), int(r["n_dev"]),
                    "dev examples (paired with the constant predictor)")


def _cell_estimate(r) -> Estimate:
    """A Table 1 cell as an :class:`Estimate` whose ``n`` counts its ``unit``: the seeds for an interval over seeds
    (:func:`attnbook.studies.kovaleva.table1.combine_seeds`), the dev examples for one over examples."""
    low = r.get("ours_low", float("nan"))
    if is_missing(low):
        return Estimate(float(r["ours"]))
    unit = r.get("unit") or "dev examples"
    if unit.startswith("seed"):
        seeds = r.get("seed_scores")
        n = len(seeds) if isinstance(seeds, Mapping) and seeds else 1
    else:
        n = int(r["n_dev"])
    return Estimate(float(r["ours"]), float(low), float(r["ours_high"]), n, unit)


def row_difference(task: str, a, b, n_resamples: int, seed: int) -> tuple[Estimate, np.ndarray] | None:
    """Mean score over the seeds of row ``a`` minus that of row ``b`` of the same task, paired over the dev examples
    (:func:`attnbook.studies.kovaleva.table1.paired_mean_difference`); ``None`` without outputs."""
    oa, ob = a.get("outputs"), b.get("outputs")
    if not oa or not ob:
        return None
    return paired_mean_difference(task, oa, ob, n_resamples=n_resamples, seed=seed)


def seed_variance(r) -> tuple[float, float] | None:
    """The variance that the seed-to-seed spread of fine-tuning adds to a Table 1 row's mean over its seeds, and its
    degrees of freedom: ``s^2 / k`` over its ``k >= 2`` seeds (``k - 1``), for one seed the pooled spread it
    borrowed (``seed_sd``, :func:`attnbook.studies.kovaleva.table1.combine_seeds`), none for the untrained
    ``"pretrained"`` classifier (not fine-tuned); ``None`` when a fine-tuned row has neither."""
    scores = list((r.get("seed_scores") or {}).values()) if isinstance(r.get("seed_scores"), Mapping) else []
    if len(scores) >= 2:
        return float(np.var(scores, ddof=1)) / len(scores), float(len(scores) - 1)
    if r.get("init") == "pretrained":
        return 0.0, math.inf
    sd = r.get("seed_sd")
    if isinstance(sd, (tuple, list)) and len(sd) == 2:
        return float(sd[0]) ** 2, float(sd[1])
    return None


def with_seed_spread(est: Estimate, parts: Sequence[tuple[float, float]], weight: float = 1.0) -> Estimate:
    """``est`` (an interval over dev examples) widened by seed-to-seed variance components ``parts`` (variance,
    degrees of freedom) each entering ``weight**2`` times: the examples' standard error read back from the interval
    (normal) plus the seeds' variance, Student's t on Satterthwaite's degrees of freedom, around the same value."""
    from scipy.stats import t as student

    se = (est.high - est.low) / 2 / 1.959963984540054
    comps = [(se ** 2, math.inf)] + [(v * weight ** 2, df) for v, df in parts if v > 0]
    total = sum(v for v, _ in comps)
    denom = sum(v ** 2 / df for v, df in comps if math.isfinite(df) and df > 0)
    dof = total ** 2 / denom if denom > 0 else math.inf
    q = float(student.ppf(0.975, dof)) if math.isfinite(dof) else 1.959963984540054
    half = q * math.sqrt(total)
    return Estimate(est.value, est.value - half, est.value + half, est.n, "dev examples and seeds", dof,
                    sum(v for v, _ in comps[1:]), se ** 2)


def _with_seeds(est: Estimate, rows_: Sequence[Any], weight: float = 1.0) -> tuple[Estimate, str]:
    """:func:`with_seed_spread` of ``est`` over the seed variances of ``rows_`` (:func:`seed_variance`) and the
    words saying what its interval counts; ``est`` unchanged when a row has no seed spread to give."""
    parts = [seed_variance(r) for r in rows_]
    if not est.has_interval or any(p is None for p in parts):
        return est, "seed-to-seed spread not included"
    return with_seed_spread(est, parts, weight), ("interval: the dev examples (paired) and the seed-to-seed spread of "
                                                  "both rows (a one-seed row's borrowed from the table)")


def _difference_row(experiment: str, q: str, task: str, a, b, rule: verdict.Rule, note: str, n_resamples: int,
                    seed: int) -> Comparison:
    """Row ``a`` minus row ``b`` of Table 1 (points) against the paper's difference, judged by ``rule``; not run (or
    not reproduced, when the data are missing here) when either side was not run."""
    paper = round(float(a["paper"] - b["paper"]), 1)
    if is_missing(a["ours"]) or is_missing(b["ours"]):
        gone = next((x["note"] for x in (a, b) if is_missing(x["ours"]) and missing_data(x["note"])), "")
        return not_run_row(experiment, q, paper, _not_reproduced(task, gone) if gone else "not run",
                           kind=verdict.NOT_REPRODUCED if gone else verdict.CLAIM)
    est = row_difference(task, a, b, n_resamples, seed)
    if est is None:
        ours, counts = Estimate(float(a["ours"] - b["ours"])), ""
    else:
        ours, counts = _with_seeds(est[0], [a, b])
    return verdict.row(experiment, q, paper=paper, ours=ours, rule=rule, fmt=".1f",
                       note=note + (f"; {counts}" if counts else ""))


def table1_cells(df) -> list[Comparison]:
    """The rows of Table 1's cells, one per row of ``df`` (:func:`attnbook.studies.kovaleva.table1.table1`), as
    :func:`table1_comparisons` judges them: ours against the paper's by :func:`cell_rule`; against our own constant
    predictor by :func:`constant_rule` where the paper's cell is a constant predictor's score; ``not comparable``
    where our fine-tuned classifier is no better than its constant predictor; not run or ``not reproduced`` where
    the task was not run. The page's sentences about the cells read these rows
    (:mod:`~attnbook.studies.kovaleva.paper.text`)."""
    rows = []
    for _, r in df.iterrows():
        q = cell_quantity(r["task"], r["init"])
        if is_missing(r["ours"]):
            gone = missing_data(r["note"])
            rows.append(not_run_row("Table 1", q, float(r["paper"]),
                                    _not_reproduced(r["task"], r["note"]) if gone else (r["note"] or "not run"),
                                    kind=verdict.NOT_REPRODUCED if gone else verdict.CLAIM))
            continue
        note = f"{r['metric']}; {int(r['n_dev'])} dev examples" + (
            f" of {int(r['n_dev_total'])}" if r.get("n_dev_total") and r["n_dev_total"] != r["n_dev"] else "") + (
            f", {int(r['n_train'])} training examples" if r["n_train"] else "")
        constant, vs = paper_constant_reason(r), versus_constant_estimate(r)
        if constant and vs is not None:
            rows.append(verdict.row(
                "Table 1", q, paper=f"{float(r['paper']):g} (a constant predictor's score)",
                ours=f"{_cell_estimate(r).text('.1f')}; minus its constant predictor {vs.text('+.1f')}",
                estimate=vs, rule=constant_rule(r["task"]),
                note=note + f"; {constant}, so the claim is 'no better than a constant predictor': ours minus our "
                f"constant predictor ({float(r['constant']):.1f}) is {vs.text('+.1f')} points, paired over the dev "
                "examples (first seed)"))
            continue
        untrained = r["init"] == "pretrained"  # the paper's column is an untrained head too: nothing had to learn
        reason = ("" if untrained else row_reason(r)) or constant
        rule = verdict.NotComparable(reason) if reason else cell_rule(r["task"])
        if untrained:
            note += ("; an untrained head on the pre-trained encoder, as in the paper's column: a score near chance is "
                     "the measurement, not a classifier that failed to learn")
        elif not reason and not_learned_seeds(r):
            note += "; seeds no better than their constant predictor: " + ", ".join(map(str, not_learned_seeds(r)))
        rows.append(verdict.row("Table 1", q, paper=float(r["paper"]), ours=_cell_estimate(r), rule=rule, note=note,
                                fmt=".1f"))
    return rows


def table1_comparisons(df, *, n_resamples: int = 2000, seed: int = 0) -> list[Comparison]:
    """Rows for Table 1 (``df`` from :func:`attnbook.studies.kovaleva.table1.table1`).

    * each cell: ours (95% interval over dev examples and seeds) against the paper's, :func:`cell_rule`; ``not
      comparable`` when our fine-tuned classifier is no better than its constant predictor (an untrained
      ``"pretrained"`` cell is compared as measured: the paper's is untrained too)
      (:func:`~attnbook.studies.kovaleva.paper.learned.row_reason`) or when the task was not run (``not
      reproduced`` when its data is not here: Kovaleva's QQP, MNLI and QNLI training sets);
    * a cell whose paper value is a constant predictor's score
      (:func:`~attnbook.studies.kovaleva.paper.learned.paper_constant_reason`: MRPC random init 81.2, SST-2 untrained
      49.1, RTE 52.7) claims "no better than a constant predictor": judged on both sides, this run's classifier minus
      its own constant predictor (paired, ``vs_constant_low``/``_high``) by :func:`constant_rule`;
    * per task, pre-trained + fine-tuning minus random init + fine-tuning, paired over the dev examples (its
      interval also counts both rows' seed-to-seed spread, :func:`seed_variance`, where the table gives it),
      against the paper's difference, on its sign and its size (:func:`difference_rule`); not comparable when our
      pre-trained + fine-tuning classifier is no better than its constant predictor;
    * where the paper's random init + fine-tuning scores below its untrained pre-trained model (STS-B and QNLI, as
      §4.3's text says), that difference, paired over the dev examples, against the paper's, on its sign and its
      size (:func:`difference_rule`);
    * the mean gain of fine-tuning (pre-trained + fine-tuning minus pre-trained) over the tasks whose fine-tuned
      classifier learned, against the paper's mean over the same tasks (:func:`gain_rule`, signed; each task
      resampled on its own dev examples).
    """
    rows = table1_cells(df)
    by = {(r["task"], r["init"]): r for _, r in df.iterrows()}
    tasks = list(dict.fromkeys(df["task"]))
    learned = learned_tasks(df)
    for t in tasks:
        a, b = by.get((t, "pretrained_ft")), by.get((t, "random_ft"))
        if a is None or b is None:
            continue
        rule = verdict.NotComparable(learned[t]) if learned.get(t) else difference_rule(t)
        rows.append(_difference_row("Table 1", f"{t}: pre-trained + FT minus random init + FT (points)", t, a, b, rule,
                                    "paper: positive on every task, judged here on its sign and its size; ours paired "
                                    "over the same dev examples", n_resamples, seed))
    for t in tasks:  # §4.3's text: on STS-B and QNLI random init + fine-tuning scores below no fine-tuning at all
        r, u = by.get((t, "random_ft")), by.get((t, "pretrained"))
        if r is None or u is None or is_missing(r["paper"]) or is_missing(u["paper"]) or r["paper"] >= u["paper"]:
            continue
        rows.append(_difference_row("§4.3", f"{t}: random init + FT minus pre-trained without FT (points)", t, r, u,
                                    difference_rule(t), "the paper: 'for some tasks (STS-B and QNLI), initialization "
                                    "with random weights yields worse performance than pre-trained BERT without "
                                    "fine-tuning' "
                                    "(Table 1), judged here on the sign and the size of Table 1's difference; ours "
                                    "paired over the same dev examples", n_resamples, seed))
    gains, names, paper_gain, draws = [], [], [], []
    for t in tasks:
        a, b = by.get((t, "pretrained_ft")), by.get((t, "pretrained"))
        if a is None or b is None or is_missing(a["ours"]) or is_missing(b["ours"]) or learned.get(t):
            continue
        est = row_difference(t, a, b, n_resamples, seed)
        gains.append(float(a["ours"] - b["ours"]))
        names.append(t)
        paper_gain.append(float(a["paper"] - b["paper"]))
        draws.append(None if est is None else est[1])
    if names:
        value = float(np.mean(gains))
        counts = ""
        if all(d is not None and d.size for d in draws):
            lo, hi = percentile_interval(np.mean(np.stack(draws), axis=0))
            ours = Estimate(value, float(lo), float(hi), int(sum(by[(t, "pretrained_ft")]["n_dev"] for t in names)),
                            "dev examples (each task resampled on its own)")
            ours, counts = _with_seeds(ours, [by[(t, i)] for t in names for i in ("pretrained_ft", "pretrained")],
                                       weight=1.0 / len(names))
        else:
            ours = Estimate(value)
        rows.append(verdict.row(
            "Table 1", "mean gain of fine-tuning (points)", paper=round(float(np.mean(paper_gain)), 1), ours=ours,
            rule=gain_rule(names), fmt=".1f",
            note=f"over {', '.join(names)} (paper, all 7 tasks: {PAPER['finetune_gain']}); the untrained classifier "
                 "is the baseline in both" + (f"; {counts}" if counts else "")))
    elif tasks:
        rows.append(not_run_row("Table 1", "mean gain of fine-tuning (points)", PAPER["finetune_gain"],
                                "no fine-tuned classifier here is better than its constant predictor"))
    return rows


def beside_table1(baselines):
    """``baselines`` (:func:`attnbook.studies.kovaleva.disabling.baselines`) with a last column ``"Kovaleva Table 1"``:
    the paper's pre-trained + fine-tuned score of each task (:data:`PAPER_TABLE1`; NaN where it has none)."""
    out = baselines.copy()
    out["Kovaleva Table 1"] = [PAPER_TABLE1.get(t, {}).get("pretrained_ft", (float("nan"),))[0] for t in out["task"]]
    return out
