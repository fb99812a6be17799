"""From word-piece attention to word attention (Clark et al. §4.1).

BERT splits some words into several pieces (about 8% of words in Clark's data).
To evaluate heads on word-level annotations the token-token map becomes a
word-word map:

* attention **to** a split word is the **sum** over its pieces;
* attention **from** a split word is the **mean** over its pieces.

Both keep each row a distribution: if every row of the token map sums to 1 and
the words cover every token, every row of the word map sums to 1.

Clark et al.'s released code takes the *first* piece for attention from a split
word (``from_reduce="first"``); the paper says mean, the default here.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch


def membership_matrix(words: Sequence[Sequence[int]], n_tokens: int) -> np.ndarray:
    """``M[token, word] = 1`` when piece ``token`` belongs to ``word``."""
    m = np.zeros((n_tokens, len(words)), dtype=np.float32)
    for w, positions in enumerate(words):
        if len(positions) == 0:
            raise ValueError(f"word {w} has no word pieces")
        for t in positions:
            if not 0 <= t < n_tokens:
                raise ValueError(f"word {w} names piece {t}, outside 0..{n_tokens - 1}")
            if m[t].any():
                raise ValueError(f"piece {t} belongs to two words")
            m[t, w] = 1.0
    return m


def token_to_word_attention(
    attn: np.ndarray | torch.Tensor,
    words: Sequence[Sequence[int]],
    from_reduce: str = "mean",
) -> np.ndarray:
    """Convert ``attn[..., query_token, key_token]`` to ``attn[..., query_word, key_word]``.

    ``words[w]`` lists the piece positions of word ``w`` (special tokens can be
    their own one-piece words). ``from_reduce`` is ``"mean"`` (the paper) or
    ``"first"`` (Clark's released code).
    """
    a = attn.detach().to(torch.float32).cpu() if isinstance(attn, torch.Tensor) else torch.as_tensor(
        np.asarray(attn), dtype=torch.float32)
    n_tokens = a.shape[-1]
    if a.shape[-2] != n_tokens:
        raise ValueError(f"expected square maps [..., query, key], got {tuple(a.shape)}")
    m = torch.from_numpy(membership_matrix(words, n_tokens))
    to_words = a @ m  # [..., query_token, word]: attention TO a word is summed over its pieces
    if from_reduce == "mean":
        pool = (m / m.sum(0, keepdim=True)).T  # [word, token]
    elif from_reduce == "first":
        pool = torch.zeros((len(words), n_tokens), dtype=torch.float32)
        for w, positions in enumerate(words):
            pool[w, min(positions)] = 1.0
    else:
        raise ValueError(f"from_reduce is 'mean' or 'first', got {from_reduce!r}")
    return (pool @ to_words).numpy()  # [..., query_word, key_word]
