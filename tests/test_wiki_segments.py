"""WikiText reading and Clark's [CLS] p1 [SEP] p2 [SEP] segments."""
from __future__ import annotations

import pytest

from attnbook.core.errors import EmptyDataError, MalformedInputError, MissingDataError, ParameterError
from attnbook.studies.clark.segments import clark_segments, encode_pair, paragraph_pairs, truncate_pair
from attnbook.data.wiki import clean_paragraph, load_articles, read_articles

RAW = (
    " = First Article = \r\n"
    " The first paragraph , with a 3 @,@ 000 @-@ strong army . \r\n"
    " = = A section = = \r\n"
    " The second paragraph . \r\n"
    " The third <unk> paragraph . \r\n"
    " = Second Article = \r\n"
    " Only one paragraph here . \r\n"
)


def _write_wiki(root, raw=RAW, valid=" \n = V = \n \n A valid paragraph . \n \n Another one . \n"):
    (root / "wiki" / "wikitext-2-raw").mkdir(parents=True)
    (root / "wiki" / "wikitext-2").mkdir(parents=True)
    (root / "wiki" / "wikitext-2-raw" / "wiki.test.raw").write_bytes(raw.encode())
    (root / "wiki" / "wikitext-2" / "valid.txt").write_text(valid)


def test_read_articles_raw_and_tokenized(tmp_path, monkeypatch):
    _write_wiki(tmp_path)
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    arts = load_articles()
    assert [a.title for a in arts] == ["First Article", "Second Article", "V"]
    assert arts[0].paragraphs == (
        "The first paragraph , with a 3,000-strong army .",
        "The second paragraph .",
        "The third [UNK] paragraph .",
    )
    assert arts[2].paragraphs == ("A valid paragraph .", "Another one .")
    pairs = paragraph_pairs(arts)
    assert len(pairs) == 2  # (p1, p2) of the first article and the valid one; singles are dropped
    assert pairs[0][2]["article"] == "First Article"


def test_missing_and_malformed(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    with pytest.raises(MissingDataError, match="attnbook fetch wiki") as info:
        load_articles()
    assert "ATTNBOOK_DATA" in str(info.value)
    bad = tmp_path / "bad.raw"
    bad.write_text(" A paragraph before any title . \n")
    with pytest.raises(MalformedInputError, match=r"bad.raw:1"):
        read_articles(bad, "test_raw")
    empty = tmp_path / "empty.raw"
    empty.write_text("\n\n")
    with pytest.raises(EmptyDataError):
        read_articles(empty, "test_raw")


def test_clean_paragraph():
    assert clean_paragraph(" a @-@ b @.@ c @,@ d <unk> ", "[UNK]") == "a-b.c,d [UNK]"


def test_truncate_pair_takes_from_the_longer_end():
    a, b = truncate_pair(list("abcdefgh"), list("xyz"), 6)
    assert a == list("abc") and b == list("xyz")
    a, b = truncate_pair(list("abcd"), list("wxyz"), 5)
    assert len(a) + len(b) == 5 and a[:2] == ["a", "b"] and b[:2] == ["w", "x"]


def test_encode_pair_layout(tokenizer):
    seg = encode_pair(tokenizer, "The cat sat on the mat. " * 20, "A dog. " * 20, max_tokens=32)
    assert len(seg) == 32
    assert seg.tokens[0] == "[CLS]" and seg.tokens[-1] == "[SEP]" and seg.tokens.count("[SEP]") == 2
    first_sep = seg.tokens.index("[SEP]")
    assert seg.token_type_ids[: first_sep + 1] == [0] * (first_sep + 1)
    assert set(seg.token_type_ids[first_sep + 1 :]) == {1}
    assert seg.input_ids == tokenizer.convert_tokens_to_ids(seg.tokens)
    with pytest.raises(ParameterError):
        encode_pair(tokenizer, "a", "b", max_tokens=3)


def test_clark_segments_sampling(tokenizer, tmp_path, monkeypatch):
    _write_wiki(tmp_path)
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    segs = clark_segments(tokenizer, 2, max_tokens=16, seed=1)
    assert len(segs) == 2 and all(len(s) <= 16 for s in segs)
    assert segs[0].meta["source"] == "test_raw"  # raw text first, tokenized valid only fills up
    assert [s.input_ids for s in segs] == [s.input_ids for s in clark_segments(tokenizer, 2, 16, seed=1)]
    with pytest.raises(ParameterError, match="lower n_segments"):
        clark_segments(tokenizer, 3, 16)


def test_example_segment_is_the_closest_to_the_length_among_the_first():
    from attnbook.engine.inputs import Encoded
    from attnbook.studies.clark.segments import example_segment

    segs = [Encoded([0] * n, [0] * n, ["x"] * n) for n in (60, 35, 45, 40, 41)]
    assert example_segment(segs) is segs[3]
    assert example_segment(segs, length=42) is segs[4]  # 41 is closer than 40 or 45
    assert example_segment(segs, length=40, among=3) is segs[1]  # 35 and 45 tie: the first
    with pytest.raises(EmptyDataError):
        example_segment([])
