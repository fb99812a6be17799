"""What chapters 1-3 (Clark et al.) cost: one function per stage of :mod:`attnbook.studies.clark.pipeline`.

Stage costs are counted from the chapter's resolved parameters and the model's shape
(:mod:`attnbook.engine.cost`). Chapter 3 reads chapter 1's surface statistics and chapter 2's syntactic heads
from the cache (the plan counts in book order), so only its own work is counted.
"""
from __future__ import annotations

from attnbook.engine.cost import (GUM_DOCS, GUM_WINDOWS_PER_DOC, PIECES, UD_SIZES,
                                  Shape, StageParams, Work, probe_batches)


# ---------------------------------------------------------------------------------------------- chapter 1 (§3)


def _segment_pieces(p: StageParams) -> float:
    return PIECES["wiki_fill"] * p.max_tokens


def _fits_mlm_head(p: StageParams, s: Shape) -> bool:
    """A model without its own MLM head gets one fitted (:func:`attnbook.studies.clark.gradients.mlm_head`)."""
    return not s.has_mlm_head and p.mlm_fit_steps > 0


def segments_cost(p: StageParams, s: Shape) -> list[Work]:
    """Building the analysed segments' inputs from text, and the MLM head's fitting and validation segments."""
    n_text = p.n_segments + ((p.mlm_fit_segments + 120) if _fits_mlm_head(p, s) else 0)
    return [Work(p.chapter, f"encoding {n_text:,} WikiText segments", "encode", _segment_pieces(p) * n_text)]


def surface_cost(p: StageParams, s: Shape) -> list[Work]:
    return [Work(p.chapter, f"attention maps of {p.n_segments:,} segments", "forward",
                 s.forward_flops(_segment_pieces(p), p.n_segments))]


def mlm_head_cost(p: StageParams, s: Shape) -> list[Work]:
    """The model's own MLM head scored on 60 held-out segments, or one fitted on hidden states (§3.2's gradients
    need an MLM loss)."""
    t = _segment_pieces(p)
    if s.has_mlm_head:
        return [Work(p.chapter, "MLM head scored on 60 held-out segments", "forward", s.forward_flops(t, 60))]
    if not _fits_mlm_head(p, s):
        return []
    n_fit = p.mlm_fit_segments + 120
    per_step = 0.15 * t * p.mlm_fit_batch  # masked pieces per update
    return [Work(p.chapter, f"hidden states of {n_fit} segments for the MLM head", "forward",
                 s.forward_flops(t, n_fit)),
            Work(p.chapter, f"fitting the MLM head (at most {p.mlm_fit_steps} updates)", "vocab",
                 2 * 2 * s.hidden * s.vocab * per_step * p.mlm_fit_steps)]


def gradients_cost(p: StageParams, s: Shape) -> list[Work]:
    t, n = _segment_pieces(p), p.grad_segments
    return [Work(p.chapter, f"attention gradients of {n} segments", "backprop", 2 * s.forward_flops(t, n)),
            Work(p.chapter, f"MLM logits at every position of {n} segments", "vocab",
                 2 * 2 * s.hidden * s.vocab * t * n)]


# ---------------------------------------------------------------------------------------------- chapter 2 (§4-5)


def _syntax_sentences(p: StageParams) -> int:
    return min(p.syntax_sentences, UD_SIZES["dev"])


def _gum_windows(p: StageParams) -> float:
    docs = p.coref_max_docs or GUM_DOCS
    return docs * (1 if p.coref_first_only else GUM_WINDOWS_PER_DOC)


def _probe_sentences(p: StageParams) -> int:
    return min(p.probe_train_sentences, UD_SIZES["train"]) + min(p.probe_dev_sentences, UD_SIZES["dev"])


def _probe_models(p: StageParams) -> int:
    return 2 if p.probe_random_init else 1


def syntax_cost(p: StageParams, s: Shape) -> list[Work]:
    return [Work(p.chapter, f"maps of {p.syntax_sentences:,} UD sentences (§4.2)", "forward",
                 s.forward_flops(PIECES["ud"], _syntax_sentences(p)))]


def coref_cost(p: StageParams, s: Shape) -> list[Work]:
    windows = _gum_windows(p)
    return [Work(p.chapter, f"maps of {windows:.0f} GUM windows (§4.3)", "forward",
                 s.forward_flops(0.95 * p.coref_max_tokens, windows))]


def probes_cost(p: StageParams, s: Shape) -> list[Work]:
    """The §5 probes: the maps of the train and dev sentences (and the random-init model's), the chapter's inputs
    built from text (UD sentences of §4.2 and §5, GUM windows of §4.3: one item, counted here), and the probes' own
    training. Clark's attention-and-words probe trains once per model; the attention-only probe and the distance
    + words MLP together cost about as much as one more (chapter 2's probes on 1,000 UD sentences on a two-core
    laptop: 5.5 and 5.2 s for the two attention-and-words probes, 2.3 s for the attention-only probe, 2.6 s for
    the MLP)."""
    ud, n, models = PIECES["ud"], _probe_sentences(p), _probe_models(p)
    steps, pairs, measured = probe_batches(min(p.probe_train_sentences, UD_SIZES["train"]), p.probe_batch_size)
    runs = p.probe_epochs * (models + 0.9)
    lengths = "" if measured else ", UD lengths assumed: no local file"
    return [Work(p.chapter, f"probe maps of {n:,} sentences x {models} models (§5)", "forward",
                 s.forward_flops(ud, n * models)),
            Work(p.chapter, "encoding the UD sentences and GUM windows", "encode",
                 ud * (_syntax_sentences(p) + n * models) + 0.95 * p.coref_max_tokens * _gum_windows(p)),
            Work(p.chapter, f"training the §5 probes ({p.probe_epochs} epochs, {steps} batches{lengths})", "probe",
                 runs * pairs),
            Work(p.chapter, "the probes' updates", "probe_step", runs * steps)]


# ---------------------------------------------------------------------------------------------- chapter 3 (§6)


def distances_cost(p: StageParams, s: Shape) -> list[Work]:
    """The segments' maps and every pair of heads' Jensen-Shannon terms; the inputs built from text include the UD
    sentences whose syntactic heads chapter 2 cached (their cache key digests them)."""
    t = _segment_pieces(p)
    heads = s.n_layers * s.n_heads
    entries = p.query_fraction * p.n_segments * t * t
    return [Work(p.chapter, f"attention maps of {p.n_segments:,} segments", "forward",
                 s.forward_flops(t, p.n_segments)),
            Work(p.chapter, "encoding the segments and UD sentences", "encode",
                 t * p.n_segments + PIECES["ud"] * _syntax_sentences(p)),
            Work(p.chapter, f"Jensen-Shannon terms of {heads * (heads - 1) // 2:,} head pairs", "pairs",
                 heads * (heads - 1) / 2 * entries)]
