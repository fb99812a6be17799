"""Chapter 4's glue: Kovaleva et al. §4.1-4.5 and Table 1 measured here and compared with the paper.

The measurements themselves live in :mod:`attnbook.studies.kovaleva.taxonomy` (§4.1), :mod:`attnbook.studies.kovaleva.framenet`
(§4.2), :mod:`attnbook.studies.kovaleva.features` (§4.3-4.5) and :mod:`attnbook.engine.finetune` (Table 1). This
module adds what the chapter needs around them:

* the dev inputs every §4.1/§4.3/§4.4 measurement of a task shares (:func:`dev_inputs`);
* the pattern CNN, cross-validated and trained once and cached as plain arrays
  (:func:`cnn_to_arrays`, :func:`cnn_from_arrays`);
* the "paper vs this run" rows, each verdict computed from the numbers by a rule
  stated in its docstring (:func:`table1_comparisons`, :func:`taxonomy_comparisons`,
  :func:`framenet_comparisons`, :func:`change_comparisons`, :func:`feature_comparisons`),
  and a paragraph that counts them (:func:`agreement_markdown`).

Layers are compared by *relative depth* when the model is shallower than bert-base: "the
last two layers" of a 6-layer model are its layers 5-6.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook import verdict

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

#: version of the chapter's cached steps; part of every cache key the chapter writes
CODE_VERSION = "kovaleva-ch04-1"

#: linguistic features of §4.4 (the special tokens excluded)
LINGUISTIC = ("noun", "verb", "pronoun", "subject", "object", "negation")


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def sample_rows(n_rows: int, n: int | None, seed: int) -> list[int]:
    """``n`` sorted row indices out of ``n_rows`` (all rows when ``n`` is None or too large), seeded."""
    if n_rows < 1:
        raise EmptyDataError("no rows to sample from")
    if n is not None and n < 1:
        raise ParameterError(f"n_examples must be at least 1, got {n}")
    if n is None or n >= n_rows:
        return list(range(n_rows))
    return sorted(np.random.default_rng(seed).choice(n_rows, size=n, replace=False).tolist())


def dev_inputs(tokenizer, task: str, n: int | None, *, seed: int = 0, max_tokens: int = 128,
               use_cache: bool = True) -> list:
    """Up to ``n`` random dev inputs of ``task``, tagged and encoded word by word.

    One set serves §4.1 (pattern shares), §4.3 (cosine) and §4.4-4.5 (feature attention),
    as in the paper, which used up to 1000 dev examples per task for each. ``meta`` holds
    ``task`` and ``row`` (0-based data row of the dev file).
    """
    from attnbook.studies.kovaleva.features import encode_texts
    from attnbook.studies.kovaleva.taxonomy import read_glue_texts

    texts = read_glue_texts(task, "dev")
    rows = sample_rows(len(texts), n, seed)
    return encode_texts(tokenizer, [texts[r] for r in rows], max_tokens=max_tokens, use_cache=use_cache,
                        meta=[{"task": task, "split": "dev", "row": r} for r in rows])


def flatten(nested: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``{"a": {"x": arr}}`` -> ``{"a::x": arr}``, to cache several reducers' results as one set of arrays."""
    out = {}
    for outer, inner in nested.items():
        if "::" in outer:
            raise ParameterError(f"key {outer!r} contains '::'")
        for k, v in inner.items():
            out[f"{outer}::{k}"] = np.asarray(v)
    return out


def unflatten(flat: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """Inverse of :func:`flatten`."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, v in flat.items():
        outer, sep, inner = key.partition("::")
        if not sep:
            raise ParameterError(f"key {key!r} was not made by flatten()")
        out.setdefault(outer, {})[inner] = v
    return out


# ---------------------------------------------------------------------------------------------
# the CNN as cacheable arrays
# ---------------------------------------------------------------------------------------------
def cnn_to_arrays(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """A trained :class:`~attnbook.studies.kovaleva.taxonomy.PatternCNN`'s state as arrays (``state/<name>``) for the cache."""
    out = {f"state/{k}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    out["size"] = np.array(int(model.size))
    return out


def cnn_from_arrays(arrays: Mapping[str, np.ndarray]):
    """Rebuild the CNN stored by :func:`cnn_to_arrays` (in eval mode)."""
    from attnbook.studies.kovaleva.taxonomy import PatternCNN

    model = PatternCNN(size=int(arrays["size"]))
    state = {k[len("state/"):]: torch.as_tensor(np.asarray(v)) for k, v in arrays.items() if k.startswith("state/")}
    model.load_state_dict(state)
    model.eval()
    return model


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
    """Whether a fine-tuned row of :func:`attnbook.engine.finetune.table1` gives one class to at least
    :data:`CONSTANT_PREDICTOR_SHARE` of the dev examples (regression rows have no share and never are)."""
    share = row.get("top_class_share", float("nan"))
    return row["init"] != "pretrained" and share == share and share >= CONSTANT_PREDICTOR_SHARE


def constant_predictors(df) -> list[str]:
    """``"task (init)"`` of the fine-tuned rows of :func:`attnbook.engine.finetune.table1` that are (nearly) constant
    predictors (:func:`is_constant_predictor`)."""
    return [f"{r['task']} ({r['init']})" for _, r in df.iterrows() if is_constant_predictor(r)]


def table1_comparisons(df) -> list[dict]:
    """Rows for Table 1 (``df`` from :func:`attnbook.engine.finetune.table1`).

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


# ---------------------------------------------------------------------------------------------
# §4.1 taxonomy
# ---------------------------------------------------------------------------------------------
def taxonomy_comparisons(cv_macro_f1: float, fractions: Mapping[str, np.ndarray], classes: Sequence[str],
                         *, label_share_vertical: float | None = None) -> list[dict]:
    """Rows for §4.1.

    * the CNN's cross-validated macro F1 vs 0.86 (:func:`attnbook.verdict.closeness`, 0.05 / 0.15);
    * Heterogeneous share per task (``fractions[task][class]`` of the fine-tuned models)
      within the paper's 32-61 % range, 5 points of slack (:func:`attnbook.verdict.share` over tasks);
    * Vertical share at least a third on every task, 3 points of slack;
    * optionally the share of Vertical among the labelled maps vs 30 % (0.05 / 0.15).
    """
    het, ver = classes.index("Heterogeneous"), classes.index("Vertical")
    low, high = PAPER["heterogeneous"]
    rows = [dict(experiment="§4.1 taxonomy", quantity="CNN F1 on the labelled maps", paper=PAPER["cnn_f1"],
                 ours=round(float(cv_macro_f1), 3), verdict=verdict.closeness(PAPER["cnn_f1"], cv_macro_f1, 0.05, 0.15),
                 note="ours: macro F1, stratified cross-validation; the paper does not say which F1")]
    if label_share_vertical is not None:
        rows.append(dict(experiment="§4.1 taxonomy", quantity="Vertical share of the labelled maps",
                         paper=PAPER["annotated_vertical"], ours=round(float(label_share_vertical), 3),
                         verdict=verdict.closeness(PAPER["annotated_vertical"], label_share_vertical, 0.05, 0.15)))
    if fractions:
        h = {t: float(f[het]) for t, f in fractions.items()}
        v = {t: float(f[ver]) for t, f in fractions.items()}
        rows.append(dict(experiment="§4.1 Fig. 2", quantity="Heterogeneous share per task",
                         paper=f"{low:.0%} (MRPC) to {high:.0%} (QQP)",
                         ours=", ".join(f"{t} {x:.0%}" for t, x in h.items()),
                         verdict=verdict.share(sum(in_range(x, low, high, 0.05) for x in h.values()), len(h)),
                         note="fine-tuned models, CNN labels"))
        rows.append(dict(experiment="§4.1 Fig. 2", quantity="Vertical share per task", paper="at least about 1/3",
                         ours=", ".join(f"{t} {x:.0%}" for t, x in v.items()),
                         verdict=verdict.share(sum(x >= PAPER["vertical_min"] - 0.03 for x in v.values()), len(v)),
                         note="fine-tuned models, CNN labels"))
    return rows


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
    features = ("[SEP]", "[CLS]", "punctuation") + LINGUISTIC
    tops = {t: top_cls_feature(finetuned[t], features) for t in tasks}
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
    dis = [f"{r['experiment']}: {r['quantity']}" for r in findings if r["verdict"] == "disagrees"]
    agree = [f"{r['experiment']}: {r['quantity']}" for r in findings if r["verdict"] == "agrees"]
    text = (f"Of {len(rows)} comparisons between Kovaleva et al. (bert-base-uncased) and this run ({model_name}), "
            f"{', '.join(parts)}. ")
    if cells:
        close = sum(r["verdict"] == "agrees" for r in cells)
        comparable = sum(r["verdict"] != "not comparable" for r in cells)
        text += (f"Table 1 cells within 5 points of the paper: {close} of the {comparable} run here; "
                 "a small model fine-tuned for one epoch on capped data is not expected to match bert-base's "
                 "numbers, so the qualitative rows matter more. ")
    if agree:
        text += "Findings that hold here: " + "; ".join(agree) + ". "
    if dis:
        text += "Findings that do not: " + "; ".join(dis) + "."
    return text.strip()
