"""Kovaleva et al. beside this run, in sentences: chapters 4 and 5's paragraphs, written from the numbers.

* chapter 4: under Table 1 (:func:`table1_note`, :func:`finetune_markdown`, both reading the cell rows of
  :func:`~attnbook.studies.kovaleva.paper.table1_rows.table1_cells`) and the closing summary
  (:func:`agreement_markdown`, with :func:`setting_markdown` as its setting), with the confounds the rows carry
  (:func:`recipe_confound`, :func:`classifier_confound`);
* chapter 5: the caution under the baseline table (:func:`caution_markdown`) and the closing summary
  (:func:`disabling_findings`, with :func:`disabling_setting` as its setting).

Both closing summaries are written by :func:`attnbook.verdict.summary_markdown` (the outcomes counted per experiment,
the rows that differ or that the data cannot decide listed with their numbers); the settings here count none of them.
The rows are :mod:`~attnbook.studies.kovaleva.paper.rows`' and :mod:`~attnbook.studies.kovaleva.paper.table1_rows`'.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from attnbook import verdict
from attnbook.engine.precision import resolve_bf16, training_sentence
from attnbook.stats import Estimate
import re

from attnbook.studies.kovaleva.paper.claims import PAPER, PAPER_MODEL
from attnbook.studies.kovaleva.paper.learned import is_missing, not_learned_seeds
from attnbook.studies.kovaleva.paper.rows import SHARE_INTERVAL_WORDS
from attnbook.studies.kovaleva.paper.table1_rows import cell_quantity, cell_rule_words, row_difference, table1_cells

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


def _are(n: int, one: str = "is", many: str = "are") -> str:
    """``one`` for a count of 1, else ``many`` (``"1 is"``, ``"2 are"``)."""
    return one if n == 1 else many


def _cell_rows(rows: Sequence[Comparison]) -> list[Comparison]:
    """The Table 1 cell rows among ``rows`` (quantity ``"task, init"``)."""
    return [r for r in rows if r.experiment == "Table 1" and "," in r.quantity]


def _against_constant(r: Comparison) -> bool:
    """Whether a cell row judges the paper's claim "no better than a constant predictor"."""
    return "a constant predictor's score" in str(r.paper)


def _not_learned_cells(cells: Sequence[Comparison]) -> list[Comparison]:
    """The measured claim cells that are ``not comparable`` (our classifier no better than its constant predictor)."""
    return [r for r in cells if r.kind == verdict.CLAIM and r.verdict == verdict.NOT_COMPARABLE
            and not is_missing(r.value)]


def table1_note(df, cpu_seconds: float, cells: Sequence[Comparison] | None = None) -> str:
    """The paragraph under Table 1: how to read a cell and how its interval combines seeds and dev examples
    (:func:`seeds_sentence`), the CPU time of fine-tuning and scoring, the tasks not run, and what the cell rows
    (``cells``, default :func:`~attnbook.studies.kovaleva.paper.table1_rows.table1_cells` of ``df``) say of the
    classifiers: the cells that are not comparable with their reason, the cells whose paper value is a constant
    predictor's score with their outcome, and the seeds no better than their constant predictor in a cell that
    stays comparable."""
    cells = _cell_rows(table1_cells(df) if cells is None else cells)
    notes = df[df["note"] != ""][["task", "init", "note"]].drop_duplicates("task")
    seeds = seeds_sentence(df)
    text = (f"Cells read *ours [95% interval] (paper)*; MRPC/QQP cells are F1/accuracy. "
            + (seeds + " " if seeds else "")
            + f"Fine-tuning and scoring took {cpu_seconds:.0f} CPU seconds in this run (near 0 when every checkpoint "
            "was cached). "
            + ("Not run: " + "; ".join(f"{r.task} ({r.note.replace('not run: ', '')})" for r in notes.itertuples())
               + ". " if len(notes) else ""))
    constant = [r for r in cells if _against_constant(r)]
    if constant:
        one = len(constant) == 1
        text += (f"The paper's cell{'' if one else 's'} {'; '.join(r.quantity for r in constant)} "
                 + ("is a constant predictor's score" if one else "are constant predictors' scores")
                 + f", so the claim there is 'no better than a constant predictor' and the row{'' if one else 's'} "
                 f"judge{'s' if one else ''} ours against our own constant predictor: "
                 + "; ".join(f"{r.quantity} {r.outcome_words}" for r in constant) + ". ")
    flat = _not_learned_cells(cells)
    if flat:
        maps = any(r.quantity.endswith("pretrained_ft") for r in flat)
        text += (f"**Warning:** {len(flat)} cell{'' if len(flat) == 1 else 's'} {_are(len(flat))} not comparable, "
                 "our classifier no better than its constant predictor (majority class; always 'paraphrase' for F1; "
                 "Pearson 0): " + "; ".join(f"{r.quantity} ({r.reason})" for r in flat) + "."
                 + (" The fine-tuned maps below carry little of such a task." if maps else "") + " ")
    judged = {r.quantity for r in cells if r.verdict != verdict.NOT_COMPARABLE}
    some = [f"{r['task']}, {r['init']} (seed{'s' if len(not_learned_seeds(r)) > 1 else ''} "
            f"{', '.join(map(str, not_learned_seeds(r)))} of {len(r.get('learned') or {})})"
            for _, r in df.iterrows() if f"{r['task']}, {r['init']}" in judged and r["init"] != "pretrained"
            and not_learned_seeds(r)]
    if some:
        text += ("Seeds no better than their constant predictor in a cell that is still compared (its mean counts "
                 "them): " + "; ".join(some) + ".")
    return text.strip()


def _per_task(value: Any, tasks: Sequence[str], fmt: str = "g", none: str = "all") -> str:
    """A recipe value as text: one value, or ``task value`` per task when it is a per-task mapping."""
    one = lambda v: none if v is None else format(v, fmt)  # noqa: E731
    if isinstance(value, Mapping):
        vals = {t: value.get(t, value.get("default")) for t in tasks}
        if len(set(map(str, vals.values()))) == 1:
            return one(next(iter(vals.values())))
        return ", ".join(f"{t} {one(v)}" for t, v in vals.items())
    return one(value)


def recipe_confound(cells: Sequence[Comparison], recipe: Mapping[str, Any] | None = None) -> str:
    """The fine-tuning recipe as a confound of every row on a fine-tuned model, from the Table 1 cell rows: the
    pre-trained + fine-tuning cells whose interval does not reach the paper's cell from below (ours lower, not
    agreeing) and the fine-tuned cells not comparable because the classifier learned nothing; with ``recipe``, its
    epochs beside the paper's (§3: 3 epochs). ``""`` when no cell falls short."""
    cells = _cell_rows(cells)
    task = lambda r: r.quantity.split(",")[0]  # noqa: E731
    short = [r for r in cells if r.kind == verdict.CLAIM and r.quantity == cell_quantity(task(r), "pretrained_ft")
             and r.verdict in (verdict.DISAGREES, verdict.PARTLY, verdict.INCONCLUSIVE)
             and isinstance(r.paper, (int, float)) and r.value is not None and r.value < r.paper]
    flat = [r for r in _not_learned_cells(cells) if r.quantity != cell_quantity(task(r), "pretrained")]
    if not short and not flat:
        return ""
    what = []
    if short:
        what.append("pre-trained + fine-tuning below the paper's cell ("
                    + ", ".join(f"{r.quantity.split(',')[0]} {r.value:.1f} against {float(r.paper):g}" for r in short)
                    + ")")
    if flat:
        what.append("classifiers no better than their constant predictor ("
                    + ", ".join(r.quantity for r in flat) + ")")
    epochs = ""
    if recipe is not None and recipe.get("epochs") is not None:
        tasks = list(dict.fromkeys(r.quantity.split(",")[0] for r in short + flat))
        epochs = (f" (this recipe: {_per_task(recipe.get('epochs'), tasks)} epoch(s), training examples "
                  f"{_per_task(recipe.get('train_cap'), tasks, ',')}; the paper's: {PAPER['finetune_epochs']} epochs "
                  "on the whole training sets, §3)")
    return ("The fine-tuning recipe is a confound of every row on a fine-tuned model: "
            + " and ".join(what) + " may owe as much to the recipe's epochs and training examples" + epochs
            + " as to the model, and the maps of a classifier that learned less carry less of its task.")


def finetune_markdown(df, finetune: str, recipe: Mapping[str, Any], cells: Sequence[Comparison] | None = None
                      ) -> str:
    """How the classifiers of this run were fine-tuned (from the recipe, so it holds in every profile), how
    much fine-tuning moved each task's score over the untrained classifier (from the Table 1 rows, with the paired
    interval; a task whose pre-trained + fine-tuning cell row is not comparable, its classifier no better than its
    constant predictor, is named as such) and the recipe as a confound (:func:`recipe_confound`). ``cells``: the
    cell rows (default :func:`~attnbook.studies.kovaleva.paper.table1_rows.table1_cells` of ``df``)."""
    cells = _cell_rows(table1_cells(df) if cells is None else cells)
    flat_cells = {r.quantity for r in _not_learned_cells(cells)}
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
        if cell_quantity(t, "pretrained_ft") in flat_cells:
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
                 "for those tasks there is little that fine-tuning could have changed in the maps. ")
    return (text + recipe_confound(cells, recipe)).strip()


# ---------------------------------------------------------------------------------------------
# chapter 4: the closing summary
# ---------------------------------------------------------------------------------------------
_GAP = re.compile(r"rule set (\d+(?:\.\d+)?)%, CNN minus rule set ([+-]\d+(?:\.\d+)?) points")


def classifier_confound(rows: Sequence[Comparison]) -> str:
    """What the Fig. 2 rows' intervals leave out, from the rows: they count the inputs sampled, not the CNN's
    labelling error; where the rows' notes give the rule set's share of the same maps
    (:func:`~attnbook.studies.kovaleva.paper.rows.classifier_gap_words`), the largest CNN-minus-rules gap is named as
    the measure of that error. ``""`` without Fig. 2 rows."""
    fig2 = [r for r in rows if r.experiment == "§4.1 Fig. 2"]
    if not fig2:
        return ""
    text = "The Fig. 2 shares' intervals count the inputs sampled, not the CNN's labelling error."
    gaps = [(abs(float(m.group(2))), r, m) for r in fig2 for m in [_GAP.search(r.note or "")] if m]
    if gaps:
        _, r, m = max(gaps, key=lambda g: g[0])
        text += (f" The CNN's share minus the rule set's, on the same maps, reaches {m.group(2)} points "
                 f"({r.quantity}: CNN {r.ours}, rule set {m.group(1)}%): that disagreement, not the interval, is the "
                 "measure of the shares' labelling error.")
    return text


def setting_markdown(rows: Sequence[Comparison], model_name: str) -> str:
    """The setting of chapter 4's closing summary, from the rows only: this run's model beside the paper's; what
    became of the Table 1 cells (how many are not comparable, each with its reason, and how many of the others
    agree, by the cell rule, :func:`~attnbook.studies.kovaleva.paper.table1_rows.cell_rule`, or against our own
    constant predictor where the paper's cell is a constant predictor's score); the confounds the rows carry: the
    fine-tuning recipe (:func:`recipe_confound`) and the pattern classifier's labelling error
    (:func:`classifier_confound`). It counts no finding: :func:`attnbook.verdict.summary_markdown` does."""
    text = f"The model here is {model_name}; the paper's is {PAPER_MODEL}."
    every = _cell_rows(rows)
    cells = [r for r in every if r.kind == verdict.CLAIM]
    if cells:
        tasks = list(dict.fromkeys(r.quantity.split(",")[0] for r in cells))
        nc = [r for r in cells if r.verdict == verdict.NOT_COMPARABLE]
        judged = [r for r in cells if r.verdict != verdict.NOT_COMPARABLE]
        by_constant = [r for r in judged if _against_constant(r)]
        by_cell = [r for r in judged if not _against_constant(r)]
        agree = lambda rs: sum(r.verdict == verdict.AGREES for r in rs)  # noqa: E731
        text += (f" Of the {len(cells)} Table 1 cells, {len(nc)} {_are(len(nc))} not comparable"
                 + (" (" + "; ".join(f"{r.quantity}: {r.reason}" for r in nc) + ")" if nc else "")
                 + f"; of the other {len(judged)}, {agree(judged)} {_are(agree(judged), 'agrees', 'agree')} with "
                 "the paper")
        parts = []
        if by_cell:
            parts.append(f"{agree(by_cell)} of {len(by_cell)} by the cell rule ({cell_rule_words(tasks)})")
        if by_constant:
            parts.append(f"{agree(by_constant)} of {len(by_constant)} whose paper cell is a constant predictor's "
                         "score by comparing ours with our own constant predictor")
        text += (": " + ", ".join(parts) if judged else "") + "."
    if len(every) > len(cells):
        n = len(every) - len(cells)
        text += (f" {n} cell{'' if n == 1 else 's'} {_are(n)} not reproduced: this book's data has no training set "
                 "for them.")
    confounds = [c for c in (recipe_confound(rows), classifier_confound(rows)) if c]
    return " ".join([text] + confounds)


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
