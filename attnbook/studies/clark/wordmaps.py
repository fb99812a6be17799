"""Word-level attention of one example sentence, and how many words are split into pieces (Clark et al. §4.1).

Treebanks annotate words, BERT attends between word pieces. Clark §4.1 turns each token map
into a word map (attention *to* a split word summed over its pieces, *from* it averaged:
:func:`attnbook.engine.wordlevel.token_to_word_attention`); :func:`word_map_example` shows the
conversion on one UD sentence chosen for the relations of Clark's Figure 5, and
:func:`split_words` counts how often it matters.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from attnbook.core.errors import EmptyDataError
from attnbook.data.conllu import Sentence
from attnbook.engine.extract import collect_maps
from attnbook.engine.inputs import Encoded, encode_words, word_pieces
from attnbook.engine.models import LoadedModel
from attnbook.engine.wordlevel import token_to_word_attention

#: UD relations the chapter's example sentence should contain (Clark Fig. 5's det, dobj, pobj, poss)
EXAMPLE_DEPRELS = ("det", "obj", "case", "nmod:poss")


def find_example_sentence(
    sentences: Sequence[Sentence], deprels: Sequence[str], min_words: int = 8, max_words: int = 22
) -> int:
    """Index of the first sentence with ``min_words..max_words`` words containing every UD relation in ``deprels``.

    Falls back to the sentence (within the length range when possible) containing the most of them.
    """
    if not sentences:
        raise EmptyDataError("no sentences to choose from")
    want = set(deprels)
    best, best_key = 0, (-1, False)
    for i, s in enumerate(sentences):
        fits = min_words <= len(s) <= max_words
        have = len(want & set(s.deprel))
        if fits and have == len(want):
            return i
        key = (have, fits)
        if key > best_key:
            best, best_key = i, key
    return best


@dataclass
class WordMapExample:
    """One sentence's attention, token by token and word by word (Clark §4.1).

    ``token_maps[layer, head, token, token]``; ``word_maps[layer, head, word, word]`` over
    ``labels`` (``[CLS]``, the kept words, ``[SEP]``).
    """

    sentence: Sentence
    encoded: Encoded
    token_maps: np.ndarray
    word_maps: np.ndarray
    labels: list[str]

    def split_words(self) -> list[tuple[str, str]]:
        """``(word, its pieces)`` of every word split into several pieces."""
        enc = self.encoded
        return [(w, " ".join(enc.tokens[i] for i in enc.words[k + 1])) for k, w in enumerate(self.labels[1:-1])
                if len(enc.words[k + 1]) > 1]

    def describe(self) -> str:
        """The sentence, its pieces and split words, and the check that word-map rows still sum to 1."""
        deviation = np.abs(self.word_maps.sum(-1) - 1).max()
        return (f"sentence {self.sentence.sent_id}: {' '.join(self.sentence.words)}\n"
                f"{len(self.encoded.tokens)} pieces for {len(self.labels)} words; "
                f"split words: {self.split_words() or 'none'}\n"
                f"largest deviation of a word-map row sum from 1: {deviation:.1e}")


def word_map_example(loaded: LoadedModel, sentences: Sequence[Sentence], *, max_tokens: int = 128,
                     deprels: Sequence[str] = EXAMPLE_DEPRELS) -> WordMapExample:
    """The first of ``sentences`` fit to show (:func:`find_example_sentence`), with its token and word maps."""

    sent = sentences[find_example_sentence(sentences, deprels)]
    enc = encode_words(loaded.tokenizer, sent.words, max_tokens=max_tokens)
    token_maps = collect_maps(loaded, [enc])[0]
    word_maps = token_to_word_attention(token_maps, enc.words)
    labels = ["[CLS]"] + sent.words[: enc.meta["n_words_kept"][0]] + ["[SEP]"]
    return WordMapExample(sent, enc, token_maps, word_maps, labels)


@dataclass
class SplitWords:
    """How many of the words are split into several word pieces (Clark §4.1)."""

    n_split: int
    n_words: int

    @property
    def share(self) -> float:
        return self.n_split / self.n_words


def split_words(tokenizer, sentences: Sequence[Sentence]) -> SplitWords:
    """Count the words of ``sentences`` the tokenizer splits into more than one piece."""
    n_split = sum(sum(len(p) > 1 for p in word_pieces(tokenizer, s.words)) for s in sentences)
    n_words = sum(len(s) for s in sentences)
    if n_words == 0:
        raise EmptyDataError("no words")
    return SplitWords(n_split, n_words)
