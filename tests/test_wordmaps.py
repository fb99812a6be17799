"""Clark §4.1 on one sentence: the example is chosen by its relations, its word maps keep rows summing to 1."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.core.errors import EmptyDataError
from attnbook.data.conllu import Sentence
from attnbook.engine.extract import collect_maps
from attnbook.engine.inputs import encode_words
from attnbook.engine.wordlevel import token_to_word_attention
from attnbook.studies.clark import wordmaps


def sentence(deprels: list[str]) -> Sentence:
    n = len(deprels)
    words = [f"w{i}" for i in range(n)]
    heads = [0 if r == "root" else 1 for r in deprels]
    return Sentence(ids=list(range(1, n + 1)), words=words, lemmas=words, upos=["X"] * n, xpos=["X"] * n,
                    feats=["_"] * n, head=heads, deprel=deprels, deps=["_"] * n, misc=["_"] * n)


def test_find_example_sentence_needs_every_relation_and_the_length():
    short = sentence(["root", "det", "obj"])
    long_ok = sentence(["root", "det", "obj", "case"] + ["punct"] * 30)
    good = sentence(["root", "det", "obj", "case"] + ["punct"] * 6)
    partial = sentence(["root", "det"] + ["punct"] * 8)
    sents = [short, long_ok, partial, good]
    assert wordmaps.find_example_sentence(sents, ["det", "obj", "case"]) == 3
    # no sentence has everything: the one with most of the relations, preferring the length range
    assert wordmaps.find_example_sentence([partial, short], ["det", "obj", "nmod:poss"]) == 1
    with pytest.raises(EmptyDataError):
        wordmaps.find_example_sentence([], ["det"])


def test_word_map_example_converts_the_chosen_sentence(tiny_bert):
    words = ["the", "unbelievably", "gyroscopic", "cat", "'s", "owner", "sat", "on", "the", "mat", "today", "."]
    deprels = ["det", "advmod", "amod", "nmod:poss", "case", "nsubj", "root", "case", "det", "obl", "obl:tmod",
               "punct"]
    good = Sentence(ids=list(range(1, 13)), words=words, lemmas=words, upos=["X"] * 12, xpos=["X"] * 12,
                    feats=["_"] * 12, head=[4, 3, 4, 6, 4, 7, 0, 10, 10, 7, 7, 7], deprel=deprels,
                    deps=["_"] * 12, misc=["_"] * 12, comments=["# sent_id = s2"])
    short = sentence(["root", "det"])
    ex = wordmaps.word_map_example(tiny_bert, [short, good], max_tokens=64, deprels=["det", "case", "nmod:poss"])
    assert ex.sentence is good and ex.labels == ["[CLS]", *words, "[SEP]"]
    enc = encode_words(tiny_bert.tokenizer, words, max_tokens=64)
    np.testing.assert_allclose(ex.token_maps, collect_maps(tiny_bert, [enc])[0])
    np.testing.assert_allclose(ex.word_maps, token_to_word_attention(ex.token_maps, enc.words))
    assert ex.word_maps.shape[-1] == len(ex.labels)
    np.testing.assert_allclose(ex.word_maps.sum(-1), 1.0, atol=1e-5)
    split = dict(ex.split_words())
    assert "gyroscopic" in split and len(split["gyroscopic"].split()) > 1 and "cat" not in split
    text = ex.describe()
    assert text.startswith("sentence s2: the unbelievably") and f"{len(ex.labels)} words" in text
    assert "largest deviation of a word-map row sum from 1" in text


def test_split_words_counts_words_of_several_pieces(tokenizer):
    s = sentence(["root", "det", "obj"])
    s.words[:] = ["cat", "gyroscopic", "the"]
    split = wordmaps.split_words(tokenizer, [s, s])
    assert (split.n_split, split.n_words) == (2, 6) and split.share == pytest.approx(1 / 3)
    with pytest.raises(EmptyDataError):
        wordmaps.split_words(tokenizer, [])
