"""Clark et al. (2019), "What does BERT look at?": the paper's numbers, and "paper vs this run".

Every number of the paper the book compares with lives here, cited by section or table, and
every comparison row of chapters 1-3 is made here, its verdict computed from the numbers by
:mod:`attnbook.verdict` (the one rule; each function's docstring states which rule and why):

* §3 surface patterns: :data:`SURFACE`, :func:`surface_comparison`, :func:`surface_findings`;
* §4.1 word-level maps: :data:`SPLIT_WORD_SHARE`;
* §4.2 heads as parsers: :data:`TABLE1`, :func:`table1`, :func:`syntax_comparison`;
* §4.3 coreference: :data:`TABLE2`, :data:`COREF_HEAD`, :func:`table2`, :func:`coref_comparison`;
* §5 probing classifiers: :data:`TABLE3`, :data:`TABLE3_FINDINGS`, :func:`table3`, :func:`probe_comparison`;
* §6 clustering: :func:`clustering_comparison`, :func:`agreement_markdown`.

Tables set the paper's columns beside this run's (:class:`Report`: the table shown, the key
numbers the chapter records and a line of text). Nothing here measures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from attnbook import verdict
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.stats import Estimate, GroupTest, percentile_interval, resampled_ratio
from attnbook.studies.clark import coref, probes, syntax
from attnbook.studies.clark.clusters import Clustering
from attnbook.studies.clark.embedding import MDSResult
from attnbook.studies.clark.gradients import AttentionGradientStats
from attnbook.studies.clark.surface import STAT_NAMES, layer_means, positional_heads, sink_token


@dataclass
class Report:
    """What a chapter cell shows and records: ``table`` (to display), ``numbers`` (key -> value for the
    results file) and ``text`` (a line about the data)."""

    table: Any
    numbers: dict = field(default_factory=dict)
    text: str = ""


# =============================================================================================
# §3 surface patterns (chapter 1)
# =============================================================================================

#: Clark et al. §3 numbers for bert-base (12 layers x 12 heads), 1-based layers.
SURFACE = {
    "prev_heads_layers": [2, 4, 7, 8],  # §3.1: heads with > 50% attention to the previous token
    "next_heads_layers": [1, 2, 2, 3, 6],  # §3.1: ... to the next token
    "sep_majority_layers": [6, 7, 8, 9, 10],  # §3.2: layers where over half of the attention goes to [SEP]
    "sep_sep_share": 0.9,  # §3.2: from [SEP], over 90% of the attention stays on [SEP]
    "cls_entropy_last_layer": 3.89,  # §3.3: mean entropy from [CLS] in the last layer (nats)
    "grad_sep_small_from_layer": 5,  # §3.2, Fig. 3: gradients to [SEP] become small from layer 5 on
    "n_layers": 12,
}


#: bootstrap resamples behind every interval of chapters 1-2 (percentile intervals, seeded with the chapter's seed)
N_RESAMPLES = 2000

#: the book's reading of "close to uniform" (§3.3): a head's entropy at least this share of uniform attention's
BROAD_SHARE = 0.75


def relative_layers(paper_layers: Sequence[int], n_layers: int, paper_n_layers: int = SURFACE["n_layers"]) -> list[int]:
    """The layers (1-based, sorted, distinct) of an ``n_layers`` model at the relative depth of the paper's
    ``paper_layers`` of bert-base: layer ``l`` of 12 is layer ``ceil(l * n_layers / 12)`` here (the identity
    for a 12-layer model; two bert-base layers share one layer of a 6-layer model)."""
    return sorted({max(1, math.ceil(l * n_layers / paper_n_layers - 1e-9)) for l in paper_layers})


def _interval(value: float, resampled: np.ndarray, n: int, unit: str) -> Estimate:
    """:class:`~attnbook.stats.Estimate` of ``value`` with the percentile interval of its bootstrap ``resampled``.

    Resamples in which the statistic is undefined (e.g. a relation without edges in a small sample) are left out;
    without any defined resample, or with ``value`` undefined, there is no interval."""
    r = np.asarray(resampled, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if not r.size or not math.isfinite(float(value)):
        return Estimate(float(value), None, None, int(n), unit)
    lo, hi = percentile_interval(r)
    return Estimate(float(value), float(lo), float(hi), int(n), unit)


def _share(holds: np.ndarray, n: int, unit: str) -> Estimate:
    """Share of bootstrap resamples in which a claim holds (for :class:`attnbook.verdict.Holds`)."""
    return Estimate(float(np.mean(holds)), None, None, int(n), unit)


def _layers_text(layers: Sequence[int]) -> str:
    return ", ".join(map(str, layers)) or "none"


def resampled_surface(stats: dict[str, np.ndarray], n_resamples: int = N_RESAMPLES, seed: int = 0) -> dict:
    """Every §3 statistic recomputed in ``n_resamples`` bootstrap resamples of the segments (the same draws for
    all, so claims that combine statistics are checked resample by resample).

    ``stats`` is :func:`attnbook.studies.clark.surface.surface_statistics`' result (it keeps the per-segment
    values). Returns ``name -> values[resample, layer, head]`` for :data:`~attnbook.studies.clark.surface.STAT_NAMES`,
    ``uniform_entropy[resample]`` and ``n_segments``.
    """
    per = np.asarray(stats["per_segment"], dtype=np.float64)  # [segment, stat, layer, head]
    n_seg, n_stat, n_layers, n_heads = per.shape
    flat = np.concatenate([per.reshape(n_seg, -1), np.asarray(stats["per_segment_uniform_entropy"])[:, None]], 1)
    r = resampled_ratio(flat, n_resamples=n_resamples, seed=seed)
    cube = r[:, :-1].reshape(-1, n_stat, n_layers, n_heads)
    out = {name: cube[:, k] for k, name in enumerate(STAT_NAMES)}
    out["uniform_entropy"] = r[:, -1]
    out["n_segments"] = n_seg
    return out


def _gradient_row(stats, grads, means, sink: str, mlm, n_resamples: int, seed: int) -> dict:
    """The §3.2 gradient row (see :func:`surface_comparison`)."""
    name = "[SEP]" if sink == "sep" else "[CLS]"
    quantity = (f"|dL/d attn| to {name} / to other tokens: mean over the layers with the most {name} attention "
                "minus the rest")
    paper_text = f"small where [SEP] attention is high (layer {SURFACE['grad_sep_small_from_layer']} on)"
    note = "no-op hypothesis tested on the model's own sink token " + name + (
        "" if sink == "sep" else " (the paper tested [SEP])")
    if mlm is not None and not mlm.better_than_constant:
        return verdict.row(
            "§3.2 gradients", quantity, paper=paper_text, ours="MLM head no better than a constant",
            estimate=Estimate(float("nan")), rule=verdict.NotComparable(
                "the MLM head behind the gradients predicts masked pieces no better than always predicting the "
                "most frequent one"), note=mlm.text())
    heavy = means[sink] >= np.median(means[sink])
    if heavy.all():
        return verdict.row("§3.2 gradients", quantity, paper=paper_text, ours="every layer attends alike",
                           estimate=Estimate(float("nan")),
                           rule=verdict.NotComparable(f"no layer gives {name} less attention than the others"),
                           note=note)
    cats = list(AttentionGradientStats.CATEGORIES)
    per = np.asarray(grads["per_segment"], dtype=np.float64)  # [segment, category, layer, head]
    n_seg = per.shape[0]
    layer_means_of = per[:, [cats.index(sink), cats.index("other")]].mean(-1)  # [segment, 2, layer]
    r = resampled_ratio(layer_means_of.reshape(n_seg, -1), n_resamples=n_resamples, seed=seed + 1)
    r = r.reshape(-1, 2, layer_means_of.shape[-1])

    def contrast(sink_by_layer: np.ndarray, other_by_layer: np.ndarray) -> np.ndarray:
        ratio = sink_by_layer / other_by_layer
        return ratio[..., heavy].mean(-1) - ratio[..., ~heavy].mean(-1)

    full = layer_means_of.mean(0)
    ratio = full[0] / full[1]
    est = _interval(float(contrast(full[0], full[1])), contrast(r[:, 0], r[:, 1]), n_seg, "segments")
    return verdict.row(
        "§3.2 gradients", quantity, paper=paper_text,
        ours=f"{ratio[heavy].mean():.2f} vs {ratio[~heavy].mean():.2f}: {est.text('.2f')}", estimate=est,
        rule=verdict.Beyond(0.0, above=False, what=f"gradient ratio, {name}-heavy minus other layers"),
        note=note + f"; {name}-heavy layers (at least the median): {_layers_text(list(np.flatnonzero(heavy) + 1))}")


def surface_comparison(stats: dict[str, np.ndarray], grads: dict[str, np.ndarray] | None = None, *, mlm=None,
                       n_resamples: int = N_RESAMPLES, seed: int = 0) -> list[dict]:
    """Rows of "paper vs this run" for Clark §3 (:func:`attnbook.verdict.row`), every sample estimate with a
    bootstrap interval over segments (:func:`resampled_surface`; the gradients over their own segments).

    ``stats`` is :func:`attnbook.studies.clark.surface.surface_statistics`' result, ``grads``
    :func:`attnbook.studies.clark.gradients.cached_attention_gradients`', ``mlm`` the
    :class:`~attnbook.studies.clark.gradients.MLMQuality` of the head behind the gradients. Layers are compared at
    relative depth (:func:`relative_layers`). The rules:

    * §3.1 previous / next token: the layers with a head putting more than half of its attention there must be the
      paper's layers at relative depth, in the bootstrap resamples (:class:`~attnbook.verdict.Holds`);
    * §3.2 the order of the layers where attention to [CLS], [SEP] and ". or ," peaks (Holds); the layers where
      over half of the attention goes to [SEP] must be the paper's 6-10 at relative depth (Holds); [SEP], not
      [CLS], gets the most attention (Holds); from [SEP], over 90% stays on [SEP] in the heads that attend mostly
      to [SEP] (:class:`~attnbook.verdict.Beyond`); gradients to the model's sink token, relative to other tokens,
      are smaller in the layers that attend to it most (Beyond 0; not comparable when the MLM head is no better
      than a constant predictor);
    * §3.3 the broadest layer-1 head is close to uniform (Beyond :data:`BROAD_SHARE`); the mean entropy from [CLS]
      in the last layer is the paper's 3.89 nats (:class:`~attnbook.verdict.Within`, 10% / 25%).
    """
    n_layers, n_heads = stats["sep"].shape
    boot = resampled_surface(stats, n_resamples, seed)
    n_seg, unit = boot["n_segments"], "segments"
    resamples = f"{n_resamples} resamples of {n_seg} segments"
    rows: list[dict] = []
    pos = positional_heads(stats)
    for kind, key, heads in (("previous", "prev", pos.previous), ("next", "next", pos.next)):
        paper_layers = SURFACE[f"{key}_heads_layers"]
        expected = relative_layers(paper_layers, n_layers)
        ours_layers = sorted({l + 1 for l, _ in heads})
        passing = boot[key] > 0.5  # [resample, layer, head]
        layer_sets = passing.any(-1)  # [resample, layer]
        target = np.zeros(n_layers, dtype=bool)
        target[[l - 1 for l in expected]] = True
        holds = (layer_sets == target).all(-1)
        count = passing.sum((1, 2))
        lo, hi = percentile_interval(count)
        rows.append(verdict.row(
            "§3.1 relative position", f"layers with a head putting >50% of its attention on the {kind} token",
            paper=(f"{len(paper_layers)} of 144 heads, layers {_layers_text(paper_layers)} of 12"
                   + ("" if n_layers == 12 else f" (here: layers {_layers_text(expected)} of {n_layers})")),
            ours=f"{len(heads)} of {n_layers * n_heads} heads [{lo:.0f}, {hi:.0f}], layers {_layers_text(ours_layers)}",
            estimate=_share(holds, n_seg, unit),
            rule=verdict.Holds("the same layers as the paper's at relative depth have such a head"),
            note=f"share of {resamples} with exactly the paper's layers: {holds.mean():.1%}",
        ))
    means = {k: layer_means(stats[k]) for k in ("cls", "sep", "punct")}
    boot_means = {k: boot[k].mean(-1) for k in ("cls", "sep", "punct")}  # [resample, layer]
    peak = {k: int(np.argmax(v)) + 1 for k, v in means.items()}
    bpeak = {k: v.argmax(-1) for k, v in boot_means.items()}
    order = (bpeak["cls"] <= bpeak["sep"]) & (bpeak["sep"] <= bpeak["punct"]) & (bpeak["cls"] < bpeak["punct"])
    rows.append(verdict.row(
        "§3.2 special tokens", "layer where mean attention peaks: [CLS] / [SEP] / . or ,",
        paper="early / middle / deep", ours=f"{peak['cls']} / {peak['sep']} / {peak['punct']} of {n_layers}",
        estimate=_share(order, n_seg, unit),
        rule=verdict.Holds("the peaks come in the order [CLS] <= [SEP] <= . or , (and [CLS] before . or ,)"),
        note=f"share of {resamples} with the paper's order: {order.mean():.1%}",
    ))
    majority = SURFACE["sep_majority_layers"]
    expected = relative_layers(majority, n_layers)
    target = np.zeros(n_layers, dtype=bool)
    target[[l - 1 for l in expected]] = True
    sep_layers = [i + 1 for i, v in enumerate(means["sep"]) if v > 0.5]
    holds = ((boot_means["sep"] > 0.5) == target).all(-1)
    sep_max = _interval(float(means["sep"].max()), boot_means["sep"].max(-1), n_seg, unit)
    rows.append(verdict.row(
        "§3.2 special tokens", "layers where over half of the attention goes to [SEP]",
        paper=(f"{min(majority)}-{max(majority)} of {SURFACE['n_layers']}"
               + ("" if n_layers == 12 else f" (here: layers {_layers_text(expected)} of {n_layers})")),
        ours=(f"{_layers_text(sep_layers)} of {n_layers}; largest layer mean {sep_max.text('.2f')} "
              f"(layer {peak['sep']})"),
        estimate=_share(holds, n_seg, unit),
        rule=verdict.Holds("exactly the paper's layers at relative depth give [SEP] over half of their attention"),
        note=f"mean over the layer's heads; share of {resamples} with exactly the paper's layers: {holds.mean():.1%}",
    ))
    sink = sink_token(stats)
    sep_more = boot["sep"].mean((1, 2)) > boot["cls"].mean((1, 2))
    rows.append(verdict.row(
        "§3.2 special tokens", "the special token that gets the most attention (mean over all heads)",
        paper="[SEP] (a no-op target)",
        ours=(f"{'[SEP]' if sink == 'sep' else '[CLS]'}: [SEP] {stats['sep'].mean():.2f}, "
              f"[CLS] {stats['cls'].mean():.2f}; largest layer mean of [CLS] {means['cls'].max():.2f}"),
        estimate=_share(sep_more, n_seg, unit), rule=verdict.Holds("[SEP] gets more attention than [CLS]"),
        note=f"share of {resamples} where [SEP] gets more: {sep_more.mean():.1%}",
    ))
    sep_heads = stats["sep"] > 0.5
    if sep_heads.any():
        share = float(stats["sep_sep"][sep_heads].mean())
        est = _interval(share, boot["sep_sep"][:, sep_heads].mean(-1), n_seg, unit)
        rows.append(verdict.row(
            "§3.2 special tokens", "[SEP]->[SEP] share in heads that attend mostly to [SEP]",
            paper=f"> {SURFACE['sep_sep_share']:.2f}", ours=est, fmt=".3f",
            rule=verdict.Beyond(SURFACE["sep_sep_share"], what="[SEP]->[SEP] share"),
            note=f"attention from [SEP] stays on the [SEP] tokens; {int(sep_heads.sum())} heads (chosen on all "
                 "segments)",
        ))
    else:
        rows.append(verdict.row(
            "§3.2 special tokens", "[SEP]->[SEP] share in heads that attend mostly to [SEP]",
            paper=f"> {SURFACE['sep_sep_share']:.2f}", ours="no such head", estimate=Estimate(float("nan")),
            rule=verdict.NotComparable("no head here gives [SEP] more than half of its attention"),
        ))
    if grads is not None:
        rows.append(_gradient_row(stats, grads, means, sink, mlm, n_resamples, seed))
    uniform = float(stats["uniform_entropy"])
    first = stats["entropy"][0]
    broad = _interval(float(first.max()) / uniform, boot["entropy"][:, 0].max(-1) / boot["uniform_entropy"],
                      n_seg, unit)
    rows.append(verdict.row(
        "§3.3 entropy", "highest head entropy in layer 1 / uniform entropy",
        paper="close to uniform (broad heads in lower layers)", ours=broad, fmt=".2f",
        rule=verdict.Beyond(BROAD_SHARE, what="entropy / uniform entropy"),
        note=f"bag-of-vectors heads; {first.max():.2f} of {uniform:.2f} nats",
    ))
    last_cls = _interval(float(stats["entropy_cls"][-1].mean()), boot["entropy_cls"][:, -1].mean(-1), n_seg, unit)
    rows.append(verdict.row(
        "§3.3 entropy", "mean entropy from [CLS] in the last layer (nats)",
        paper=SURFACE["cls_entropy_last_layer"], ours=last_cls, fmt=".3f",
        rule=verdict.Within(0.1, 0.25, relative=True),
        note=f"broad attention from [CLS] in the last layer; uniform attention here: {uniform:.2f} nats",
    ))
    return rows


def mlm_head_rows(mlm) -> list[dict]:
    """The row naming the MLM head behind the §3.2 gradients.

    ``mlm`` is an :class:`attnbook.studies.clark.gradients.MLMQuality`. The checkpoint's own head (bert-base ships
    one) is the paper's setting: the row checks that it predicts masked pieces better than the unigram baseline
    (:class:`~attnbook.verdict.Beyond`; a checkpoint whose own head cannot disagrees). A head fitted on a checkpoint
    without one is not the paper's (``not comparable``).
    """
    text = mlm.text()
    if mlm.source == "pretrained":
        return [verdict.row("§3.2 gradients", "MLM head behind the gradients: held-out top-1 accuracy",
                            paper="BERT's own pre-training head", ours=Estimate(mlm.accuracy, mlm.low, mlm.high),
                            rule=verdict.Beyond(mlm.constant_accuracy, what="the checkpoint's own head's accuracy"),
                            note=f"the checkpoint's own MLM head: {text}", fmt=".3f")]
    return [verdict.row("§3.2 gradients", "MLM head behind the gradients", paper="BERT's own pre-training head",
                        ours=f"fitted on the frozen encoder, {text}", estimate=Estimate(float("nan")),
                        rule=verdict.NotComparable("this checkpoint has no MLM head; the gradients use a head "
                                                   "fitted on it"))]


def mlm_markdown(mlm) -> str:
    """What the MLM head's measured accuracy allows one to conclude from the §3.2 gradients (Markdown), generated
    from the numbers. ``mlm`` is an :class:`attnbook.studies.clark.gradients.MLMQuality`."""
    if mlm.source == "pretrained":
        return (f"The gradients use the checkpoint's own MLM head ({mlm.text()}): the loss is the model's own "
                "pre-training loss, as in the paper.")
    fit = ""
    if mlm.curve:
        first = mlm.curve[0]
        best = min(mlm.curve, key=lambda c: c["loss"])
        stopped = mlm.steps > best["step"] and len(mlm.curve) > 1
        fit = (f"The head was fitted for {mlm.steps} updates and kept at update {mlm.best_step}, where its validation "
               f"loss was lowest ({best['loss']:.2f} nats, from {first['loss']:.2f} at the first evaluation)"
               + ("; the fit stopped when the loss no longer fell. " if stopped else
                  "; the loss was still falling when the budget of updates ran out, so more updates might help. "))
    ratio = mlm.accuracy / mlm.constant_accuracy if mlm.constant_accuracy > 0 else float("inf")
    if not mlm.better_than_constant:
        return fit + (f"On held-out text it predicts masked pieces no better than the unigram baseline ({mlm.text()}): "
                      "its loss barely depends on the input, so the gradients below carry no information about what the "
                      "encoder needs, and the gradient comparison is marked not comparable.")
    return fit + (
        f"On held-out text it beats the unigram baseline ({mlm.text()}; {ratio:.1f} times the baseline's accuracy), "
        "so its loss depends on the input and the gradients measure which attention weights *this fitted head's* "
        "predictions depend on. It remains far from a pre-trained MLM head (it predicts "
        f"{1 - mlm.accuracy:.0%} of the masked pieces wrongly), so the gradients say where a weak reader of the frozen "
        "encoder looks, not what the model's own pre-training loss needs: read the direction of the contrast below "
        "(is the gradient to the sink token smaller where the sink gets more attention?), not its size, and not as "
        "Clark et al.'s measurement on a model with its own MLM head.")


def _sink_sentence(rows: Sequence[dict], stats: dict[str, np.ndarray]) -> str:
    """What the gradient row says about a [CLS] sink, only what it supports."""
    means = {k: layer_means(stats[k]) for k in ("cls", "sep")}
    head = (f"The largest difference is the no-op target: this model sends up to {means['cls'].max():.0%} of a "
            f"layer's attention to [CLS] and at most {means['sep'].max():.0%} to [SEP], so the [SEP]-centred "
            "findings of §3.2 do not carry over.")
    grad = [r for r in rows if r["experiment"] == "§3.2 gradients" and r["quantity"] != "MLM head"]
    if not grad:
        return head + " Without the gradients, whether [CLS] plays the no-op role [SEP] plays in bert-base is open."
    outcome = grad[0]["verdict"]
    if outcome == verdict.AGREES:
        return head + (" The pattern behind them does: gradients to [CLS] are smaller, relative to other tokens, in "
                       "the layers that attend to it most, as the paper found for [SEP] (a fixed special token "
                       "absorbing attention a head does not need).")
    if outcome == verdict.DISAGREES:
        return head + (" Nor does the pattern behind them: gradients to [CLS] are not smaller in the layers that "
                       "attend to it most, so the no-op reading of the sink is not supported here.")
    if outcome == verdict.NOT_COMPARABLE:
        return head + (" The gradients cannot say whether [CLS] is a no-op target like bert-base's [SEP] ("
                       + grad[0]["rule"].removeprefix("not comparable: ") + ").")
    return head + (" Whether [CLS] is a no-op target like bert-base's [SEP] the gradients cannot tell here: the "
                   "interval of their contrast includes no difference.")


def surface_findings(rows: Sequence[dict], stats: dict[str, np.ndarray], model_name: str) -> str:
    """A paragraph, generated from the rows of :func:`surface_comparison` (and :func:`mlm_head_rows`), saying
    where this run agrees with Clark §3 and where not."""
    judged = [r for r in rows if r["verdict"] != verdict.NOT_COMPARABLE]
    agree = [r for r in judged if r["verdict"] == verdict.AGREES]
    parts = [f"**What this run shows.** On {model_name}, {len(agree)} of {len(judged)} judged findings agree with "
             "bert-base" + (": " + "; ".join(r["quantity"] for r in agree) if agree else "") + "."]
    if sink_token(stats) == "cls":
        parts.append(_sink_sentence(rows, stats))
    differ = [r for r in judged if r["verdict"] in (verdict.DISAGREES, verdict.PARTLY)]
    if differ:
        parts.append("Differences: " + "; ".join(f"{r['quantity']} ({r['verdict']}: paper {r['paper']}, here "
                                                f"{r['ours']})" for r in differ) + ".")
    open_ = [r for r in judged if r["verdict"] == verdict.INCONCLUSIVE]
    if open_:
        parts.append("The data cannot tell: " + "; ".join(f"{r['quantity']} (here {r['ours']})" for r in open_)
                     + ".")
    return " ".join(parts)


# =============================================================================================
# §4-5 heads as parsers, coreference, probes (chapter 2)
# =============================================================================================

#: Clark §4.1: the share of words split into several word pieces in their data ("about 8%")
SPLIT_WORD_SHARE = 0.08


def split_words_text(split) -> str:
    """How many evaluated words are split into pieces, beside the paper's share (``split``:
    :func:`attnbook.studies.clark.wordmaps.split_words`)."""
    return (f"{split.share:.1%} of the {split.n_words} words of the evaluated sentences are split into several "
            f"pieces (Clark et al.: about {SPLIT_WORD_SHARE:.0%} in their data)")


@dataclass(frozen=True)
class PaperRow:
    """One row of Clark et al. Table 1 (BERT-base, WSJ/SD): best head, its accuracy, baseline and offset."""

    head: str
    accuracy: float
    baseline: float
    offset: int


#: Clark et al. (2019), Table 1: relation -> best head (1-based), accuracy %, baseline %, best offset
TABLE1: dict[str, PaperRow] = {
    "All": PaperRow("7-6", 34.5, 26.3, 1),
    "prep": PaperRow("7-4", 66.7, 61.8, -1),
    "pobj": PaperRow("9-6", 76.3, 34.6, -2),
    "det": PaperRow("8-11", 94.3, 51.7, 1),
    "nn": PaperRow("4-10", 70.4, 70.2, 1),
    "nsubj": PaperRow("8-2", 58.5, 45.5, 1),
    "amod": PaperRow("4-10", 75.6, 68.3, 1),
    "dobj": PaperRow("8-10", 86.8, 40.0, -2),
    "advmod": PaperRow("7-6", 48.8, 40.2, 1),
    "aux": PaperRow("4-10", 81.1, 71.5, 1),
    "poss": PaperRow("7-6", 80.5, 47.7, 1),
    "auxpass": PaperRow("4-10", 82.5, 40.5, 1),
    "ccomp": PaperRow("8-1", 48.8, 12.4, -2),
    "mark": PaperRow("8-2", 50.7, 14.5, 2),
    "prt": PaperRow("6-7", 99.1, 91.4, -1),
}

#: a head "specialises" in a relation when it beats the best fixed offset by at least this many points
#: (the book's reading of Clark §4.2: "substantially outperforming the fixed-offset baseline")
SPECIALIST_MARGIN = 10.0

#: the one rule for every margin of chapter 2 (a head over a baseline, one probe over another; points): this run's
#: margin within 5 points of the paper's agrees, within 10 partly, the 95% interval deciding
MARGIN_RULE = verdict.Within(5.0, 10.0, unit="points")

#: claims over every relation of Table 1 (share of relations called as in the paper; the paper's share is 1)
SHARE_RULE = verdict.Within(0.2, 0.5, unit="(share of relations)")

#: the relations of Clark's Figure 5, in its order
FIGURE5_RELATIONS = ("pobj", "det", "dobj", "poss", "auxpass")

#: column names of Table 1 as the chapter shows it
_TABLE1_SHOWN = {"n": "edges", "head": "best head", "accuracy": "acc. %", "baseline_offset": "offset",
                 "baseline_accuracy": "baseline %", "paper_head": "paper head", "paper_accuracy": "paper acc. %",
                 "paper_baseline": "paper baseline %", "paper_offset": "paper offset"}


def table1_frame(acc: syntax.HeadAccuracy):
    """:func:`attnbook.studies.clark.syntax.table1` with the paper's head, accuracy, baseline and offset
    (BERT-base on WSJ/SD, :data:`TABLE1`) as ``paper_*`` columns."""
    df = syntax.table1(acc)
    rows = [TABLE1.get(rel) for rel in df["relation"]]
    df["paper_head"] = [p.head if p else None for p in rows]
    df["paper_accuracy"] = [p.accuracy if p else float("nan") for p in rows]
    df["paper_baseline"] = [p.baseline if p else float("nan") for p in rows]
    df["paper_offset"] = [p.offset if p else None for p in rows]
    return df


def table1(acc: syntax.HeadAccuracy, right_branching: float) -> Report:
    """Clark Table 1 beside this run's; ``right_branching`` is
    :func:`~attnbook.studies.clark.syntax.right_branching_uas`.

    Numbers: ``n_sentences_syntax``, ``right_branching_uas`` (percent), ``table1`` (the rows).
    """
    t1 = table1_frame(acc).drop(columns=["ud"])
    return Report(
        table=t1.rename(columns=_TABLE1_SHOWN),
        numbers={"n_sentences_syntax": acc.n_sentences, "right_branching_uas": 100 * right_branching,
                 "table1": t1.to_dict(orient="records")},
        text=(f"{acc.n_sentences} sentences, {int(acc.total[0])} scored words; right-branching UAS "
              f"{100 * right_branching:.1f}% (paper: {TABLE1['All'].baseline:.1f}%)"),
    )


def _needs(what: str, ok: bool) -> None:
    if not ok:
        raise ParameterError(f"the comparison bootstraps over {what}: give results that keep the per-unit counts "
                             "(rerun the measurement; a cache written by an older version lacks them)")


def syntax_comparison(acc: syntax.HeadAccuracy, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> list[dict]:
    """Rows of "paper vs this run" for Clark §4.2 (Table 1), each judged by a rule of :mod:`attnbook.verdict`
    on a bootstrap over sentences (one set of draws for every row: the intervals are paired).

    Every accuracy here is a ratio of sums over sentences (right edges / edges), so a resample of the sentences
    gives a resample of each. The best head and the best offset are chosen on all sentences and kept in every
    resample: an interval says how much that head's margin depends on the sentences, not how often another head
    would have won.

    * "All" and the Figure 5 relations: the best head's accuracy minus the best offset's (points), paired per
      sentence, against the paper's margin by :data:`MARGIN_RULE`;
    * the relations with a specialist head (margin >= :data:`SPECIALIST_MARGIN`): the share of Table 1 relations
      called the same way as in the paper, recomputed in every resample, :data:`SHARE_RULE` (the paper's share
      is 1 by definition);
    * direction: the share of relations whose best head in the paper's direction (dependent -> head for every
      relation but ``pobj``) beats the best head in the other direction, :data:`SHARE_RULE`.

    Relations without edges in ``acc`` are left out; ``acc`` must keep its per-sentence counts
    (:class:`~attnbook.studies.clark.syntax.HeadAccuracy.has_sentences`).
    """
    _needs("sentences", acc.has_sentences)
    rows: list[dict] = []
    have = [r for r in acc.relations if r in TABLE1 and acc.total[acc._rel(r)] > 0]
    rels = [r for r in have if r != "All"]
    n_sent, unit = int(acc.sentence_total.shape[0]), "sentences"
    tot = acc.sentence_total.astype(np.float64)
    num, den, best = [], [], {}
    for rel in have:  # columns 0..len(have)-1: best head minus best offset
        r = acc._rel(rel)
        layer, head, direction, a = acc.best(rel)
        off, b = acc.baseline(rel)
        d = syntax.DIRECTIONS.index(direction)
        num.append(acc.sentence_correct[:, r, layer, head, d].astype(np.float64)
                   - acc.sentence_baseline[:, r, acc.offsets.index(off)])
        den.append(tot[:, r])
        best[rel] = (head_label(layer, head), 100 * a, 100 * b, off, direction)
    expected = {r: ("head->dep" if r == "pobj" else "dep->head") for r in rels}
    dir_heads = {}
    for rel in rels:  # then: best head in the paper's direction minus the best head in the other
        r = acc._rel(rel)
        per_dir = []
        for d in (syntax.DIRECTIONS.index(expected[rel]), 1 - syntax.DIRECTIONS.index(expected[rel])):
            layer, head = np.unravel_index(int(np.argmax(acc.correct[r, :, :, d])), acc.correct.shape[1:3])
            per_dir.append(acc.sentence_correct[:, r, layer, head, d].astype(np.float64))
            dir_heads.setdefault(rel, []).append(head_label(int(layer), int(head)))
        num.append(per_dir[0] - per_dir[1])
        den.append(tot[:, r])
    num_a, den_a = np.stack(num, 1), np.stack(den, 1)
    point = 100 * num_a.sum(0) / den_a.sum(0)
    boot = 100 * resampled_ratio(num_a, den_a, n_resamples=n_resamples, seed=seed)
    margin = {rel: (point[k], boot[:, k]) for k, rel in enumerate(have)}
    direction = {rel: (point[len(have) + k], boot[:, len(have) + k]) for k, rel in enumerate(rels)}
    how = "head and offset chosen on all sentences; interval over sentences, paired"

    def margin_row(rel: str, quantity: str, note: str) -> dict:
        p = TABLE1[rel]
        label, a, b, off, _ = best[rel]
        est = _interval(margin[rel][0], margin[rel][1], n_sent, unit)
        return verdict.row(
            "§4.2 heads as parsers", quantity,
            paper=f"{p.accuracy:.1f} ({p.head}) vs {p.baseline:.1f}" + ("" if rel == "All" else f" ({p.offset:+d})"),
            ours=f"{a:.1f} ({label}) vs {b:.1f}" + ("" if rel == "All" else f" ({off:+d})")
                 + f"; margin {est.text('+.1f')}",
            estimate=est, paper_value=p.accuracy - p.baseline, rule=MARGIN_RULE,
            note=f"margin {p.accuracy - p.baseline:+.1f} in the paper; {how}" + note)

    if "All" in have:
        rows.append(margin_row("All", "best single head, every relation (UAS) minus right-branching (points)", ""))
    for rel in FIGURE5_RELATIONS:
        if rel in have:
            rows.append(margin_row(rel, f"{rel}: best head minus best fixed offset (points)",
                                   f"; UD {syntax.TABLE1_UD[rel]}"))
    if rels:
        paper_spec = np.array([TABLE1[r].accuracy - TABLE1[r].baseline >= SPECIALIST_MARGIN for r in rels])
        ours_m = np.array([margin[r][0] for r in rels])
        boot_m = np.stack([margin[r][1] for r in rels], 1)  # [resample, relation]
        same = (ours_m >= SPECIALIST_MARGIN) == paper_spec
        est = _interval(float(same.mean()), ((boot_m >= SPECIALIST_MARGIN) == paper_spec).mean(1), n_sent, unit)
        lo, hi = percentile_interval(boot_m)
        undecided = [r for k, r in enumerate(rels) if lo[k] < SPECIALIST_MARGIN <= hi[k]]
        differ = [r for k, r in enumerate(rels) if not same[k]]
        rows.append(verdict.row(
            "§4.2 heads as parsers",
            f"relations with a specialist head (>= {SPECIALIST_MARGIN:.0f} points over the best offset)",
            paper=f"{int(paper_spec.sum())} of {len(rels)}",
            ours=f"{int((ours_m >= SPECIALIST_MARGIN).sum())} of {len(rels)}; same call on {int(same.sum())} "
                 f"(share {est.text('.2f')})",
            estimate=est, paper_value=1.0, rule=SHARE_RULE,
            note=("differ: " + (", ".join(differ) or "none") + "; interval of the margin straddles "
                  f"{SPECIALIST_MARGIN:.0f}: " + (", ".join(undecided) or "none")),
        ))
        d_point = np.array([direction[r][0] for r in rels])
        d_boot = np.stack([direction[r][1] for r in rels], 1)
        match = d_point > 0
        est = _interval(float(match.mean()), (d_boot > 0).mean(1), n_sent, unit)
        dlo, dhi = percentile_interval(d_boot)
        rows.append(verdict.row(
            "§4.2 heads as parsers", "best head reads dependent -> head (pobj: head -> dependent)",
            paper=f"{len(rels)} of {len(rels)}", ours=f"{int(match.sum())} of {len(rels)} (share {est.text('.2f')})",
            estimate=est, paper_value=1.0, rule=SHARE_RULE,
            note="other direction here: " + (", ".join(r for k, r in enumerate(rels) if not match[k]) or "none")
                 + "; the data cannot tell: "
                 + (", ".join(r for k, r in enumerate(rels) if dlo[k] <= 0 <= dhi[k]) or "none"),
        ))
    return rows


#: Clark et al. (2019) Table 2: antecedent selection accuracy (%) on CoNLL-2012,
#: bert-base-uncased, documents truncated to 128 tokens. Neural coref (Wiseman et
#: al. 2015) is reported overall only, on full documents with its own mentions.
TABLE2: dict[str, dict[str, float | None]] = {
    "Nearest": {"all": 27, "pronoun": 29, "proper": 29, "nominal": 19},
    "Head-word match": {"all": 52, "pronoun": 47, "proper": 67, "nominal": 40},
    "Rule-based": {"all": 69, "pronoun": 70, "proper": 77, "nominal": 60},
    "Neural coref": {"all": 83, "pronoun": None, "proper": None, "nominal": None},
    "Head 5-4": {"all": 65, "pronoun": 64, "proper": 73, "nominal": 58},
}
#: the paper's best coreference head (1-based layer-head), Clark et al. §4.3 / Figure 5 (65.1%)
COREF_HEAD = "5-4"


def _table2_paper_value(system: str, column: str) -> float:
    row = f"Head {COREF_HEAD}" if system.startswith("Best head (") else system
    if row not in TABLE2:
        return float("nan")
    v = TABLE2[row][column]
    return float("nan") if v is None else float(v)


def table2_frame(heads: coref.CorefHeadAccuracy | None, base: dict[str, coref.SystemAccuracy]):
    """:func:`attnbook.studies.clark.coref.table2` with ``paper <column>`` columns from :data:`TABLE2`
    (the best-head row is compared with the paper's head :data:`COREF_HEAD`)."""
    df = coref.table2(heads, base)
    for c in coref.COLUMNS:
        df[f"paper {c}"] = [_table2_paper_value(r, c) for r in df.index]
    return df


def paper_table2():
    """:data:`TABLE2` as a DataFrame (rows = systems, columns = mention types, %)."""
    import pandas as pd

    df = pd.DataFrame.from_dict(TABLE2, orient="index", columns=list(coref.COLUMNS)).astype(float)
    df.index.name = "system"
    return df


def table2(docs: Sequence, wins: Sequence[coref.CorefWindow], heads: coref.CorefHeadAccuracy,
           base: dict[str, coref.SystemAccuracy]) -> Report:
    """Clark Table 2 beside this run's. Numbers: ``coref_counts`` (documents, windows, queries by type),
    ``table2`` (system -> column -> %)."""
    t2 = table2_frame(heads, base)
    return Report(
        table=t2,
        numbers={"coref_counts": {"documents": len(docs), "windows": len(wins), **coref.count_queries(wins)},
                 "table2": {k: {c: float(v) for c, v in row.items()} for k, row in t2.to_dict(orient="index").items()}},
        text=(f"{len(docs)} documents, {len(wins)} windows with a coreferent mention, "
              f"{heads.n['all']} mentions to resolve ({heads.n['pronoun']} pronouns)"),
    )


def coref_comparison(heads: coref.CorefHeadAccuracy, base: dict[str, coref.SystemAccuracy], *,
                     n_resamples: int = N_RESAMPLES, seed: int = 0) -> list[dict]:
    """Rows of "paper vs this run" for Clark §4.3 (Table 2), judged on a bootstrap over documents.

    Accuracies on GUM and CoNLL-2012 are not comparable as such (other texts, another mix of mention types), so
    the findings are compared as margins within each corpus, by :data:`MARGIN_RULE`: the best head over the
    head-word-match baseline (paper: "over 10 points") and against the rule-based system (paper: close, -4);
    the order of the three baselines and the mention type on which the head gains most over head-word match
    (paper: nominal) are checked in every resample (:class:`~attnbook.verdict.Holds`). The unit of the bootstrap
    is the document (mentions of one document are not independent; ``heads`` and every baseline must keep their
    per-document counts), with one set of draws for all rows (paired). The best head is the one best on all
    mentions, chosen on all documents and scored in every column, as in Table 2.
    """
    columns, kinds = coref.COLUMNS, coref.KINDS
    systems = ("nearest", "head_match", "rule_based")
    _needs("documents", heads.doc_correct is not None and all(base[k].doc_correct is not None for k in systems))
    if any(base[k].docs != heads.docs for k in systems):
        raise ParameterError("the heads and the baselines were scored on different documents")
    layer, head = heads.best("all")
    label = head_label(layer, head)
    ours = {c: 100 * float(heads.accuracy(c)[layer, head]) for c in columns}
    paper_head = TABLE2[f"Head {COREF_HEAD}"]
    paper_hm, paper_rb = TABLE2["Head-word match"], TABLE2["Rule-based"]
    hm = {c: 100 * base["head_match"].accuracy(c) for c in columns}
    rb = {c: 100 * base["rule_based"].accuracy(c) for c in columns}
    near = 100 * base["nearest"].accuracy("all")
    n_docs, unit = len(heads.docs), "documents"
    a = columns.index("all")
    head_docs = heads.doc_correct[:, :, layer, head].astype(np.float64)  # [doc, column]
    n_all = heads.doc_n[:, a].astype(np.float64)
    num = [head_docs[:, a] - base["head_match"].doc_correct[:, a], head_docs[:, a] - base["rule_based"].doc_correct[:, a]]
    den = [n_all, n_all]
    num += [base[k].doc_correct[:, a].astype(np.float64) for k in systems]
    den += [n_all] * 3
    num += [head_docs[:, columns.index(k)] - base["head_match"].doc_correct[:, columns.index(k)] for k in kinds]
    den += [heads.doc_n[:, columns.index(k)].astype(np.float64) for k in kinds]
    boot = 100 * resampled_ratio(np.stack(num, 1), np.stack(den, 1), n_resamples=n_resamples, seed=seed)
    how = f"best head chosen on all documents; interval over {n_docs} documents, paired"
    rows = [verdict.row(
        "§4.3 coreference", "best head, antecedent selection accuracy (all mentions)",
        paper=f"{paper_head['all']:.0f} ({COREF_HEAD})", ours=f"{ours['all']:.1f} ({label})",
        estimate=Estimate(ours["all"]),
        rule=verdict.NotComparable("CoNLL-2012 and GUM/OntoGUM are other texts with another mix of mentions"),
        note=f"{heads.n['pronoun']} of {heads.n['all']} queries here are pronouns",
    )]
    for k, (name, paper_base, ours_base, finding) in enumerate((
        ("head-word match", paper_hm, hm, "paper: over 10 points better"),
        ("rule-based", paper_rb, rb, "paper: close to the rule-based system"),
    )):
        est = _interval(ours["all"] - ours_base["all"], boot[:, k], n_docs, unit)
        rows.append(verdict.row(
            "§4.3 coreference", f"best head minus {name} (points, all mentions)",
            paper=round(paper_head["all"] - paper_base["all"], 1), ours=est, fmt="+.1f", rule=MARGIN_RULE,
            note=f"{finding}; {how}",
        ))
    order = (boot[:, 2] < boot[:, 3]) & (boot[:, 3] < boot[:, 4])
    rows.append(verdict.row(
        "§4.3 coreference", "baselines: nearest < head-word match < rule-based",
        paper=f"{TABLE2['Nearest']['all']:.0f} < {paper_hm['all']:.0f} < {paper_rb['all']:.0f}",
        ours=f"{near:.1f}, {hm['all']:.1f}, {rb['all']:.1f}", estimate=_share(order, n_docs, unit),
        rule=verdict.Holds("the baselines come in the paper's order"),
        note=f"share of {n_resamples} resamples of {n_docs} documents in the paper's order: {order.mean():.1%}",
    ))
    present = [k for k in kinds if heads.n[k] > 0]
    if present:
        paper_gain = {k: paper_head[k] - paper_hm[k] for k in kinds}
        ours_gain = {k: ours[k] - hm[k] for k in present}
        pk, ok = max(paper_gain, key=paper_gain.get), max(ours_gain, key=ours_gain.get)
        gains = boot[:, 5:]  # [resample, kind]
        gains = np.where(np.isnan(gains), -np.inf, gains)
        top = np.asarray(kinds)[gains.argmax(1)]
        holds = top == pk
        rows.append(verdict.row(
            "§4.3 coreference", "mention type where the head gains most over head-word match",
            paper=f"{pk} ({paper_gain[pk]:+.0f})", ours=f"{ok} ({ours_gain[ok]:+.1f})",
            estimate=_share(holds, n_docs, unit),
            rule=verdict.Holds(f"the head gains most on {pk} mentions"),
            note="gains here: " + ", ".join(f"{k} {ours_gain[k]:+.1f}" for k in present)
                 + f"; share of {n_resamples} resamples of {n_docs} documents with the most on {pk}: {holds.mean():.1%}",
        ))
    return rows


def baselines_markdown(heads: coref.CorefHeadAccuracy, base: dict[str, coref.SystemAccuracy]) -> str:
    """How the baselines score here beside the paper's Table 2 (Markdown), generated from the numbers."""
    names = ("nearest", "head_match", "rule_based")
    ours = [100 * base[k].accuracy("all") for k in names]
    theirs = [float(TABLE2[coref.BASELINE_NAMES[k]]["all"]) for k in names]
    higher = sum(o > t for o, t in zip(ours, theirs))
    level = ("higher than" if higher == len(names) else "lower than" if higher == 0 else "partly above, partly below")
    share = heads.n["pronoun"] / heads.n["all"] if heads.n["all"] else float("nan")
    return (f"On these documents the three baselines score {', '.join(f'{x:.1f}' for x in ours)} on all mentions, "
            f"{level} the paper's {', '.join(f'{x:.0f}' for x in theirs)} on CoNLL-2012; {share:.0%} of the "
            f"mentions resolved here are pronouns (paper's Table 2 columns by type: pronoun, proper, nominal).")


#: Clark et al. (2019) Table 3, UAS on the PTB/SD dev set (BERT-base), rows of
#: :data:`attnbook.studies.clark.probes.TABLE3_NAMES`
TABLE3: dict[str, float] = {
    "right_branching": 26.0,
    "distances_words": 58.0,
    "random_init_attn_words": 30.0,
    "attn": 61.0,
    "attn_words": 77.0,
}

#: Clark §5 findings read off Table 3 as margins (row A minus row B, UAS points), with the paper's wording
TABLE3_FINDINGS: tuple[tuple[str, str, str], ...] = (
    ("attn_words", "distances_words", "attention adds to words and distances"),
    ("attn_words", "random_init_attn_words", "pretraining, not the architecture, gives the maps their syntax"),
    ("attn_words", "attn", "word vectors help choose heads"),
    ("attn", "distances_words", "attention alone rivals words + distances"),
    ("random_init_attn_words", "right_branching", "random-init maps barely beat right-branching"),
)


def table3_frame(results: dict):
    """Clark Table 3 as a DataFrame: model, key, paper UAS, this run's UAS (percent)."""
    df = probes.table3(results)
    df.insert(2, "paper_uas", [TABLE3[k] for k in df["key"]])
    return df


def table3(results: dict) -> Report:
    """Clark Table 3 beside this run's (``results``: :func:`attnbook.studies.clark.probes.cached_run_probes`').

    Numbers: ``table3_uas`` (row -> UAS), ``probe_info`` (:func:`~attnbook.studies.clark.probes.probe_info`).
    """
    shown = table3_frame(results).drop(columns=["key"]).rename(columns={"paper_uas": "paper UAS", "uas": "UAS here"})
    return Report(table=shown, numbers={"table3_uas": results["uas"], "probe_info": probes.probe_info(results)},
                  text=probes.describe(results))


def probe_comparison(results: dict, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> list[dict]:
    """Rows of "paper vs this run" for Clark §5 (Table 3), judged on a bootstrap over dev sentences.

    Absolute UAS on UD EWT and on the PTB with Stanford Dependencies differ in corpus and annotation, so each
    finding is compared as a margin between two rows of Table 3 (:data:`TABLE3_FINDINGS`) by
    :data:`MARGIN_RULE`. Every probe is scored on the same dev sentences, so a margin's interval is a paired
    per-sentence bootstrap (one set of draws for all rows); the probes are trained once (one seed), so the
    interval leaves out the training's own randomness. Findings whose rows were not run are left out.
    ``results`` is :func:`~attnbook.studies.clark.probes.run_probes`' (or
    :func:`~attnbook.studies.clark.probes.cached_run_probes`') result, with ``per_sentence`` counts.
    """
    names = probes.TABLE3_NAMES
    ours = results["uas"]
    _needs("dev sentences", "per_sentence" in results)
    per = results["per_sentence"]
    found = [(a, b, f) for a, b, f in TABLE3_FINDINGS if a in ours and b in ours]
    if not found:
        return []
    scored = np.asarray(per["scored"], dtype=np.float64)
    num = np.stack([np.asarray(per[a], np.float64) - np.asarray(per[b], np.float64) for a, b, _ in found], 1)
    boot = 100 * resampled_ratio(num, np.repeat(scored[:, None], len(found), 1), n_resamples=n_resamples, seed=seed)
    rows = []
    for k, (a, b, finding) in enumerate(found):
        est = _interval(ours[a] - ours[b], boot[:, k], len(scored), "sentences")
        rows.append(verdict.row(
            "§5 probing classifiers", f"{names[a]} minus {names[b]} (UAS points)",
            paper=round(TABLE3[a] - TABLE3[b], 1), ours=est, fmt="+.1f", rule=MARGIN_RULE,
            note=f"{finding}; UAS {TABLE3[a]:.0f} vs {TABLE3[b]:.0f} in the paper, {ours[a]:.1f} vs {ours[b]:.1f} "
                 "here; interval over dev sentences (paired), one training run",
        ))
    return rows


def random_init_markdown(uas: dict[str, float], peak: dict[str, float] | None = None,
                         n_words: int | None = None) -> str:
    """What the random-init row says here, against the paper's Table 3 (Markdown), generated from the numbers.

    ``peak`` is :func:`attnbook.studies.clark.probes.row_peaks` of the example sentence (``n_words`` words): the
    maps are called flatter than the trained model's only when they are.
    """
    rb_row, rnd_row = uas["right_branching"], uas.get("random_init_attn_words")
    if rnd_row is None:
        return "The random-init baseline was not run (`probe_random_init=False`)."
    above = TABLE3["random_init_attn_words"] - TABLE3["right_branching"]
    gain = TABLE3["attn_words"] - TABLE3["random_init_attn_words"]
    below = rnd_row < rb_row
    text = (f"Here the random-init row reaches {rnd_row:.1f} UAS against {rb_row:.1f} for right-branching: "
            + (f"it falls **below** right-branching, while the paper's random-init row was {above:.0f} points above "
               "it." if below else
               f"{'a small gain' if rnd_row - rb_row < 10 else 'a gain of'} "
               f"{'' if rnd_row - rb_row < 10 else f'{rnd_row - rb_row:.1f} points '}over right-branching "
               f"(paper: {above:.0f} points)."))
    if peak is not None:
        t, r = peak["trained"], peak["random init"]
        uniform = f"; uniform over its {n_words} words would give {1 / n_words:.2f}" if n_words else ""
        if r < t:
            text += (f" In the example sentence the rows of the random-init maps are flatter than the trained "
                     f"model's (mean largest weight {r:.2f} against {t:.2f}{uniform}), so they say less about which "
                     "word is next to which")
            text += (", and the probe sees word order only through the maps (its word vectors carry none): here it "
                     "does not even learn the right-branching rule from them." if below else ".")
        else:
            text += (f" In the example sentence the random-init maps are not flatter than the trained model's (mean "
                     f"largest weight {r:.2f} against {t:.2f}{uniform}): what separates them is where they look, "
                     "not how peaked they are.")
    return text + (f" Trained maps instead of random-init ones add {uas['attn_words'] - rnd_row:.1f} UAS points to "
                   f"the attention-and-words probe (paper: {gain:.0f}).")


def findings_markdown(rows: Sequence[dict], model_name: str) -> str:
    """A chapter's agreement paragraph, computed from its "paper vs this run" rows.

    Counts the outcomes per experiment (rows marked "not comparable" are named apart) and lists every row that
    does not agree with the paper, and every row the data cannot decide.
    """
    if not rows:
        raise EmptyDataError("no comparison rows")
    by_exp: dict[str, list[dict]] = {}
    for r in rows:
        by_exp.setdefault(r["experiment"], []).append(r)
    parts = [f"**What this run shows.** On {model_name}:"]
    for exp, rs in by_exp.items():
        judged = [r for r in rs if r["verdict"] != verdict.NOT_COMPARABLE]
        count = {o: sum(r["verdict"] == o for r in judged) for o in verdict.OUTCOMES}
        if not judged:
            parts.append(f"{exp}: not comparable;")
            continue
        parts.append(f"{exp}: {count[verdict.AGREES]} of {len(judged)} findings agree, {count[verdict.PARTLY]} partly"
                     + (f", {count[verdict.INCONCLUSIVE]} undecided" if count[verdict.INCONCLUSIVE] else "")
                     + (f" ({len(rs) - len(judged)} not comparable)" if len(judged) < len(rs) else "") + ";")
    parts[-1] = parts[-1][:-1] + "."
    differ = [r for r in rows if r["verdict"] in (verdict.DISAGREES, verdict.PARTLY)]
    if differ:
        parts.append("Where the numbers differ: " + "; ".join(
            f"{r['quantity']} ({r['verdict']}: paper {r['paper']}, here {r['ours']})" for r in differ) + ".")
    open_ = [r for r in rows if r["verdict"] == verdict.INCONCLUSIVE]
    if open_:
        parts.append("Where the data cannot tell: " + "; ".join(
            f"{r['quantity']} (paper {r['paper']}, here {r['ours']})" for r in open_) + ".")
    return " ".join(parts)


# =============================================================================================
# §6 clustering (chapter 3)
# =============================================================================================

#: bootstrap resamples of chapter 3 (each one re-clusters the heads)
N_RESAMPLES_CLUSTERS = 200


def _within_between(d: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean distance between same-label heads over the mean between different-label heads, for every
    ``d[resample, i, j]``."""
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(len(labels), dtype=bool)
    return d[:, same & off].mean(-1) / d[:, ~same].mean(-1)


def _nn_same(d: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Share of heads whose nearest other head has the same label, for every ``d[resample, i, j]``."""
    x = d + np.diag(np.full(len(labels), np.inf))[None]
    return (labels[x.argmin(-1)] == labels[None, :]).mean(-1)


def clustering_comparison(
    layer_test: GroupTest,
    clusters: Clustering,
    mds: MDSResult,
    behaviours: GroupTest | None,
    min_size: int = 3,
    *,
    resampled: np.ndarray,
    head_behaviours: list[list[str]] | None = None,
    n_groups: int | None = None,
) -> list[dict]:
    """Clark §6's claims beside this run's numbers (:func:`attnbook.verdict.row`), each with a 95% bootstrap
    interval over groups of segments: ``resampled[resample, i, j]`` are the mean JS divergences recomputed in every
    resample (:func:`attnbook.studies.clark.distances.resampled_distances`, ``n_groups`` groups).

    * "several clear clusters": the silhouette of the average-linkage cut into the chosen ``k`` clusters, the tree
      rebuilt in every resample (Kaufman & Rousseeuw: above 0.5 reasonable structure, 0.25-0.5 weak):
      :class:`~attnbook.verdict.Beyond` 0.25, 0.5 to agree fully; clusters of fewer than ``min_size`` heads are odd
      heads split off and are counted apart in the row;
    * clusters "often corresponding to behaviours": same-behaviour over other-behaviour mean JS below 1, on the heads
      with a behaviour other than "attends broadly" (two near-uniform heads are close by construction, so broad heads
      would make the claim hold by definition; ``behaviours`` must come from
      :func:`attnbook.studies.clark.clusters.behaviour_test` with that exclusion, ``head_behaviours`` are the labels);
    * "heads within the same layer are often fairly close": same-layer over other-layer mean JS below 1, and the
      share of heads whose nearest head is in their own layer above chance (at least half and twice chance to agree
      fully);
    * Fig. 6's 2-D distances "approximately match" the divergences: Kruskal stress-1 of this run's plane against the
      resampled divergences below 0.2, below 0.1 to agree fully (the paper gives no stress).

    The permutation p-values (labels shuffled, distances fixed) are in the notes.
    """
    from attnbook.studies.clark.clusters import BROAD, NO_BEHAVIOUR, cluster_heads, primary_behaviour
    from attnbook.studies.clark.embedding import stress as stress_of

    boot = np.asarray(resampled, dtype=np.float64)
    n_heads = boot.shape[1]
    n_layers = max(int(m.split("-")[0]) for ms in clusters.members.values() for m in ms)
    n_units = int(n_groups) if n_groups else int(boot.shape[0])
    unit = "groups of segments"
    how = f"{boot.shape[0]} bootstrap resamples of {n_units} groups of segments"
    rows = []
    sizes = [len(m) for m in clusters.members.values()]
    n_real = sum(1 for n in sizes if n >= min_size)
    k = clusters.n_clusters
    per_layer = n_heads // n_layers
    def several(c: Clustering) -> float:  # "several clusters": no structure when fewer than two real clusters
        real = sum(1 for m in c.members.values() if len(m) >= min_size)
        return float(c.silhouette) if real >= 2 else 0.0

    sil = np.array([several(cluster_heads(d, n_layers, per_layer, n_clusters=k)) for d in boot])
    est = _interval(several(clusters), sil, n_units, unit)
    rows.append(verdict.row(
        "§6 clusters", "silhouette of the average-linkage cut (tree rebuilt in every resample)",
        paper="several clear clusters (Fig. 6)",
        ours=(f"{est.text('.2f')} at k = {k} ({n_real} cluster{'s' if n_real != 1 else ''} of >= {min_size} heads"
              + (f"; silhouette {clusters.silhouette:.2f} counted as 0" if n_real < 2 else "") + ")"),
        estimate=est, rule=verdict.Beyond(0.25, strong=0.5, what="silhouette"),
        note=(f"silhouette > 0.5: reasonable structure, 0.25-0.5: weak (Kaufman & Rousseeuw); a cut with fewer than "
              f"two clusters of >= {min_size} heads counts as 0 (not several clusters); {how}"),
    ))
    if behaviours is None or head_behaviours is None:
        rows.append(verdict.row(
            "§6 clusters", "same-behaviour / other-behaviour mean JS (broad heads left out)",
            paper="clusters often correspond to behaviours", ours="too few heads with a shared behaviour",
            estimate=Estimate(float("nan")),
            rule=verdict.NotComparable("fewer than two heads share a behaviour other than attending broadly"),
            note="behaviours from chapters 1-2",
        ))
    else:
        primary = np.array(primary_behaviour(head_behaviours))
        keep = np.flatnonzero((primary != NO_BEHAVIOUR) & (primary != BROAD))
        labels = primary[keep]
        r = _within_between(boot[:, keep][:, :, keep], labels)
        est = _interval(behaviours.ratio, r, n_units, unit)
        rows.append(verdict.row(
            "§6 clusters", "same-behaviour / other-behaviour mean JS (broad heads left out)",
            paper="clusters often correspond to behaviours", ours=est, fmt=".2f",
            rule=verdict.Beyond(1.0, above=False, what="same / other behaviour mean JS"),
            note=(f"{len(keep)} heads with {len(behaviours.group_within)} behaviours shared by >= 2 heads; "
                  f"permutation p = {behaviours.p_value:.4f} ({behaviours.n_permutations} shuffles); {how}"),
        ))
    lt = layer_test
    layers = np.repeat(np.arange(n_layers), per_layer)
    est = _interval(lt.ratio, _within_between(boot, layers), n_units, unit)
    rows.append(verdict.row(
        "§6 layers", "same-layer / other-layer mean JS",
        paper="heads in the same layer are often fairly close", ours=est, fmt=".2f",
        rule=verdict.Beyond(1.0, above=False, what="same / other layer mean JS"),
        note=f"{lt.within_mean:.3f} / {lt.between_mean:.3f}; permutation p = {lt.p_value:.4f} "
             f"({lt.n_permutations} shuffles of the layer labels); {how}",
    ))
    est = _interval(lt.nn_same, _nn_same(boot, layers), n_units, unit)
    rows.append(verdict.row(
        "§6 layers", "heads whose nearest head is in the same layer (share)",
        paper="often", ours=est, fmt=".2f",
        rule=verdict.Beyond(lt.nn_chance, strong=max(0.5, 2 * lt.nn_chance), what="share"),
        note=f"chance {lt.nn_chance:.2f}; nearest by JS distance; {how}",
    ))
    s1 = np.array([stress_of(d, mds.coords).stress1 for d in boot])
    est = _interval(mds.stress.stress1, s1, n_units, unit)
    rows.append(verdict.row(
        "§6 MDS", "Kruskal stress-1 of the 2-D embedding",
        paper="distances approximately match (Fig. 6); no stress given", ours=est, fmt=".3f",
        rule=verdict.Beyond(0.2, above=False, strong=0.1, what="stress-1"),
        note=f"Kruskal: 0.05 good, 0.1 fair, 0.2 poor; correlation of the distances r = "
             f"{mds.stress.correlation:.2f}; the plane fixed, the divergences resampled ({how})",
    ))
    return rows


def distance_setup_rows(n_tokens: int, query_fraction: float, smoothing: float) -> list[dict]:
    """The row saying how this run's distance differs from the paper's (a mean, not a sum: not comparable)."""
    return [verdict.row(
        "§6 setup", "distance", paper="sum over tokens of JS (released code: smoothed 0.001/n, summed)",
        ours=f"mean over {int(n_tokens):,} tokens ({query_fraction:.0%} of each segment), smoothing {smoothing}",
        estimate=Estimate(float("nan")),
        rule=verdict.NotComparable("a setting, not a finding: a mean is the sum divided by a constant"))]


def agreement_markdown(rows: Sequence[dict], model_name: str, n_layers: int, n_heads: int) -> str:
    """Chapter 3's agreement sentence: how many comparisons have each outcome, most frequent first."""
    import pandas as pd

    counts = pd.Series([r["verdict"] for r in rows], dtype=object).value_counts().to_dict()
    return (f"**Agreement.** Of {len(rows)} comparisons, " + ", ".join(f"{n} {v}" for v, n in counts.items())
            + f". The model here is {model_name} ({n_layers} layers x {n_heads} heads); the paper's is "
              "bert-base-uncased (12 x 12).")
