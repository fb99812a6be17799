"""Niven & Kao (2019) beside this run: the comparison rows, the estimates they judge and the paper's tables.

* the rules, one per kind of quantity, which every row states in words (:data:`RULES`,
  :func:`attnbook.verdict.row`);
* the tables in the paper's layout, ours beside the paper's (:func:`not_cue_table` for Table 2, :func:`seed_table` and
  :func:`table1_seed_table` for Table 1, :func:`probe_seed_table` for Table 3, :func:`adversarial_seed_table` for
  Table 4);
* this run's numbers as estimates with 95% intervals (:func:`seed_estimate`: t over seeds, or one run's exact
  interval over test items; :func:`median_estimate`; :func:`combined_estimate`), the cue counts as the census they
  are (:func:`cue_estimate`: exact, no interval), the constant predictor and the paper's degenerate-run filter (§3),
  and the per-seed records;
* the "paper vs this run" rows (:func:`paper_comparison`), each note quoting what its rule compared and each
  undecided row saying what its seeds could detect (:mod:`~attnbook.studies.niven_kao.paper.detect`).

The paper's numbers are in :mod:`attnbook.studies.niven_kao.paper.claims`; the measurements in
:mod:`attnbook.studies.niven_kao.cues` (§4 cues, §6 construction), :mod:`attnbook.studies.niven_kao.pairwise` (§3, §5, §6
BERT runs) and :mod:`attnbook.studies.niven_kao.word_baselines` (BoV and BiLSTM).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from attnbook import stats, verdict
from attnbook.data import arct
from attnbook.data.arct import ArctItem
from attnbook.stats import Estimate
from attnbook.studies.niven_kao import cues
from attnbook.studies.niven_kao.pairwise import INPUTS, summarize
from attnbook.studies.niven_kao.paper.claims import PAPER
from attnbook.studies.niven_kao.paper.detect import compared, count_compared, seed_detectable

# ---- the rules (one per kind of quantity; each row states its own in words) ----------------------

#: Every accuracy row: a mean over seeds, one run's accuracy, or a sum or difference of accuracies (fractions).
ACCURACY_RULE = verdict.Within(0.03, 0.08, unit="in accuracy")
#: Table 2's cue statistics ("not": productivity and coverage), counted on the same files as the paper (a census:
#: judged exactly, :func:`cue_estimate`).
CUE_RULE = verdict.Within(0.02, 0.05, unit="in productivity or coverage")
#: §6: models trained on the original data fall below random on the adversarial test set.
BELOW_CHANCE_RULE = verdict.Beyond(0.5, above=False, what="mean test accuracy")
#: Exact counts over every item or every cue (the §6 transform, the balance of the adversarial test set).
COUNT_RULE = verdict.Cases()
#: Every rule a row of :func:`paper_comparison` can have besides a :class:`attnbook.verdict.NotComparable`.
RULES = (ACCURACY_RULE, CUE_RULE, BELOW_CHANCE_RULE, COUNT_RULE)


# ---- tables in the paper's layout -------------------------------------------------------------


def not_cue_table(splits: Mapping[str, Sequence[ArctItem]]):
    """Table 2 of Niven & Kao beside our counts: productivity and coverage of "not" per split.

    Our counts with both tokenisations (:func:`attnbook.studies.niven_kao.cues.not_cue_table`), the
    paper's in the columns ``paper productivity`` / ``paper coverage`` (``None`` for a split it does not give).
    """
    return cues.not_cue_table(splits, "not", paper=PAPER["not_cue"])


def seed_table(frames: Mapping[str, Any], column: str = "test_accuracy", paper: Mapping[str, Mapping] | None = None,
               *, n_dev: int | None = None, chance_dev: float | None = None):
    """One row per experiment: mean ± std, median and max over seeds of ``column`` (the paper's columns, Table 1).

    ``frames`` maps a row label to a per-seed frame; ``paper`` (same labels) adds the paper's values. With ``n_dev``
    and ``chance_dev`` the row also counts the degenerate runs (:func:`degenerate_mask`) and gives the mean without
    them (``mean, trained``), the number the comparison rows use.
    """
    rows = []
    for label, frame in frames.items():
        s = summarize(frame[column])
        row = {"experiment": label, "seeds": s["n"], "mean": round(s["mean"], 3), "std": round(s["std"], 3),
               "median": round(s["median"], 3), "max": round(s["max"], 3)}
        if n_dev is not None and chance_dev is not None and "dev_accuracy" in frame.columns:
            kept, n_deg = non_degenerate(frame, n_dev, chance_dev)
            row["degenerate"] = n_deg
            row["mean, trained"] = round(float(kept[column].mean()), 3) if len(kept) else None
        if paper is not None and label in paper:
            p = paper[label]
            row.update({"paper mean": p.get("mean"), "paper median": p.get("median"), "paper max": p.get("max")})
        rows.append(row)
    return pd.DataFrame(rows)


#: row labels of the word baselines in :func:`table1_seed_table`, and their Table 1 rows
_WORD_ROWS = {"bov": ("BOV (this run)", "BoV"), "bilstm": ("BiLSTM (this run)", "BiLSTM")}


def table1_seed_table(bert_full: Any, words: Mapping[str, Any] | None = None, *, n_dev: int | None = None,
                      chance_dev: float | None = None):
    """Table 1's rows for BERT (the paper: BERT Large) and the word baselines on the full input, beside ours (with
    the degenerate runs counted when ``n_dev`` and ``chance_dev`` are given, :func:`seed_table`)."""
    frames = {"BERT (this run)": bert_full}
    frames.update({_WORD_ROWS[k][0]: f[f["inputs"] == "full"] for k, f in (words or {}).items()})
    paper = {"BERT (this run)": PAPER["table1"]["BERT (Large)"]}
    paper.update({label: PAPER["table1"][row] for label, row in _WORD_ROWS.values()})
    table = seed_table(frames, paper=paper, n_dev=n_dev, chance_dev=chance_dev)
    if "degenerate" in table.columns:  # the filter is the paper's for BERT; the word baselines keep every run
        words_rows = table["experiment"] != "BERT (this run)"
        table["degenerate"] = table["degenerate"].astype(object)
        table.loc[words_rows, ["degenerate", "mean, trained"]] = None
    return table


def probe_seed_table(bert: Mapping[str, Any], *, n_dev: int | None = None, chance_dev: float | None = None):
    """Table 3's BERT rows (the paper: BERT Large) beside ours, one row per input variant run (§5), with the
    degenerate runs counted when ``n_dev`` and ``chance_dev`` are given (:func:`seed_table`)."""
    return seed_table({INPUTS[k]: v for k, v in bert.items()},
                      paper={INPUTS[k]: v for k, v in PAPER["table3"]["BERT"].items()}, n_dev=n_dev,
                      chance_dev=chance_dev)


def adversarial_seed_table(bert_full: Any, adversarial: Mapping[str, Any], words: Mapping[str, Any] | None = None):
    """Table 4's rows beside ours (§6): the full-input BERT runs of §3 tested on the adversarial test set, then the
    BERT runs trained on ``train-swapped``, one row per input variant, then the BoV and BiLSTM runs trained on it
    (``words``: frames by kind, full input)."""
    labels = {k: f"{INPUTS[k]}, trained on train-swapped" for k in adversarial}
    frames = {"C, R, W, trained on original data": bert_full.assign(test_accuracy=bert_full["test_adv_accuracy"])}
    frames.update({labels[k]: v for k, v in adversarial.items()})
    table4 = {labels[k]: PAPER["table4"]["BERT"][k] for k in adversarial}
    for kind, frame in (words or {}).items():
        label = f"{_WORD_ROWS[kind][1]} (C, R, W), trained on train-swapped"
        frames[label] = frame
        table4[label] = PAPER["table4"][_WORD_ROWS[kind][1]]["full"]
    return seed_table(frames, paper=table4)


# ---- this run's numbers with their intervals -------------------------------------------------------


def run_estimate(accuracy: float, n_items: int, unit: str = "test items (one run)") -> Estimate:
    """One run's test accuracy with its exact (Clopper-Pearson) 95% interval over its ``n_items`` test items."""
    k = int(round(float(accuracy) * n_items))
    low, high = stats.proportion_interval(k, n_items)
    return Estimate(float(accuracy), low, high, int(n_items), unit)


def seed_estimate(values: Sequence[float], n_items: int) -> Estimate:
    """Mean test accuracy over seeds with its 95% interval, by the book's seed rule (:func:`attnbook.stats.over_seeds`:
    each seed's :func:`run_estimate` over its test items and Student's t over the seeds)."""
    return stats.over_seeds([run_estimate(float(v), n_items) for v in values], bounds=(0.0, 1.0))


def combined_estimate(a: Sequence[float], b: Sequence[float], n_a: int, n_b: int, sign: int = 1) -> Estimate:
    """The mean over seeds of ``a + sign * b`` (seed by seed: a sum of half accuracies, a gap between inputs),
    combined by the book's seed rule (:func:`attnbook.stats.over_seeds`, cut to the range the sum or difference of
    two accuracies can take). Each seed's own interval: the two runs' exact intervals at 97.5% each, combined
    (Bonferroni: at least 95% together, however the two are related)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size != b.size or a.size == 0:
        raise ValueError(f"need the same number of seeds on both sides, got {a.size} and {b.size}")
    runs = [_one_run_combined(x, y, n_a, n_b, sign) for x, y in zip(a, b)]
    return stats.over_seeds(runs, bounds=(0.0, 2.0) if sign > 0 else (-1.0, 1.0))


def _one_run_combined(a: float, b: float, n_a: int, n_b: int, sign: int) -> Estimate:
    """One seed's ``a + sign * b`` with the two runs' exact intervals at 97.5% each, combined (Bonferroni)."""
    la, ha = stats.proportion_interval(int(round(a * n_a)), n_a, 0.975)
    lb, hb = stats.proportion_interval(int(round(b * n_b)), n_b, 0.975)
    low, high = (la + lb, ha + hb) if sign > 0 else (la - hb, ha - lb)
    return Estimate(float(a + sign * b), low, high, int(n_a), "test items (one run per side; exact intervals combined)")


def cue_estimate(row: Mapping[str, Any], quantity: str) -> Estimate:
    """Productivity or coverage of a :func:`not_cue_table` row, exactly: the counts are a census of the same files
    Niven & Kao counted (Table 2), so there is no sampling interval (``low``/``high`` are ``None``; ``n`` is the count
    the share is over: the items where the cue applies for productivity, all items of the split for coverage)."""
    k, n, unit = _cue_counts(row, quantity)
    if n == 0:
        return Estimate(float("nan"), None, None, 0, unit)
    return Estimate(k / n, None, None, n, unit)


def productivity_vs_chance(row: Mapping[str, Any]) -> Estimate:
    """The productivity of a :func:`not_cue_table` row with its exact (Clopper-Pearson) 95% interval over the items
    the cue applies to: not the counted share's uncertainty (:func:`cue_estimate` is exact) but whether the cue points
    to the correct warrant more often than a coin would on such items (the interval against one half)."""
    k, n, _ = _cue_counts(row, "productivity")
    if n == 0:
        return Estimate(float("nan"), None, None, 0, "items where the cue applies")
    low, high = stats.proportion_interval(k, n)
    return Estimate(k / n, low, high, n, "items where the cue applies (exact)")


def _cue_counts(row: Mapping[str, Any], quantity: str) -> tuple[int, int, str]:
    applicable, items = int(row["applicability"]), int(row["items"])
    if quantity == "productivity":
        return int(row["productive"]), applicable, "items where the cue applies (census)"
    if quantity == "coverage":
        return applicable, items, "items (census)"
    raise ValueError(f"a cue row has productivity or coverage, not {quantity!r}")


def median_estimate(values: Sequence[float], n_items: int) -> Estimate:
    """Median test accuracy over seeds (the paper's Tables 1, 3 and 4 give it beside the mean and the maximum) with a
    95% interval: from 6 seeds on the distribution-free sign-test interval (:func:`attnbook.stats.median_interval`);
    with fewer, where no distribution-free interval reaches 95%, the book's seed rule (:func:`seed_estimate`: Student's
    t over the seeds, one run's exact interval over its test items), which holds for the median as for the mean when
    the seeds spread symmetrically. A median is what a handful of seeds can set beside the paper's 20: a maximum
    grows with the number of runs."""
    v = [float(x) for x in values]
    if len(v) >= 6:
        est = stats.median_interval(v, unit="seeds")
        if est.has_interval:
            return est
    est = seed_estimate(v, n_items)
    return Estimate(float(np.median(v)), est.low, est.high, est.n, est.unit)


def constant_accuracy(train: Sequence[ArctItem], items: Sequence[ArctItem]) -> float:
    """Accuracy on ``items`` of the constant predictor: always the majority label of ``train``
    (:func:`attnbook.studies.niven_kao.cues.majority_baseline`); when ``train``'s labels are exactly balanced (as in
    ``train-swapped``) there is no majority, and the better of the two constant answers on ``items`` is the bar."""
    labels = arct.labels_of(train)
    if labels.size and 2 * int(labels.sum()) == labels.size:
        share = float(arct.labels_of(items).mean())
        return max(share, 1.0 - share)
    return cues.majority_baseline(train, items)


def degenerate_mask(dev_accuracy: Sequence[float], n_dev: int, chance_dev: float) -> np.ndarray:
    """The paper's degenerate-run filter (§3: some BERT Large runs failed to train): ``True`` for a run that stayed
    at chance on dev, i.e. whose dev accuracy's exact 95% interval over the ``n_dev`` dev items does not lie above
    ``chance_dev`` (the constant predictor's dev accuracy, :func:`constant_accuracy`)."""
    out = []
    for acc in dev_accuracy:
        low, _ = stats.proportion_interval(int(round(float(acc) * n_dev)), int(n_dev))
        out.append(not low > chance_dev)
    return np.array(out, dtype=bool)


def non_degenerate(frame: Any, n_dev: int | None, chance_dev: float | None) -> tuple[Any, int | None]:
    """``frame``'s runs that trained (:func:`degenerate_mask`) and how many were left out; all runs and ``None`` when
    ``n_dev`` is ``None`` (no dev set to judge them on)."""
    if n_dev is None or chance_dev is None or "dev_accuracy" not in frame.columns:
        return frame, None
    mask = degenerate_mask(frame["dev_accuracy"], n_dev, chance_dev)
    return frame[~mask], int(mask.sum())


def seeds_note(frame: Any, n_degenerate: int | None = None) -> str:
    """How many seeds a row averages (paper: 20 seeds); with ``n_degenerate`` (runs judged by the degenerate-run
    filter), how many of them were left out."""
    n, paper_n = len(frame), PAPER["n_seeds"]
    if n_degenerate is None:
        return f"{n} seed{'s' if n != 1 else ''} (paper: {paper_n})"
    if n_degenerate:
        return (f"{n - n_degenerate} of {n} seeds: {n_degenerate} degenerate (dev accuracy not above chance) "
                f"excluded (paper: {paper_n} seeds)")
    return f"{n} seed{'s' if n != 1 else ''}, none degenerate (paper: {paper_n})"


def seed_records(frame: Any, sizes: Mapping[str, int], *, n_dev: int | None = None,
                 chance_dev: float | None = None) -> list[dict]:
    """One record per seed for the results: every ``<name>_accuracy`` of ``sizes`` with its exact 95% interval over
    that many items, the dev accuracy (with its interval when ``n_dev`` is given), the training seconds, and whether
    the run is degenerate (:func:`degenerate_mask`; only when ``chance_dev`` is given)."""
    judged = n_dev is not None and chance_dev is not None
    degenerate = (degenerate_mask(frame["dev_accuracy"], n_dev, chance_dev) if judged
                  else np.zeros(len(frame), dtype=bool))
    records = []
    for (_, r), deg in zip(frame.iterrows(), degenerate):
        rec: dict[str, Any] = {"seed": int(r["seed"]), "inputs": r.get("inputs"), "best_epoch": int(r["best_epoch"])}
        columns = dict(sizes)
        if n_dev is not None:
            columns["dev"] = n_dev
        for name, n in columns.items():
            col = f"{name}_accuracy"
            if col not in frame.columns:
                continue
            e = run_estimate(float(r[col]), int(n), unit=f"{name} items (exact)")
            rec[col] = round(e.value, 4)
            rec[f"{col}_low"], rec[f"{col}_high"] = round(e.low, 4), round(e.high, 4)
        if "dev_accuracy" in frame.columns and "dev_accuracy" not in rec:
            rec["dev_accuracy"] = round(float(r["dev_accuracy"]), 4)
        if "train_seconds" in frame.columns:
            rec["train_seconds"] = float(r["train_seconds"])
        if judged:
            rec["degenerate"] = bool(deg)
        records.append(rec)
    return records


# ---- paper vs this run -------------------------------------------------------------------------

#: experiments of the rows the closing paragraph reads (:func:`attnbook.studies.niven_kao.paper.agreement_markdown`)
E_FULL = "§3 BERT, full input (C, R, W)"
E_WARRANTS = "§5 finding: warrants alone"
E_ORIGINAL_ADV = "§6 trained on original data, tested adversarially"
Q_MEAN, Q_MAX, Q_GAP, Q_HALVES = ("test accuracy, mean", "test accuracy, max", "mean(full) − mean(W)",
                                  "original half + negated half")
Q_MEDIAN = "test accuracy, median"


def original_adv_experiment(model: str) -> str:
    """The experiment of a word baseline trained on the original data and tested on the adversarial test set."""
    return E_ORIGINAL_ADV.replace("§6 trained", f"§6 {model} trained")


def probe_experiment(inputs: str) -> str:
    """The experiment of a §5 BERT probe on the input variant ``inputs`` (Table 3)."""
    return f"§5 probe, BERT ({INPUTS[inputs]})"


def adversarial_experiment(inputs: str, model: str = "BERT") -> str:
    """The experiment of ``model`` trained on ``train-swapped`` and tested adversarially on ``inputs`` (§6, Table 4)."""
    return f"§6 adversarial test, {model} ({INPUTS[inputs]})"


def _judged_row(experiment: str, quantity: str, *, paper: Any, est: Estimate, rule: verdict.Rule, note: str,
                values: Sequence[float], paper_value: Any = None, kind: str = verdict.CLAIM) -> verdict.Comparison:
    """:func:`attnbook.verdict.row` for an estimate over seeds (or one run): the note ends with what the rule compared
    (:func:`~attnbook.studies.niven_kao.paper.detect.compared`) and an undecided row says what its seeds could detect
    (:func:`~attnbook.studies.niven_kao.paper.detect.seed_detectable`, from the per-seed ``values``)."""
    judged = paper if paper_value is None else paper_value
    quote = compared(est, judged if isinstance(rule, verdict.Within) else None)
    r = verdict.row(experiment, quantity, paper=paper, ours=est, rule=rule, paper_value=paper_value,
                    note=f"{note}; {quote}" if note else quote, kind=kind)
    if r.verdict == verdict.INCONCLUSIVE:
        r = r.replace(detectable=seed_detectable(rule, judged, values, est))
    return r


def _constant(value: float | None) -> str:
    return "" if value is None else f"; its constant predictor (one answer for every item) scores {value:.3f} here"


def _mean_row(experiment: str, paper: float, values: Sequence[float], n_items: int, note: str,
              quantity: str = Q_MEAN) -> verdict.Comparison:
    values = [float(v) for v in values]
    return _judged_row(experiment, quantity, paper=paper, est=seed_estimate(values, n_items), rule=ACCURACY_RULE,
                       note=note, values=values)


def _spread_rows(experiment: str, paper: Mapping[str, float], values: Sequence[float], n_items: int,
                 note: str) -> list[verdict.Comparison]:
    """The median over seeds beside the paper's median (Tables 1, 3 and 4; :func:`median_estimate`) and, only when
    this run has the paper's number of seeds, the best seed beside the paper's best (a maximum over fewer runs tends
    lower: it is another quantity), judged on that run's exact interval over its test items (given those seeds)."""
    values = [float(v) for v in values]
    rows = [_judged_row(experiment, Q_MEDIAN, paper=paper["median"], est=median_estimate(values, n_items),
                        rule=ACCURACY_RULE, values=values,
                        note=note + ("; interval: the sign test over the seeds" if len(values) >= 6 else
                                     "; interval: the mean's (t over the seeds), too few seeds for a median's own"))]
    if len(values) == PAPER["n_seeds"]:
        best = run_estimate(max(values), n_items, unit=f"test items (the best of {len(values)} runs, picked on the "
                                                      "test set)")
        rows.append(_judged_row(experiment, Q_MAX, paper=paper["max"], est=best, rule=ACCURACY_RULE, values=[best.value],
                                note=note + f"; interval: that run's, over its test items, given the {len(values)} "
                                            "seeds run"))
    return rows


def _not_comparable(experiment: str, quantity: str, paper: Any, ours: str, why: str, note: str = "",
                    kind: str = verdict.CLAIM) -> verdict.Comparison:
    return verdict.row(experiment, quantity, paper=paper, ours=ours, estimate=Estimate(float("nan")),
                       rule=verdict.NotComparable(why), note=note, kind=kind)


def paper_comparison(
    *,
    not_rows: Any,
    bert: Mapping[str, Any],
    train: Sequence[ArctItem],
    test: Sequence[ArctItem],
    adversarial: Mapping[str, Any] | None = None,
    adv_train: Sequence[ArctItem] | None = None,
    test_adv: Sequence[ArctItem] | None = None,
    words: Mapping[str, Any] | None = None,
    agreement: Mapping[str, Mapping] | None = None,
    adversarial_cues: Any = None,
    model_name: str = "",
    dev: Sequence[ArctItem] | None = None,
    words_adversarial: Mapping[str, Any] | None = None,
) -> list[verdict.Comparison]:
    """The "paper vs this run" rows of the chapter (:func:`attnbook.verdict.row`), each judged by its stated rule.

    ``not_rows``: :func:`not_cue_table` (with an ``all`` row); ``bert``: per-seed frames by input variant (with
    ``test_accuracy`` and, for ``full``, ``test_adv_accuracy``), trained on ``train`` and tested on ``test`` (and
    ``test_adv``); ``adversarial``: per-seed frames of the §6 runs by input variant, trained on ``adv_train``, tested
    on ``test_adv`` (with ``original_half_accuracy`` / ``negated_half_accuracy``); ``words``: BoV/BiLSTM frames by
    kind; ``agreement``: :func:`attnbook.studies.niven_kao.cues.transform_agreement`; ``adversarial_cues``:
    :func:`attnbook.studies.niven_kao.cues.cue_statistics` of the adversarial test set; ``dev``: the dev items the
    runs trained on ``train`` were selected on (their degenerate runs, :func:`degenerate_mask`, are left out of every
    BERT row, as the paper leaves out the runs that failed to train; the note says how many); ``words_adversarial``:
    BoV/BiLSTM frames trained on ``adv_train`` and tested on ``test_adv`` and its halves (Table 4).

    The rules (:data:`RULES`), one per kind of quantity: accuracies by :data:`ACCURACY_RULE` (means over seeds with a
    t-interval over seeds, a single run with its exact interval over test items; medians by :func:`median_estimate`,
    and the maximum only over the paper's 20 seeds), the cue "not" by :data:`CUE_RULE` on exact counts (a census of the
    files the paper counted: no interval), "below random" by :data:`BELOW_CHANCE_RULE`, exact counts by
    :data:`COUNT_RULE`. A near-chance result is judged like any other against the paper's near-chance numbers (BoV,
    BiLSTM, the adversarial test; the note gives the constant predictor's score), and a wide interval makes a row
    inconclusive, its ``detectable`` saying how many seeds would decide it. Not comparable only where the comparison
    cannot fail: no run left after the degenerate-run filter, and W and R,W on the adversarial test set, whose two
    copies of an item they cannot tell apart. The transform check and the sum of the two halves are the book's own
    questions (kind :data:`~attnbook.verdict.OWN`): the paper claims neither.
    """
    rows: list[verdict.Comparison] = []
    n_dev = None if dev is None else len(dev)
    chance_dev = None if dev is None else constant_accuracy(train, dev)
    table = not_rows.set_index("split")
    for split, label in (("all", "train+dev+test"), ("train", "train"), ("dev", "dev"), ("test", "test")):
        if split not in table.index:
            continue
        r = table.loc[split]
        for q in ("productivity", "coverage") if split == "all" else ("productivity",):
            est = cue_estimate(r, q)
            k = int(r["productive"]) if q == "productivity" else int(r["applicability"])
            paper_q = PAPER["not_cue"][split][q]
            rows.append(verdict.row(
                f'§4 cue "not" ({label}), Table 2', q, paper=paper_q, ours=est, rule=CUE_RULE,
                note=(f"{k} of {est.n} {est.unit.removesuffix(' (census)')}: a census of the files the paper counted, "
                      f"judged exactly (no sampling interval); n't counted as not; whole word only: "
                      f"{float(r[q + ' (whole word)']):.3f}; " + compared(est, paper_q))))

    n_test, chance_test = len(test), constant_accuracy(train, test)
    paper_bert = PAPER["table3"]["BERT"]
    kept: dict[str, Any] = {}
    for inputs in ("full", "W", "RW", "CW"):
        if inputs not in bert:
            continue
        frame, n_deg = non_degenerate(bert[inputs], n_dev, chance_dev)
        kept[inputs] = frame
        experiment = E_FULL if inputs == "full" else probe_experiment(inputs)
        note = (f"paper: BERT Large; {model_name}; " if inputs == "full" else "paper: BERT Large; ") + seeds_note(
            bert[inputs], n_deg)
        if len(frame) == 0:
            rows.append(_not_comparable(
                experiment, Q_MEAN, paper_bert[inputs]["mean"], "no run",
                f"all {len(bert[inputs])} runs of this run's BERT ({INPUTS[inputs]}) stayed at chance on dev "
                "(degenerate, the paper's filter): no run is left to compare", note))
            continue
        acc = frame["test_accuracy"]
        rows.append(_mean_row(experiment, paper_bert[inputs]["mean"], acc, n_test, note + _constant(chance_test)))
        rows += _spread_rows(experiment, paper_bert[inputs], acc, n_test, note)
        if inputs == "full":
            rows.append(_mean_row(experiment, PAPER["table1"]["BERT (Base)"]["mean"], acc, n_test,
                                  "Table 1, BERT Base; " + seeds_note(bert[inputs], n_deg),
                                  quantity=Q_MEAN + " (vs BERT Base)"))
            if "test_adv_accuracy" in frame.columns and test_adv:
                adv = [float(v) for v in frame["test_adv_accuracy"]]
                rows.append(_judged_row(E_ORIGINAL_ADV, Q_MEAN, paper="below 0.5 (no number)",
                                        est=seed_estimate(adv, len(test_adv)), rule=BELOW_CHANCE_RULE, values=adv,
                                        note="the paper reports all models below random here; "
                                             + seeds_note(bert[inputs], n_deg)))
    if len(kept.get("full", ())) and len(kept.get("W", ())):
        pair = kept["full"][["seed", "test_accuracy"]].merge(kept["W"][["seed", "test_accuracy"]], on="seed",
                                                             suffixes=("_full", "_w"))
        paper_gap = paper_bert["full"]["mean"] - paper_bert["W"]["mean"]
        note = ("small: the warrants alone get about as far as the full input (Table 3); seed by seed, full minus W, "
                f"over the {len(pair)} seeds non-degenerate in both")
        if len(pair):
            gap = combined_estimate(pair["test_accuracy_full"], pair["test_accuracy_w"], n_test, n_test, sign=-1)
            rows.append(_judged_row(E_WARRANTS, Q_GAP, paper=round(paper_gap, 3), paper_value=paper_gap, est=gap,
                                    rule=ACCURACY_RULE, note=note,
                                    values=list(pair["test_accuracy_full"] - pair["test_accuracy_w"])))
        else:
            rows.append(_not_comparable(E_WARRANTS, Q_GAP, round(paper_gap, 3), "no seed",
                                        "no seed trained with both inputs", note))

    if adversarial or words_adversarial:
        if test_adv is None or adv_train is None:
            raise ValueError("adversarial runs need the items they were trained (adv_train) and tested (test_adv) on")
        halves = cues.adversarial_halves(test_adv)
        n_adv, n_half = len(test_adv), len(halves["original_half"])
        constant_half = constant_accuracy(adv_train, halves["original_half"])
        runs = [("BERT", inputs, frame) for inputs, frame in (adversarial or {}).items()]
        runs += [({"bov": "BoV", "bilstm": "BiLSTM"}[kind], "full", frame)
                 for kind, frame in (words_adversarial or {}).items()]
        for model, inputs, frame in runs:
            experiment = adversarial_experiment(inputs, model)
            note = ("trained on train-swapped (README erratum); "
                    + ("" if model == "BERT" else "GloVe 6B 50d (paper: 840B 300d); ") + seeds_note(frame))
            has_halves = {"original_half_accuracy", "negated_half_accuracy"} <= set(frame.columns)
            p = PAPER["table4"][model][inputs]
            if inputs in ("W", "RW"):
                why = (f"cannot fail: the input {INPUTS[inputs]} is the same in both copies of an adversarial item, "
                       "whose labels are opposite, so any such model scores exactly 0.5 and its halves add up to 1")
                shown = seed_estimate(frame["test_accuracy"], n_adv).text()
                rows.append(_not_comparable(experiment, Q_MEAN, p["mean"], shown, why, note))
                if has_halves:
                    rows.append(_not_comparable(experiment, Q_HALVES, 1.0, "1 by construction", why, kind=verdict.OWN))
                continue
            on_half = ""
            if has_halves:
                original = seed_estimate(frame["original_half_accuracy"], n_half)
                on_half = (f"; on the original half {original.text('.3g')}, its constant predictor "
                           f"{constant_half:.3f}")
            rows.append(_mean_row(experiment, p["mean"], frame["test_accuracy"], n_adv, note + on_half))
            if model == "BERT":
                rows += _spread_rows(experiment, p, frame["test_accuracy"], n_adv, note)
            if has_halves:
                total = combined_estimate(frame["original_half_accuracy"], frame["negated_half_accuracy"],
                                          n_half, n_adv - n_half, sign=1)
                sums = list(frame["original_half_accuracy"] + frame["negated_half_accuracy"])
                rows.append(_judged_row(experiment, Q_HALVES, paper=1.0, est=total, rule=ACCURACY_RULE, values=sums,
                                        kind=verdict.OWN,
                                        note="≈ 1: the same answer whatever the claim (the book's reading of the "
                                             "authors' per-seed results; the paper reports no halves)"))

    for kind, frame in (words or {}).items():
        label = {"bov": "BoV", "bilstm": "BiLSTM"}[kind]
        for inputs, sub in frame.groupby("inputs", sort=False):
            note = f"GloVe 6B 50d (paper: 840B 300d); {seeds_note(sub)}"
            rows.append(_mean_row(f"§3/§5 {label} ({INPUTS[inputs]})", PAPER["table3"][label][inputs]["mean"],
                                  sub["test_accuracy"], n_test, note + _constant(chance_test)))
            if inputs == "full" and "test_adv_accuracy" in sub.columns and test_adv:
                adv = [float(v) for v in sub["test_adv_accuracy"]]
                rows.append(_judged_row(original_adv_experiment(label), Q_MEAN, paper="below 0.5 (no number)",
                                        est=seed_estimate(adv, len(test_adv)), rule=BELOW_CHANCE_RULE, values=adv,
                                        note="the paper reports all models below random here; " + seeds_note(sub)))

    if agreement:
        identical = sum(int(a["identical"]) for a in agreement.values())
        total = sum(int(a["n_shipped"]) for a in agreement.values())
        est = Estimate(identical, n=total, unit="items (exact count)")
        rows.append(verdict.row("§6 adversarial files", "items our transform reproduces exactly", paper=total,
                                ours=identical, estimate=est, rule=COUNT_RULE, kind=verdict.OWN,
                                note=", ".join(agreement) + "; the book's check of its own transform against the "
                                     "shipped files (§6 describes the construction); an exact count over every item: "
                                     "nothing sampled, no interval; " + count_compared(est, "items")))
    if adversarial_cues is not None:
        at_half, n_cues = cues.cues_at_chance(adversarial_cues)
        gap = cues.max_cue_gap(adversarial_cues) if n_cues else float("nan")
        est = Estimate(at_half, n=n_cues, unit="cues (exact count)")
        rows.append(verdict.row("§6 adversarial test set", "max |productivity − 0.5| over warrant cues", paper=0.0,
                                ours=gap, estimate=est, rule=COUNT_RULE,
                                note=f"{at_half} of {n_cues} cues at exactly 0.5: every warrant appears once with each "
                                     "label; an exact count, no interval; " + count_compared(est, "cues")))
    return rows
