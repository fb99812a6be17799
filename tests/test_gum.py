"""Tests for attnbook.data.gum: the OntoGUM coreference reader, documents, mention heads and types, splits."""
from __future__ import annotations

import numpy as np
import pytest
from toy_gum import TOY_CONLL, TOY_CONLLU, conll_text, make_data_dir, toy_files, write

from attnbook.core.errors import MalformedInputError, MissingDataError, ParameterError
from attnbook.data import gum


@pytest.fixture
def toy_doc(tmp_path) -> gum.CorefDoc:
    return gum.load_document(*toy_files(tmp_path))


def spans(doc):
    return {(m.start, m.end, m.cluster) for m in doc.mentions}


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("_", []),
        ("-", []),
        ("(7)", [("single", "7")]),
        ("(1(2)", [("open", "1"), ("single", "2")]),
        ("1)2)", [("close", "1"), ("close", "2")]),
        ("(3|(1)", [("open", "3"), ("single", "1")]),
        ("1)|(2", [("close", "1"), ("open", "2")]),
        ("(abstract-1", [("open", "abstract-1")]),
    ],
)
def test_parse_coref_cell(cell, expected):
    assert gum.parse_coref_cell(cell) == expected


@pytest.mark.parametrize("cell", ["(", "1", "((1)", "(1)|", "(1))", "x(1)"])
def test_parse_coref_cell_rejects_garbage(cell):
    with pytest.raises(ValueError):
        gum.parse_coref_cell(cell)


def test_reader_nested_multitoken_and_pipe(tmp_path):
    rows = [("A", "(1(2"), ("B", "2)"), ("C", "_"), ("D", "1)|(3)"), ("E", "(1)(4)")]
    got = gum.read_coref_conll(write(tmp_path / "x.conll", conll_text(rows)))
    assert got.forms == ["A", "B", "C", "D", "E"]
    assert set(got.spans) == {(0, 3, "1"), (0, 1, "2"), (3, 3, "3"), (4, 4, "1"), (4, 4, "4")}
    assert got.lines == [2, 3, 4, 5, 6]


def test_reader_same_id_nested_closes_innermost(tmp_path):
    rows = [("a", "(5"), ("b", "(5"), ("c", "5)"), ("d", "5)")]
    got = gum.read_coref_conll(write(tmp_path / "x.conll", conll_text(rows)))
    assert set(got.spans) == {(1, 2, "5"), (0, 3, "5")}


@pytest.mark.parametrize(
    "rows_or_text, line, fragment",
    [
        ([("a", "(1"), ("b", "2)")], 3, "without an opening"),
        ([("a", "(1"), ("b", "_"), ("c", "_")], 2, "never closed"),
        ([("a", "_"), ("b", "(1("), ("c", "_")], 3, "cannot parse"),
        ("# begin document \n0\ta\t_\n1\tb\n# end document\n", 3, "3 tab-separated columns"),
        ("# begin document \n0\ta\t_\n2\tb\t_\n# end document\n", 3, "out of sequence"),
        ("# begin document \n0\ta\t_\n# end document\n1\tb\t_\n", 4, "after '# end document'"),
        ("# begin document \n0\ta\t_\n# begin document x\n", 3, "second"),
    ],
)
def test_reader_malformed_names_file_and_line(tmp_path, rows_or_text, line, fragment):
    text = rows_or_text if isinstance(rows_or_text, str) else conll_text(rows_or_text)
    path = write(tmp_path / "bad.conll", text)
    with pytest.raises(MalformedInputError) as info:
        gum.read_coref_conll(path)
    assert info.value.path == path
    assert info.value.line == line
    assert fragment in str(info.value)
    assert f"bad.conll:{line}" in str(info.value)


def test_reader_lenient_mode_warns_and_skips(tmp_path):
    rows = [("a", "(1"), ("b", "(2)"), ("c", "2)"), ("d", "(3)")]
    path = write(tmp_path / "bad.conll", conll_text(rows))
    with pytest.warns(gum.CorefFormatWarning) as record:
        got = gum.read_coref_conll(path, strict=False)
    assert set(got.spans) == {(1, 1, "2"), (3, 3, "3")}
    messages = " ".join(str(r.message) for r in record)
    assert "bad.conll:4" in messages and "bad.conll:2" in messages


def test_load_document_sentences_heads_and_mentions(toy_doc):
    assert toy_doc.sentences == [(0, 5), (5, 14), (14, 18)]
    assert toy_doc.heads[0] == 1 and toy_doc.heads[1] == -1 and toy_doc.heads[5] == 6 and toy_doc.heads[11] == 12
    assert spans(toy_doc) == {
        (0, 0, "1"), (2, 3, "2"), (5, 6, "2"), (8, 8, "1"), (8, 9, "3"), (11, 11, "1"), (14, 14, "1"), (16, 16, "2"),
    }
    by_span = {(m.start, m.end): m for m in toy_doc.mentions}
    assert by_span[(2, 3)].head == 3 and by_span[(2, 3)].kind == "nominal" and by_span[(2, 3)].text == "two doctors"
    assert by_span[(8, 9)].head == 9 and by_span[(8, 9)].head_word == "cat"
    assert by_span[(0, 0)].kind == "proper"
    assert by_span[(8, 8)].kind == "pronoun" and (by_span[(8, 8)].number, by_span[(8, 8)].gender) == ("sing", "fem")
    assert by_span[(16, 16)].number == "plur" and by_span[(5, 6)].number == "plur"
    assert [(m.start, m.end) for m in toy_doc.mentions] == sorted((m.start, m.end) for m in toy_doc.mentions)


def test_conllu_ranges_and_empty_nodes_are_not_words(tmp_path):
    conllu = (
        "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
        "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
        "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
        "3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t3:conj\t_\n\n"
    )
    a = write(tmp_path / "d.conll", conll_text([("do", "_"), ("n't", "_"), ("go", "(1)")]))
    b = write(tmp_path / "d.conllu", conllu)
    doc = gum.load_document(a, b)
    assert doc.words == ["do", "n't", "go"]
    assert doc.heads.tolist() == [2, 2, -1]
    assert doc.mentions[0].kind == "nominal"  # a VERB head: neither pronoun nor proper


def test_token_count_mismatch_names_both_files(tmp_path):
    a = write(tmp_path / "toy.conll", conll_text(TOY_CONLL[:-1]))
    b = write(tmp_path / "toy.conllu", TOY_CONLLU)
    with pytest.raises(MalformedInputError) as info:
        gum.load_document(a, b)
    assert info.value.path == a and "17 tokens" in str(info.value) and "toy.conllu has 18" in str(info.value)


def test_form_mismatch_names_line_but_empty_form_takes_conllu_form(tmp_path):
    rows = list(TOY_CONLL)
    rows[3] = ("doctor", "2)")
    a = write(tmp_path / "toy.conll", conll_text(rows))
    b = write(tmp_path / "toy.conllu", TOY_CONLLU)
    with pytest.raises(MalformedInputError) as info:
        gum.load_document(a, b)
    assert info.value.line == 5 and "'doctor'" in str(info.value)
    rows[3] = ("", "2)")  # the GUM_news_iodine case: an empty form in the .conll file
    write(a, conll_text(rows))
    assert gum.load_document(a, b).words[3] == "doctors"


def test_malformed_conllu_names_its_line(tmp_path):
    a = write(tmp_path / "toy.conll", conll_text(TOY_CONLL))
    bad = TOY_CONLLU.replace("Tense=Past\t0\troot", "Tense=Past\tx\troot", 1)
    b = write(tmp_path / "toy.conllu", bad)
    with pytest.raises(MalformedInputError) as info:
        gum.load_document(a, b)
    assert info.value.path == b and info.value.line == 5


def test_mention_head_rules():
    #          0   1   2   3   4
    heads = np.array([1, -1, 3, 1, 1])
    upos = ["DET", "NOUN", "ADJ", "NOUN", "PUNCT"]
    assert gum.mention_head(0, 1, heads, upos) == 1  # the root is the one token headed outside
    assert gum.mention_head(2, 3, heads, upos) == 3
    assert gum.mention_head(2, 4, heads, upos) == 3  # a tie with punctuation: the content word
    assert gum.mention_head(0, 0, heads, upos) == 0
    cyclic = np.array([1, 0])  # no token headed outside (not a tree): the last token
    assert gum.mention_head(0, 1, cyclic, ["NOUN", "NOUN"]) == 1
    two_roots = np.array([-1, -1])  # a span over two sentences: the last root
    assert gum.mention_head(0, 1, two_roots, ["NOUN", "NOUN"]) == 1


@pytest.mark.parametrize(
    "upos, xpos, kind",
    [("PRON", "PRP", "pronoun"), ("PRON", "DT", "pronoun"), ("DET", "WP", "pronoun"), ("PROPN", "NNP", "proper"),
     ("NOUN", "NNP", "nominal"), ("NOUN", "NN", "nominal"), ("NUM", "CD", "nominal")],
)
def test_mention_kind(upos, xpos, kind):
    assert gum.mention_kind(upos, xpos) == kind


def test_agreement_features_lexicon_over_feats():
    assert gum.agreement_features("They", "pronoun", {"Number": "Sing"}) == ("plur", None, 3)
    assert gum.agreement_features("thou", "pronoun", {"Number": "Sing", "Person": "2"}) == ("sing", None, 2)
    assert gum.agreement_features("cats", "nominal", {"Number": "Plur"}) == ("plur", None, 3)


def test_splits_and_load_split(tmp_path, monkeypatch):
    md = "# Splits\n\n## dev\n\n  * GUM_a\n  * GUM_reddit_x\n  * GUM_b\n\n## test\n\n  * GUM_c\n"
    make_data_dir(tmp_path, ["GUM_a", "GUM_b", "GUM_c", "GUM_d", "GUM_e"], md)
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    assert gum.read_splits() == {"dev": ["GUM_a", "GUM_reddit_x", "GUM_b"], "test": ["GUM_c"]}
    assert gum.split_documents("dev") == ["GUM_a", "GUM_b"]  # reddit documents are not shipped
    assert gum.split_documents("train") == ["GUM_d", "GUM_e"]  # no train section: the rest
    docs = gum.load_split("dev", max_docs=1)
    assert [d.name for d in docs] == ["GUM_a"] and len(docs[0].mentions) == 8
    files = gum.split_files("dev", max_docs=1)
    assert [f.name for f in files] == ["splits.md", "GUM_a.conll", "GUM_a.conllu"]
    with pytest.raises(ParameterError):
        gum.split_documents("validation")
    with pytest.raises(ParameterError):
        gum.load_split("dev", max_docs=0)
    write(tmp_path / "coref" / "gum" / "splits.md", md + "  * GUM_missing\n")
    with pytest.raises(MissingDataError):
        gum.split_documents("test")


def test_splits_md_without_heading_is_malformed(tmp_path):
    path = write(tmp_path / "splits.md", "# Splits\n  * GUM_a\n")
    with pytest.raises(MalformedInputError) as info:
        gum.read_splits(path)
    assert info.value.line == 2


def test_mention_shifted_moves_every_position():
    m = gum.Mention(start=5, end=7, cluster="1", head=6, kind="nominal", text="the two doctors", head_word="doctors")
    s = m.shifted(5)
    assert (s.start, s.end, s.head) == (0, 2, 1) and s.cluster == "1" and s.text == m.text
    assert gum.MENTION_KINDS == ("pronoun", "proper", "nominal")


def test_document_files_name_both_formats(tmp_path, monkeypatch):
    make_data_dir(tmp_path, ["GUM_a"], "## dev\n  * GUM_a\n")
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    conll, conllu = gum.document_files("GUM_a")
    assert conll.name == "GUM_a.conll" and conll.parent.name == "coref_ontogum_conll"
    assert conllu.name == "GUM_a.conllu" and conllu.parent.name == "dep_conllu"
    assert gum.load_split("dev")[0].words == gum.load_document(conll, conllu).words


def test_read_ud_words_gives_document_heads_and_feats(tmp_path):
    _, conllu = toy_files(tmp_path)
    ud = gum.read_ud_words(conllu)
    assert len(ud.forms) == 18 and ud.sentences == [(0, 5), (5, 14), (14, 18)]
    assert ud.heads[5] == 6 and ud.heads[7] == -1  # sentence 2's words point inside sentence 2; its root is -1
    assert ud.feats[8] == {"Gender": "Fem", "Number": "Sing", "Person": "3", "Poss": "Yes"}
    assert ud.feats[4] == {}
