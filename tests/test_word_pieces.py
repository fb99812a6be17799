"""``word_pieces`` groups one Rust call's pieces by word: the same pieces as tokenizing word by word."""
from __future__ import annotations

from attnbook.engine.inputs import word_pieces


def _one_by_one(tokenizer, words):
    return [tokenizer.tokenize(w) or [tokenizer.unk_token] for w in words]


def test_same_pieces_as_word_by_word_on_the_books_corpora(tokenizer):
    from attnbook.data import gum
    from attnbook.data.conllu import load_ud

    sentences = [s.words for s in load_ud("dev", 400)]
    sentences += [d.words[:300] for d in gum.load_split("dev", 3)]
    # words a corpus rarely has: empty, spaces only, control characters, accents, a word longer than WordPiece's
    # 100 characters, a special token's text, CJK, emoji
    sentences.append(["", "  ", "\u200b", "naïve", "x" * 150, "[SEP]", "東京", "🙂", "don't", "U.S.", "a b"])
    assert sum(map(len, sentences)) > 5000
    for words in sentences:
        assert word_pieces(tokenizer, words) == _one_by_one(tokenizer, words)


def test_a_truncating_call_before_does_not_truncate_the_words(tokenizer):
    words = ["word"] * 300
    tokenizer(["a " * 200], truncation=True, max_length=16, padding="max_length")  # leaves the backend truncating
    assert len(word_pieces(tokenizer, words)) == 300
    assert all(p == ["word"] for p in word_pieces(tokenizer, words))
    again = tokenizer("a " * 200, truncation=True, max_length=16)  # and the caller's setting is back
    assert len(again["input_ids"]) == 16

