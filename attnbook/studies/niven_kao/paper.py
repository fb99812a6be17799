"""Niven & Kao (2019) beside this run: the paper's numbers, its seed tables and the comparison rows.

The measurements are in :mod:`attnbook.studies.niven_kao.cues` (§4 cues, §6 construction),
:mod:`attnbook.studies.niven_kao.bert` (§3, §5, §6 BERT runs) and :mod:`attnbook.studies.niven_kao.words`
(BoV and BiLSTM). This module only puts the paper's numbers beside them:

* :data:`PAPER`, every number of the paper the chapter uses, with its table or section;
* the tables in the paper's layout, ours beside the paper's (:func:`not_cue_table` for Table 2,
  :func:`seed_table` and :func:`table1_seed_table` for Table 1, :func:`probe_seed_table` for Table 3,
  :func:`adversarial_seed_table` for Table 4) and the run's description (:func:`run_markdown`);
* the "paper vs this run" rows, each outcome from :mod:`attnbook.verdict` (:func:`paper_comparison`),
  and the paragraph that sums them up (:func:`agreement_markdown`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from attnbook import verdict
from attnbook.data.arct import ArctItem
from attnbook.studies.niven_kao import cues
from attnbook.studies.niven_kao.bert import INPUTS, TrainConfig, summarize


def _stats(mean: float, std: float | None = None, median: float | None = None, max_: float | None = None) -> dict:
    return {k: v for k, v in (("mean", mean), ("std", std), ("median", median), ("max", max_)) if v is not None}


#: Every number of Niven & Kao (2019) the chapter compares with (test accuracy unless the key says otherwise).
#: Sources: Table 1 (baselines, BERT), §4 text (degenerate runs), Table 2 (the "not" cue),
#: Table 3 (probes), Table 4 (adversarial test). 20 seeds per row (``n_seeds``).
PAPER: dict[str, Any] = {
    "n_seeds": 20,
    "table1": {
        "Human (trained)": _stats(0.909, 0.11),
        "Human (untrained)": _stats(0.798, 0.16),
        "BERT (Large)": {**_stats(0.671, 0.09, 0.712, 0.770), "dev_mean": 0.701, "dev_std": 0.05},
        "GIST": {**_stats(0.711, 0.01), "dev_mean": 0.716, "dev_std": 0.01},
        "BERT (Base)": {**_stats(0.623, 0.07, 0.651, 0.685), "dev_mean": 0.680, "dev_std": 0.02},
        "World Knowledge": {**_stats(0.568, 0.03, None, 0.610), "dev_mean": 0.674, "dev_std": 0.01},
        "BoV": {**_stats(0.564, 0.02, 0.569, 0.595), "dev_mean": 0.639, "dev_std": 0.02},
        "BiLSTM": {**_stats(0.552, 0.02, 0.552, 0.592), "dev_mean": 0.658, "dev_std": 0.01},
    },
    # BERT Large failed to train in 5 of 20 runs (training accuracy < 80%); the other 15 runs:
    "bert_large_non_degenerate": {**_stats(0.716, 0.04), "n_failed": 5, "n_runs": 20},
    # Table 2: productivity and coverage of the cue "not"; the headline row is "all" (train+dev+test).
    "not_cue": {
        "train": {"productivity": 0.65, "coverage": 0.66},
        "dev": {"productivity": 0.62, "coverage": 0.44},
        "test": {"productivity": 0.52, "coverage": 0.77},
        "all": {"productivity": 0.61, "coverage": 0.64},
    },
    # Table 3: probing with partial input (BERT = BERT Large).
    "table3": {
        "BERT": {
            "full": _stats(0.671, 0.09, 0.712, 0.770),
            "W": _stats(0.656, 0.05, 0.675, 0.712),
            "RW": _stats(0.600, 0.10, 0.574, 0.750),
            "CW": _stats(0.532, 0.09, 0.503, 0.732),
        },
        "BoV": {
            "full": _stats(0.564, 0.02, 0.569, 0.595),
            "W": _stats(0.567, 0.02, 0.572, 0.606),
            "RW": _stats(0.554, 0.02, 0.557, 0.579),
            "CW": _stats(0.545, 0.02, 0.544, 0.589),
        },
        "BiLSTM": {
            "full": _stats(0.552, 0.02, 0.552, 0.592),
            "W": _stats(0.550, 0.02, 0.547, 0.577),
            "RW": _stats(0.547, 0.02, 0.551, 0.577),
            "CW": _stats(0.552, 0.02, 0.550, 0.601),
        },
    },
    # Table 4: adversarial test set (train on train-swapped, validate/test on *-adv-negated; README erratum).
    "table4": {
        "BERT": {
            "full": _stats(0.504, 0.01, 0.505, 0.533),
            "W": _stats(0.501, 0.00, 0.501, 0.502),
            "RW": _stats(0.500, 0.00, 0.500, 0.502),
            "CW": _stats(0.501, 0.01, 0.500, 0.518),
        },
        # not in the ACL paper's table; recomputed from the authors' per-seed results (reference note)
        "BoV": {"full": _stats(0.499, 0.001, 0.499, 0.501)},
        "BiLSTM": {"full": _stats(0.500, 0.001, 0.500, 0.503)},
    },
    "bert_recipe": {"lr": 2e-5, "epochs": 20, "batch_items": 8, "warmup": 0.1, "weight_decay": 0.01},
}

#: Tolerances of the accuracy rows (fractions): within ``agree`` the row agrees, within ``partly`` it partly agrees.
ACCURACY_CLOSE = (0.03, 0.08)
#: The same for the "not" cue's productivity and coverage (Table 2).
CUE_CLOSE = (0.02, 0.05)
#: The same for the gap max(full) − max(W) of §5.
GAP_CLOSE = (0.03, 0.06)
#: §6 trained on original data: a mean below 0.5 agrees ("below random"), up to this partly.
BELOW_CHANCE_PARTLY = 0.53
#: The finding "the warrants alone carry most of it" (§5) holds when max(full) − max(W) is at most this.
WARRANTS_CARRY_GAP = 0.06


# ---- tables in the paper's layout -------------------------------------------------------------


def not_cue_table(splits: Mapping[str, Sequence[ArctItem]]):
    """Table 2 of Niven & Kao beside our counts: productivity and coverage of "not" per split.

    Our counts with both tokenisations (:func:`attnbook.studies.niven_kao.cues.not_cue_table`), the
    paper's in the columns ``paper productivity`` / ``paper coverage`` (``None`` for a split it does not give).
    """
    return cues.not_cue_table(splits, "not", paper=PAPER["not_cue"])


def seed_table(frames: Mapping[str, Any], column: str = "test_accuracy", paper: Mapping[str, Mapping] | None = None):
    """One row per experiment: mean ± std, median and max over seeds of ``column`` (the paper's columns, Table 1).

    ``frames`` maps a row label to a per-seed frame; ``paper`` (same labels) adds the paper's values.
    """
    import pandas as pd

    rows = []
    for label, frame in frames.items():
        s = summarize(frame[column])
        row = {"experiment": label, "seeds": s["n"], "mean": round(s["mean"], 3), "std": round(s["std"], 3),
               "median": round(s["median"], 3), "max": round(s["max"], 3)}
        if paper is not None and label in paper:
            p = paper[label]
            row.update({"paper mean": p.get("mean"), "paper median": p.get("median"), "paper max": p.get("max")})
        rows.append(row)
    return pd.DataFrame(rows)


#: row labels of the word baselines in :func:`table1_seed_table`, and their Table 1 rows
_WORD_ROWS = {"bov": ("BOV (this run)", "BoV"), "bilstm": ("BiLSTM (this run)", "BiLSTM")}


def table1_seed_table(bert_full: Any, words: Mapping[str, Any] | None = None):
    """Table 1's rows for BERT (the paper: BERT Large) and the word baselines on the full input, beside ours."""
    frames = {"BERT (this run)": bert_full}
    frames.update({_WORD_ROWS[k][0]: f[f["inputs"] == "full"] for k, f in (words or {}).items()})
    paper = {"BERT (this run)": PAPER["table1"]["BERT (Large)"]}
    paper.update({label: PAPER["table1"][row] for label, row in _WORD_ROWS.values()})
    return seed_table(frames, paper=paper)


def probe_seed_table(bert: Mapping[str, Any]):
    """Table 3's BERT rows (the paper: BERT Large) beside ours, one row per input variant run (§5)."""
    return seed_table({INPUTS[k]: v for k, v in bert.items()},
                      paper={INPUTS[k]: v for k, v in PAPER["table3"]["BERT"].items()})


def adversarial_seed_table(bert_full: Any, adversarial: Mapping[str, Any]):
    """Table 4's BERT rows beside ours (§6): the full-input runs of §3 tested on the adversarial test set,
    then the runs trained on ``train-swapped``, one row per input variant."""
    labels = {k: f"{INPUTS[k]}, trained on train-swapped" for k in adversarial}
    frames = {"C, R, W, trained on original data": bert_full.assign(test_accuracy=bert_full["test_adv_accuracy"])}
    frames.update({labels[k]: v for k, v in adversarial.items()})
    return seed_table(frames, paper={labels[k]: PAPER["table4"]["BERT"][k] for k in adversarial})


def run_markdown(cfg: TrainConfig, *, n_seeds: int, n_layers: int, max_length: int, n_train: int, n_dev: int,
                 n_test: int) -> str:
    """What this run's BERT training did, beside the paper's recipe (every layer, 20 seeds)."""
    trained = "every layer" if cfg.trainable_layers is None else f"the top {cfg.trainable_layers} of {n_layers} layers"
    return (
        f"This run: {n_seeds} seeds, {cfg.epochs} epochs, lr {cfg.lr:g}, {cfg.batch_size} items per step, "
        f"at most {max_length} pieces per pair; fine-tuned: **{trained}** plus pooler and classifier "
        f"(paper: every layer, {PAPER['n_seeds']} seeds). {n_train} training, {n_dev} dev and {n_test} test items. "
        "Frozen layers run once per distinct input and are shared by all runs."
    )


# ---- paper vs this run -------------------------------------------------------------------------


def _close(paper: float, ours: float, agree: float = ACCURACY_CLOSE[0], partly: float = ACCURACY_CLOSE[1]) -> str:
    """Accuracies (fractions) within 3 points agree, within 8 partly (:func:`attnbook.verdict.closeness`)."""
    return verdict.closeness(paper, ours, agree, partly)


def paper_comparison(
    *,
    not_rows: Any,
    bert: Mapping[str, Any],
    adversarial: Mapping[str, Any] | None = None,
    words: Mapping[str, Any] | None = None,
    agreement: Mapping[str, Mapping] | None = None,
    adversarial_cue_gap: float | None = None,
    model_name: str = "",
) -> list[dict]:
    """The "paper vs this run" rows of the chapter, each with a verdict computed from the numbers.

    ``not_rows``: :func:`not_cue_table` (with an ``all`` row); ``bert``: per-seed
    frames by input variant (with ``test_accuracy`` and, for ``full``, ``test_adv_accuracy``);
    ``adversarial``: per-seed frames of the §6 runs by input variant; ``words``: BoV/BiLSTM
    frames by kind; ``agreement``: :func:`attnbook.studies.niven_kao.cues.transform_agreement`;
    ``adversarial_cue_gap``: max |π − ½| over warrant cues of the adversarial test set.
    Accuracy rows use :func:`attnbook.verdict.closeness` (±3 points agrees, ±8 partly, :data:`ACCURACY_CLOSE`).
    """
    rows: list[dict] = []
    seeds_note = lambda f: f"{len(f)} seeds (paper: {PAPER['n_seeds']})"  # noqa: E731
    allrow = not_rows.set_index("split").loc["all"]
    for q in ("productivity", "coverage"):
        paper = PAPER["not_cue"]["all"][q]
        rows.append(dict(experiment='§4 cue "not" (train+dev+test)', quantity=q, paper=paper, ours=float(allrow[q]),
                         verdict=_close(paper, allrow[q], *CUE_CLOSE),
                         note=f"n't counted as not; whole word only: {float(allrow[q + ' (whole word)']):.3f}"))
    per_split = not_rows.set_index("split")
    splits = [s for s in ("train", "dev", "test") if s in per_split.index]
    ours_prod = [float(per_split.loc[s, "productivity"]) for s in splits]
    paper_prod = [PAPER["not_cue"][s]["productivity"] for s in splits]
    close = all(abs(a - b) <= ACCURACY_CLOSE[0] for a, b in zip(ours_prod, paper_prod))
    same_side = all((a > 0.5) == (b > 0.5) for a, b in zip(ours_prod, paper_prod))
    rows.append(dict(experiment='§4 cue "not" by split', quantity="productivity " + "/".join(splits),
                     paper="/".join(f"{v:.2f}" for v in paper_prod), ours="/".join(f"{v:.2f}" for v in ours_prod),
                     verdict=verdict.conditions(close, same_side),
                     note="partly: same side of 0.5 in every split, but not within 3 points"))
    paper_bert = PAPER["table3"]["BERT"]
    if "full" in bert:
        s = summarize(bert["full"]["test_accuracy"])
        for stat in ("max", "median", "mean"):
            rows.append(dict(experiment="§3 BERT, full input (C, R, W)", quantity=f"test accuracy, {stat}",
                             paper=paper_bert["full"][stat], ours=s[stat],
                             verdict=_close(paper_bert["full"][stat], s[stat]),
                             note=f"paper: BERT Large; {model_name}; {seeds_note(bert['full'])}"))
        base = PAPER["table1"]["BERT (Base)"]["mean"]
        rows.append(dict(experiment="§3 BERT, full input (C, R, W)", quantity="test accuracy, mean (vs BERT Base)",
                         paper=base, ours=s["mean"], verdict=_close(base, s["mean"]), note="Table 1, BERT Base"))
        if "test_adv_accuracy" in bert["full"]:
            m = summarize(bert["full"]["test_adv_accuracy"])["mean"]
            rows.append(dict(experiment="§6 trained on original data, tested adversarially",
                             quantity="test accuracy, mean",
                             paper="below 0.5 (no number)", ours=m,
                             verdict=verdict.conditions(m < 0.5, m <= BELOW_CHANCE_PARTLY),
                             note="the paper reports all models below random here"))
    for inputs in ("W", "RW", "CW"):
        if inputs in bert:
            s = summarize(bert[inputs]["test_accuracy"])
            for stat in ("max", "median"):
                rows.append(dict(experiment=f"§5 probe, BERT ({INPUTS[inputs]})", quantity=f"test accuracy, {stat}",
                                 paper=paper_bert[inputs][stat], ours=s[stat],
                                 verdict=_close(paper_bert[inputs][stat], s[stat]), note=seeds_note(bert[inputs])))
    if "full" in bert and "W" in bert:
        gap_paper = paper_bert["full"]["max"] - paper_bert["W"]["max"]
        gap = summarize(bert["full"]["test_accuracy"])["max"] - summarize(bert["W"]["test_accuracy"])["max"]
        rows.append(dict(experiment="§5 finding: warrants alone", quantity="max(full) − max(W), points",
                         paper=gap_paper, ours=gap, verdict=_close(gap_paper, gap, *GAP_CLOSE),
                         note="small = the warrants carry most of what the model uses"))
    for inputs, frame in (adversarial or {}).items():
        s = summarize(frame["test_accuracy"])
        p = PAPER["table4"]["BERT"][inputs]
        for stat in ("max", "mean"):
            rows.append(dict(experiment=f"§6 adversarial test, BERT ({INPUTS[inputs]})",
                             quantity=f"test accuracy, {stat}",
                             paper=p[stat], ours=s[stat], verdict=_close(p[stat], s[stat]),
                             note="trained on train-swapped (README erratum); " + seeds_note(frame)))
        if {"original_half_accuracy", "negated_half_accuracy"} <= set(frame.columns):
            total = float((frame["original_half_accuracy"] + frame["negated_half_accuracy"]).mean())
            rows.append(dict(experiment=f"§6 adversarial test, BERT ({INPUTS[inputs]})",
                             quantity="original half + negated half", paper=1.0, ours=total,
                             verdict=_close(1.0, total),
                             note="≈ 1: the same answer whatever the claim (as in the authors' per-seed results)"))
    for kind, frame in (words or {}).items():
        label = {"bov": "BoV", "bilstm": "BiLSTM"}[kind]
        for inputs, sub in frame.groupby("inputs", sort=False):
            s = summarize(sub["test_accuracy"])
            p = PAPER["table3"][label][inputs]
            rows.append(dict(experiment=f"§3/§5 {label} ({INPUTS[inputs]})", quantity="test accuracy, mean",
                             paper=p["mean"], ours=s["mean"], verdict=_close(p["mean"], s["mean"]),
                             note=f"GloVe 6B 50d (paper: 840B 300d); {seeds_note(sub)}"))
    if agreement:
        identical = sum(a["identical"] for a in agreement.values())
        total = sum(a["n_shipped"] for a in agreement.values())
        rows.append(dict(experiment="§6 adversarial files", quantity="items our transform reproduces exactly",
                         paper=total, ours=identical, verdict=verdict.conditions(identical == total, True),
                         note=", ".join(agreement)))
    if adversarial_cue_gap is not None:
        rows.append(dict(experiment="§6 adversarial test set", quantity="max |productivity − 0.5| over warrant cues",
                         paper=0.0, ours=adversarial_cue_gap,
                         verdict=verdict.conditions(adversarial_cue_gap < 1e-12),
                         note="every warrant appears once with each label"))
    return rows


def agreement_markdown(rows: Sequence[Mapping[str, Any]], bert: Mapping[str, Any],
                       adversarial: Mapping[str, Any] | None = None) -> str:
    """The chapter's closing paragraph: the verdicts of ``rows`` counted, then the three headline numbers
    (best full-input seed, best warrants-only seed, the adversarial test) beside the paper's."""
    import pandas as pd

    counts = pd.Series([r["verdict"] for r in rows], dtype=object).value_counts().to_dict()
    lines = [f"**Agreement.** Of {len(rows)} comparisons, " + ", ".join(f"{n} {v}" for v, n in counts.items()) + "."]
    if "full" in bert and "W" in bert:
        full, w = summarize(bert["full"]["test_accuracy"]), summarize(bert["W"]["test_accuracy"])
        paper_bert = PAPER["table3"]["BERT"]
        lines.append(
            f"With the full input this run's best seed reaches {full['max']:.1%} on the test set "
            f"(paper: {paper_bert['full']['max']:.1%}); with the warrants alone {w['max']:.1%} "
            f"(paper: {paper_bert['W']['max']:.1%}). "
            + ("As in the paper, the warrants alone carry most of it." if full["max"] - w["max"] <= WARRANTS_CARRY_GAP
               else "Unlike in the paper, the warrants alone fall well short of the full input here.")
        )
    if adversarial:
        a = summarize(next(iter(adversarial.values()))["test_accuracy"])
        p = PAPER["table4"]["BERT"]["full"]
        lines.append(f"On the adversarial test set the mean is {a['mean']:.1%} and the best seed {a['max']:.1%} "
                     f"(paper: {p['mean']:.1%} and {p['max']:.1%}).")
    return "\n\n".join(lines)


__all__: list[str] = [
    "PAPER", "ACCURACY_CLOSE", "CUE_CLOSE", "GAP_CLOSE", "BELOW_CHANCE_PARTLY", "WARRANTS_CARRY_GAP",
    "not_cue_table", "seed_table", "table1_seed_table", "probe_seed_table", "adversarial_seed_table", "run_markdown",
    "paper_comparison", "agreement_markdown",
]
