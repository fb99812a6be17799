"""Niven & Kao (2019) beside this run: the comparison rows, the estimates they judge and the paper's tables.

* the rules, one per kind of quantity, which every row states in words (:data:`RULES`,
  :func:`attnbook.verdict.row`);
* the tables in the paper's layout, ours beside the paper's (:func:`not_cue_table` for Table 2, :func:`seed_table` and
  :func:`table1_seed_table` for Table 1, :func:`probe_seed_table` for Table 3, :func:`adversarial_seed_table` for
  Table 4);
* this run's numbers as estimates with 95% intervals (:func:`seed_estimate`: t over seeds, or one run's exact
  interval over test items; :func:`combined_estimate`; :func:`cue_estimate`: exact over items), the constant
  predictor and the paper's degenerate-run filter (§3) they are judged against, and the per-seed records;
* the "paper vs this run" rows (:func:`paper_comparison`).

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

# ---- the rules (one per kind of quantity; each row states its own in words) ----------------------

#: Every accuracy row: a mean over seeds, one run's accuracy, or a sum or difference of accuracies (fractions).
ACCURACY_RULE = verdict.Within(0.03, 0.08, unit="in accuracy")
#: Table 2's cue statistics ("not": productivity and coverage), counted on the same files as the paper.
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
    """Productivity or coverage of a :func:`not_cue_table` row with its exact 95% interval: productivity over the
    items where the cue applies (given how many it applies to), coverage over all items of the split."""
    applicable, items = int(row["applicability"]), int(row["items"])
    if quantity == "productivity":
        k, n, unit = int(row["productive"]), applicable, "items where the cue applies (exact)"
    elif quantity == "coverage":
        k, n, unit = applicable, items, "items (exact)"
    else:
        raise ValueError(f"a cue row has productivity or coverage, not {quantity!r}")
    if n == 0:
        return Estimate(float("nan"), None, None, 0, unit)
    low, high = stats.proportion_interval(k, n)
    return Estimate(k / n, low, high, n, unit)


def constant_accuracy(train: Sequence[ArctItem], items: Sequence[ArctItem]) -> float:
    """Accuracy on ``items`` of the constant predictor: always the majority label of ``train``
    (:func:`attnbook.studies.niven_kao.cues.majority_baseline`); when ``train``'s labels are exactly balanced (as in
    ``train-swapped``) there is no majority, and the better of the two constant answers on ``items`` is the bar."""
    labels = arct.labels_of(train)
    if labels.size and 2 * int(labels.sum()) == labels.size:
        share = float(arct.labels_of(items).mean())
        return max(share, 1.0 - share)
    return cues.majority_baseline(train, items)


def constant_reason(est: Estimate, constant: float, who: str) -> str | None:
    """Why rows on a classifier cannot be judged, or ``None``: the 95% interval of its accuracy must lie above
    ``constant``, the accuracy of its constant predictor on the same items (:func:`constant_accuracy`)."""
    if est.has_interval and est.low > constant:
        return None
    return (f"{who} is not shown better than its constant predictor (one answer for every item), which scores "
            f"{constant:.3f} on these items: its 95% interval does not lie above that")


def max_rule_reason(n_seeds: int) -> str | None:
    """Why a maximum over ``n_seeds`` is not the paper's (over :data:`PAPER` ``n_seeds``), or ``None`` when it is."""
    if n_seeds == PAPER["n_seeds"]:
        return None
    return (f"the best of {n_seeds} seeds is another quantity than the paper's best of {PAPER['n_seeds']} "
            "(a maximum over fewer runs tends lower, over more runs higher, and has no simple interval); "
            "the mean row compares the runs")


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


def original_adv_experiment(model: str) -> str:
    """The experiment of a word baseline trained on the original data and tested on the adversarial test set."""
    return E_ORIGINAL_ADV.replace("§6 trained", f"§6 {model} trained")


def probe_experiment(inputs: str) -> str:
    """The experiment of a §5 BERT probe on the input variant ``inputs`` (Table 3)."""
    return f"§5 probe, BERT ({INPUTS[inputs]})"


def adversarial_experiment(inputs: str, model: str = "BERT") -> str:
    """The experiment of ``model`` trained on ``train-swapped`` and tested adversarially on ``inputs`` (§6, Table 4)."""
    return f"§6 adversarial test, {model} ({INPUTS[inputs]})"


def _judged(rule: verdict.Rule, reason: str | None) -> verdict.Rule:
    return verdict.NotComparable(reason) if reason else rule


def _mean_row(experiment: str, paper: float, est: Estimate, reason: str | None, note: str,
              quantity: str = Q_MEAN) -> verdict.Comparison:
    return verdict.row(experiment, quantity, paper=paper, ours=est, rule=_judged(ACCURACY_RULE, reason), note=note)


def _max_row(experiment: str, paper: float, values: Sequence[float], n_items: int, reason: str | None,
             note: str) -> verdict.Comparison:
    """The best seed beside the paper's best: compared only over the paper's number of seeds, then with the best
    run's exact interval over its test items (conditional on those seeds; it leaves out seed-to-seed variation)."""
    values = [float(v) for v in values]
    best = max(values)
    why = reason or max_rule_reason(len(values))
    if why:
        return verdict.row(experiment, Q_MAX, paper=paper, ours=best, rule=verdict.NotComparable(why), note=note)
    est = run_estimate(best, n_items, unit=f"test items (the best of {len(values)} runs, picked on the test set)")
    return verdict.row(experiment, Q_MAX, paper=paper, ours=est, rule=ACCURACY_RULE,
                       note=note + f"; interval: that run's, over its test items, given the {len(values)} seeds run")


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
    BERT row; the note says how many); ``words_adversarial``: BoV/BiLSTM frames trained on ``adv_train`` and tested
    on ``test_adv`` and its halves (Table 4).

    The rules (:data:`RULES`), one per kind of quantity: accuracies by :data:`ACCURACY_RULE` (means over seeds with a
    t-interval over seeds, a single run with its exact interval over test items), the cue "not" by :data:`CUE_RULE`
    (exact intervals over items), "below random" by :data:`BELOW_CHANCE_RULE`, exact counts by :data:`COUNT_RULE`
    (nothing sampled, no interval). Not comparable: a classifier not shown better than its constant predictor
    (:func:`constant_reason`), a maximum over another number of seeds than the paper's (:func:`max_rule_reason`),
    and W and R,W on the adversarial test set, whose two copies of an item they cannot tell apart.
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
            rows.append(verdict.row(
                f'§4 cue "not" ({label}), Table 2', q, paper=PAPER["not_cue"][split][q], ours=cue_estimate(r, q),
                rule=CUE_RULE, note=f"n't counted as not; whole word only: {float(r[q + ' (whole word)']):.3f}"))

    n_test, chance_test = len(test), constant_accuracy(train, test)
    paper_bert = PAPER["table3"]["BERT"]
    reasons: dict[str, str | None] = {}
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
            reasons[inputs] = why = (f"all {len(bert[inputs])} runs of this run's BERT ({INPUTS[inputs]}) stayed at "
                                     "chance on dev (degenerate): no run is left to compare")
            rows.append(verdict.row(experiment, Q_MEAN, paper=paper_bert[inputs]["mean"], ours="no run",
                                    estimate=Estimate(float("nan")), rule=verdict.NotComparable(why), note=note))
            continue
        est = seed_estimate(frame["test_accuracy"], n_test)
        reasons[inputs] = why = constant_reason(est, chance_test, f"this run's BERT ({INPUTS[inputs]})")
        rows.append(_mean_row(experiment, paper_bert[inputs]["mean"], est, why, note))
        rows.append(_max_row(experiment, paper_bert[inputs]["max"], frame["test_accuracy"], n_test, why, note))
        if inputs == "full":
            rows.append(_mean_row(experiment, PAPER["table1"]["BERT (Base)"]["mean"], est, why,
                                  "Table 1, BERT Base; " + seeds_note(bert[inputs], n_deg),
                                  quantity=Q_MEAN + " (vs BERT Base)"))
            if "test_adv_accuracy" in frame.columns and test_adv:
                adv_est = seed_estimate(frame["test_adv_accuracy"], len(test_adv))
                rows.append(verdict.row(E_ORIGINAL_ADV, Q_MEAN, paper="below 0.5 (no number)", ours=adv_est,
                                        rule=_judged(BELOW_CHANCE_RULE, why),
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
            rows.append(verdict.row(E_WARRANTS, Q_GAP, paper=round(paper_gap, 3), paper_value=paper_gap, ours=gap,
                                    rule=_judged(ACCURACY_RULE, reasons["full"]), note=note))
        else:
            rows.append(verdict.row(E_WARRANTS, Q_GAP, paper=round(paper_gap, 3), ours="no seed",
                                    estimate=Estimate(float("nan")),
                                    rule=verdict.NotComparable("no seed trained with both inputs"), note=note))

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
            if inputs in ("W", "RW"):
                why = (f"cannot fail: the input {INPUTS[inputs]} is the same in both copies of an adversarial item, "
                       "whose labels are opposite, so any such model scores exactly 0.5 and its halves add up to 1")
            elif has_halves:
                original = seed_estimate(frame["original_half_accuracy"], n_half)
                why = constant_reason(original, constant_half,
                                      f"on the original half, this run's adversarially trained {model} "
                                      f"({INPUTS[inputs]})")
            else:
                why = None
            p = PAPER["table4"][model][inputs]
            rows.append(_mean_row(experiment, p["mean"], seed_estimate(frame["test_accuracy"], n_adv), why, note))
            if model == "BERT":
                rows.append(_max_row(experiment, p["max"], frame["test_accuracy"], n_adv, why, note))
            if has_halves:
                total = combined_estimate(frame["original_half_accuracy"], frame["negated_half_accuracy"],
                                          n_half, n_adv - n_half, sign=1)
                rows.append(verdict.row(experiment, Q_HALVES, paper=1.0, ours=total, rule=_judged(ACCURACY_RULE, why),
                                        note="≈ 1: the same answer whatever the claim (as in the authors' per-seed "
                                             "results)"))

    for kind, frame in (words or {}).items():
        label = {"bov": "BoV", "bilstm": "BiLSTM"}[kind]
        for inputs, sub in frame.groupby("inputs", sort=False):
            est = seed_estimate(sub["test_accuracy"], n_test)
            why = constant_reason(est, chance_test, f"this run's {label} ({INPUTS[inputs]})")
            rows.append(_mean_row(f"§3/§5 {label} ({INPUTS[inputs]})", PAPER["table3"][label][inputs]["mean"], est,
                                  why, f"GloVe 6B 50d (paper: 840B 300d); {seeds_note(sub)}"))
            if inputs == "full" and "test_adv_accuracy" in sub.columns and test_adv:
                rows.append(verdict.row(original_adv_experiment(label), Q_MEAN, paper="below 0.5 (no number)",
                                        ours=seed_estimate(sub["test_adv_accuracy"], len(test_adv)),
                                        rule=_judged(BELOW_CHANCE_RULE, why),
                                        note="the paper reports all models below random here; " + seeds_note(sub)))

    if agreement:
        identical = sum(int(a["identical"]) for a in agreement.values())
        total = sum(int(a["n_shipped"]) for a in agreement.values())
        rows.append(verdict.row("§6 adversarial files", "items our transform reproduces exactly", paper=total,
                                ours=identical, estimate=Estimate(identical, n=total, unit="items (exact count)"),
                                rule=COUNT_RULE,
                                note=", ".join(agreement) + "; an exact count over every item: nothing sampled, "
                                                            "no interval"))
    if adversarial_cues is not None:
        at_half, n_cues = cues.cues_at_chance(adversarial_cues)
        gap = cues.max_cue_gap(adversarial_cues) if n_cues else float("nan")
        rows.append(verdict.row("§6 adversarial test set", "max |productivity − 0.5| over warrant cues", paper=0.0,
                                ours=gap, estimate=Estimate(at_half, n=n_cues, unit="cues (exact count)"),
                                rule=COUNT_RULE,
                                note=f"{at_half} of {n_cues} cues at exactly 0.5: every warrant appears once with each "
                                     "label; an exact count, no interval"))
    return rows
