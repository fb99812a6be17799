"""Niven & Kao (2019) beside this run: the comparison rows, their rules and the paper's tables.

* the rules, one per kind of quantity, each tolerance from a stated source that every row prints in its rule
  (:func:`accuracy_rule`: the paper's own spread over its 20 seeds; :func:`cue_rule`: the paper's rounding of a
  census; :func:`below_chance_rule`; :data:`COUNT_RULE`), through :func:`attnbook.verdict.row`;
* the tables in the paper's layout, ours beside the paper's (:func:`not_cue_table` for Table 2, :func:`seed_table` and
  :func:`table1_seed_table` for Table 1, :func:`probe_seed_table` for Table 3, :func:`adversarial_seed_table` for
  Table 4);
* an accuracy as its margin over the constant predictor (:func:`over_constant`), the paper's degenerate-run filter
  (§3), and the per-seed records; this run's numbers as estimates with 95% intervals, the cue counts as the census
  they are and the constant predictor are built in :mod:`~attnbook.studies.niven_kao.paper.estimates`;
* the "paper vs this run" rows (:func:`comparisons`), each note quoting what its rule compared and each
  undecided row saying what its seeds could detect (:mod:`~attnbook.studies.niven_kao.paper.detect`).

The paper's numbers are in :mod:`attnbook.studies.niven_kao.paper.claims`; the measurements in
:mod:`attnbook.studies.niven_kao.cues` (§4 cues, §6 construction), :mod:`attnbook.studies.niven_kao.pairwise` (§3, §5, §6
BERT runs) and :mod:`attnbook.studies.niven_kao.word_baselines` (BoV and BiLSTM).
"""
from __future__ import annotations

import dataclasses
import math
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from attnbook import stats, verdict
from attnbook.data.arct import ArctItem
from attnbook.stats import Estimate
from attnbook.studies.niven_kao import cues
from attnbook.studies.niven_kao.pairwise import INPUTS, summarize
from attnbook.studies.niven_kao.paper.claims import PAPER
from attnbook.studies.niven_kao.paper.detect import compared, count_compared, seed_detectable
from attnbook.studies.niven_kao.paper.estimates import (_Z95, MEDIAN_MIN_SEEDS, combined_estimate, constant_accuracy,
                                                        cue_estimate, median_estimate, run_estimate, seed_estimate)
from attnbook.studies.niven_kao.word_baselines import ARGUMENT_CANCELS

# ---- the rules: one per kind of quantity, each tolerance from a stated source ---------------------------


def _sig4(x: float) -> float:
    """``x`` to 4 significant digits, as a rule's words print it (so the words state the tolerance that judged)."""
    return float(f"{x:.4g}")


@lru_cache(maxsize=None)
def max_sd(n: int) -> float:
    """The standard deviation of the largest of ``n`` draws of a standard normal (numerical integration of its
    density ``n φ(x) Φ(x)^(n-1)``): how much the best of the paper's ``n`` seeds moves from one set of seeds to the
    next, in units of the seeds' SD (0.525 for 20)."""
    from scipy.stats import norm

    x = np.linspace(-10.0, 10.0, 40001)
    dx = x[1] - x[0]
    pdf = n * norm.pdf(x) * norm.cdf(x) ** (n - 1)
    mean = float(np.sum(x * pdf) * dx)
    return float(np.sqrt(np.sum((x - mean) ** 2 * pdf) * dx))


def _se_factor(statistic: str, n_seeds: int) -> float:
    """The standard error of a statistic over ``n_seeds`` seeds, in units of the seeds' SD: ``1/sqrt(n)`` for a mean,
    ``sqrt(pi/2)/sqrt(n)`` for a median (a normal sample's), :func:`max_sd` for the maximum."""
    if statistic == "mean":
        return 1.0 / math.sqrt(n_seeds)
    if statistic == "median":
        return math.sqrt(math.pi / 2.0) / math.sqrt(n_seeds)
    if statistic == "max":
        return max_sd(n_seeds)
    raise ValueError(f"a statistic over seeds is the mean, the median or the max, not {statistic!r}")


def accuracy_rule(sd: float, n_items: int, statistic: str = "mean", table: str = "Table 3",
                  paper_margin: float | None = None) -> verdict.Within:
    """The rule of an accuracy row, its tolerance from the paper's own spread over its 20 seeds (``sd``, the
    ``±`` column of ``table``): agrees within the 95% half-width of the paper's ``statistic`` over its seeds
    (``1.96 x`` its standard error, :func:`_se_factor`), partly within one seed's SD (where one of the paper's own
    runs would typically fall), never narrower than one test item in ``n_items`` (the measurement floor). Signed
    (an interval surely on the other side of the constant predictor disagrees) when the paper's own interval shows
    the sign: ``paper_margin``, the paper's number less the constant predictor's, beyond that half-width."""
    n = PAPER["n_seeds"]
    agree = _sig4(max(_Z95 * _se_factor(statistic, n) * float(sd), 1.0 / n_items))
    partly = _sig4(max(float(sd), agree))
    signed = paper_margin is not None and abs(paper_margin) > agree
    source = (f"the paper's spread over its {n} seeds, SD {float(sd):.2g} in {table}: ±{agree:.3g} is the 95% "
              f"half-width of its {statistic}, ±{partly:.3g} one seed's SD, at least one item in {n_items}")
    return verdict.Within(agree, partly, unit="in accuracy", signed=signed, source=source)


def cue_rule(quantity: str, n: int, value: float) -> verdict.Within:
    """The rule of a Table 2 row (the cue "not"): our counts are a census of the files the paper counted, so the only
    uncertainty is the paper's: it prints two decimals (agrees within ±0.005, its rounding) and does not say how it
    counted (partly within what another draw of as many items, ``n``, would move a share of ``value``: the binomial
    95% half-width, the counting differences a reader could not tell from the data's own variability)."""
    partly = _sig4(max(_Z95 * math.sqrt(max(value * (1.0 - value), 0.0) / max(n, 1)), 0.005))
    source = (f"the paper prints two decimals, ±0.005; partly: ±{partly:.3g}, what another draw of {n} items "
              f"would move a {quantity}")
    return verdict.Within(0.005, partly, unit=f"in {quantity}", source=source)


def below_chance_rule(constant: float) -> verdict.Beyond:
    """§6: models trained on the original data fall below the constant predictor on the adversarial test set
    (``constant``: 0.5 there, every warrant pair appearing once with each label)."""
    return verdict.Beyond(constant, above=False, what="mean test accuracy",
                          source="the constant predictor on the adversarial test set, where each warrant pair has "
                                 "both labels")


#: §6: models trained on the original data fall below random on the adversarial test set (the constant predictor's
#: 0.5 there, :func:`below_chance_rule`).
BELOW_CHANCE_RULE = below_chance_rule(0.5)
#: Exact counts over every item or every cue (the §6 transform, the balance of the adversarial test set).
COUNT_RULE = verdict.Cases()
#: The rules whose tolerance does not depend on the row (an accuracy row's is :func:`accuracy_rule` of the paper's
#: spread for that row, a cue row's :func:`cue_rule`).
RULES = (BELOW_CHANCE_RULE, COUNT_RULE)


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


def over_constant(est: Estimate, constant: float) -> Estimate:
    """``est`` less the constant predictor's accuracy ``constant`` (always the training set's majority answer: exact,
    no error of its own); every other field is kept."""
    shift = lambda x: None if x is None else float(x) - constant  # noqa: E731
    return dataclasses.replace(est, value=float(est.value) - constant, low=shift(est.low), high=shift(est.high))


def degenerate_mask(dev_accuracy: Sequence[float], n_dev: int, chance_dev: float) -> np.ndarray:
    """The paper's degenerate-run filter (§3: some BERT Large runs failed to train): ``True`` for a run that stayed
    at chance on dev, i.e. whose dev accuracy's exact 95% interval over the ``n_dev`` dev items does not lie above
    ``chance_dev`` (the constant predictor's dev accuracy,
    :func:`~attnbook.studies.niven_kao.paper.estimates.constant_accuracy`)."""
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
    that many items, the dev accuracy (with its interval when ``n_dev`` is given), and whether the run is degenerate
    (:func:`degenerate_mask`; only when ``chance_dev`` is given). The training seconds stay out: a results file
    holds what the same run computes again, and a timing does not repeat."""
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
        if judged:
            rec["degenerate"] = bool(deg)
        records.append(rec)
    return records


# ---- paper vs this run -------------------------------------------------------------------------

#: experiments of the rows the closing paragraph reads (:func:`attnbook.studies.niven_kao.paper.agreement_markdown`)
E_FULL = "§3 BERT, full input (C, R, W)"
E_WARRANTS = "§5 finding: warrants alone"
E_ORIGINAL_ADV = "§6 trained on original data, tested adversarially"
#: the quantities: every accuracy on a test set is judged as its margin over that set's constant predictor (the
#: paper's test files are the same, so its numbers less the same constant); "below random" and the gap and sum of
#: two accuracies are judged as they are
Q_MEAN, Q_MEDIAN, Q_MAX = (f"test accuracy − constant predictor, {s}" for s in ("mean", "median", "max"))
Q_ADV_MEAN = "test accuracy, mean"
Q_GAP, Q_HALVES = "mean(full) − mean(W)", "original half + negated half"

#: why a BoV or BiLSTM row on the adversarial test set cannot fail (:data:`~attnbook.studies.niven_kao.
#: word_baselines.ARGUMENT_CANCELS`)
WORD_ADVERSARIAL_REASON = ("cannot fail: the model's choice does not depend on the claim or the reason (their term is "
                           "the same for both warrants and cancels in the softmax), and the two copies of an "
                           "adversarial item differ only in the claim, so it scores exactly 0.5 by construction")


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
                values: Sequence[float], paper_value: Any = None, kind: str = verdict.CLAIM,
                fmt: str = ".3g") -> verdict.Comparison:
    """:func:`attnbook.verdict.row` for an estimate over seeds (or one run): the note ends with what the rule compared
    (:func:`~attnbook.studies.niven_kao.paper.detect.compared`) and an undecided row says what its sample could
    detect (:func:`~attnbook.studies.niven_kao.paper.detect.seed_detectable`)."""
    judged = paper if paper_value is None else paper_value
    quote = compared(est, judged if isinstance(rule, verdict.Within) else None)
    r = verdict.row(experiment, quantity, paper=paper, ours=est, rule=rule, paper_value=paper_value,
                    note=f"{note}; {quote}" if note else quote, kind=kind, fmt=fmt)
    if r.verdict == verdict.INCONCLUSIVE:
        r = r.replace(detectable=seed_detectable(rule, judged, values, est))
    return r


def _paper_margin(paper_number: float, constant: float) -> str:
    """The paper's accuracy as its margin over the constant predictor, shown as ``"+0.153 (0.671 − 0.518)"``."""
    return f"{float(paper_number) - constant:+.3f} ({float(paper_number):.3f} − {constant:.3f})"


def _margin_row(experiment: str, quantity: str, *, paper_number: float, sd: float, table: str, statistic: str,
                est: Estimate, constant: float, n_items: int, note: str, values: Sequence[float]
                ) -> verdict.Comparison:
    """A row judging an accuracy as its margin over the test set's constant predictor, against the paper's number
    less the same constant, by :func:`accuracy_rule` of the paper's spread (``sd``, in ``table``)."""
    margin = over_constant(est, constant)
    paper_margin = float(paper_number) - constant
    rule = accuracy_rule(sd, n_items, statistic, table, paper_margin)
    told = (f"{note}; accuracy {est.text('.3f')} here, less the constant predictor's {constant:.3f} (one answer for "
            "every item, on the same test file as the paper's)")
    return _judged_row(experiment, quantity, paper=_paper_margin(paper_number, constant),
                       paper_value=paper_margin, est=margin, rule=rule, note=told, values=values, fmt="+.3f")


def _mean_row(experiment: str, paper: Mapping[str, float], values: Sequence[float], n_items: int, note: str, *,
              constant: float, table: str = "Table 3", quantity: str = Q_MEAN,
              seed_sd: tuple[float, float] | None = None) -> verdict.Comparison:
    values = [float(v) for v in values]
    return _margin_row(experiment, quantity, paper_number=paper["mean"], sd=paper["std"], table=table,
                       statistic="mean", est=seed_estimate(values, n_items, seed_sd=seed_sd), constant=constant,
                       n_items=n_items, note=note, values=values)


def _spread_rows(experiment: str, paper: Mapping[str, float], values: Sequence[float], n_items: int, note: str, *,
                 constant: float, table: str = "Table 3") -> list[verdict.Comparison]:
    """The median over seeds beside the paper's median (Tables 1, 3 and 4;
    :func:`~attnbook.studies.niven_kao.paper.estimates.median_estimate`) and, only when this run has the paper's
    number of seeds, the best seed beside the paper's best (a maximum over fewer runs tends lower: it is another
    quantity), judged on that run's exact interval over its test items (given those seeds). With fewer than
    :data:`~attnbook.studies.niven_kao.paper.estimates.MEDIAN_MIN_SEEDS` seeds the median has no 95% interval and its
    row is not judged: it says why, with the median shown."""
    values = [float(v) for v in values]
    median = median_estimate(values, n_items)
    if median.has_interval:
        rows = [_margin_row(experiment, Q_MEDIAN, paper_number=paper["median"], sd=paper["std"], table=table,
                            statistic="median", est=median, constant=constant, n_items=n_items, values=values,
                            note=note + "; interval: the sign test over the seeds, widened by the test items' error")]
    else:
        rows = [_not_comparable(
            experiment, Q_MEDIAN, _paper_margin(paper["median"], constant),
            f"{median.value - constant:+.3f} (median of {len(values)} seeds, no 95% interval)",
            f"a 95% distribution-free interval for a median needs at least {MEDIAN_MIN_SEEDS} seeds and this run "
            f"has {len(values)}, so the median is shown, not judged", note,
            estimate=over_constant(median, constant))]
    if len(values) == PAPER["n_seeds"]:
        best = run_estimate(max(values), n_items, unit=f"test items (the best of {len(values)} runs, picked on the "
                                                       "test set)")
        rows.append(_margin_row(experiment, Q_MAX, paper_number=paper["max"], sd=paper["std"], table=table,
                                statistic="max", est=best, constant=constant, n_items=n_items, values=[best.value],
                                note=note + f"; interval: that run's, over its test items, given the {len(values)} "
                                            "seeds run"))
    return rows


def _not_comparable(experiment: str, quantity: str, paper: Any, ours: str, why: str, note: str = "",
                    kind: str = verdict.CLAIM, estimate: Estimate | None = None) -> verdict.Comparison:
    return verdict.row(experiment, quantity, paper=paper, ours=ours,
                       estimate=estimate if estimate is not None else Estimate(float("nan")),
                       rule=verdict.NotComparable(why), note=note, kind=kind)


def _pooled(frames: Sequence[Any], column: str = "test_accuracy") -> tuple[float, float] | None:
    """The seed spread pooled over a table's rows (:func:`attnbook.stats.pooled_seed_sd`), for a one-seed row."""
    return stats.pooled_seed_sd([list(f[column]) for f in frames if column in f.columns])


def comparisons(
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

    The rules: an accuracy is judged as its margin over the test set's constant predictor (the paper's number less
    the same constant: the test files are the paper's), by :func:`accuracy_rule`, whose tolerance is the paper's own
    spread over its 20 seeds for that row (the mean over seeds by the book's seed rule, seeds and test items in one
    interval; the median by its sign-test interval, not judged with fewer than 6 seeds; the maximum only over the
    paper's 20 seeds); the cue "not" by :func:`cue_rule` on exact counts (a census of the files the paper counted:
    no interval); "below random" by :func:`below_chance_rule`; exact counts by :data:`COUNT_RULE`. A wide interval
    makes a row inconclusive, its ``detectable`` saying between which outcomes it lies and how many seeds would
    decide it. Not comparable only where the comparison cannot fail: no run left after the degenerate-run filter; W
    and R,W on the adversarial test set, whose two copies of an item they cannot tell apart; the BoV and BiLSTM
    baselines there, which cannot use the claim (:data:`WORD_ADVERSARIAL_REASON`); and a median over fewer than 6
    seeds. The transform check and the sum of the two halves are the book's own questions (kind
    :data:`~attnbook.verdict.OWN`): the paper claims neither.
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
                f'§4 cue "not" ({label}), Table 2', q, paper=paper_q, ours=est, rule=cue_rule(q, int(est.n), paper_q),
                note=(f"{k} of {est.n} {est.unit.removesuffix(' (census)')}: a census of the files the paper counted, "
                      f"judged exactly (no sampling interval); n't counted as not; whole word only: "
                      f"{float(r[q + ' (whole word)']):.3f}; " + compared(est, paper_q))))

    n_test, chance_test = len(test), constant_accuracy(train, test)
    paper_bert = PAPER["table3"]["BERT"]
    kept: dict[str, Any] = {}
    dropped: dict[str, int | None] = {}
    for inputs in ("full", "W", "RW", "CW"):
        if inputs in bert:
            kept[inputs], dropped[inputs] = non_degenerate(bert[inputs], n_dev, chance_dev)
    bert_sd = _pooled(list(kept.values()))
    for inputs, frame in kept.items():
        n_deg = dropped[inputs]
        experiment = E_FULL if inputs == "full" else probe_experiment(inputs)
        note = (f"paper: BERT Large; {model_name}; " if inputs == "full" else "paper: BERT Large; ") + seeds_note(
            bert[inputs], n_deg)
        if len(frame) == 0:
            rows.append(_not_comparable(
                experiment, Q_MEAN, _paper_margin(paper_bert[inputs]["mean"], chance_test), "no run",
                f"all {len(bert[inputs])} runs of this run's BERT ({INPUTS[inputs]}) stayed at chance on dev "
                "(degenerate, the paper's filter): no run is left to compare", note))
            continue
        acc = frame["test_accuracy"]
        rows.append(_mean_row(experiment, paper_bert[inputs], acc, n_test, note, constant=chance_test,
                              seed_sd=bert_sd))
        rows += _spread_rows(experiment, paper_bert[inputs], acc, n_test, note, constant=chance_test)
        if inputs == "full":
            rows.append(_mean_row(experiment, PAPER["table1"]["BERT (Base)"], acc, n_test,
                                  "Table 1, BERT Base; " + seeds_note(bert[inputs], n_deg), constant=chance_test,
                                  table="Table 1", quantity=Q_MEAN + " (vs BERT Base)", seed_sd=bert_sd))
            if "test_adv_accuracy" in frame.columns and test_adv:
                adv = [float(v) for v in frame["test_adv_accuracy"]]
                rows.append(_judged_row(E_ORIGINAL_ADV, Q_ADV_MEAN, paper="below 0.5 (no number)",
                                        est=seed_estimate(adv, len(test_adv)),
                                        rule=below_chance_rule(constant_accuracy(train, test_adv)), values=adv,
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
            sd_gap = math.hypot(paper_bert["full"]["std"], paper_bert["W"]["std"])
            rows.append(_judged_row(E_WARRANTS, Q_GAP, paper=round(paper_gap, 3), paper_value=paper_gap, est=gap,
                                    rule=accuracy_rule(sd_gap, n_test, "mean", "Table 3, both inputs", paper_gap),
                                    note=note, values=list(pair["test_accuracy_full"] - pair["test_accuracy_w"])))
        else:
            rows.append(_not_comparable(E_WARRANTS, Q_GAP, round(paper_gap, 3), "no seed",
                                        "no seed trained with both inputs", note))

    if adversarial or words_adversarial:
        if test_adv is None or adv_train is None:
            raise ValueError("adversarial runs need the items they were trained (adv_train) and tested (test_adv) on")
        halves = cues.adversarial_halves(test_adv)
        n_adv, n_half = len(test_adv), len(halves["original_half"])
        constant_adv = constant_accuracy(adv_train, test_adv)
        constant_half = constant_accuracy(adv_train, halves["original_half"])
        adv_sd = _pooled(list((adversarial or {}).values()))
        for inputs, frame in (adversarial or {}).items():
            experiment = adversarial_experiment(inputs)
            note = "trained on train-swapped (README erratum); " + seeds_note(frame)
            has_halves = {"original_half_accuracy", "negated_half_accuracy"} <= set(frame.columns)
            p = PAPER["table4"]["BERT"][inputs]
            if inputs in ("W", "RW"):
                why = (f"cannot fail: the input {INPUTS[inputs]} is the same in both copies of an adversarial item, "
                       "whose labels are opposite, so any such model scores exactly 0.5 and its halves add up to 1")
                shown = over_constant(seed_estimate(frame["test_accuracy"], n_adv), constant_adv).text("+.3f")
                rows.append(_not_comparable(experiment, Q_MEAN, _paper_margin(p["mean"], constant_adv), shown, why,
                                            note))
                if has_halves:
                    rows.append(_not_comparable(experiment, Q_HALVES, 1.0, "1 by construction", why, kind=verdict.OWN))
                continue
            on_half = ""
            if has_halves:
                original = seed_estimate(frame["original_half_accuracy"], n_half)
                on_half = (f"; on the original half {original.text('.3g')}, its constant predictor "
                           f"{constant_half:.3f}")
            rows.append(_mean_row(experiment, p, frame["test_accuracy"], n_adv, note + on_half, constant=constant_adv,
                                  table="Table 4", seed_sd=adv_sd))
            rows += _spread_rows(experiment, p, frame["test_accuracy"], n_adv, note, constant=constant_adv,
                                 table="Table 4")
            if has_halves:
                total = combined_estimate(frame["original_half_accuracy"], frame["negated_half_accuracy"],
                                          n_half, n_adv - n_half, sign=1)
                sums = list(frame["original_half_accuracy"] + frame["negated_half_accuracy"])
                rule = accuracy_rule(2 * p["std"], n_half, "mean", "Table 4, doubled: the sum is twice the "
                                                                  "adversarial accuracy")
                rows.append(_judged_row(experiment, Q_HALVES, paper=1.0, est=total, rule=rule, values=sums,
                                        kind=verdict.OWN,
                                        note="≈ 1: the same answer whatever the claim (the book's reading of the "
                                             "authors' per-seed results; the paper reports no halves)"))
        for kind, frame in (words_adversarial or {}).items():
            model = {"bov": "BoV", "bilstm": "BiLSTM"}[kind]
            experiment = adversarial_experiment("full", model)
            note = "trained on train-swapped (README erratum); GloVe 6B 50d (paper: 840B 300d); " + seeds_note(frame)
            shown = over_constant(seed_estimate(frame["test_accuracy"], n_adv), constant_adv).text("+.3f")
            rows.append(_not_comparable(experiment, Q_MEAN, _paper_margin(PAPER["table4"][model]["full"]["mean"],
                                                                          constant_adv), shown,
                                        WORD_ADVERSARIAL_REASON, note))
            if {"original_half_accuracy", "negated_half_accuracy"} <= set(frame.columns):
                rows.append(_not_comparable(experiment, Q_HALVES, 1.0, "1 by construction", WORD_ADVERSARIAL_REASON,
                                            kind=verdict.OWN))

    for kind, frame in (words or {}).items():
        label = {"bov": "BoV", "bilstm": "BiLSTM"}[kind]
        word_sd = _pooled([sub for _, sub in frame.groupby("inputs", sort=False)])
        for inputs, sub in frame.groupby("inputs", sort=False):
            note = f"GloVe 6B 50d (paper: 840B 300d); {seeds_note(sub)}"
            if inputs != "W":
                note += ("; this model cannot use the claim or the reason (their term cancels between the two "
                         "warrants), so it can do no better than its (W) runs, here as in the paper")
            rows.append(_mean_row(f"§3/§5 {label} ({INPUTS[inputs]})", PAPER["table3"][label][inputs],
                                  sub["test_accuracy"], n_test, note, constant=chance_test, seed_sd=word_sd))
            if inputs == "full" and "test_adv_accuracy" in sub.columns and test_adv:
                shown = seed_estimate(sub["test_adv_accuracy"], len(test_adv)).text()
                rows.append(_not_comparable(original_adv_experiment(label), Q_ADV_MEAN, "below 0.5 (no number)",
                                            shown, WORD_ADVERSARIAL_REASON,
                                            "the paper reports all models below random here; " + seeds_note(sub)))

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
