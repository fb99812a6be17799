"""Kovaleva et al. §5: heads that attend from a word piece to the same piece in the other sentence.

For STS-B and RTE the paper finds, by inspection, that the heads whose disabling hurts most attend
"from a word to the same word in the other sentence". :func:`word_match_shares` measures that
pattern for every head: the share of attention that goes from a piece to its copies in the
other sentence of the pair, averaged over the pieces that have a copy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import torch

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.inputs import Batch


def cross_sentence_matches(
    input_ids: torch.Tensor,
    token_type_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    skip_ids: Iterable[int] = (),
) -> torch.Tensor:
    """``match[batch, query, key]``: key is the same word piece as query, in the *other* sentence.

    Both tokens must be real (``attention_mask``), lie in different segments (``token_type_ids``)
    and not be in ``skip_ids`` (special tokens, punctuation).
    """
    ids = input_ids
    real = attention_mask.bool()
    if skip_ids:
        skip = torch.as_tensor(sorted(set(int(i) for i in skip_ids)), dtype=ids.dtype, device=ids.device)
        real = real & ~torch.isin(ids, skip)
    same = ids[:, :, None] == ids[:, None, :]
    other = token_type_ids[:, :, None] != token_type_ids[:, None, :]
    return same & other & real[:, :, None] & real[:, None, :]


@dataclass
class WordMatchShare:
    """Reducer of Kovaleva §5: per head, the attention a word piece gives to its copies in the other sentence.

    Over every query token that has at least one copy in the other sentence, ``share[layer, head]``
    is the mean of ``Σ_{key: copy} α[query, key]``; ``chance`` is the same mean under uniform
    attention over the real tokens (copies / real length), the level a head with no preference reaches.
    """

    total: np.ndarray | None = None
    uniform: float = 0.0
    n_queries: int = 0

    def update(self, attn: torch.Tensor, match: torch.Tensor, attention_mask: torch.Tensor) -> None:
        """``attn[batch, layer, head, query, key]``, ``match[batch, query, key]`` (bool), ``attention_mask[batch, key]``."""
        m = match.to(attn.dtype)
        mass = torch.einsum("blhqk,bqk->blhq", attn, m)  # attention to copies, per query
        has = match.any(-1)  # [batch, query]
        summed = (mass * has[:, None, None, :].to(attn.dtype)).sum((0, 3)).double().cpu().numpy()
        self.total = summed if self.total is None else self.total + summed
        length = attention_mask.sum(-1, keepdim=True).to(torch.float64)  # [batch, 1]
        self.uniform += float((m.sum(-1).double() / length)[has].sum())
        self.n_queries += int(has.sum())

    def result(self) -> dict:
        if self.total is None or self.n_queries == 0:
            raise EmptyDataError("no token has a copy in the other sentence; nothing to measure")
        return {"share": self.total / self.n_queries, "chance": self.uniform / self.n_queries, "n_queries": self.n_queries}


def skip_token_ids(tokenizer: Any) -> list[int]:
    """Ids never counted as word matches: the special tokens and single-character punctuation pieces."""
    import string

    ids = set(int(i) for i in getattr(tokenizer, "all_special_ids", []))
    vocab = tokenizer.get_vocab()
    ids.update(int(vocab[c]) for c in string.punctuation if c in vocab)
    return sorted(ids)


def word_match_shares(model: torch.nn.Module, batches: Sequence[Batch], skip_ids: Iterable[int] = ()) -> dict:
    """Run ``model`` (eager attention) over ``batches`` and reduce with :class:`WordMatchShare`."""
    skip = list(skip_ids)
    red = WordMatchShare()
    was = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for b in batches:
                if "token_type_ids" not in b.inputs:
                    raise ParameterError("word matching needs sentence pairs (token_type_ids)")
                out = model(**b.inputs, output_attentions=True)
                attn = torch.stack(out.attentions, dim=1)
                match = cross_sentence_matches(b.inputs["input_ids"], b.inputs["token_type_ids"], b.inputs["attention_mask"], skip)
                if match.any():
                    red.update(attn, match, b.inputs["attention_mask"])
    finally:
        model.train(was)
    return red.result()
