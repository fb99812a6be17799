"""Kovaleva et al.'s numbers and the "paper vs this run" comparisons of chapters 4 and 5.

Every number of the paper the book compares with lives here, cited by section, figure or table:
:data:`PAPER` (§4.1-4.5), :data:`PAPER_TABLE1` (Table 1) and :data:`PAPER_DISABLING` (§4.6, §5). The
measurements are elsewhere (:mod:`~attnbook.studies.kovaleva.table1`, :mod:`~attnbook.studies.kovaleva.taxonomy`,
:mod:`~attnbook.studies.kovaleva.framenet`, :mod:`~attnbook.studies.kovaleva.features`,
:mod:`~attnbook.studies.kovaleva.disabling`, :mod:`~attnbook.studies.kovaleva.word_match`); this module
turns their results into rows ``dict(experiment, quantity, paper, ours, verdict, note)``, each verdict
from :mod:`attnbook.verdict` by a rule stated in its function's docstring (:func:`table1_comparisons`,
:func:`taxonomy_comparisons`, :func:`fig2_comparisons`, :func:`framenet_comparisons`,
:func:`change_comparisons`, :func:`feature_comparisons`, :func:`disabling_comparisons`), and into the
paragraphs that count them (:func:`agreement_markdown`, :func:`disabling_findings`).

Layers are compared by *relative depth* when the model is shallower than bert-base: "the
last two layers" of a 6-layer model are its layers 5-6.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from attnbook import verdict
from attnbook.core.errors import EmptyDataError
from attnbook.studies.kovaleva.features import CLS_FEATURES, LINGUISTIC

#: Kovaleva et al.'s numbers used by the comparisons (section or figure in the comment).
PAPER: dict[str, Any] = {
    "cnn_f1": 0.86,  # §4.1, F1 of the 8-layer CNN on ~400 annotated maps
    "heterogeneous": (0.32, 0.61),  # §4.1 / Fig. 2: MRPC 32% ... QQP 61%
    "vertical_min": 1 / 3,  # Fig. 2: Vertical is at least about a third of the maps on every task
    "annotated_vertical": 0.30,  # §4.1: "Vertical" is 30% of the annotated maps
    "framenet_sentences": 473,  # §4.2
    "framenet_top": (0.209, 0.201),  # §4.2: the two heads above the 99th percentile
    "framenet_n_heads": 2,
    "finetune_gain": 35.9,  # §4.3: mean gain of fine-tuning over pre-trained BERT, 7 tasks
    # §4.5 / Fig. 7: what the last layer's [CLS] attends to most
    "cls_top": {"MRPC": "[SEP]", "SST-2": "[SEP]", "QQP": "[SEP]", "MNLI-m": "[SEP]",
                "STS-B": "punctuation", "RTE": "punctuation", "QNLI": "punctuation"},
}


#: Kovaleva et al., Table 1 (GLUE dev sets, bert-base-uncased): task -> init -> (score, accuracy or None).
#: The score is F1 for MRPC and QQP (accuracy second), Pearson x 100 for STS-B (labelled "Acc" in the paper,
#: see :mod:`attnbook.data.glue_metrics`), accuracy elsewhere.
PAPER_TABLE1: dict[str, dict[str, tuple[float, float | None]]] = {
    "MRPC": {"pretrained": (0.0, 31.6), "random_ft": (81.2, 68.3), "pretrained_ft": (87.9, 82.3)},
    "STS-B": {"pretrained": (33.1, None), "random_ft": (2.9, None), "pretrained_ft": (82.7, None)},
    "SST-2": {"pretrained": (49.1, None), "random_ft": (80.5, None), "pretrained_ft": (92.0, None)},
    "QQP": {"pretrained": (0.0, 60.9), "random_ft": (0.0, 63.2), "pretrained_ft": (65.2, 78.6)},
    "RTE": {"pretrained": (52.7, None), "random_ft": (52.7, None), "pretrained_ft": (64.6, None)},
    "QNLI": {"pretrained": (52.8, None), "random_ft": (49.5, None), "pretrained_ft": (84.4, None)},
    "MNLI-m": {"pretrained": (31.7, None), "random_ft": (61.0, None), "pretrained_ft": (78.6, None)},
}

#: Kovaleva et al. §4.6 (Fig. 8-9) and §5: disabling heads and layers of fine-tuned bert-base (chapter 5).
PAPER_DISABLING: dict[str, Any] = {
    "tasks_improved": "7 of 7",  # §4.6 / Fig. 8: on every task some head's removal raises the score
    "best_gain": {"MRPC": 1.2, "STS-B": 0.1},  # §4.6: the best single-head gains quoted (points; others in Fig. 8)
    "random_head_tasks": ("MRPC", "RTE"),  # §4.6: disabling a random head helps on average
    "rte_layer1": 3.2,  # §4.6 / Fig. 9: disabling layer 1 on RTE (points)
    "layer_gain": "some (e.g. RTE)",  # Fig. 9: tasks where disabling a layer helps
    "largest_layer_drop": "-0.2 (QNLI, MNLI)",  # Fig. 9: the largest drop from disabling a layer
    "match_heads": ("4-1", "2-12"),  # §5: heads STS-B and RTE depend on most; they match words across sentences
}

#: §5 row: the hurting heads' mean percentile of word-matching share that agrees / partly agrees ("high")
MATCH_PERCENTILE = (0.75, 0.5)
#: chapter 5: a classifier within this many points of its constant predictor has learnt little (a caution)
WEAK_MARGIN = 5.0


# ---------------------------------------------------------------------------------------------
# verdict rules
# ---------------------------------------------------------------------------------------------
def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def in_range(value: float, low: float, high: float, slack: float = 0.0) -> bool:
    """Whether ``value`` lies in ``[low - slack, high + slack]``."""
    return low - slack <= value <= high + slack


def last_layers(n_layers: int, k: int = 2) -> set[int]:
    """0-based indices of the last ``k`` layers."""
    return set(range(max(0, n_layers - k), n_layers))


def most_changed_layers(cosine: np.ndarray, k: int = 2) -> list[int]:
    """0-based layers with the ``k`` largest changes ``1 - mean cosine`` (Kovaleva Fig. 5), most changed first."""
    change = 1.0 - np.asarray(cosine, dtype=np.float64).mean(1)
    return [int(i) for i in np.argsort(-change, kind="stable")[:k]]


# ---------------------------------------------------------------------------------------------
# Table 1
# ---------------------------------------------------------------------------------------------
#: A fine-tuned classifier that gives one answer to at least this share of dev examples is flagged as constant.
CONSTANT_PREDICTOR_SHARE = 0.95


def is_constant_predictor(row) -> bool:
    """Whether a fine-tuned row of :func:`attnbook.studies.kovaleva.table1.table1` gives one class to at least
    :data:`CONSTANT_PREDICTOR_SHARE` of the dev examples (regression rows have no share and never are)."""
    share = row.get("top_class_share", float("nan"))
    return row["init"] != "pretrained" and share == share and share >= CONSTANT_PREDICTOR_SHARE


def constant_predictors(df) -> list[str]:
    """``"task (init)"`` of the fine-tuned rows of :func:`attnbook.studies.kovaleva.table1.table1` that are (nearly)
    constant predictors (:func:`is_constant_predictor`)."""
    return [f"{r['task']} ({r['init']})" for _, r in df.iterrows() if is_constant_predictor(r)]


def table1_comparisons(df) -> list[dict]:
    """Rows for Table 1 (``df`` from :func:`attnbook.studies.kovaleva.table1.table1`).

    * each cell: paper vs ours, :func:`attnbook.verdict.closeness` with 5 / 15 points (scores x 100); a fine-tuned cell
      whose classifier is a constant predictor (:data:`CONSTANT_PREDICTOR_SHARE`) says so in its note;
    * per local task: does pre-trained + fine-tuning beat random init + fine-tuning (the paper:
      on every task but QQP, a tie at 0);
    * the mean gain of fine-tuning over the untrained classifier on the tasks run here, against
      the paper's mean over the same tasks (:func:`attnbook.verdict.closeness`, 10 / 25 points).
    """
    rows = []
    for _, r in df.iterrows():
        note = r["note"] or f"{r['metric']}; {int(r['n_dev'])} dev examples" + (
            f", {int(r['n_train'])} training examples" if r["n_train"] else "")
        if is_constant_predictor(r):
            note += (f"; predicts one class for {r['top_class_share']:.0%} of dev examples: no better than a "
                     "constant predictor, so its attention has not learned the task")
        rows.append(dict(experiment="Table 1", quantity=f"{r['task']}, {r['init']}", paper=float(r["paper"]),
                         ours=float(r["ours"]), verdict=verdict.closeness(r["paper"], r["ours"], 5, 15), note=note))
    wide = df.pivot(index="task", columns="init", values="ours")
    paper = df.pivot(index="task", columns="init", values="paper")
    if {"pretrained_ft", "random_ft"} <= set(wide.columns):
        both = wide.dropna(subset=["pretrained_ft", "random_ft"])
        wins = int((both["pretrained_ft"] > both["random_ft"]).sum())
        rows.append(dict(experiment="Table 1", quantity="pre-trained + FT beats random init + FT",
                         paper="6 of 7 (QQP tie)", ours=f"{wins} of {len(both)}",
                         verdict=verdict.share(wins, len(both)), note=", ".join(both.index)))
    if {"pretrained_ft", "pretrained"} <= set(wide.columns):
        both = wide.dropna(subset=["pretrained_ft", "pretrained"])
        if len(both):
            ours_gain = float((both["pretrained_ft"] - both["pretrained"]).mean())
            paper_gain = float((paper.loc[both.index, "pretrained_ft"] - paper.loc[both.index, "pretrained"]).mean())
            rows.append(dict(experiment="Table 1", quantity="mean gain of fine-tuning (points)",
                             paper=round(paper_gain, 1), ours=round(ours_gain, 1),
                             verdict=verdict.closeness(paper_gain, ours_gain, 10, 25),
                             note=f"over {', '.join(both.index)} (paper, all 7 tasks: {PAPER['finetune_gain']})"))
    return rows


def table1_note(df, cpu_seconds: float) -> str:
    """The paragraph under Table 1: how to read a cell, the CPU time of fine-tuning and scoring, the tasks not
    run, and a warning naming the fine-tuned classifiers that are constant predictors (:func:`constant_predictors`)."""
    notes = df[df["note"] != ""][["task", "init", "note"]].drop_duplicates("task")
    constant = constant_predictors(df)
    return (f"Cells read *ours (paper)*; MRPC/QQP cells are F1/accuracy. Fine-tuning and scoring took "
            f"{cpu_seconds:.0f} CPU seconds in this run (near 0 when every checkpoint was cached). "
            + ("Not run: " + "; ".join(f"{r.task} ({r.note.replace('not run: ', '')})" for r in notes.itertuples())
               if len(notes) else "")
            + (" **Warning:** " + ", ".join(constant) + " answer one class for at least "
               f"{CONSTANT_PREDICTOR_SHARE:.0%} of dev examples: constant predictors (the quick profile's few "
               "updates; the paper profile trains 3 full epochs). The fine-tuned maps below come from the "
               "pretrained_ft models; for a task listed with pretrained_ft they carry little of the task."
               if constant else ""))


# ---------------------------------------------------------------------------------------------
# §4.1 taxonomy
# ---------------------------------------------------------------------------------------------
def taxonomy_comparisons(cv_macro_f1: float, fractions: Mapping[str, np.ndarray], classes: Sequence[str],
                         *, label_share_vertical: float | None = None) -> list[dict]:
    """Rows for §4.1.

    * the CNN's cross-validated macro F1 vs 0.86 (:func:`attnbook.verdict.closeness`, 0.05 / 0.15);
    * optionally the share of Vertical among the labelled maps vs 30 % (0.05 / 0.15);
    * given ``fractions``, the Fig. 2 rows of :func:`fig2_comparisons`.
    """
    rows = [dict(experiment="§4.1 taxonomy", quantity="CNN F1 on the labelled maps", paper=PAPER["cnn_f1"],
                 ours=round(float(cv_macro_f1), 3), verdict=verdict.closeness(PAPER["cnn_f1"], cv_macro_f1, 0.05, 0.15),
                 note="ours: macro F1, stratified cross-validation; the paper does not say which F1")]
    if label_share_vertical is not None:
        rows.append(dict(experiment="§4.1 taxonomy", quantity="Vertical share of the labelled maps",
                         paper=PAPER["annotated_vertical"], ours=round(float(label_share_vertical), 3),
                         verdict=verdict.closeness(PAPER["annotated_vertical"], label_share_vertical, 0.05, 0.15)))
    return rows + fig2_comparisons(fractions, classes)


def fig2_comparisons(fractions: Mapping[str, np.ndarray], classes: Sequence[str]) -> list[dict]:
    """Rows for §4.1 / Fig. 2 from ``fractions[task][class]`` (the fine-tuned models' maps, CNN labels):

    * Heterogeneous share per task within the paper's 32-61 % range, 5 points of slack
      (:func:`attnbook.verdict.share` over tasks);
    * Vertical share at least a third on every task, 3 points of slack.
    """
    if not fractions:
        return []
    het, ver = classes.index("Heterogeneous"), classes.index("Vertical")
    low, high = PAPER["heterogeneous"]
    h = {t: float(f[het]) for t, f in fractions.items()}
    v = {t: float(f[ver]) for t, f in fractions.items()}
    return [
        dict(experiment="§4.1 Fig. 2", quantity="Heterogeneous share per task",
             paper=f"{low:.0%} (MRPC) to {high:.0%} (QQP)", ours=", ".join(f"{t} {x:.0%}" for t, x in h.items()),
             verdict=verdict.share(sum(in_range(x, low, high, 0.05) for x in h.values()), len(h)),
             note="fine-tuned models, CNN labels"),
        dict(experiment="§4.1 Fig. 2", quantity="Vertical share per task", paper="at least about 1/3",
             ours=", ".join(f"{t} {x:.0%}" for t, x in v.items()),
             verdict=verdict.share(sum(x >= PAPER["vertical_min"] - 0.03 for x in v.values()), len(v)),
             note="fine-tuned models, CNN labels"),
    ]


# ---------------------------------------------------------------------------------------------
# §4.2 FrameNet
# ---------------------------------------------------------------------------------------------
def framenet_comparisons(heads: Mapping[str, Any], n_kept: int, n_heads_total: int) -> list[dict]:
    """Rows for §4.2 from :func:`attnbook.studies.kovaleva.framenet.frame_heads` and the filter's count.

    * sentences after the filter: always ``not comparable`` (the paper used FrameNet's
      lexical-unit examples, this book its full-text documents);
    * heads above the 99th percentile: 1 or 2 by construction when there is one value per
      head, so the verdict is ``agrees`` when 1-2 heads pass, with that caveat in the note;
    * the largest per-head mean vs the paper's 0.209 (:func:`attnbook.verdict.closeness`, 0.05 / 0.15);
    * whether the top head prefers frame elements to other words of the sentence
      (``lift`` > 1; the paper has no control, so ``not comparable``).
    """
    found = heads["heads"]
    top = found[0][2] if found else float(np.max(heads["mean"]))
    rows = [
        dict(experiment="§4.2 FrameNet", quantity="annotated instances after the filter",
             paper=PAPER["framenet_sentences"], ours=int(n_kept), verdict=verdict.NOT_COMPARABLE,
             note="paper: lexical-unit example sentences; here: the 48 full-text documents"),
        dict(experiment="§4.2 FrameNet", quantity="heads above the 99th percentile",
             paper=f"{PAPER['framenet_n_heads']} of 144", ours=f"{len(found)} of {n_heads_total}",
             verdict=verdict.conditions(1 <= len(found) <= 2),
             note="with one mean per head, 1-2 heads pass by construction"),
        dict(experiment="§4.2 FrameNet", quantity="largest mean max-attention on a frame link",
             paper=PAPER["framenet_top"][0], ours=round(float(top), 3),
             verdict=verdict.closeness(PAPER["framenet_top"][0], top, 0.05, 0.15)),
    ]
    if "lift" in heads and found:
        l, h, _ = found[0]
        lift = float(heads["lift"][l, h])
        rows.append(dict(experiment="§4.2 FrameNet", quantity="top head: frame elements / other words",
                         paper="not measured", ours=round(lift, 2), verdict=verdict.NOT_COMPARABLE,
                         note="> 1: the head prefers frame elements to other words as far from the target"))
    return rows


# ---------------------------------------------------------------------------------------------
# §4.3 what fine-tuning changes
# ---------------------------------------------------------------------------------------------
def change_comparisons(cosines: Mapping[str, np.ndarray]) -> list[dict]:
    """Row for §4.3 / Fig. 5: are the last two layers the most changed ones?

    Per task, a hit when the two layers with the largest ``1 - cosine`` are the last two; the
    verdict counts hits over tasks (:func:`attnbook.verdict.share`); the paper: every task but QQP.
    A second row relaxes the test to "the most changed layer is one of the last two".
    """
    if not cosines:
        return []
    n_layers = next(iter(cosines.values())).shape[0]
    last = last_layers(n_layers)
    two = {t: most_changed_layers(c) for t, c in cosines.items()}
    hits = [t for t, top in two.items() if set(top) == last]
    first_hits = [t for t, top in two.items() if top[0] in last]
    ours = ", ".join(f"{t}: {'+'.join(str(i + 1) for i in sorted(top))}" for t, top in two.items())
    return [
        dict(experiment="§4.3 Fig. 5", quantity="two most changed layers are the last two",
             paper="all tasks but QQP", ours=ours, verdict=verdict.share(len(hits), len(two)),
             note=f"1-based layers; the last two here are {min(last) + 1}-{max(last) + 1}"),
        dict(experiment="§4.3 Fig. 5", quantity="most changed layer is one of the last two",
             paper="all tasks but QQP", ours=f"{len(first_hits)} of {len(two)} tasks",
             verdict=verdict.share(len(first_hits), len(two))),
    ]


# ---------------------------------------------------------------------------------------------
# §4.4-4.5 linguistic features
# ---------------------------------------------------------------------------------------------
def top_cls_feature(result: Mapping[str, np.ndarray], features: Sequence[str]) -> str:
    """The feature the last layer's ``[CLS]`` attends to most (mean over heads of ``cls/<feature>``)."""
    scores = {f: float(np.mean(result[f"cls/{f}"])) for f in features if f"cls/{f}" in result}
    if not scores:
        raise EmptyDataError("no cls/<feature> statistics in the result")
    return max(scores, key=scores.get)


def peak_layer(values: np.ndarray) -> int:
    """0-based layer with the largest mean over heads of ``values[layer, head]``."""
    return int(np.argmax(np.asarray(values).mean(1)))


def feature_comparisons(finetuned: Mapping[str, Mapping[str, np.ndarray]],
                        pretrained: Mapping[str, Mapping[str, np.ndarray]]) -> list[dict]:
    """Rows for §4.4 (Fig. 6) and §4.5 (Fig. 7) from :func:`attnbook.studies.kovaleva.features.feature_attention` results per task.

    * special tokens dominate: per task, the largest head value of ``[CLS]``/``[SEP]`` is at
      least twice the largest of any linguistic feature (:func:`attnbook.verdict.share` over tasks);
    * ``[CLS]`` early, ``[SEP]`` late: per task, the layer where ``[CLS]`` gets most attention
      (mean over heads) comes before the one where ``[SEP]`` does;
    * gains for linguistic features under fine-tuning are small: per task, the largest increase
      of any linguistic feature over pre-trained is below half the largest special-token value;
    * Fig. 7: the last layer's ``[CLS]`` attends most to what the paper found for that task
      (``[SEP]``, or punctuation on STS-B, RTE and QNLI);
    * §4.5: the best verb-to-subject head is a previous/next-word head (its prev+next
      attention above the 75th percentile over all heads).
    """
    tasks = list(finetuned)
    if not tasks:
        return []

    def peak(r: Mapping[str, np.ndarray], names: Sequence[str]) -> float:
        return max((float(np.max(r[f"received/{n}"])) for n in names if f"received/{n}" in r), default=float("nan"))

    special = {t: peak(finetuned[t], ("[CLS]", "[SEP]")) for t in tasks}
    ling = {t: peak(finetuned[t], LINGUISTIC) for t in tasks}
    dominate = [t for t in tasks if special[t] >= 2 * ling[t]]
    order = [t for t in tasks if peak_layer(finetuned[t]["received/[CLS]"]) < peak_layer(finetuned[t]["received/[SEP]"])]
    gains = {}
    for t in tasks:
        inc = [float(np.max(finetuned[t][f"received/{n}"] - pretrained[t][f"received/{n}"]))
               for n in LINGUISTIC if f"received/{n}" in finetuned[t] and f"received/{n}" in pretrained[t]]
        gains[t] = max(inc) if inc else float("nan")
    small = [t for t in tasks if not _nan(gains[t]) and gains[t] < 0.5 * special[t]]
    rows = [
        dict(experiment="§4.4 Fig. 6", quantity="[CLS]/[SEP] dominate linguistic features (max head, x)",
             paper="linguistic features negligible", ours=", ".join(f"{t} {special[t] / max(ling[t], 1e-9):.1f}x"
                                                                   for t in tasks),
             verdict=verdict.share(len(dominate), len(tasks)), note="ratio of the largest head values; >= 2x counts"),
        dict(experiment="§4.4 Fig. 6", quantity="[CLS] peaks in an earlier layer than [SEP]",
             paper="every task", ours=f"{len(order)} of {len(tasks)} tasks",
             verdict=verdict.share(len(order), len(tasks)), note="layer of the largest mean over heads"),
        dict(experiment="§4.4", quantity="largest fine-tuning gain of a linguistic feature",
             paper="small, on some tasks", ours=", ".join(f"{t} {gains[t]:+.3f}" for t in tasks),
             verdict=verdict.share(len(small), len(tasks)),
             note="attention received, fine-tuned minus pre-trained; small = below half the special-token peak"),
    ]
    tops = {t: top_cls_feature(finetuned[t], CLS_FEATURES) for t in tasks}
    known = [t for t in tasks if t in PAPER["cls_top"]]
    match = [t for t in known if tops[t] == PAPER["cls_top"][t]]
    rows.append(dict(experiment="§4.5 Fig. 7", quantity="last-layer [CLS] attends most to",
                     paper=", ".join(f"{t} {PAPER['cls_top'][t]}" for t in known),
                     ours=", ".join(f"{t} {tops[t]}" for t in tasks), verdict=verdict.share(len(match), len(known))))
    diag_hits, with_pairs = 0, 0
    for t in tasks:
        r = finetuned[t]
        if "pair/verb_subject" not in r:
            continue
        with_pairs += 1
        l, h = np.unravel_index(int(np.argmax(r["pair/verb_subject"])), r["pair/verb_subject"].shape)
        local = np.asarray(r["prev"]) + np.asarray(r["next"])
        diag_hits += int(local[l, h] > np.quantile(local, 0.75))
    rows.append(dict(experiment="§4.5", quantity="best verb->subject head is a previous/next-word head",
                     paper="candidates coincide with diagonal heads", ours=f"{diag_hits} of {with_pairs} tasks",
                     verdict=verdict.share(diag_hits, with_pairs), note="top quarter of heads by prev+next attention"))
    return rows


# ---------------------------------------------------------------------------------------------
# the paragraph under the table
# ---------------------------------------------------------------------------------------------
def agreement_markdown(rows: Sequence[Mapping[str, Any]], model_name: str) -> str:
    """A paragraph counting the verdicts of ``rows`` by experiment, naming the disagreements."""
    if not rows:
        return "*No comparisons were made.*"
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    parts = [f"{n} {v}" for v, n in sorted(counts.items(), key=lambda x: -x[1])]
    cells = [r for r in rows if r["experiment"] == "Table 1" and "," in r["quantity"]]
    findings = [r for r in rows if r not in cells]
    dis = [f"{r['experiment']}: {r['quantity']}" for r in findings if r["verdict"] == verdict.DISAGREES]
    agree = [f"{r['experiment']}: {r['quantity']}" for r in findings if r["verdict"] == verdict.AGREES]
    text = (f"Of {len(rows)} comparisons between Kovaleva et al. (bert-base-uncased) and this run ({model_name}), "
            f"{', '.join(parts)}. ")
    if cells:
        close = sum(r["verdict"] == verdict.AGREES for r in cells)
        comparable = sum(r["verdict"] != verdict.NOT_COMPARABLE for r in cells)
        text += (f"Table 1 cells within 5 points of the paper: {close} of the {comparable} run here; "
                 "a small model fine-tuned for one epoch on capped data is not expected to match bert-base's "
                 "numbers, so the qualitative rows matter more. ")
    if agree:
        text += "Findings that hold here: " + "; ".join(agree) + ". "
    if dis:
        text += "Findings that do not: " + "; ".join(dis) + "."
    return text.strip()


# ---------------------------------------------------------------------------------------------
# chapter 5: §4.6 disabling heads and layers, §5 word matching
# ---------------------------------------------------------------------------------------------
def beside_table1(baselines):
    """``baselines`` (:func:`attnbook.studies.kovaleva.disabling.baselines`) with a last column ``"Kovaleva Table 1"``:
    the paper's pre-trained + fine-tuned score of each task (:data:`PAPER_TABLE1`; NaN where it has none)."""
    out = baselines.copy()
    out["Kovaleva Table 1"] = [PAPER_TABLE1.get(t, {}).get("pretrained_ft", (float("nan"),))[0] for t in out["task"]]
    return out


def weak_classifiers(baselines) -> list[str]:
    """Tasks whose classifier scores (``"this run"``) less than :data:`WEAK_MARGIN` points above its constant
    predictor (``"constant predictor"``): switching their heads off has little to destroy."""
    return [t for t, b, c in zip(baselines["task"], baselines["this run"], baselines["constant predictor"])
            if b < c + WEAK_MARGIN]


def caution_markdown(weak: Sequence[str]) -> str:
    """The caution under chapter 5's baseline table when some classifiers are weak (:func:`weak_classifiers`)."""
    if not weak:
        return ""
    return (f"**Caution.** The classifier(s) for {', '.join(weak)} score within {WEAK_MARGIN:g} points of a constant "
            "predictor (majority class; always 'paraphrase' for MRPC's F1; Pearson 0 for STS-B): they have learned "
            "little from fine-tuning, so switching their heads off has little to destroy, and changes of either sign "
            "are mostly noise. The numbers below are reported as measured.")


def disabling_comparisons(
    head_delta: Mapping[str, np.ndarray],
    layer_delta: Mapping[str, np.ndarray],
    best_heads: Mapping[str, str],
    surviving: Mapping[str, Sequence[str]],
    layer_significant: Mapping[str, Sequence[bool]],
    matches: Mapping[str, Mapping[str, Any]],
    top_k: int,
    profile: str,
) -> list[dict]:
    """Rows for Kovaleva §4.6 (Fig. 8-9) and §5, from chapter 5's sweeps.

    ``head_delta[task][layer, head]`` and ``layer_delta[task][layer]``: the change of the task's score (points)
    when one head or layer is disabled; ``best_heads[task]``: the label of the head whose removal helps most;
    ``surviving[task]``: heads whose gain survives the Holm correction; ``layer_significant[task][layer]``;
    ``matches[task]``: the recorded :func:`attnbook.studies.kovaleva.word_match.hurting_heads_match` numbers
    (``percentiles`` of the ``top_k`` heads that hurt most, ``hurting_heads``). The rules
    (:func:`attnbook.verdict.conditions`; a gain agrees when its sign matches, whether it survives Holm is in
    the note, since the paper reports no test):

    * some head's removal helps on every task (agrees), on some (partly);
    * per task, the best single-head gain is positive; per MRPC/RTE, the mean change of a random head is positive;
    * RTE: disabling layer 1 helps; some layer's removal helps on some task;
    * the largest drop from disabling a layer is ``not comparable`` (the paper's QNLI/MNLI);
    * §5: the hurting heads' mean percentile of word-matching share is "high": at least
      :data:`MATCH_PERCENTILE` ``[0]`` agrees, ``[1]`` partly; with two tasks, both share the paper's two heads
      (two shared heads agree, one partly).
    """
    P = PAPER_DISABLING
    tasks = list(head_delta)
    v = verdict.conditions
    best = {t: float(np.max(head_delta[t])) for t in tasks}
    n_better = sum(b > 0 for b in best.values())
    rows = [dict(experiment="§4.6 Fig. 8", quantity="tasks where disabling some head improves the score",
                 paper=P["tasks_improved"], ours=f"{n_better} of {len(tasks)}",
                 verdict=v(n_better == len(tasks), n_better > 0),
                 note=f"survive Holm: {sum(bool(s) for s in surviving.values())} of {len(tasks)} tasks")]
    for t in tasks:
        rows.append(dict(experiment="§4.6 Fig. 8", quantity=f"{t}: best single-head gain (points)",
                         paper=P["best_gain"].get(t, "> 0 (figure)"), ours=round(best[t], 2), verdict=v(best[t] > 0),
                         note=f"head {best_heads[t]}; "
                         + ("survives Holm" if surviving[t] else "not significant after Holm")))
    for t in [t for t in P["random_head_tasks"] if t in tasks]:
        m = float(np.mean(head_delta[t]))
        rows.append(dict(experiment="§4.6", quantity=f"{t}: mean change from disabling a random head", paper="> 0",
                         ours=round(m, 3), verdict=v(m > 0)))
    if "RTE" in layer_delta:
        d1 = float(layer_delta["RTE"][0])
        rows.append(dict(experiment="§4.6 Fig. 9", quantity="RTE: disabling layer 1 (points)", paper=P["rte_layer1"],
                         ours=round(d1, 2), verdict=v(d1 > 0),
                         note="significant after Holm" if layer_significant["RTE"][0] else "not significant"))
    layer_gain = [t for t in tasks if np.max(layer_delta[t]) > 0]
    rows.append(dict(experiment="§4.6 Fig. 9", quantity="tasks where disabling some layer improves the score",
                     paper=P["layer_gain"], ours=f"{len(layer_gain)} of {len(tasks)}", verdict=v(len(layer_gain) > 0)))
    worst_layer = min(float(np.min(layer_delta[t])) for t in tasks)
    rows.append(dict(experiment="§4.6 Fig. 9", quantity="largest drop from disabling a layer (points)",
                     paper=P["largest_layer_drop"], ours=round(worst_layer, 2), verdict=verdict.NOT_COMPARABLE,
                     note="the paper's QNLI/MNLI are not in the quick profile" if profile != "paper" else ""))
    heads = P["match_heads"]
    agree, partly = MATCH_PERCENTILE
    for t, match in matches.items():
        pct = match["percentiles"]
        mean_pct = float(np.mean(list(pct.values())))
        rows.append(dict(experiment="§5",
                         quantity=f"{t}: word-matching share of the {top_k} most harmful-to-disable heads (percentile)",
                         paper=f"high ({', '.join(heads)}, by inspection)", ours=f"{mean_pct:.0%}",
                         verdict=v(mean_pct >= agree, mean_pct >= partly),
                         note=", ".join(f"{h}: {p:.0%}" for h, p in pct.items())))
    if len(matches) == 2:
        (ta, a), (tb, b) = ((t, set(m["hurting_heads"])) for t, m in matches.items())
        shared = sorted(a & b)
        rows.append(dict(experiment="§5",
                         quantity=f"heads among the {top_k} most harmful to disable for both {ta} and {tb}",
                         paper=f"{len(heads)} ({', '.join(heads)})", ours=len(shared),
                         verdict=v(len(shared) >= len(heads), len(shared) == 1), note=", ".join(shared) or "none"))
    return rows


def disabling_findings(rows: Sequence[Mapping[str, Any]], surviving: Mapping[str, Sequence[str]], model_name: str,
                       n_layers: int, n_dev: int, weak: Sequence[str]) -> str:
    """Chapter 5's paragraph under the table: the outcomes counted, the gains that survive Holm, and what
    differs from the paper's set-up (model, dev examples, no test; weak classifiers named)."""
    counts = Counter(r["verdict"] for r in rows).most_common()
    return (
        f"**Agreement.** Of {len(rows)} comparisons, " + ", ".join(f"{n} {outcome}" for outcome, n in counts)
        + ". Gains that survive the Holm correction: "
        + ("; ".join(f"{t}: {', '.join(s)}" for t, s in surviving.items() if s) or "none")
        + f". The model here is {model_name} ({n_layers} layers), scored on {n_dev} dev examples in all; the paper's "
        "is bert-base-uncased on the full dev sets, and it reports no significance test."
        + (f" The classifiers for {', '.join(weak)} are close to a constant predictor, so their rows say little "
           "about the paper's claims." if weak else "")
    )
