"""Turning words into model inputs while remembering which pieces make each word.

Word-level analyses (dependency heads, coreference, FrameNet, linguistic
features) start from gold words. :func:`encode_words` runs the WordPiece
tokenizer word by word, so every word maps to a contiguous run of pieces, and
returns an :class:`~attnbook.engine.extract.Encoded` whose ``words`` field lists those
runs. ``[CLS]`` and ``[SEP]`` are one-piece words of their own at the ends of the
list (``meta["special_words"]`` gives their word indices), so a converted
word-level map keeps rows that sum to 1.

Truncation policy (stated once, applied everywhere): when the pieces do not fit
in ``max_tokens`` (special tokens included), whole words are dropped from the
end of the longest sentence first, never part of a word; ``meta["n_words_kept"]``
says how many words of each sentence survived, and callers drop annotations
that point past them.
"""
from __future__ import annotations

from typing import Any, Sequence

from attnbook.engine.extract import Encoded


def word_pieces(tokenizer: Any, words: Sequence[str]) -> list[list[str]]:
    """The WordPiece pieces of each word (a word that tokenizes to nothing becomes ``[UNK]``)."""
    out = []
    for w in words:
        pieces = tokenizer.tokenize(w)
        out.append(pieces if pieces else [tokenizer.unk_token])
    return out


def encode_words(
    tokenizer: Any,
    words: Sequence[str],
    second: Sequence[str] | None = None,
    *,
    max_tokens: int = 128,
    meta: dict | None = None,
) -> Encoded:
    """Encode one word sequence (or a pair) as ``[CLS] words [SEP] (second [SEP])``.

    Returns an :class:`Encoded` whose ``words`` lists, in order, the piece positions of
    ``[CLS]``, of every kept word of ``words``, of the first ``[SEP]``, then (for a pair)
    of every kept word of ``second`` and of the final ``[SEP]``.
    """
    first_pieces = word_pieces(tokenizer, words)
    second_pieces = word_pieces(tokenizer, second) if second is not None else None
    n_special = 3 if second_pieces is not None else 2
    budget = max_tokens - n_special
    if budget < 2:
        raise ValueError(f"max_tokens={max_tokens} leaves no room for words")
    lens = [sum(map(len, first_pieces)), sum(map(len, second_pieces)) if second_pieces else 0]
    while lens[0] + lens[1] > budget:  # drop whole words from the end of the longer side
        side = first_pieces if (lens[0] >= lens[1] or second_pieces is None) else second_pieces
        dropped = side.pop()
        lens[0 if side is first_pieces else 1] -= len(dropped)

    tokens: list[str] = [tokenizer.cls_token]
    types: list[int] = [0]
    groups: list[list[int]] = [[0]]
    special_words = [0]

    def add(pieces_per_word: list[list[str]], segment: int) -> None:
        for pieces in pieces_per_word:
            start = len(tokens)
            tokens.extend(pieces)
            types.extend([segment] * len(pieces))
            groups.append(list(range(start, len(tokens))))
        special_words.append(len(groups))
        groups.append([len(tokens)])
        tokens.append(tokenizer.sep_token)
        types.append(segment)

    add(first_pieces, 0)
    if second_pieces is not None:
        add(second_pieces, 1)
    info = dict(meta or {})
    info["special_words"] = special_words
    info["n_words_kept"] = [len(first_pieces)] + ([len(second_pieces)] if second_pieces is not None else [])
    return Encoded(
        input_ids=tokenizer.convert_tokens_to_ids(tokens),
        token_type_ids=types,
        tokens=tokens,
        words=groups,
        meta=info,
    )


def content_word_index(encoded: Encoded, sentence: int, word: int) -> int:
    """Index in ``encoded.words`` of word ``word`` (0-based) of sentence ``sentence`` (0 or 1)."""
    kept = encoded.meta["n_words_kept"]
    if word >= kept[sentence]:
        raise IndexError(f"word {word} of sentence {sentence} was truncated away")
    return 1 + word if sentence == 0 else 2 + kept[0] + word
