"""Clark et al. beside this run in words: the sentences a chapter shows, each generated from the numbers.

A sentence may name this run's numbers only because it is written from them here; the paper's numbers come from
:mod:`~attnbook.studies.clark.paper.claims` and are attributed in the same sentence. A chapter's closing summary
(:func:`agreement_markdown`, one for the three chapters) is written by the one summary
writer, :func:`attnbook.verdict.summary_markdown`, from the chapter's rows; this module adds only the sentence
that sets the scene (the model and its shape beside the paper's bert-base).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from attnbook import verdict
from attnbook.studies.clark import coref
from attnbook.studies.clark.paper.claims import PAPER_HEADS, PAPER_LAYERS, PAPER_MODEL, SPLIT_WORD_SHARE, TABLE2, TABLE3
from attnbook.studies.clark.paper.surface_rows import gradient_layers
from attnbook.studies.clark.surface import layer_means, sink_token
from attnbook.verdict import Comparison


def _setting(model_name: str, n_layers: int | None = None, n_heads: int | None = None) -> str:
    """The one sentence that sets a chapter's summary: this run's model (and its shape, when known) beside the
    paper's bert-base-uncased (12 layers x 12 heads, Clark et al. §3)."""
    shape = f" ({int(n_layers)} layers x {int(n_heads)} heads)" if n_layers is not None and n_heads is not None else ""
    return (f"The model here is {model_name}{shape}; the paper's is {PAPER_MODEL} ({PAPER_LAYERS} layers x "
            f"{PAPER_HEADS} heads).")


# =============================================================================================
# §3 surface patterns (chapter 1)
# =============================================================================================


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


def _carriers_sentence(layers) -> str:
    """Which [CLS]-heavy layers carry the gradient contrast (``layers``: a
    :class:`~attnbook.studies.clark.paper.surface_rows.GradientLayers`), from the per-layer numbers."""
    def listed(ls):
        return ("layer " if len(ls) == 1 else "layers ") + ", ".join(map(str, ls))

    carriers, against = layers.carriers, layers.against
    ratios = ", ".join(f"{layers.ratio[l]:.2f}" for l in carriers)
    text = (f" gradients to [CLS], relative to other tokens, are smaller in {listed(carriers)} (ratio {ratios}) than "
            f"in the layers that attend to it less (mean ratio {layers.rest_mean:.2f})")
    if against:
        text += (f"; in {listed(against)}, which also give [CLS] at least the median attention, they are not clearly smaller "
                 f"({', '.join(f'{layers.ratio[l]:.2f}' for l in against)}), so the contrast rests on "
                 f"{listed(carriers)} ({layers.share_of_contrast(carriers):.0%} of it)")
    top_rest = max(layers.rest, key=lambda l: layers.attention[l], default=None)
    heavy_mean = float(np.mean([layers.attention[l] for l in layers.heavy]))
    if top_rest is not None and layers.attention[top_rest] >= heavy_mean / 2:  # a layer that attends to it much too
        text += (f"; layer {top_rest}, giving [CLS] {layers.attention[top_rest]:.0%} of its attention, is among the "
                 f"layers that attend to it less (ratio {layers.ratio[top_rest]:.2f})")
    return text


def _sink_sentence(rows: Sequence[Comparison], stats: dict[str, np.ndarray], grads=None) -> str:
    """What the gradient row says about a [CLS] sink, only what it supports; with ``grads`` (the gradients behind
    the row), which layers carry the contrast (:func:`~attnbook.studies.clark.paper.surface_rows.gradient_layers`)."""
    means = {k: layer_means(stats[k]) for k in ("cls", "sep")}
    head = (f"The largest difference is the no-op target: this model sends up to {means['cls'].max():.0%} of a "
            f"layer's attention to [CLS] and at most {means['sep'].max():.0%} to [SEP], so the [SEP]-centred "
            "findings of §3.2 do not carry over.")
    grad = [r for r in rows if r.experiment == "§3.2 gradients" and not r.quantity.startswith("MLM head")]
    if not grad:
        return head + " Without the gradients, whether [CLS] plays the no-op role [SEP] plays in bert-base is open."
    outcome = grad[0].verdict
    if outcome == verdict.AGREES:
        if grads is None:
            heavy = np.flatnonzero(means["cls"] >= np.median(means["cls"])) + 1
            return head + (" The pattern behind them holds on average: gradients to [CLS], relative to other tokens, "
                           "are smaller in the layers giving it at least the median attention taken together (layers "
                           + ", ".join(map(str, heavy)) + ") than in the rest, as the paper found for [SEP] (a fixed "
                           "special token absorbing attention a head does not need); the gradient row's note says "
                           "which layers carry it.")
        layers = gradient_layers(stats, grads, "cls")
        return head + (" The pattern behind them holds on average:" + _carriers_sentence(layers)
                       + ". Read it as the paper's no-op pattern (for [SEP]) in those layers, not in every layer "
                         "that attends to [CLS].")
    if outcome == verdict.DISAGREES:
        return head + (" Nor does the pattern behind them: gradients to [CLS] are not smaller in the layers that "
                       "attend to it most, so the no-op reading of the sink is not supported here.")
    if outcome == verdict.NOT_COMPARABLE:
        return head + (" The gradients cannot say whether [CLS] is a no-op target like bert-base's [SEP] ("
                       + grad[0].rule.removeprefix("not comparable: ") + ").")
    return head + (" Whether [CLS] is a no-op target like bert-base's [SEP] the gradients cannot tell here: the "
                   "interval of their contrast includes no difference.")



# =============================================================================================
# §4-5 heads as parsers, coreference, probes (chapter 2)
# =============================================================================================


def split_words_text(split) -> str:
    """How many evaluated words are split into pieces, beside the paper's share (``split``:
    :func:`attnbook.studies.clark.wordmaps.split_words`)."""
    return (f"{split.share:.1%} of the {split.n_words} words of the evaluated sentences are split into several "
            f"pieces (Clark et al.: about {SPLIT_WORD_SHARE:.0%} in their data)")


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


# =============================================================================================
# closing summaries (chapters 2 and 3)
# =============================================================================================


def distance_setting(n_tokens, query_fraction: float, smoothing: float) -> str:
    """How chapter 3's distance between heads differs from Clark et al.'s (§6): a setting, not a finding, so it is a
    sentence of the closing summary and no comparison row (issue 32). The paper sums the Jensen-Shannon divergence
    over tokens (its released code smooths each map with 0.001/n first); a mean is that sum over a constant."""
    return (f"The distance between two heads here is the mean Jensen-Shannon divergence over {int(n_tokens):,} tokens "
            f"({query_fraction:.0%} of each segment), smoothing {smoothing}; Clark et al. (§6) sum it over the tokens "
            "(their released code smooths each map with 0.001/n first), and a mean is that sum over a constant.")


def agreement_markdown(rows: Sequence[Comparison], model_name: str, *, n_layers: int | None = None,
                       n_heads: int | None = None, stats: dict[str, np.ndarray] | None = None,
                       grads: dict[str, np.ndarray] | None = None, setting: str = "") -> str:
    """A Clark chapter's closing summary: :func:`attnbook.verdict.summary_markdown` of its rows, set by the model's
    name beside the paper's bert-base, with its shape when given (``n_layers``/``n_heads``, or read from chapter 1's
    ``stats``), and ``setting`` (a sentence such as :func:`distance_setting`). Chapter 1 passes its surface
    ``stats``: when this model's sink is [CLS] rather than [SEP], the summary adds what the gradient row says about
    that sink (with ``grads``, the gradients behind that row, layer by layer)."""
    if stats is not None:
        n_layers, n_heads = np.shape(stats["sep"])
    text = _setting(model_name, n_layers, n_heads)
    if stats is not None and sink_token(stats) == "cls":
        text += " " + _sink_sentence(rows, stats, grads)
    return verdict.summary_markdown(rows, text + (f" {setting}" if setting else ""))
