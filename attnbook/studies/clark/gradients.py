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

from typing import Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.engine.gradients import MLMHead, MLMHeadFit, get_mlm_head, stream_attention_gradients
from attnbook.engine.inputs import Batch, Encoded
from attnbook.engine.models import LoadedModel
from attnbook.studies.clark.segments import clark_segments
from attnbook.studies.clark.surface import PUNCT_TOKENS

#: segments held out to score a fitted MLM head; the fit uses ``MLM_FIT_SEGMENTS`` more
MLM_HELDOUT_SEGMENTS = 60
MLM_FIT_SEGMENTS = 300


class AttentionGradientStats:
    """Average ``|dL/d attn|`` per head for keys that are [SEP], [CLS], "."/",", or other unmasked tokens.

    A reducer of :func:`attnbook.engine.gradients.stream_attention_gradients`. Per segment the
    mean is over (real query, key in the category) pairs; then the mean over segments, as for
    the §3 attention statistics (:mod:`attnbook.studies.clark.surface`). ``result()`` maps
    ``grad_<category>`` to ``values[layer, head]``.
    """

    CATEGORIES = ("sep", "cls", "punct", "other")

    def __init__(self, sep_id: int, punct_ids: list[int], mask_id: int, cls_id: int):
        self.sep_id, self.punct_ids, self.mask_id, self.cls_id = sep_id, list(punct_ids), mask_id, cls_id
        self.sums: dict[str, torch.Tensor] = {}
        self.n = 0

    @classmethod
    def for_tokenizer(cls, tokenizer) -> "AttentionGradientStats":
        return cls(tokenizer.sep_token_id, tokenizer.convert_tokens_to_ids(list(PUNCT_TOKENS)), tokenizer.mask_token_id,
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
        for name, keys in zip(self.CATEGORIES, (sep, cls_, punct, other)):
            total = torch.einsum("blhqk,bq,bk->blh", g, real, keys)
            count = (real.sum(1) * keys.sum(1)).clamp(min=1)[:, None, None]
            value = (total / count).sum(0).double()
            self.sums[name] = self.sums[name] + value if name in self.sums else value
        self.n += int(input_ids.shape[0])

    def result(self) -> dict[str, np.ndarray]:
        return {f"grad_{k}": (v / self.n).numpy() for k, v in self.sums.items()}


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


def cached_attention_gradients(loaded: LoadedModel, head: MLMHead, examples: Sequence[Encoded], *,
                               batch_size: int = 8, seed: int = 0, use_cache: bool = True,
                               progress: bool = True) -> dict[str, np.ndarray]:
    """:func:`attention_gradients`, cached by model, MLM head, inputs and seed."""
    parts = {"model": loaded.key, "head": cache.digest(head.trainable_state()), "inputs": cache.digest(examples),
             "seed": seed, "code": "attention-gradients-v2"}
    return cache.cached_arrays("attention_gradients", parts,
                               lambda: attention_gradients(loaded, head, examples, batch_size=batch_size, seed=seed,
                                                           progress=progress), enabled=use_cache)


def mlm_head(loaded: LoadedModel, n_analysed: int, *, steps: int, batch_size: int, max_tokens: int = 128,
             seed: int = 0, use_cache: bool = True, progress: bool = True) -> MLMHeadFit:
    """The MLM head for the §3.2 gradients (:func:`attnbook.engine.gradients.get_mlm_head`), on text disjoint
    from the analysed segments.

    The segments drawn after the ``n_analysed`` analysed ones (same seed, :func:`clark_segments`'s
    ``exclude``): :data:`MLM_HELDOUT_SEGMENTS` score the head; when the model has no head of its own
    and ``steps > 0``, :data:`MLM_FIT_SEGMENTS` more fit it.
    """
    n_pool = MLM_FIT_SEGMENTS + MLM_HELDOUT_SEGMENTS if steps > 0 else MLM_HELDOUT_SEGMENTS
    pool = clark_segments(loaded.tokenizer, n_pool, max_tokens, seed=seed, exclude=n_analysed)
    return get_mlm_head(loaded, pool[:-MLM_HELDOUT_SEGMENTS] or pool, pool[-MLM_HELDOUT_SEGMENTS:], steps=steps,
                        batch_size=batch_size, seed=seed, use_cache=use_cache, progress=progress)
