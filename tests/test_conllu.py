"""CoNLL-U reader and writer: fields, skipped lines, round trip, malformed input with file and line."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook.data.conllu import (
    Sentence, format_conllu, iter_conllu, parse_conllu, read_conllu, write_conllu,
)
from attnbook.core.errors import EmptyDataError, MalformedInputError

DOC = """\
# newdoc id = doc1
# sent_id = doc1-0001
# newpar id = doc1-p0001
# text = I don't like it.
1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tI\tI\tPRON\tPRP\tCase=Nom\t4\tnsubj\t4:nsubj\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t4:aux\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_
4\tlike\tlike\tVERB\tVB\t_\t0\troot\t0:root\t_
5\tit\tit\tPRON\tPRP\t_\t4\tobj\t4:obj\tSpaceAfter=No
6\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_

# sent_id = doc1-0002
# text = Go home
1\tGo\tgo\tVERB\tVB\t_\t0\troot\t0:root\t_
1.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t0:root\t_
2\thome\thome\tADV\tRB\t_\t1\tadvmod\t1:advmod\t_

"""


def write(tmp_path, text: str, name: str = "x.conllu"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_words_columns_and_comments(tmp_path):
    sents = read_conllu(write(tmp_path, DOC))
    assert len(sents) == 2
    s = sents[0]
    assert s.words == ["I", "do", "n't", "like", "it", "."]  # the range line 1-2 is not a word
    assert s.ids == [1, 2, 3, 4, 5, 6]
    assert s.upos[3] == "VERB" and s.xpos[2] == "RB"
    assert s.head == [4, 4, 4, 0, 4, 4]
    assert s.heads0() == [3, 3, 3, -1, 3, 3]
    assert s.deprel[4] == "obj"
    assert s.misc[4] == "SpaceAfter=No"
    assert s.sent_id == "doc1-0001" and s.text == "I don't like it."
    assert s.newdoc and s.newpar
    assert sents[1].words == ["Go", "home"]  # the empty node 1.1 is skipped
    assert not sents[1].newdoc and not sents[1].newpar
    assert sents[1].source == (str(tmp_path / "x.conllu"), 13)


def test_round_trip_is_byte_identical(tmp_path):
    path = write(tmp_path, DOC)
    out = write_conllu(read_conllu(path), tmp_path / "out.conllu")
    assert out.read_text(encoding="utf-8") == DOC


def test_last_sentence_without_blank_line_and_max_sentences(tmp_path):
    path = write(tmp_path, DOC.rstrip("\n") + "\n")
    assert len(list(iter_conllu(path))) == 2
    assert len(read_conllu(path, max_sentences=1)) == 1


def test_empty_file_is_empty_data(tmp_path):
    with pytest.raises(EmptyDataError):
        read_conllu(write(tmp_path, "\n\n"))


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


@pytest.mark.parametrize(
    "bad, replacement, message",
    [
        ("5\tit\tit\tPRON\tPRP\t_\t4\tobj\t4:obj\tSpaceAfter=No", "5\tit\tit\tPRON\tPRP\t_\t4\tobj",
         "10 tab-separated"),
        ("5\tit\tit\tPRON\tPRP\t_\t4\tobj", "five\tit\tit\tPRON\tPRP\t_\t4\tobj\t4:obj\t_", "ID"),
        ("5\tit\tit\tPRON\tPRP\t_\t4\tobj", "5\tit\tit\tPRON\tPRP\t_\tfour\tobj\t4:obj\t_", "HEAD"),
        ("5\tit\tit\tPRON\tPRP\t_\t4\tobj", "5\tit\tit\tPRON\tPRP\t_\t9\tobj\t4:obj\t_", "outside 0..6"),
        ("5\tit\tit\tPRON\tPRP\t_\t4\tobj", "7\tit\tit\tPRON\tPRP\t_\t4\tobj\t4:obj\t_", "consecutive"),
        ("5\tit\tit\tPRON\tPRP\t_\t4\tobj", "5\tit\tit\tPRON\tPRP\t_\t5\tobj\t4:obj\t_", "own head"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, bad, replacement, message):
    lines = DOC.splitlines(keepends=True)
    k = next(i for i, line in enumerate(lines) if line.startswith(bad))
    lines[k] = replacement + "\n"
    text = "".join(lines)
    path = write(tmp_path, text, "bad.conllu")
    with pytest.raises(MalformedInputError) as info:
        read_conllu(path)
    assert info.value.path == path
    assert info.value.line == k + 1
    assert message in str(info.value)
    assert f"bad.conllu:{k + 1}" in str(info.value)


def test_comment_inside_word_lines_is_malformed():
    text = "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n# oops\n2\tb\tb\tX\tX\t_\t1\tdep\t_\t_\n"
    with pytest.raises(MalformedInputError) as info:
        list(parse_conllu(text.splitlines(True), "mem.conllu"))
    assert info.value.line == 2


@st.composite
def sentences(draw):
    n = draw(st.integers(1, 8))
    root = draw(st.integers(0, n - 1))
    heads = [0 if i == root else draw(st.integers(1, n).filter(lambda h, i=i: h != i + 1)) for i in range(n)]
    word = st.text(alphabet="abcXYZ'.-", min_size=1, max_size=5)
    words = [draw(word) for _ in range(n)]
    rels = [draw(st.sampled_from(["nsubj", "obj", "det", "nmod:poss", "punct"])) for _ in range(n)]
    return Sentence(
        ids=list(range(1, n + 1)), words=words, lemmas=[w.lower() for w in words], upos=["X"] * n,
        xpos=["NN"] * n, feats=["_"] * n, head=heads, deprel=["root" if h == 0 else r for h, r in zip(heads, rels)],
        deps=["_"] * n, misc=["_"] * n, comments=[f"# sent_id = s{n}"],
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(sentences(), min_size=1, max_size=4))
def test_format_then_parse_gives_the_same_trees(sents):
    back = list(parse_conllu(format_conllu(sents).splitlines(True)))
    assert [(s.words, s.head, s.deprel, s.comments) for s in back] == [
        (s.words, s.head, s.deprel, s.comments) for s in sents
    ]
