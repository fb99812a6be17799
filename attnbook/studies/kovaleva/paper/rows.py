"""Kovaleva et al. beside this run: the rules and the "paper vs this run" rows of chapters 4 and 5.

Each function turns a measurement's results into rows made by :func:`attnbook.verdict.row`, each with its rule from
:mod:`attnbook.verdict` stated in words and this run's number as an :class:`~attnbook.stats.Estimate` with its 95%
interval where it is a sample estimate: §4.1 (:func:`taxonomy_comparisons`, :func:`fig2_comparisons`), §4.2
(:func:`framenet_comparisons`), §4.3 (:func:`change_comparisons`), §4.4-4.5 (:func:`feature_comparisons`,
:func:`feature_rows`, on the claims of :func:`feature_claims`). Table 1's rules and rows
(:func:`~attnbook.studies.kovaleva.paper.table1_rows.table1_comparisons`, its cells
:func:`~attnbook.studies.kovaleva.paper.table1_rows.table1_cells`) are in
:mod:`~attnbook.studies.kovaleva.paper.table1_rows`; chapter 5's §4.6, §5 are in
:mod:`~attnbook.studies.kovaleva.paper.disabling_rows` (:func:`disabling_comparisons`); both take :func:`not_run_row`
from here.

A row scored on our classifier when it is no better than its constant predictor (majority class, always
"paraphrase" for F1, Pearson 0) cannot fail and is ``not comparable`` with the reason
(:mod:`~attnbook.studies.kovaleva.paper.learned`). Every row here is one of the paper's claims
(:data:`attnbook.verdict.CLAIM`); set-up numbers (FrameNet instance counts, the heads above the 99th percentile) are
not rows. An undecided row states what its sample could detect (:func:`attnbook.verdict.detectable_effect`; over
seeds, per seed).

Every tolerance names its source in the row's rule: the paper's own sampling error for the shares, the CNN's F1, the
FrameNet score and RTE's layer-1 gain (:func:`sampling_rule`, :func:`layer_one_rule`), the paper's reported size for
the drop from disabling layer 1 (:data:`LAYER_DROP_RULE`). Differences with a sign are judged on the sign and the
size (``signed``).

Layers are compared by *relative depth*, the book's one rule (:func:`attnbook.core.heads.relative_layers`, as in
chapter 1): "the last two layers" of bert-base (11 and 12 of 12) are layer 6 of a 6-layer model.

The paper's numbers are in :mod:`~attnbook.studies.kovaleva.paper.claims`; the measurements in
:mod:`~attnbook.studies.kovaleva.taxonomy`, :mod:`~attnbook.studies.kovaleva.framenet`,
:mod:`~attnbook.studies.kovaleva.features`, :mod:`~attnbook.studies.kovaleva.disabling` and
:mod:`~attnbook.studies.kovaleva.word_match`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from attnbook import verdict
from attnbook.core.errors import EmptyDataError
from attnbook.core.heads import PAPER_N_LAYERS, relative_layers
from attnbook.stats import Estimate
from attnbook.studies.kovaleva.features import CLS_FEATURES, LINGUISTIC, resampled_statistics
from attnbook.studies.kovaleva.paper.claims import PAPER, PAPER_DISABLING
from attnbook.studies.kovaleva.paper.learned import is_missing
from attnbook.studies.kovaleva.patterns import CLASSES

Comparison = verdict.Comparison

# ---------------------------------------------------------------------------------------------
# the rules (stated in words in every row, see attnbook.verdict), each tolerance with its source
# ---------------------------------------------------------------------------------------------
def sampling_rule(p: float, n: int, what: str) -> verdict.Within:
    """A share (or a mean of values in [0, 1]) the paper measured as ``p`` on ``n`` units: the tolerance is the
    paper's own sampling error, ``SE = sqrt(p (1 - p) / n)`` (for a mean of values in [0, 1], its largest
    possible value); agrees within 2 SE, partly within 4 SE."""
    se = math.sqrt(p * (1 - p) / n)
    return verdict.Within(round(2 * se, 3), round(4 * se, 3),
                          source=f"the paper's own sampling error, {what}: SE {se:.3f}; agrees within 2 SE, partly "
                                 "within 4 SE")


#: §4.1: the annotated maps the paper's CNN is trained and scored on ("around 400")
PAPER_MAPS = 400
#: §4.1: the CNN's F1 (0.86 on the paper's ~400 annotated maps)
F1_RULE = sampling_rule(PAPER["cnn_f1"], PAPER_MAPS, f"an F1 near {PAPER['cnn_f1']:g} on about {PAPER_MAPS} "
                                                     "annotated maps (§4.1)")
#: §4.1: a share of the annotated maps (Vertical: 30% of about 400)
SHARE_RULE = sampling_rule(PAPER["annotated_vertical"], PAPER_MAPS,
                           f"a share near {PAPER['annotated_vertical']:g} of about {PAPER_MAPS} annotated maps (§4.1)")
#: §4.2: the top head's mean max-attention (0.209 over 473 sentences, each value in [0, 1])
FRAME_RULE = sampling_rule(PAPER["framenet_top"][0], PAPER["framenet_sentences"],
                           f"a mean of weights in [0, 1] near {PAPER['framenet_top'][0]:g} over "
                           f"{PAPER['framenet_sentences']} sentences (§4.2), at most")
#: a gain the paper says is positive (points)
GAIN_POSITIVE = verdict.Beyond(0.0, above=True, what="change (points)")
#: §4.1 / Fig. 2: the Vertical share per task, at least about a third (3 points of slack)
VERTICAL_RULE = verdict.Beyond(PAPER["vertical_min"] - 0.03, above=True, what="Vertical share",
                               source="the paper's 'about a third' (Fig. 2), read as at least 0.30")
#: §5: the hurting heads' mean percentile of word-matching share is "high": above 0.5, fully above 0.75
MATCH_RULE = verdict.Beyond(0.5, above=True, strong=0.75, what="mean percentile")
#: Fig. 2: the slack (share) around the paper's Heterogeneous range for "partly": 2 SE of a share near the range's
#: midpoint on the paper's ~400 annotated maps, which calibrate the CNN that measured the shares
HETEROGENEOUS_SLACK = round(2 * math.sqrt(0.465 * 0.535 / PAPER_MAPS), 3)
_HETEROGENEOUS_SOURCE = (f"the paper's own sampling error: a share near 0.47 of about {PAPER_MAPS} annotated maps "
                         f"(§4.1), 2 SE = {HETEROGENEOUS_SLACK:g}")
#: Fig. 9: disabling the first layer drops QNLI and MNLI by up to 0.2 points (the paper's reported size)
LAYER_DROP_EFFECT = 0.2
#: Fig. 9: layer 1's change on the task where it is lowest must not be a drop larger than the paper's 0.2 points
LAYER_DROP_RULE = verdict.Beyond(-LAYER_DROP_EFFECT, above=True, what="layer 1's change where it is lowest (points)",
                                 source="the paper's reported size: drops of up to 0.2 points on QNLI and MNLI "
                                        "(Fig. 9)")
#: GLUE's RTE dev set, the examples behind the paper's +3.2 points for layer 1 (Fig. 9)
RTE_DEV = 277


def layer_one_rule(gain: float | None = None, n_dev: int = RTE_DEV) -> verdict.Within:
    """§4.6 / Fig. 9: disabling layer 1 on RTE gains ``gain`` points (the paper's 3.2) on ``n_dev`` dev examples,
    judged on its size and sign. The tolerance is the paper's own sampling error: a net change of ``k`` examples
    (3.2 points of 277 is 9) has a paired standard error of at least ``sqrt(k) / n`` (no example broken; each
    broken one adds to it); agrees within 2 SE, partly within 4 SE; surely negative disagrees."""
    gain = PAPER_DISABLING["rte_layer1"] if gain is None else gain
    net = max(round(gain / 100 * n_dev), 1)
    se = 100 * math.sqrt(net) / n_dev
    return verdict.Within(round(2 * se, 2), round(4 * se, 2), unit="points", signed=True,
                          source=f"the paper's own sampling error: +{gain:g} points is a net {net} of {n_dev} dev "
                                 f"examples, SE at least {se:.1f}; agrees within 2 SE, partly within 4 SE")


#: why §4.1's rows are not comparable when the pattern labels describe another model's maps
TRANSFER_REASON = ("the pattern labels describe another model's maps: the classifier learned from them is applied to "
                   "this model's maps untested")


def in_range(value: float, low: float, high: float, slack: float = 0.0) -> bool:
    """Whether ``value`` lies in ``[low - slack, high + slack]``."""
    return low - slack <= value <= high + slack


def last_layers(n_layers: int, k: int = 2) -> set[int]:
    """0-based indices of the layers of an ``n_layers`` model at the relative depth of bert-base's last ``k``
    (:func:`attnbook.core.heads.relative_layers`, chapter 1's rule): ``{10, 11}`` of 12 layers, ``{5}`` of 6."""
    return {layer - 1 for layer in relative_layers(range(PAPER_N_LAYERS - k + 1, PAPER_N_LAYERS + 1), n_layers)}


def most_changed_layers(cosine: np.ndarray, k: int = 2) -> list[int]:
    """0-based layers with the ``k`` largest changes ``1 - mean cosine`` (Kovaleva Fig. 5), most changed first."""
    change = 1.0 - np.asarray(cosine, dtype=np.float64).mean(1)
    return [int(i) for i in np.argsort(-change, kind="stable")[:k]]


def holds_estimate(claims: np.ndarray, n_units: int, unit: str) -> Estimate:
    """What :class:`attnbook.verdict.Holds` judges: the share of bootstrap resamples (``claims[resample]``, bool)
    in which a claim holds, over ``n_units`` resampled ``unit``."""
    c = np.asarray(claims, dtype=bool)
    if c.size == 0:
        raise EmptyDataError("no bootstrap resamples")
    return Estimate(float(c.mean()), None, None, int(n_units), f"{unit} (share of bootstrap resamples)")


def not_run_row(experiment: str, quantity: str, paper: Any, reason: str, kind: str = verdict.CLAIM) -> Comparison:
    """A row for a measurement that was not made here: ``not comparable`` with the reason (``kind``
    :data:`~attnbook.verdict.NOT_REPRODUCED` when the data here cannot run it)."""
    return verdict.row(experiment, quantity, paper=paper, ours="n/a", estimate=Estimate(float("nan")),
                       rule=verdict.NotComparable(reason), kind=kind)


# ---------------------------------------------------------------------------------------------
# §4.1 taxonomy
# ---------------------------------------------------------------------------------------------
def taxonomy_comparisons(cnn_f1: Estimate, vertical_share: Estimate, *, reviewed: bool, n_maps: int,
                         classes_note: str = "", transfer: str = "") -> list[Comparison]:
    """Rows for §4.1 on the labelled maps.

    * the CNN's cross-validated macro F1 (interval: bootstrap over maps of the pooled out-of-fold predictions)
      against 0.86 (:data:`F1_RULE`) when the labels come from a blind review (``reviewed``); without one the
      labels are the rule set's output, the CNN reproduces a rule and the row is ``not comparable``;
    * the share of Vertical among the reviewed maps (exact interval) against 30 % (:data:`SHARE_RULE`).

    With ``transfer`` (:func:`attnbook.studies.kovaleva.labels.label_model`'s note: the labels describe another
    model's maps than the one analysed) both rows are ``not comparable``.
    """
    f1_rule = F1_RULE if reviewed else verdict.NotComparable(
        "the labels are the rule set's proposals, so the CNN is scored on reproducing a rule, not an annotator")
    share_rule = SHARE_RULE if reviewed else verdict.NotComparable("the labels are the rule set's proposals")
    if transfer:
        f1_rule = share_rule = verdict.NotComparable(TRANSFER_REASON)
    return [
        verdict.row("§4.1 taxonomy", "CNN F1 on the labelled maps", paper=PAPER["cnn_f1"], ours=cnn_f1, rule=f1_rule,
                    note=f"macro F1 of stratified cross-validation on {n_maps} blindly reviewed maps "
                         + ("of the model the labels describe, not the analysed one" if transfer else "of this model")
                         + (f"; {classes_note}" if classes_note else "") + "; the paper does not say which F1"),
        verdict.row("§4.1 taxonomy", "Vertical share of the labelled maps", paper=PAPER["annotated_vertical"],
                    ours=vertical_share, rule=share_rule,
                    note="the paper's annotated maps are bert-base's; ours the embedded model's"),
    ]


def _share_of(shares: Any, name: str) -> float | None:
    """Class ``name``'s share in ``shares``: a mapping class -> share (or :class:`~attnbook.stats.Estimate`), or a
    sequence in :data:`attnbook.studies.kovaleva.patterns.CLASSES` order; ``None`` when it has none."""
    if shares is None:
        return None
    if isinstance(shares, Mapping):
        v = shares.get(name)
    else:
        seq = list(np.asarray(shares, dtype=np.float64).ravel())
        v = seq[CLASSES.index(name)] if name in CLASSES and len(seq) == len(CLASSES) else None
    if isinstance(v, Estimate):
        v = v.value
    return None if v is None or is_missing(float(v)) else float(v)


#: what a Fig. 2 row's interval counts, and what it does not
SHARE_INTERVAL_WORDS = "the interval counts the inputs sampled, not the CNN's labelling error"


def classifier_gap_words(cnn: float, rules: float | None) -> str:
    """The note of a Fig. 2 row: what its interval counts and, with the rule set's share of the same maps
    (``rules``), the CNN's share minus it in points, the measure of the labelling error the interval leaves out."""
    if rules is None:
        return SHARE_INTERVAL_WORDS
    return (f"rule set {100 * rules:.1f}%, CNN minus rule set {100 * (cnn - rules):+.1f} points; "
            f"{SHARE_INTERVAL_WORDS}, of which that gap is the measure")


def fig2_comparisons(shares: Mapping[str, Mapping[str, Estimate]], learned: Mapping[str, str] | None = None,
                     transfer: str = "", rules: Mapping[str, Any] | None = None) -> list[Comparison]:
    """Rows for §4.1 / Fig. 2 from ``shares[task][class]`` (the fine-tuned models' maps, CNN classes, each an
    :class:`~attnbook.stats.Estimate` over inputs):

    * Heterogeneous share per task: a :class:`~attnbook.verdict.Within` rule around the paper's range across tasks
      (32 % on MRPC to 61 % on QQP): agrees when the whole interval lies inside the range, partly when inside it
      widened by :data:`HETEROGENEOUS_SLACK` (2 SE of a share on the paper's ~400 annotated maps); MRPC and QQP,
      whose own values the paper gives, within 2 SE of their value to agree and 4 SE partly;
    * Vertical share per task at least about a third (:data:`VERTICAL_RULE`).

    A task whose fine-tuned classifier learned nothing (``learned[task]`` non-empty) is ``not comparable``; so is
    every row when the CNN learned its classes from another model's labelled maps (``transfer``).

    Each interval is a bootstrap over the inputs: it counts the maps sampled, not the CNN's labelling error. With
    ``rules[task]`` (the rule set's class shares of the same maps, class -> share or a sequence in
    :data:`~attnbook.studies.kovaleva.patterns.CLASSES` order) each row's note gives the CNN's share minus the rule
    set's (:func:`classifier_gap_words`), the measure of that error.
    """
    low, high = PAPER["heterogeneous"]
    mid, half = (low + high) / 2, (high - low) / 2
    own = {"MRPC": low, "QQP": high}
    rows = []
    for t, s in shares.items():
        reason = TRANSFER_REASON if transfer else (learned or {}).get(t, "")
        het = own.get(t, mid)
        rule = (verdict.Within(HETEROGENEOUS_SLACK, 2 * HETEROGENEOUS_SLACK, source=_HETEROGENEOUS_SOURCE) if t in own
                else verdict.Within(round(half, 3), round(half + HETEROGENEOUS_SLACK, 3),
                                    source="the paper's range across tasks to agree; " + _HETEROGENEOUS_SOURCE
                                           + " beyond it, partly"))
        rows.append(verdict.row(
            "§4.1 Fig. 2", f"{t}: Heterogeneous share", paper=f"{het:.0%}" if t in own else f"{low:.0%} to {high:.0%}",
            paper_value=het, ours=s["Heterogeneous"], rule=verdict.NotComparable(reason) if reason else rule,
            note="fine-tuned model, CNN classes" + ("" if t in own else "; the paper's range across tasks")
                 + "; " + classifier_gap_words(s["Heterogeneous"].value, _share_of((rules or {}).get(t),
                                                                                   "Heterogeneous"))))
        rows.append(verdict.row(
            "§4.1 Fig. 2", f"{t}: Vertical share", paper="at least about 1/3", ours=s["Vertical"],
            rule=verdict.NotComparable(reason) if reason else VERTICAL_RULE,
            note="fine-tuned model, CNN classes; " + classifier_gap_words(
                s["Vertical"].value, _share_of((rules or {}).get(t), "Vertical"))))
    return rows


# ---------------------------------------------------------------------------------------------
# §4.2 FrameNet
# ---------------------------------------------------------------------------------------------
def framenet_comparisons(n_kept: int, n_above: int, n_heads_total: int, top: Estimate | None = None,
                         top_label: str = "", lift: Estimate | None = None) -> list[Comparison]:
    """Rows for §4.2 from :func:`attnbook.studies.kovaleva.framenet.frame_heads` /
    :func:`~attnbook.studies.kovaleva.framenet.top_head_estimates`.

    * the top head's mean score (interval over instances) against the paper's 0.209 (:data:`FRAME_RULE`);
    * the top head's score on frame elements minus its score on ordinary words as far from the target, paired
      over instances: the paper's frame-semantic heads link frame elements, so the difference should be positive
      (:data:`GAIN_POSITIVE`'s rule with the unit of attention weights).

    Two set-up numbers have no row (issue 32: they are settings, not findings, and were counted as "not comparable"):
    the instances the filter keeps (``n_kept``; the paper's 473 are FrameNet's lexical-unit examples, this book's the
    full-text documents) and the heads above the 99th percentile (``n_above`` of ``n_heads_total``: with one mean
    per head, one or two heads lie above it whatever the data, for the paper as here). Both are in the results
    file (:func:`attnbook.studies.kovaleva.framenet.framenet_numbers`) and in the chapter's text.
    """
    rows: list[Comparison] = []
    if top is None:
        rows.append(not_run_row("§4.2 FrameNet", "top head's mean max-attention on a frame link",
                                PAPER["framenet_top"][0], "no instance was scored"))
        return rows
    rows.append(verdict.row("§4.2 FrameNet", "top head's mean max-attention on a frame link",
                            paper=PAPER["framenet_top"][0], ours=top, rule=FRAME_RULE,
                            note=f"head {top_label}, chosen on the same {n_kept} instances (biased upwards); "
                                 f"{n_above} of {n_heads_total} heads lie above the 99th percentile (the paper: 2 of "
                                 "144; by construction, not a finding)"))
    if lift is not None:
        rows.append(verdict.row(
            "§4.2 FrameNet", "top head: frame elements minus equally distant other words",
            paper="> 0 (frame-semantic heads; no control in the paper)", ours=lift,
            rule=verdict.Beyond(0.0, above=True, what="difference of attention weights"),
            note=f"head {top_label}; paired over the instances that have such words"))
    return rows


# ---------------------------------------------------------------------------------------------
# §4.3 what fine-tuning changes
# ---------------------------------------------------------------------------------------------
def change_comparisons(changes: Mapping[str, Mapping[str, np.ndarray]], learned: Mapping[str, str] | None = None
                       ) -> list[Comparison]:
    """Rows for §4.3 / Fig. 5 per task, from ``changes[task]`` = ``{"change": [layer], "resampled": [resample,
    layer], "n": inputs}`` (:func:`attnbook.studies.kovaleva.features.layer_change_estimates`): ``1 - mean cosine``
    of each layer and its bootstrap resamples over the inputs. "The last two layers" are bert-base's 11-12 placed
    at relative depth (:func:`last_layers`: layer 6 of a 6-layer model, so there the two rows are one).

    * the most changed layers are the last two (as many as :func:`last_layers` gives; the paper: on every task but
      QQP, where it does not hold), when they are more than one;
    * the most changed layer is one of the last two;

    each judged by :class:`~attnbook.verdict.Holds` on the share of resamples in which it holds. A task whose
    fine-tuned classifier learned nothing is ``not comparable``.
    """
    rows = []
    for t, c in changes.items():
        change = np.asarray(c["change"])
        n_layers = change.shape[0]
        last = last_layers(n_layers)
        k = len(last)
        res = np.asarray(c["resampled"])
        top = np.argsort(-res, axis=1, kind="stable")[:, :k]
        both = np.array([set(r.tolist()) == last for r in top])
        first = np.isin(top[:, 0], sorted(last))
        except_ = t in PAPER["changed_last_two_except"]
        reason = (learned or {}).get(t, "")
        order = np.argsort(-change, kind="stable")
        where = "-".join(str(i + 1) for i in sorted(last)) if k > 1 else str(min(last) + 1)
        paper = "not on QQP" if except_ else "yes (every task but QQP)"
        claims = [(f"{t}: most changed layer is one of the last two", ~first if except_ else first,
                   "the most changed layer is " + ("not " if except_ else "") + "at the depth of bert-base's last two",
                   f"layer {order[0] + 1}")]
        if k > 1:
            shown = "+".join(str(i + 1) for i in sorted(order[:k].tolist()))
            claims.insert(0, (f"{t}: two most changed layers are the last two", ~both if except_ else both,
                              "the two most changed layers are " + ("not " if except_ else "") + "the last two",
                              f"layers {shown}"))
        for q, claim, words, shown in claims:
            rule = verdict.NotComparable(reason) if reason else verdict.Holds(words)
            est = holds_estimate(claim, int(c["n"]), "inputs")
            rows.append(verdict.row("§4.3 Fig. 5", q, paper=paper, ours=f"{shown} ({est.value:.0%} of resamples)",
                                    estimate=est, rule=rule,
                                    note=f"1-based layers; bert-base's last two (11-12 of 12) at relative depth: "
                                         f"layer{'s' if k > 1 else ''} {where} of {n_layers} here"))
    return rows


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


def feature_claims(ft: Mapping[str, np.ndarray], pre: Mapping[str, np.ndarray], task: str) -> dict[str, np.ndarray]:
    """The claims of §4.4-4.5 in every resample, from resampled statistics ``ft[key][resample, ...]`` and
    ``pre[key][resample, ...]`` of the fine-tuned and the pre-trained model (the same draws of inputs; see
    :func:`attnbook.studies.kovaleva.features.resampled_statistics`). Each value is a bool per resample:

    * ``dominate``: each special token dominates the linguistic features, as §4.4 states it ("the attention weights of
      such tokens were negligible compared to [CLS] and [SEP]"): the largest head value ``[CLS]`` received and the
      largest ``[SEP]`` received are *each* at least twice the largest of any linguistic feature; ``dominate/[CLS]``
      and ``dominate/[SEP]`` are the two halves, so a row can say which one holds;
    * ``order``: the layer where ``[CLS]`` gets most (mean over heads) comes before the one of ``[SEP]``;
    * ``small_gain``: the largest increase under fine-tuning of any linguistic feature is below half the special
      tokens' largest value;
    * ``cls_top``: the last layer's ``[CLS]`` attends most to what the paper found for the task (Fig. 7);
    * ``diagonal``: the best verb-to-subject head is in the top quarter of heads by prev+next attention.
    """
    def peak(r, names):
        vals = [np.nanmax(r[f"received/{n}"].reshape(len(r[f"received/{n}"]), -1), axis=1)
                for n in names if f"received/{n}" in r]
        return np.nanmax(np.stack(vals), axis=0) if vals else None

    out: dict[str, np.ndarray] = {}
    special, ling = peak(ft, ("[CLS]", "[SEP]")), peak(ft, LINGUISTIC)
    each = {n: peak(ft, (n,)) for n in ("[CLS]", "[SEP]")}
    if ling is not None and all(v is not None for v in each.values()):
        for n, v in each.items():
            out[f"dominate/{n}"] = v >= 2 * ling
        out["dominate"] = out["dominate/[CLS]"] & out["dominate/[SEP]"]
    if "received/[CLS]" in ft and "received/[SEP]" in ft:
        out["order"] = (np.nanmean(ft["received/[CLS]"], axis=2).argmax(1)
                        < np.nanmean(ft["received/[SEP]"], axis=2).argmax(1))
    inc = [np.nanmax((ft[f"received/{n}"] - pre[f"received/{n}"]).reshape(len(ft[f"received/{n}"]), -1), axis=1)
           for n in LINGUISTIC if f"received/{n}" in ft and f"received/{n}" in pre]
    if inc and special is not None:
        out["small_gain"] = np.nanmax(np.stack(inc), axis=0) < 0.5 * special
    if task in PAPER["cls_top"]:
        names = [f for f in CLS_FEATURES if f"cls/{f}" in ft]
        if names:
            means = np.stack([np.nanmean(ft[f"cls/{f}"], axis=1) for f in names], axis=1)
            means = np.where(np.isnan(means), -np.inf, means)
            out["cls_top"] = np.array([names[i] == PAPER["cls_top"][task] for i in means.argmax(1)])
    if "pair/verb_subject" in ft:
        pair = ft["pair/verb_subject"].reshape(len(ft["pair/verb_subject"]), -1)
        local = (ft["prev"] + ft["next"]).reshape(len(pair), -1)
        ok = ~np.all(np.isnan(pair), axis=1)
        best = np.where(ok[:, None], np.nan_to_num(pair, nan=-np.inf), 0).argmax(1)
        q75 = np.quantile(local, 0.75, axis=1)
        out["diagonal"] = ok & (local[np.arange(len(local)), best] > q75)
    return out


#: §4.4-4.5: the quantity, the paper's finding and the claim of each key of :func:`feature_claims`
FEATURE_ROWS: dict[str, tuple[str, str, str, str]] = {
    "dominate": ("§4.4 Fig. 6", "[CLS] and [SEP] each dominate linguistic features",
                 "linguistic features negligible compared to [CLS] and [SEP]",
                 "[CLS]'s largest head value and [SEP]'s are each at least twice any linguistic feature's"),
    "order": ("§4.4 Fig. 6", "[CLS] peaks in an earlier layer than [SEP]", "every task",
              "the layer where [CLS] gets most comes before [SEP]'s"),
    "small_gain": ("§4.4", "fine-tuning gains of linguistic features are small", "small, on some tasks",
                   "the largest gain of a linguistic feature is below half the special tokens' peak"),
    "cls_top": ("§4.5 Fig. 7", "last-layer [CLS] attends most to the paper's feature", "see the note",
                "the last layer's [CLS] attends most to the paper's feature"),
    "diagonal": ("§4.5", "best verb->subject head is a previous/next-word head",
                 "candidates coincide with diagonal heads",
                 "the best verb->subject head is in the top quarter of heads by prev+next attention"),
}


def feature_comparisons(claims: Mapping[str, Mapping[str, np.ndarray]], point: Mapping[str, Mapping[str, bool]],
                        n_inputs: Mapping[str, int], learned: Mapping[str, str] | None = None) -> list[Comparison]:
    """Rows for §4.4 (Fig. 6) and §4.5 (Fig. 7) per task: ``claims[task][key]`` from :func:`feature_claims` (one
    bool per bootstrap resample of the task's inputs), ``point[task][key]`` whether the claim holds on all inputs,
    judged by :class:`~attnbook.verdict.Holds`. A claim made of parts (``dominate``: ``point[task]["dominate/[CLS]"]``
    and ``["dominate/[SEP]"]``) shows which part holds. A task whose fine-tuned classifier learned nothing is
    ``not comparable``; a claim the data cannot make (no verb-subject pair) is left out."""
    rows = []
    for key, (exp, quantity, paper, words) in FEATURE_ROWS.items():
        for t, c in claims.items():
            if key not in c:
                continue
            reason = (learned or {}).get(t, "")
            est = holds_estimate(c[key], n_inputs[t], "inputs")
            p = f"{PAPER['cls_top'][t]}" if key == "cls_top" else paper
            shown = f"{'yes' if point[t].get(key) else 'no'} ({est.value:.0%} of resamples)"
            parts = [f"{n} {'yes' if point[t][f'{key}/{n}'] else 'no'}" for n in ("[CLS]", "[SEP]")
                     if f"{key}/{n}" in point[t]]
            if parts:
                shown = shown.replace(" (", ": " + ", ".join(parts) + " (", 1)
            rows.append(verdict.row(exp, f"{t}: {quantity}", paper=p, ours=shown, estimate=est,
                                    rule=verdict.NotComparable(reason) if reason else verdict.Holds(words),
                                    note="fine-tuned model; bootstrap over inputs"))
    return rows


def feature_rows(finetuned: Mapping[str, Mapping[str, np.ndarray]], pretrained: Mapping[str, Mapping[str, np.ndarray]],
                 learned: Mapping[str, str] | None = None, *, n_resamples: int = 2000,
                 seed: int = 0) -> list[Comparison]:
    """:func:`feature_comparisons` from :func:`attnbook.studies.kovaleva.features.feature_statistics` results per
    task: the claims are checked on all inputs and in every bootstrap resample of them (the fine-tuned and the
    pre-trained model on the same draws, :func:`attnbook.studies.kovaleva.features.resampled_statistics`)."""
    claims, point, n = {}, {}, {}
    for t in finetuned:
        ft = resampled_statistics(finetuned[t], n_resamples=n_resamples, seed=seed)
        pre = resampled_statistics(pretrained[t], n_resamples=n_resamples, seed=seed)
        claims[t] = feature_claims(ft, pre, t)
        whole = lambda r: {k: np.asarray(v, dtype=np.float64)[None] for k, v in r.items()  # noqa: E731
                           if k.startswith(("received/", "cls/", "pair/")) or k in ("prev", "next")}
        point[t] = {k: bool(v[0]) for k, v in feature_claims(whole(finetuned[t]), whole(pretrained[t]), t).items()}
        n[t] = int(finetuned[t]["n_examples"])
    return feature_comparisons(claims, point, n, learned)
