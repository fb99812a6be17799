"""Kovaleva et al. beside this run, in sentences: chapters 4 and 5's paragraphs, written from the numbers.

* chapter 4: under Table 1 (:func:`table1_note`, :func:`finetune_markdown`) and the closing summary
  (:func:`agreement_markdown`, with :func:`setting_markdown` as its setting);
* chapter 5: the caution under the baseline table (:func:`caution_markdown`) and the closing summary
  (:func:`disabling_findings`, with :func:`disabling_setting` as its setting).

Both closing summaries are written by :func:`attnbook.verdict.summary_markdown` (the outcomes counted per experiment,
the rows that differ or that the data cannot decide listed with their numbers); the settings here count none of them.
The rows are :mod:`~attnbook.studies.kovaleva.paper.rows`'.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from attnbook import verdict
from attnbook.engine.precision import resolve_bf16, training_sentence
from attnbook.stats import Estimate
from attnbook.studies.kovaleva.paper.claims import PAPER_MODEL
from attnbook.studies.kovaleva.paper.learned import constant_predictors, is_missing, row_reason
from attnbook.studies.kovaleva.paper.rows import cell_rule_words, row_difference

Comparison = verdict.Comparison


# ---------------------------------------------------------------------------------------------
# chapter 4: Table 1
# ---------------------------------------------------------------------------------------------
def seeds_sentence(df) -> str:
    """How Table 1's intervals combine the seeds (from the table's ``seeds``, ``unit`` and ``seed_sd`` columns): one
    estimand for every cell, a one-seed cell borrowing the pooled seed-to-seed spread of the cells with several."""
    run = df[df["ours"] == df["ours"]] if "ours" in df else df
    if "init" in run:
        run = run[run["init"] != "pretrained"]
    if not len(run):
        return ""
    k = run["seeds"].map(lambda x: len(str(x).split(","))) if "seeds" in run else None
    text = ("Each fine-tuned cell is the mean over its fine-tuning seeds; its interval counts both the dev examples' "
            "own error and the seed-to-seed spread of fine-tuning (the recipe's expected score, the same estimand in "
            "every fine-tuned cell; the untrained classifier, scored once, counts its dev examples).")
    if k is None or (k > 1).all():
        return text
    borrowed = [x for x in run.get("seed_sd", []) if isinstance(x, (tuple, list)) and len(x) == 2]
    if borrowed:
        sd, dof = borrowed[0]
        return text + (f" The fine-tuned cells with one seed ({int((k == 1).sum())}) borrow the pooled seed-to-seed "
                       f"standard deviation of the cells with several: {sd:.2f} points on {dof:g} degrees of "
                       "freedom.")
    return text + (" No cell here has two seeds, so there is no seed spread to borrow: each interval counts the dev "
                   "examples only.")


def table1_note(df, cpu_seconds: float) -> str:
    """The paragraph under Table 1: how to read a cell and how its interval combines seeds and dev examples
    (:func:`seeds_sentence`), the CPU time of fine-tuning and scoring, the tasks not run, and a warning naming the
    fine-tuned classifiers no better than their constant predictor."""
    notes = df[df["note"] != ""][["task", "init", "note"]].drop_duplicates("task")
    constant = constant_predictors(df)
    seeds = seeds_sentence(df)
    return (f"Cells read *ours [95% interval] (paper)*; MRPC/QQP cells are F1/accuracy. "
            + (seeds + " " if seeds else "")
            + f"Fine-tuning and scoring took {cpu_seconds:.0f} CPU seconds in this run (near 0 when every checkpoint "
            "was cached). "
            + ("Not run: " + "; ".join(f"{r.task} ({r.note.replace('not run: ', '')})" for r in notes.itertuples())
               + ". " if len(notes) else "")
            + ("**Warning:** " + ", ".join(constant) + " are no better than a constant predictor (majority class; "
               "always 'paraphrase' for F1; Pearson 0): their cells are not comparable, and the fine-tuned maps "
               "below carry little of such a task." if constant else ""))


def _per_task(value: Any, tasks: Sequence[str], fmt: str = "g", none: str = "all") -> str:
    """A recipe value as text: one value, or ``task value`` per task when it is a per-task mapping."""
    one = lambda v: none if v is None else format(v, fmt)  # noqa: E731
    if isinstance(value, Mapping):
        vals = {t: value.get(t, value.get("default")) for t in tasks}
        if len(set(map(str, vals.values()))) == 1:
            return one(next(iter(vals.values())))
        return ", ".join(f"{t} {one(v)}" for t, v in vals.items())
    return one(value)


def finetune_markdown(df, finetune: str, recipe: Mapping[str, Any]) -> str:
    """How the classifiers of this run were fine-tuned (from the recipe, so it holds in every profile) and how
    much fine-tuning moved each task's score over the untrained classifier (from the Table 1 rows, with the paired
    interval; a task whose fine-tuned classifier is no better than its constant predictor is named as such)."""
    tasks = [t for t in dict.fromkeys(df["task"])
             if not is_missing(df[(df["task"] == t) & (df["init"] == "pretrained_ft")]["ours"].max())]
    seeds = recipe.get("seeds") or [0]
    rseeds = recipe.get("random_seeds") or seeds
    text = (f"The classifiers were fine-tuned with the `{finetune}` recipe: "
            f"{_per_task(recipe.get('epochs'), tasks)} epoch(s), training examples {_per_task(recipe.get('train_cap'), tasks, ',')}, "
            f"learning rate {_per_task(recipe.get('lr'), tasks)}; pre-trained + fine-tuning over seed(s) "
            f"{', '.join(map(str, seeds))}, random init + fine-tuning over seed(s) {', '.join(map(str, rseeds))}. ")
    text += training_sentence(recipe.get("bf16", False), resolve_bf16(recipe.get("bf16", False))) + " "
    fewer = {t: v for t, v in (recipe.get("task_seeds") or {}).items() if t in tasks}
    if fewer:
        text += ("Fewer seeds where the recipe does not make a task learn, so nothing would be analysed on the "
                 "others: " + ", ".join(f"{t} seed(s) {', '.join(map(str, v))}" for t, v in fewer.items()) + ". ")
    moved, flat = [], []
    by = {(r["task"], r["init"]): r for _, r in df.iterrows()}
    for t in tasks:
        a, b = by.get((t, "pretrained_ft")), by.get((t, "pretrained"))
        if b is None or is_missing(b["ours"]):
            continue
        if row_reason(a):
            flat.append(t)
            continue
        est = row_difference(t, a, b, 1000, 0)
        d = est[0] if est is not None else Estimate(float(a["ours"] - b["ours"]))
        moved.append(f"{t} {d.text('+.1f')}")
    if moved:
        text += ("Pre-trained + fine-tuning minus the untrained classifier (points, mean over seeds, 95% interval "
                 "over dev examples): " + ", ".join(moved) + ". ")
    if flat:
        text += ("On " + ", ".join(flat) + " the fine-tuned classifier is no better than a constant predictor: "
                 "for those tasks there is little that fine-tuning could have changed in the maps.")
    return text.strip()


# ---------------------------------------------------------------------------------------------
# chapter 4: the closing summary
# ---------------------------------------------------------------------------------------------
def setting_markdown(rows: Sequence[Comparison], model_name: str) -> str:
    """The setting of chapter 4's closing summary: this run's model beside the paper's, and what became of the
    Table 1 cells (how many are not comparable, and how many of the others agree by the cell rule,
    :func:`~attnbook.studies.kovaleva.paper.rows.cell_rule`). It counts no finding:
    :func:`attnbook.verdict.summary_markdown` does."""
    text = f"The model here is {model_name}; the paper's is {PAPER_MODEL}."
    every = [r for r in rows if r.experiment == "Table 1" and "," in r.quantity]
    cells = [r for r in every if r.kind == verdict.CLAIM]
    if cells:
        tasks = list(dict.fromkeys(r.quantity.split(",")[0] for r in cells))
        nc = sum(r.verdict == verdict.NOT_COMPARABLE for r in cells)
        agree = sum(r.verdict == verdict.AGREES for r in cells)
        text += (f" Of the {len(cells)} Table 1 cells, {nc} are not comparable (not run, or our classifier no better "
                 f"than its constant predictor); of the other {len(cells) - nc}, {agree} agree with the paper by the "
                 f"cell rule ({cell_rule_words(tasks)}) or, where the paper's cell is a constant predictor's score, by "
                 "comparing ours with its own constant predictor.")
    if len(every) > len(cells):
        text += f" {len(every) - len(cells)} cells are not reproduced: this book's data has no training set for them."
    return text


def agreement_markdown(rows: Sequence[Comparison], model_name: str) -> str:
    """Chapter 4's closing summary: :func:`attnbook.verdict.summary_markdown` of the rows (outcomes counted per
    experiment, the rows that differ or cannot be decided listed), with :func:`setting_markdown` as its setting."""
    return verdict.summary_markdown(rows, setting_markdown(rows, model_name))


# ---------------------------------------------------------------------------------------------
# chapter 5: §4.6 disabling heads and layers, §5 word matching
# ---------------------------------------------------------------------------------------------
def caution_markdown(not_learned: Mapping[str, str]) -> str:
    """The caution under chapter 5's baseline table naming the classifiers no better than their constant
    predictor on the whole dev set (``not_learned[task]`` = the reason)."""
    weak = {t: r for t, r in not_learned.items() if r}
    if not weak:
        return ""
    return ("**Caution.** " + "; ".join(f"{t}: {r}" for t, r in weak.items()) + ". Switching heads off in such a "
            "classifier has nothing learned to destroy, so its rows below are not comparable with the paper's.")


def disabling_setting(rows: Sequence[Comparison], surviving: Mapping[str, Sequence[str]], model_name: str,
                      n_layers: int, n_swept: Mapping[str, int], n_dev: Mapping[str, int]) -> str:
    """The setting of chapter 5's closing summary: why a row can be undecided (the sweeps score a sample of each dev
    set, and a pick is scored on held-out examples or on the half it was not chosen on), the single-head gains that
    survive Holm (``surviving[task]``, head labels), and what differs from the
    paper's set-up (``model_name`` with ``n_layers`` layers; ``n_swept[task]`` of ``n_dev[task]`` dev examples
    swept). It counts no outcome: :func:`attnbook.verdict.summary_markdown` does."""
    swept = ", ".join(f"{t} {n_swept[t]:,} of {n_dev[t]:,}" for t in n_swept)
    text = ""
    if any(r.verdict == verdict.INCONCLUSIVE for r in rows):
        text += ("An undecided row's paired 95% interval contains 0: the sweeps score a sample of each dev set, and "
                 "the best head and layer chosen there are tested on the rest of it or, where nothing is left out, "
                 "chosen on one half of the sample and scored on the other: too few examples to tell a gain of the "
                 "paper's size from none. ")
    text += ("Gains that survive the Holm correction: "
             + ("; ".join(f"{t}: {', '.join(s)}" for t, s in surviving.items() if s) or "none")
             + f". The model here is {model_name} ({n_layers} layers); the sweeps score dev examples ({swept}); "
             f"the paper's is {PAPER_MODEL} on the full dev sets, and it reports no significance test.")
    return text


def disabling_findings(rows: Sequence[Comparison], surviving: Mapping[str, Sequence[str]], model_name: str,
                       n_layers: int, n_swept: Mapping[str, int], n_dev: Mapping[str, int]) -> str:
    """Chapter 5's closing summary: :func:`attnbook.verdict.summary_markdown` of the rows, with
    :func:`disabling_setting` (the gains that survive Holm, and what differs from the paper's set-up) as its
    setting."""
    return verdict.summary_markdown(rows, disabling_setting(rows, surviving, model_name, n_layers, n_swept, n_dev))
