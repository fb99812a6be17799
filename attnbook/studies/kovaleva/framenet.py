"""Frame-semantic heads (Kovaleva et al. §4.2, Fig. 3).

Kovaleva et al. ask whether some heads link a frame-evoking word (the *target*,
e.g. "agitated") with the **core frame elements** of its frame (e.g. the
Experiencer "He" of ``Emotion_directed``). Their recipe:

1. FrameNet sentences of at most 12 tokens whose core frame elements are at most
   3 tokens long, dropping sentences where a linked element is less than two tokens
   from the target (so that the previous/next-token pattern cannot explain a link):
   473 sentences, taken from the lexical-unit example sentences of FrameNet.
2. For every sentence and head, the **maximum** attention weight over the token
   pairs of the annotated links; averaged over sentences, one number per head.
3. Heads whose average exceeds the 99th percentile: 2 of 144 in pre-trained BERT
   (0.201 and 0.209).

What differs here, and why:

* **Data.** The lexical-unit example sentences (FrameNet's ``lu/`` folder, 752 MB)
  are not in the book's data; only 48 *full-text* documents are (``fulltext/``).
  A full-text sentence carries one annotation set per frame-evoking word, so one
  sentence can give several (target, frame) *instances*; each instance is filtered
  and scored on its own (the files are read by :func:`attnbook.data.framenet.load_fulltext`).
  Full-text sentences are longer than lexicographic examples, so far fewer pass the 12-token filter.
* **Words.** FrameNet's tokens (the ``PENN`` layer of each sentence, else white
  space) are the words; attention is made word-level with
  :func:`attnbook.engine.wordlevel.token_to_word_attention` (to a word: summed over its
  pieces; from a word: averaged), ``[CLS]``/``[SEP]`` being words of their own.
* **Direction.** The paper takes "the maximum attention weight among the token pairs"
  of a link, without a direction; its example is attention *from* the target
  "agitated" *to* the element "he". The default ``direction="both"`` takes the larger
  of the two directions; ``"target_to_element"`` and ``"element_to_target"`` are the
  one-way variants.
* **Percentile.** With one average per head, the 99th percentile of 144 values lies
  between the 2nd and 1st largest values, so "above the 99th percentile" picks one or
  two heads by construction. :func:`frame_heads` reports that threshold (the paper's
  reading) and the 99th percentile of *all* per-instance scores, and a control: the
  same maximum over the target and the ordinary words that are *not* frame elements
  (at least two words away), to see whether a head prefers frame elements or just
  attends from the target to anything. What can fail is judged with intervals over
  the instances (:func:`top_head_estimates`): the top head's mean score, and its score
  on frame elements minus the control's, paired.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.data.framenet import FrameInstance
from attnbook.engine.extract import Batch, Encoded, stream_attention
from attnbook.engine.inputs import encode_words
from attnbook.engine.wordlevel import token_to_word_attention
from attnbook.stats import ratio_estimate

DIRECTIONS = ("both", "target_to_element", "element_to_target")


# ---------------------------------------------------------------------------------------------
# the paper's filter
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FrameFilter:
    """Kovaleva §4.2's filter: short sentences, short core elements, no adjacent links.

    An instance is kept when its sentence has at most ``max_words`` words, every core
    element has at most ``max_element_words`` words and every core element is at least
    ``min_distance`` words from the target (overlap counts as distance 0). With
    ``drop="instance"`` (the paper: "we exclude sentences ...") one close link drops
    the instance; ``drop="link"`` keeps the instance with its far links only.
    """

    max_words: int = 12
    max_element_words: int = 3
    min_distance: int = 2
    drop: str = "instance"

    def __post_init__(self) -> None:
        if self.drop not in ("instance", "link"):
            raise ParameterError(f"drop is 'instance' or 'link', got {self.drop!r}")

    def apply(self, instances: Sequence[FrameInstance]) -> tuple[list[FrameInstance], dict[str, int]]:
        """``(kept instances, counts of instances dropped per reason)``; counts also has ``kept``."""
        kept: list[FrameInstance] = []
        counts = {"total": len(instances), "too_long": 0, "long_element": 0, "close_link": 0, "kept": 0}
        for inst in instances:
            if len(inst.words) > self.max_words:
                counts["too_long"] += 1
                continue
            if any(len(v) > self.max_element_words for v in inst.core.values()):
                counts["long_element"] += 1
                continue
            far = {k: v for k, v in inst.core.items() if inst.distance(v) >= self.min_distance}
            if len(far) < len(inst.core) and (self.drop == "instance" or not far):
                counts["close_link"] += 1
                continue
            kept.append(FrameInstance(inst.doc, inst.sentence_id, inst.words, inst.frame, inst.lexical_unit,
                                      inst.target, far, inst.other_elements))
        counts["kept"] = len(kept)
        return kept, counts


def encode_instances(tokenizer, instances: Sequence[FrameInstance], max_tokens: int = 128) -> list[Encoded]:
    """Word-level model inputs (``[CLS] words [SEP]``); ``meta["instance"]`` is the index in ``instances``."""

    out = []
    for i, inst in enumerate(instances):
        enc = encode_words(tokenizer, inst.words, max_tokens=max_tokens, meta={"instance": i})
        if enc.meta["n_words_kept"][0] != len(inst.words):
            raise ParameterError(f"max_tokens={max_tokens} truncates instance {i}; raise it")
        out.append(enc)
    return out


# ---------------------------------------------------------------------------------------------
# scoring heads
# ---------------------------------------------------------------------------------------------
class FrameLinkScores:
    """Streaming reducer: each instance's maximum attention over its target-element links, per head.

    ``result()``: ``scores[instance, layer, head]`` (the paper's per-sentence number) and
    ``control[instance, layer, head]``: the same maximum between the target and the
    ordinary words that are neither target nor frame element (core or not) and at least
    ``min_distance`` words away (NaN where there is no such word).
    """

    def __init__(self, instances: Sequence[FrameInstance], direction: str = "both", min_distance: int = 2):
        if direction not in DIRECTIONS:
            raise ParameterError(f"direction is one of {DIRECTIONS}, got {direction!r}")
        self.instances = instances
        self.direction = direction
        self.min_distance = min_distance
        self.scores: dict[int, np.ndarray] = {}
        self.control: dict[int, np.ndarray] = {}

    def _pair_max(self, w: np.ndarray, targets: list[int], others: list[int]) -> np.ndarray:
        t = np.array(targets)[:, None]
        o = np.array(others)[None, :]
        # fancy indexing broadcasts t [m, 1] with o [1, k]: both give [layer, head, m, k]
        if self.direction == "target_to_element":
            vals = w[:, :, t, o]  # attention from target word t to element word o
        elif self.direction == "element_to_target":
            vals = w[:, :, o, t]  # attention from element word o to target word t
        else:
            vals = np.maximum(w[:, :, t, o], w[:, :, o, t])
        return vals.reshape(vals.shape[0], vals.shape[1], -1).max(-1)

    def update(self, attn: torch.Tensor, batch: Batch) -> None:

        for b, ex in enumerate(batch.examples):
            i = ex.meta["instance"]
            inst = self.instances[i]
            n = int(batch.lengths[b])
            w = token_to_word_attention(attn[b, :, :, :n, :n], ex.words)  # [layer, head, word, word]
            shift = 1  # encoded word 0 is [CLS]
            targets = [t + shift for t in inst.target]
            elements = sorted({e + shift for v in inst.core.values() for e in v})
            self.scores[i] = self._pair_max(w, targets, elements)
            annotated = set(inst.target) | {e for v in inst.core.values() for e in v} | {
                e for v in inst.other_elements.values() for e in v}
            others = [j + shift for j in range(len(inst.words))
                      if j not in annotated and min(abs(j - t) for t in inst.target) >= self.min_distance]
            self.control[i] = (self._pair_max(w, targets, others) if others
                               else np.full(w.shape[:2], np.nan, dtype=np.float32))

    def result(self) -> dict[str, np.ndarray]:
        if not self.scores:
            raise EmptyDataError("no FrameNet instances were scored")
        order = sorted(self.scores)
        return {"scores": np.stack([self.scores[i] for i in order]).astype(np.float32),
                "control": np.stack([self.control[i] for i in order]).astype(np.float32)}


@cache.memoized("kovaleva_framenet", ignore=("batch_size", "progress"))
def frame_link_scores(loaded, instances: Sequence[FrameInstance], *, direction: str = "both",
                      batch_size: int = 32, min_distance: int = 2, progress: bool = False) -> dict[str, np.ndarray]:
    """Run ``loaded`` over the instances and return :class:`FrameLinkScores`' result (Kovaleva §4.2); cached by
    model, instances and settings, so the head atlas reads chapter 4's measurement back."""
    if not instances:
        raise EmptyDataError("no FrameNet instances to score (did the filter drop them all?)")
    examples = encode_instances(loaded.tokenizer, list(instances))
    reducer = FrameLinkScores(list(instances), direction, min_distance)
    return stream_attention(loaded, examples, [reducer], batch_size=batch_size, progress=progress,
                            desc="FrameNet links")[0]

    if not instances:
        raise EmptyDataError("no FrameNet instances to score (did the filter drop them all?)")
    examples = encode_instances(loaded.tokenizer, instances)
    reducer = FrameLinkScores(instances, direction, min_distance)
    return stream_attention(loaded, examples, [reducer], batch_size=batch_size, progress=progress,
                            desc="FrameNet links")[0]


def frame_heads(scores: np.ndarray, percentile: float = 99.0, control: np.ndarray | None = None) -> dict:
    """Per-head averages of the link scores and the heads above the ``percentile``-th percentile (Fig. 3).

    Returns ``mean[layer, head]``; ``threshold`` (percentile of the per-head means, the
    paper's reading) with ``heads`` above it as ``(layer, head, mean)`` sorted by mean
    (0-based indices; show them with :func:`attnbook.core.heads.head_label`);
    ``instance_threshold`` (percentile of all per-instance scores) with ``heads_instance``;
    and, given ``control``, ``control_mean[layer, head]`` and ``lift[layer, head]``
    (mean link score over mean control score, over instances that have a control).
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 3 or len(s) == 0:
        raise EmptyDataError(f"expected scores[instance, layer, head] for at least one instance, got {s.shape}")
    mean = s.mean(0)
    thr = float(np.percentile(mean, percentile))
    inst_thr = float(np.percentile(s, percentile))

    def above(t: float) -> list[tuple[int, int, float]]:
        idx = np.argwhere(mean > t)
        return sorted(((int(l), int(h), float(mean[l, h])) for l, h in idx), key=lambda x: -x[2])

    out = {"mean": mean, "threshold": thr, "heads": above(thr), "instance_threshold": inst_thr,
           "heads_instance": above(inst_thr), "n_instances": int(len(s))}
    if control is not None:
        c = np.asarray(control, dtype=np.float64)
        has = ~np.isnan(c[:, 0, 0])
        out["control_mean"] = c[has].mean(0) if has.any() else np.full(mean.shape, np.nan)
        out["lift"] = s[has].mean(0) / np.maximum(out["control_mean"], 1e-12) if has.any() else out["control_mean"]
        out["n_with_control"] = int(has.sum())
    return out


def top_head_estimates(scores: np.ndarray, control: np.ndarray | None, head: tuple[int, int] | None = None, *,
                       n_resamples: int = 2000, seed: int = 0) -> dict:
    """The uncertainty of §4.2's numbers for one head (the top one of :func:`frame_heads`), over the instances.

    Returns ``mean``: the head's mean score with its 95% bootstrap interval over instances (an
    :class:`~attnbook.stats.Estimate`), and, given ``control``, ``difference``: its mean score on frame elements
    minus its mean on equally distant ordinary words, paired over the instances that have such words (the same
    draws for both), and ``n_with_control``; ``head`` (default: the one with the largest mean) and its ``label``.
    """

    if head is None:  # the head with the largest mean score
        means = np.nanmean(np.asarray(scores, dtype=np.float64), axis=0)
        head = tuple(int(i) for i in np.unravel_index(int(np.nanargmax(means)), means.shape))
    l, h = head
    s = np.asarray(scores, dtype=np.float64)[:, l, h]
    out: dict = {"head": (l, h), "label": head_label(l, h), "mean": ratio_estimate(s, unit="instances", n_resamples=n_resamples, seed=seed)}
    if control is not None:
        c = np.asarray(control, dtype=np.float64)[:, l, h]
        has = ~np.isnan(c)
        out["n_with_control"] = int(has.sum())
        if has.any():
            out["difference"] = ratio_estimate(s[has] - c[has], unit="instances with other words",
                                               n_resamples=n_resamples, seed=seed)
    return out


def filter_table(counts: dict[str, int]):
    """The filter's counts (:meth:`FrameFilter.apply`) as a one-row table with readable column names."""
    import pandas as pd

    return pd.DataFrame([counts]).rename(columns={
        "total": "instances", "too_long": "> 12 words", "long_element": "element > 3 words",
        "close_link": "element < 2 words away", "kept": "kept"})


def top_heads_table(heads: dict):
    """The heads above the percentile (:func:`frame_heads` with a control): mean score, the control's mean
    and their ratio, one row per head (1-based label)."""
    import pandas as pd


    return pd.DataFrame([{"head": head_label(l, h), "mean score": round(v, 3),
                          "control (other words)": round(float(heads["control_mean"][l, h]), 3),
                          "frame elements / other words": round(float(heads["lift"][l, h]), 2)}
                         for l, h, v in heads["heads"]])


def framenet_numbers(fcounts: Mapping[str, Any], fheads: Mapping[str, Any], ftop: Mapping[str, Any], n_kept: int) -> dict:
    """Chapter 4's results-file entries of §4.2: the filter's counts, every head's mean score, the heads above the
    percentile (1-based labels), the threshold and the top head with its interval."""

    return {"framenet_filter": dict(fcounts), "framenet_mean": fheads["mean"].round(5).tolist(),
            "framenet_heads": [[head_label(l, h), round(v, 4)] for l, h, v in fheads["heads"]],
            "framenet_threshold": fheads["threshold"],
            "framenet_top": {"head": ftop["label"], "mean": ftop["mean"].as_dict(), "instances": n_kept}}


def threshold_markdown(fheads: Mapping[str, Any], percentile: float, n_heads: int) -> str:
    """The percentile threshold and how many heads pass it (§4.2)."""
    return (f"{percentile:g}th percentile of the per-head means: **{fheads['threshold']:.3f}**; heads above it "
            f"({len(fheads['heads'])} of {n_heads}); the control uses the {fheads['n_with_control']} instances that "
            "have such words:")
