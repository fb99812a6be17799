"""Clark et al.'s inputs: ``[CLS] paragraph-1 [SEP] paragraph-2 [SEP]``.

Clark et al. (§3, "Setup") extract attention over 1000 Wikipedia segments of at
most 128 word pieces, each made of two consecutive paragraphs, presented as
``[CLS] p1 [SEP] p2 [SEP]`` - BERT's pre-training input format. Here:

* **pairs**: non-overlapping consecutive paragraph pairs (p1, p2), (p3, p4), ...
  within each WikiText-2 article;
* **sampling**: the pairs of the raw test articles are shuffled with the seed
  and taken first; the tokenized valid articles (which contain ``[UNK]``) fill
  in only if more segments are asked for than the raw articles give;
* **segment ids**: 0 for ``[CLS] p1 [SEP]``, 1 for ``p2 [SEP]`` (as BERT was
  pre-trained; Clark's released code fed all tokens with segment id 0);
* **truncation**: when ``p1 + p2`` exceed ``max_tokens - 3`` pieces, pieces are
  removed from the end of the longer paragraph, one at a time, until they fit
  (the rule of BERT's own pre-training data code). The paragraphs always keep
  their beginnings.
"""
from __future__ import annotations

import random
from typing import Any, Sequence

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.extract import Encoded
from attnbook.engine.inputs import frame, template
from attnbook.data.wiki import Article, load_articles


def paragraph_pairs(articles: Sequence[Article]) -> list[tuple[str, str, dict]]:
    """Non-overlapping consecutive paragraph pairs of every article, with their origin."""
    pairs = []
    for a_idx, article in enumerate(articles):
        paras = article.paragraphs
        for i in range(0, len(paras) - 1, 2):
            pairs.append((paras[i], paras[i + 1], {"article": article.title, "source": article.source, "paragraph": i}))
    return pairs


def truncate_pair(a: list[str], b: list[str], budget: int) -> tuple[list[str], list[str]]:
    """Drop pieces from the end of the longer list until ``len(a) + len(b) <= budget``."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        (a if len(a) >= len(b) else b).pop()
    return a, b


def encode_pair(tokenizer: Any, p1: str, p2: str, max_tokens: int = 128, meta: dict | None = None) -> Encoded:
    """``p1`` and ``p2`` as the tokenizer frames a pair (``[CLS] p1 [SEP] p2 [SEP]`` with segment ids 0/1 for BERT,
    :func:`attnbook.engine.inputs.frame`), truncated to ``max_tokens`` pieces."""
    n_special = template(tokenizer).n_special(pair=True)
    if max_tokens < n_special + 2:
        raise ParameterError(f"max_tokens must be at least {n_special + 2}, got {max_tokens}")
    a, b = truncate_pair(tokenizer.tokenize(p1), tokenizer.tokenize(p2), max_tokens - n_special)
    tokens, types, _ = frame(tokenizer, a, b)
    return Encoded(tokenizer.convert_tokens_to_ids(tokens), types, tokens, meta=dict(meta or {}))


def clark_segments(
    tokenizer: Any,
    n_segments: int = 1000,
    max_tokens: int = 128,
    seed: int = 0,
    sources: tuple[str, ...] = ("test_raw", "valid"),
    exclude: int = 0,
) -> list[Encoded]:
    """``n_segments`` Clark-style segments from WikiText-2, sampled with ``seed``.

    ``exclude`` skips the first ``exclude`` sampled pairs (used to draw a disjoint
    set, e.g. for fitting an MLM head on other text than the analysed segments).
    Raises :class:`ParameterError` when fewer pairs exist than asked for.
    """
    if n_segments < 1:
        raise ParameterError(f"n_segments must be positive, got {n_segments}")
    rng = random.Random(seed)
    pool: list[tuple[str, str, dict]] = []
    for source in sources:  # raw text first; later sources only fill up
        pairs = paragraph_pairs(load_articles((source,), tokenizer.unk_token))
        rng.shuffle(pairs)
        pool.extend(pairs)
    if not pool:
        raise EmptyDataError("no paragraph pairs in the WikiText files")
    if exclude + n_segments > len(pool):
        raise ParameterError(
            f"asked for {n_segments} segments (after skipping {exclude}) but the WikiText files give "
            f"{len(pool)} paragraph pairs; lower n_segments"
        )
    chosen = pool[exclude : exclude + n_segments]
    return [encode_pair(tokenizer, p1, p2, max_tokens, meta) for p1, p2, meta in chosen]


def example_segment(segments: Sequence[Encoded], length: int = 40, among: int = 50) -> Encoded:
    """The segment, among the first ``among``, whose length is closest to ``length`` pieces (the first on ties).

    A short segment keeps a figure of its attention (Clark Fig. 1) readable.
    """
    if not segments:
        raise EmptyDataError("no segments to choose an example from")
    return min(segments[:among], key=lambda s: abs(len(s) - length))
