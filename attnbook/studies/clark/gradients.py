"""Is attention to ``[SEP]`` a no-op? Gradients of the MLM loss by key category (Clark et al. §3.2, Fig. 3).

Clark et al. measure how much the masked-language-modelling (MLM) loss would change if a head
attended more or less to a token: the magnitude of the gradient of the loss with respect to each
attention weight, ``|dL / d attn[layer, head, query, key]|``, averaged over the weights to
``[SEP]``, to ``.``/``,`` and to all other unmasked tokens. The book adds ``[CLS]``, because a
model may use ``[CLS]`` rather than ``[SEP]`` as its no-op target.

The engine runs the model (:func:`attnbook.engine.gradients.stream_attention_gradients`, with an
MLM head from :func:`attnbook.engine.gradients.get_mlm_head`); :class:`AttentionGradientStats` is
the reducer that folds each batch's gradients into the per-head averages.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError
from attnbook.engine.gradients import MLMHead, MLMHeadFit, get_mlm_head, masked_copies, stream_attention_gradients
from attnbook.engine.inputs import Batch, Encoded
from attnbook.engine.models import LoadedModel
from attnbook.stats import proportion_interval
from attnbook.studies.clark.segments import clark_segments
from attnbook.studies.clark.surface import layer_means, punct_ids

#: segments held out to score the MLM head; a fit uses ``fit_segments`` (default ``MLM_FIT_SEGMENTS``) more to
#: train on and ``MLM_VALID_SEGMENTS`` more to decide when to stop
MLM_HELDOUT_SEGMENTS = 60
MLM_VALID_SEGMENTS = 60
MLM_FIT_SEGMENTS = 300


class AttentionGradientStats:
    """Average ``|dL/d attn|`` per head for keys that are [SEP], [CLS], "."/",", or other unmasked tokens.

    A reducer of :func:`attnbook.engine.gradients.stream_attention_gradients`. Per segment the
    mean is over (real query, key in the category) pairs; then the mean over segments, as for
    the §3 attention statistics (:mod:`attnbook.studies.clark.surface`). ``result()`` maps
    ``grad_<category>`` to ``values[layer, head]`` and keeps the per-segment values behind the means,
    ``per_segment[segment, category, layer, head]`` (categories in :attr:`CATEGORIES` order, segments in
    input order), so that the gradient comparison can be bootstrapped over segments.
    """

    CATEGORIES = ("sep", "cls", "punct", "other")

    def __init__(self, sep_id: int, punct_ids: list[int], mask_id: int, cls_id: int):
        self.sep_id, self.punct_ids, self.mask_id, self.cls_id = sep_id, list(punct_ids), mask_id, cls_id
        self.sums: dict[str, torch.Tensor] = {}
        self.segments: dict[int, np.ndarray] = {}  # input index -> [category, layer, head]
        self.n = 0

    @classmethod
    def for_tokenizer(cls, tokenizer) -> "AttentionGradientStats":
        return cls(tokenizer.sep_token_id, punct_ids(tokenizer), tokenizer.mask_token_id,
                   tokenizer.cls_token_id)

    def update(self, grads: torch.Tensor, batch: Batch, targets: torch.Tensor) -> None:
        """``grads[batch, layer, head, query, key]``; ``targets`` marks the masked pieces (not -100)."""
        input_ids = batch.input_ids
        real = batch.attention_mask.float()
        sep = (input_ids == self.sep_id).float() * real
        punct = torch.isin(input_ids, torch.tensor(self.punct_ids)).float() * real
        masked = (targets != -100).float()
        cls_ = (input_ids == self.cls_id).float() * real
        other = real * (1 - sep) * (1 - punct) * (1 - masked) * (1 - cls_)
        g = grads.abs()
        per_segment = []
        for name, keys in zip(self.CATEGORIES, (sep, cls_, punct, other)):
            total = torch.einsum("blhqk,bq,bk->blh", g, real, keys)
            count = (real.sum(1) * keys.sum(1)).clamp(min=1)[:, None, None]
            per_segment.append((total / count).double())  # [batch, layer, head]
            value = per_segment[-1].sum(0)
            self.sums[name] = self.sums[name] + value if name in self.sums else value
        kept = torch.stack(per_segment, dim=1).numpy()  # [batch, category, layer, head]
        indices = batch.index if batch.index is not None else range(self.n, self.n + len(kept))
        for b, index in enumerate(indices):
            self.segments[int(index)] = kept[b]
        self.n += int(input_ids.shape[0])

    def result(self) -> dict[str, np.ndarray]:
        out = {f"grad_{k}": (v / self.n).numpy() for k, v in self.sums.items()}
        out["per_segment"] = np.stack([self.segments[i] for i in sorted(self.segments)])
        return out


def attention_gradients(
    loaded: LoadedModel,
    head: MLMHead,
    examples: Sequence[Encoded],
    *,
    batch_size: int = 8,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """``grad_sep``, ``grad_cls``, ``grad_punct``, ``grad_other``: mean ``|dL/d attn|`` per head,
    ``values[layer, head]``.

    ``L`` is the per-segment mean MLM loss over BERT-style masked pieces (seeded with ``seed``).
    """
    reducer = AttentionGradientStats.for_tokenizer(loaded.tokenizer)
    (result,) = stream_attention_gradients(loaded, head, examples, [reducer], batch_size=batch_size, seed=seed,
                                           progress=progress)
    return result


@cache.memoized("attention_gradients", ignore=("batch_size", "progress"))
def cached_attention_gradients(loaded: LoadedModel, head: MLMHead, examples: Sequence[Encoded], *,
                               batch_size: int = 8, seed: int = 0, progress: bool = True) -> dict[str, np.ndarray]:
    """:func:`attention_gradients`, cached by model, MLM head (its trained weights), inputs and seed."""
    return attention_gradients(loaded, head, examples, batch_size=batch_size, seed=seed, progress=progress)


def _mlm_segments(loaded: LoadedModel, n_analysed: int, steps: int, max_tokens: int, seed: int,
                  fit_segments: int = MLM_FIT_SEGMENTS):
    """The segments the MLM head is fitted on, stopped on and scored on (see :func:`mlm_head`):
    ``(train, validation, heldout)``; without fitting (``steps == 0``) only the held-out ones are drawn."""
    n_fit = fit_segments + MLM_VALID_SEGMENTS if steps > 0 else 0
    pool = clark_segments(loaded.tokenizer, n_fit + MLM_HELDOUT_SEGMENTS, max_tokens, seed=seed, exclude=n_analysed)
    heldout = pool[-MLM_HELDOUT_SEGMENTS:] if len(pool) > MLM_HELDOUT_SEGMENTS else pool
    fitting = pool[: len(pool) - len(heldout)]
    if not fitting:
        return pool, pool, heldout
    return fitting[:-MLM_VALID_SEGMENTS] or fitting, fitting[-MLM_VALID_SEGMENTS:], heldout


def mlm_head(loaded: LoadedModel, n_analysed: int, *, steps: int, batch_size: int, max_tokens: int = 128,
             seed: int = 0, fit_segments: int = MLM_FIT_SEGMENTS, lr: float = 1e-3, eval_every: int = 50,
             progress: bool = True) -> MLMHeadFit:
    """The MLM head for the §3.2 gradients (:func:`attnbook.engine.gradients.get_mlm_head`), on text disjoint
    from the analysed segments.

    The segments drawn after the ``n_analysed`` analysed ones (same seed, :func:`clark_segments`'s
    ``exclude``): :data:`MLM_HELDOUT_SEGMENTS` score the head; when the model has no head of its own
    and ``steps > 0``, ``fit_segments`` more fit it for at most ``steps`` updates and
    :data:`MLM_VALID_SEGMENTS` more decide when to stop (evaluated every ``eval_every`` updates; early stopping,
    the best weights kept).
    """
    train, valid, heldout = _mlm_segments(loaded, n_analysed, steps, max_tokens, seed, fit_segments)
    return get_mlm_head(loaded, train, heldout, validation=valid, steps=steps, batch_size=batch_size, seed=seed,
                        lr=lr, eval_every=eval_every, progress=progress)


@dataclass
class MLMQuality:
    """How well the MLM head behind the §3.2 gradients predicts masked pieces, beside a constant predictor.

    ``accuracy`` is the head's top-1 accuracy on the ``n_pieces`` masked pieces of the held-out segments, with
    its exact (Clopper-Pearson) 95% interval ``low``-``high``; ``constant_accuracy`` is the accuracy there of
    always predicting ``constant_piece``, the most frequent masked piece of the segments the head was fitted
    on (of the held-out segments for a checkpoint's own head).
    """

    source: str
    accuracy: float
    low: float
    high: float
    n_pieces: int
    constant_accuracy: float
    constant_piece: str
    curve: list = field(default_factory=list)
    best_step: int = 0
    steps: int = 0

    @property
    def better_than_constant(self) -> bool:
        """The whole interval of the head's accuracy lies above the constant predictor's."""
        return self.low > self.constant_accuracy

    def text(self) -> str:
        return (f"top-1 {self.accuracy:.1%} [{self.low:.1%}, {self.high:.1%}] on {self.n_pieces} held-out masked "
                f"pieces; unigram baseline (always predicting {self.constant_piece!r}): {self.constant_accuracy:.1%}")


def mlm_quality(loaded: LoadedModel, fit: MLMHeadFit, n_analysed: int, *, steps: int, max_tokens: int = 128,
                seed: int = 0, fit_segments: int = MLM_FIT_SEGMENTS) -> MLMQuality:
    """:class:`MLMQuality` of ``fit`` (:func:`mlm_head` with the same arguments): its held-out accuracy with an
    exact interval, and the constant predictor's accuracy on the same masked pieces (the masks are
    :func:`attnbook.engine.gradients.masked_copies`' with the seeds the fit used)."""
    from collections import Counter


    train, _, heldout = _mlm_segments(loaded, n_analysed, steps, max_tokens, seed, fit_segments)
    tok = loaded.tokenizer
    fit_targets = [t for tgt in masked_copies(train, tok, seed)[1] for t in tgt if t != -100]
    held_targets = [t for tgt in masked_copies(heldout, tok, seed + 1)[1] for t in tgt if t != -100]
    if fit.source == "pretrained":
        fit_targets = held_targets
    if not held_targets:
        raise EmptyDataError("no masked pieces in the held-out segments")
    piece = Counter(fit_targets or held_targets).most_common(1)[0][0]
    n = len(held_targets)
    k = int(round(fit.heldout_accuracy * n))
    low, high = proportion_interval(k, n)
    return MLMQuality(fit.source, k / n, low, high, n, sum(t == piece for t in held_targets) / n,
                      tok.convert_ids_to_tokens([piece])[0], list(fit.curve), fit.best_step, fit.steps)


def mlm_head_numbers(fit: MLMHeadFit, quality: MLMQuality) -> dict:
    """Chapter 1's results-file entry of the MLM head behind the §3.2 gradients (Clark et al. §3.2): where it comes
    from, its held-out loss and accuracy with the accuracy's interval, the constant predictor's accuracy, and the fit
    (updates run, the update kept, the validation curve)."""
    return {"mlm_head": {"source": fit.source, "heldout_loss": fit.heldout_loss,
                         "heldout_accuracy": fit.heldout_accuracy, "heldout_low": quality.low,
                         "heldout_high": quality.high, "heldout_pieces": quality.n_pieces,
                         "unigram_accuracy": quality.constant_accuracy, "steps": fit.steps,
                         "best_step": fit.best_step, "validation_curve": fit.curve}}


def gradient_numbers(grads: dict[str, np.ndarray]) -> dict:
    """Chapter 1's results-file entry of Clark et al. Fig. 3: per key category, ``|dL / d attn|`` averaged over
    each layer's heads (:func:`attention_gradients`' ``grad_<category>`` values)."""
    return {"grad_by_layer": {k: layer_means(v).tolist() for k, v in grads.items() if k.startswith("grad_")}}
