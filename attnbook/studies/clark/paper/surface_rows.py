"""Clark et al.'s claims beside this run's numbers, §3 surface patterns (chapter 1): every "paper vs this run" row.

Each function turns the surface statistics (and, for §3.2, the gradients and the MLM head behind them) into rows made
by :func:`attnbook.verdict.row` (:class:`~attnbook.verdict.Comparison`), this run's number an
:class:`~attnbook.stats.Estimate` with its 95% bootstrap interval over segments (:func:`resampled_surface`) and the
paper's number from :data:`~attnbook.studies.clark.paper.claims.SURFACE`; each docstring states the rule and why, and
every tolerance states its source. The §3.2 heads that attend mostly to the sink token are re-selected in every
resample. The paper's layer findings (§3.1, §3.2) are judged as bands of relative depth (:func:`paper_band`). The
resample count and the helpers the sections share are in :mod:`~attnbook.studies.clark.paper.rows` (§4-5). Nothing
here measures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from attnbook import verdict
from attnbook.core.heads import relative_layers
from attnbook.stats import Estimate, percentile_interval, resampled_ratio
from attnbook.studies.clark.gradients import AttentionGradientStats
from attnbook.studies.clark.paper.claims import SURFACE
from attnbook.studies.clark.paper.detect import holds_row, interval_row
from attnbook.studies.clark.paper.rows import N_RESAMPLES, _interval, _needs
from attnbook.studies.clark.surface import STAT_NAMES, layer_means, positional_heads, sink_token
from attnbook.verdict import Comparison

#: the book's reading of "close to uniform" (§3.3): a head's entropy at least this share of uniform attention's
BROAD_SHARE = 0.75

#: §3.3: the mean entropy from [CLS] in the last layer, as a share of uniform attention's entropy at the segment length
#: (this run's share within 0.05 of the paper's agrees, within 0.10 partly)
CLS_ENTROPY_RULE = verdict.Within(
    0.05, 0.10, unit="of uniform entropy",
    source=("the paper's normaliser: its segments are 'mostly 128 tokens long' (§3.2), not all, so its uniform "
            "entropy is ln 128 only to within about 5% (a mean length of 100 pieces would give ln 100, 5% less)"))


def _layers_text(layers: Sequence[int]) -> str:
    return ", ".join(map(str, layers)) or "none"


def paper_band(paper_layers: Sequence[int], n_layers: int) -> list[int]:
    """The band of relative depth a list of the paper's layers (1-based, of bert-base's 12) spans, as layers of an
    ``n_layers`` model: every layer at the relative depth of the paper's first to its last
    (:func:`~attnbook.core.heads.relative_layers` of that whole range, so a contiguous run of layers)."""
    return relative_layers(range(min(paper_layers), max(paper_layers) + 1), n_layers)


def in_band(passing: np.ndarray, band: Sequence[int]) -> np.ndarray:
    """Whether, in each resample, some layer passes and every passing layer lies within ``band``
    (``passing[resample, layer]``; ``band`` 1-based layers): the paper's layer findings read as a band of relative
    depth ("especially in earlier layers", "in layers 6-10"), not as an exact list."""
    passing = np.asarray(passing, dtype=bool)
    inside = np.zeros(passing.shape[-1], dtype=bool)
    inside[[l - 1 for l in band]] = True
    return passing.any(-1) & ~(passing & ~inside).any(-1)


def _band_text(layers: Sequence[int]) -> str:
    layers = sorted(layers)
    return f"{layers[0]}-{layers[-1]}" if len(layers) > 1 else str(layers[0])


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


def _sink_row(stats: dict[str, np.ndarray], boot: dict, sink: str, n_seg: int, unit: str) -> Comparison:
    """The §3.2 row "from [SEP], over 90% of the attention stays on [SEP]" on the model's own sink token (``sink``:
    :func:`~attnbook.studies.clark.surface.sink_token`, the token the gradient row tests too): in the heads giving the
    sink more than half of their attention, the share of the sink's own attention that stays on the sink
    (:class:`~attnbook.verdict.Beyond` the paper's 0.9; not comparable when no head gives the sink that much).

    The heads are chosen by the same segments that score them, so the choice is part of the estimate: the heads are
    re-selected in every bootstrap resample of the segments (a resample in which no head passes is left out)."""
    name = "[SEP]" if sink == "sep" else "[CLS]"
    own = f"{sink}_{sink}"
    _needs(f"segments with the {name}->{name} statistic", own in stats and own in boot)
    quantity = f"{name}->{name} share in heads that attend mostly to {name}"
    paper = f"> {SURFACE['sep_sep_share']:.2f}"  # the same claim whichever the sink (the note names the paper's)
    heads = stats[sink] > 0.5
    if not heads.any():
        return verdict.row("§3.2 special tokens", quantity, paper=paper, ours="no such head",
                           estimate=Estimate(float("nan")),
                           rule=verdict.NotComparable(f"no head here gives {name} more than half of its attention"))
    chosen = boot[sink] > 0.5  # [resample, layer, head]: the heads re-selected in each resample
    n_chosen = chosen.sum((1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        resampled = np.where(chosen, boot[own], 0.0).sum((1, 2)) / n_chosen
    est = _interval(float(stats[own][heads].mean()), resampled, n_seg, unit)
    lo, hi = percentile_interval(n_chosen)
    tested = "" if sink == "sep" else ("the paper's [SEP]->[SEP] claim tested on the model's own sink token [CLS], "
                                       "as the gradient row does; ")
    return interval_row("§3.2 special tokens", quantity, paper=paper, ours=est, fmt=".3f",
                        rule=verdict.Beyond(SURFACE["sep_sep_share"], what=f"{name}->{name} share"),
                        note=(f"{tested}attention from {name} stays on {name}; {int(heads.sum())} heads chosen on all "
                              f"segments, re-selected in every resample so that the interval includes the choice "
                              f"({lo:.0f} to {hi:.0f} heads in 95% of the resamples"
                              + (f"; {int((n_chosen == 0).sum())} resamples without such a head left out"
                                 if (n_chosen == 0).any() else "") + ")"))


@dataclass(frozen=True)
class GradientLayers:
    """The §3.2 gradient contrast layer by layer (1-based layers): the mean attention each layer gives the sink token
    (``attention``), its gradient ratio, sink over other tokens (``ratio``), the layers giving the sink at least the
    median attention (``heavy``) and the rest's mean ratio (``rest_mean``). The contrast is the heavy layers' mean
    ratio minus ``rest_mean``; ``carriers`` are the heavy layers that carry a negative contrast (each at least half
    as far below ``rest_mean`` as the heavy layers are on average), ``against`` the other heavy layers."""

    attention: dict[int, float]
    ratio: dict[int, float]
    heavy: list[int]
    rest_mean: float

    @property
    def rest(self) -> list[int]:
        return [l for l in self.ratio if l not in self.heavy]

    @property
    def contrast(self) -> float:
        return float(np.mean([self.ratio[l] for l in self.heavy])) - self.rest_mean

    @property
    def carriers(self) -> list[int]:
        c = self.contrast
        return [l for l in self.heavy if self.ratio[l] - self.rest_mean <= c / 2] if c < 0 else []

    @property
    def against(self) -> list[int]:
        return [l for l in self.heavy if l not in self.carriers]

    def share_of_contrast(self, layers: Sequence[int]) -> float:
        """The share of the (negative) contrast of the heavy layers' mean ratio minus the rest's that ``layers``
        (heavy ones) make: each heavy layer adds (its ratio minus the rest's mean) / the number of heavy layers."""
        total = sum(self.ratio[l] - self.rest_mean for l in self.heavy)
        part = sum(self.ratio[l] - self.rest_mean for l in layers)
        return part / total if total else float("nan")

    def text(self, name: str) -> str:
        """Every layer's attention to the sink and gradient ratio, and which heavy layers carry the contrast."""
        per = ", ".join(f"layer {l}: {self.attention[l]:.0%} / {self.ratio[l]:.2f}" for l in self.ratio)
        carry = _layers_text(self.carriers)
        return (f"attention to {name} / gradient ratio by layer: {per}; the rest's mean ratio {self.rest_mean:.2f}; "
                f"contrast {self.contrast:+.2f}, carried by the heavy layers at least half as far below the rest as "
                f"their mean: {carry}"
                + (f" ({self.share_of_contrast(self.carriers):.0%} of it)" if self.carriers and self.against else ""))


def gradient_layers(stats: dict[str, np.ndarray], grads: dict[str, np.ndarray], sink: str) -> GradientLayers:
    """:class:`GradientLayers` of the §3.2 gradient row on all segments: ``stats`` is
    :func:`attnbook.studies.clark.surface.surface_statistics`' result, ``grads``
    :func:`attnbook.studies.clark.gradients.cached_attention_gradients`' (with ``per_segment``), ``sink`` the model's
    sink token ("cls" or "sep")."""
    attention = layer_means(stats[sink])
    heavy = attention >= np.median(attention)
    cats = list(AttentionGradientStats.CATEGORIES)
    per = np.asarray(grads["per_segment"], dtype=np.float64)  # [segment, category, layer, head]
    full = per[:, [cats.index(sink), cats.index("other")]].mean(-1).mean(0)  # [2, layer]
    ratio = full[0] / full[1]
    rest = ratio[~heavy]
    return GradientLayers(attention={l + 1: float(a) for l, a in enumerate(attention)},
                          ratio={l + 1: float(r) for l, r in enumerate(ratio)},
                          heavy=[int(l) + 1 for l in np.flatnonzero(heavy)],
                          rest_mean=float(rest.mean()) if rest.size else float("nan"))


def _gradient_row(stats, grads, means, sink: str, mlm, n_resamples: int, seed: int) -> Comparison:
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
    return interval_row(
        "§3.2 gradients", quantity, paper=paper_text,
        ours=f"{ratio[heavy].mean():.2f} vs {ratio[~heavy].mean():.2f}: {est.text('.2f')}", estimate=est,
        rule=verdict.Beyond(0.0, above=False, what=f"gradient ratio, {name}-heavy minus other layers"),
        note=note + f"; {name}-heavy layers (at least the median): {_layers_text(list(np.flatnonzero(heavy) + 1))}; "
        + gradient_layers(stats, grads, sink).text(name))


def _cls_entropy_row(stats: dict[str, np.ndarray], n_resamples: int, seed: int) -> Comparison:
    """The §3.3 row on the mean entropy from [CLS] in the last layer, judged as a share of uniform attention's entropy
    at the segment length on both sides (:data:`CLS_ENTROPY_RULE`): entropy grows with the number of positions a
    token can attend to, so raw nats compare segments of different lengths. The paper's 3.89 nats over ln 128 (its
    segments, §3.2); this run's mean entropy over ln of its mean number of attended positions (all the segment's
    pieces: [CLS] attends to every one), the two resampled together over segments."""
    per = np.asarray(stats["per_segment"], dtype=np.float64)
    entropy = per[:, STAT_NAMES.index("entropy_cls"), -1].mean(-1)  # [segment]: mean over the last layer's heads
    positions = np.exp(np.asarray(stats["per_segment_uniform_entropy"], dtype=np.float64))  # pieces per segment
    r = resampled_ratio(np.stack([entropy, positions], 1), n_resamples=n_resamples, seed=seed)
    value = float(entropy.mean() / math.log(positions.mean()))
    est = _interval(value, r[:, 0] / np.log(r[:, 1]), len(entropy), "segments")
    pieces = SURFACE["segment_pieces"]
    paper_nats = SURFACE["cls_entropy_last_layer"]
    paper_share = paper_nats / math.log(pieces)
    return interval_row(
        "§3.3 entropy", "mean entropy from [CLS] in the last layer / uniform entropy at the segment length",
        paper=f"{paper_share:.3f} ({paper_nats} nats / ln {pieces})", paper_value=round(paper_share, 4),
        ours=f"{est.text('.3f')} ({entropy.mean():.3f} nats / ln {positions.mean():.0f})", estimate=est,
        rule=CLS_ENTROPY_RULE,
        note=(f"broad attention from [CLS] in the last layer; uniform entropy ln {pieces} = {math.log(pieces):.2f} "
              f"nats in the paper (segments of at most {pieces} pieces, most of them {pieces}), "
              f"ln {positions.mean():.1f} = {math.log(positions.mean()):.2f} here (the mean segment length)"))


def surface_comparison(stats: dict[str, np.ndarray], grads: dict[str, np.ndarray] | None = None, *, mlm=None,
                       n_resamples: int = N_RESAMPLES, seed: int = 0) -> list[Comparison]:
    """Rows of "paper vs this run" for Clark §3 (:func:`attnbook.verdict.row`), every sample estimate with a
    bootstrap interval over segments (:func:`resampled_surface`; the gradients over their own segments).

    ``stats`` is :func:`attnbook.studies.clark.surface.surface_statistics`' result, ``grads``
    :func:`attnbook.studies.clark.gradients.cached_attention_gradients`', ``mlm`` the
    :class:`~attnbook.studies.clark.gradients.MLMQuality` of the head behind the gradients. Layers are compared at
    relative depth (:func:`relative_layers`). The rules:

    * §3.1 previous / next token: a head putting more than half of its attention there exists, and every such head
      lies within the band of relative depth the paper's layers span (:func:`paper_band`, :func:`in_band`), in the
      bootstrap resamples (:class:`~attnbook.verdict.Holds`); the exact layers are description;
    * §3.2 the order of the layers where attention to [CLS], [SEP] and ". or ," peaks (Holds); some layer gives
      [SEP] over half of its attention and every such layer lies within the band of the paper's 6-10 at relative
      depth (Holds); [SEP], not
      [CLS], gets the most attention (Holds); from the sink token, over 90% stays on it in the heads that attend
      mostly to it (:class:`~attnbook.verdict.Beyond`; the paper's [SEP], or the model's own sink token
      :func:`~attnbook.studies.clark.surface.sink_token` when that is [CLS]); gradients to the model's sink token,
      relative to other tokens, are smaller in the layers that attend to it most (Beyond 0; not comparable when the
      MLM head is no better than a constant predictor);
    * §3.3 the broadest layer-1 head is close to uniform (Beyond :data:`BROAD_SHARE`); the mean entropy from [CLS]
      in the last layer, as a share of uniform attention's entropy at each side's segment length, is the paper's
      3.89 nats over ln 128 (:data:`CLS_ENTROPY_RULE`).

    Every judged row's note quotes what its rule compared; an undecided one says what its sample could detect
    (:mod:`~attnbook.studies.clark.paper.detect`).
    """
    n_layers, n_heads = stats["sep"].shape
    boot = resampled_surface(stats, n_resamples, seed)
    n_seg, unit = boot["n_segments"], "segments"
    resamples = f"{n_resamples} resamples of {n_seg} segments"
    rows: list[Comparison] = []
    pos = positional_heads(stats)
    for kind, key, heads in (("previous", "prev", pos.previous), ("next", "next", pos.next)):
        paper_layers = SURFACE[f"{key}_heads_layers"]
        band = paper_band(paper_layers, n_layers)
        ours_layers = sorted({l + 1 for l, _ in heads})
        passing = boot[key] > 0.5  # [resample, layer, head]
        holds = in_band(passing.any(-1), band)
        count = passing.sum((1, 2))
        lo, hi = percentile_interval(count)
        rows.append(holds_row(
            "§3.1 relative position", f"layers with a head putting >50% of its attention on the {kind} token",
            paper=(f"{len(paper_layers)} of 144 heads, layers {_layers_text(paper_layers)} of 12: "
                   f"band {_band_text(paper_layers)}"
                   + ("" if n_layers == 12 else f" (here: layers {_band_text(band)} of {n_layers})")),
            ours=f"{len(heads)} of {n_layers * n_heads} heads [{lo:.0f}, {hi:.0f}], layers {_layers_text(ours_layers)}",
            claim=(f"such a head exists, and every such head lies within the paper's band of relative depth "
                   f"(layers {_band_text(band)} of {n_layers})"), holds=holds, n=n_seg, unit=unit,
            note=(f"the paper: such heads 'especially in earlier layers', in layers {_layers_text(paper_layers)} of 12, "
                  f"judged as their band; share of {resamples} where the claim holds: {holds.mean():.1%}; the exact "
                  f"layers (description, not judged): the paper's at relative depth "
                  f"{_layers_text(relative_layers(paper_layers, n_layers))}, here {_layers_text(ours_layers)}"),
        ))
    means = {k: layer_means(stats[k]) for k in ("cls", "sep", "punct")}
    boot_means = {k: boot[k].mean(-1) for k in ("cls", "sep", "punct")}  # [resample, layer]
    peak = {k: int(np.argmax(v)) + 1 for k, v in means.items()}
    bpeak = {k: v.argmax(-1) for k, v in boot_means.items()}
    order = (bpeak["cls"] <= bpeak["sep"]) & (bpeak["sep"] <= bpeak["punct"]) & (bpeak["cls"] < bpeak["punct"])
    rows.append(holds_row(
        "§3.2 special tokens", "layer where mean attention peaks: [CLS] / [SEP] / . or ,",
        paper="early / middle / deep", ours=f"{peak['cls']} / {peak['sep']} / {peak['punct']} of {n_layers}",
        claim="the peaks come in the order [CLS] <= [SEP] <= . or , (and [CLS] before . or ,)", holds=order,
        n=n_seg, unit=unit, note=(f"the paper's claim is a direction (Fig. 2: 'early heads attend to [CLS], middle "
                                  f"heads attend to [SEP], and deep heads attend to periods and commas'), judged "
                                  f"as the order of the peaks; share of {resamples} with the paper's order: "
                                  f"{order.mean():.1%}"),
    ))
    majority = SURFACE["sep_majority_layers"]
    band = paper_band(majority, n_layers)
    sep_layers = [i + 1 for i, v in enumerate(means["sep"]) if v > 0.5]
    holds = in_band(boot_means["sep"] > 0.5, band)
    sep_max = _interval(float(means["sep"].max()), boot_means["sep"].max(-1), n_seg, unit)
    rows.append(holds_row(
        "§3.2 special tokens", "layers where over half of the attention goes to [SEP]",
        paper=(f"{min(majority)}-{max(majority)} of {SURFACE['n_layers']}"
               + ("" if n_layers == 12 else f" (here: layers {_band_text(band)} of {n_layers})")),
        ours=(f"{_layers_text(sep_layers)} of {n_layers}; largest layer mean {sep_max.text('.2f')} "
              f"(layer {peak['sep']})"),
        claim=(f"some layer gives [SEP] over half of its attention, and every such layer lies within the paper's "
               f"band of relative depth (layers {_band_text(band)} of {n_layers})"), holds=holds,
        n=n_seg, unit=unit,
        note=(f"mean over the layer's heads; the paper's layers {min(majority)}-{max(majority)} of 12 judged as a band "
              f"of relative depth; share of {resamples} where the claim holds: {holds.mean():.1%}"),
    ))
    sink = sink_token(stats)
    sep_more = boot["sep"].mean((1, 2)) > boot["cls"].mean((1, 2))
    rows.append(holds_row(
        "§3.2 special tokens", "the special token that gets the most attention (mean over all heads)",
        paper="[SEP] (a no-op target)",
        ours=(f"{'[SEP]' if sink == 'sep' else '[CLS]'}: [SEP] {stats['sep'].mean():.2f}, "
              f"[CLS] {stats['cls'].mean():.2f}; largest layer mean of [CLS] {means['cls'].max():.2f}"),
        claim="[SEP] gets more attention than [CLS]", holds=sep_more, n=n_seg, unit=unit,
        note=f"share of {resamples} where [SEP] gets more: {sep_more.mean():.1%}",
    ))
    rows.append(_sink_row(stats, boot, sink, n_seg, unit))
    if grads is not None:
        rows.append(_gradient_row(stats, grads, means, sink, mlm, n_resamples, seed))
    uniform = float(stats["uniform_entropy"])
    first = stats["entropy"][0]
    broad = _interval(float(first.max()) / uniform, boot["entropy"][:, 0].max(-1) / boot["uniform_entropy"],
                      n_seg, unit)
    rows.append(interval_row(
        "§3.3 entropy", "highest head entropy in layer 1 / uniform entropy",
        paper="close to uniform (broad heads in lower layers)", ours=broad, fmt=".2f",
        rule=verdict.Beyond(BROAD_SHARE, what="entropy / uniform entropy"),
        note=f"bag-of-vectors heads; {first.max():.2f} of {uniform:.2f} nats",
    ))
    rows.append(_cls_entropy_row(stats, n_resamples, seed))
    return rows


def mlm_head_rows(mlm) -> list[Comparison]:
    """The row on the MLM head behind the §3.2 gradients: one of the book's own questions (kind
    :data:`~attnbook.verdict.OWN`; the paper used bert-base's own head and claims nothing about it), whether the head
    predicts held-out masked pieces better than the unigram baseline (:class:`~attnbook.verdict.Beyond` its accuracy,
    the head's exact interval over the masked pieces deciding). The gradient row depends on the answer: a head no
    better than a constant makes it not comparable.

    ``mlm`` is an :class:`attnbook.studies.clark.gradients.MLMQuality`: the checkpoint's own head (the paper's
    setting) or a head fitted on the frozen encoder of a checkpoint without one (the note says which).
    """
    own = mlm.source == "pretrained"
    est = Estimate(mlm.accuracy, mlm.low, mlm.high, int(mlm.n_pieces), "held-out masked pieces")
    source = "the checkpoint's own" if own else "fitted on the frozen encoder"
    return [interval_row(
        "§3.2 gradients", "MLM head behind the gradients: held-out top-1 accuracy", paper="BERT's own pre-training head",
        ours=f"{source}: {est.text('.3f')}",
        estimate=est, rule=verdict.Beyond(mlm.constant_accuracy, what="top-1 accuracy over always predicting the "
                                                                       "most frequent piece"),
        note=(f"the checkpoint's own MLM head: {mlm.text()}" if own else
              f"this checkpoint has no MLM head; the gradients use a head fitted on it: {mlm.text()}"),
        kind=verdict.OWN)]
