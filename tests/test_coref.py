"""Tests for attnbook.studies.clark.coref (Clark et al. §4.3): readers, mentions, windows, baselines, head scoring."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnbook.studies.clark import coref
from attnbook.core.errors import EmptyDataError, MalformedInputError, MissingDataError, ParameterError
from attnbook.engine.extract import collect_maps

# ----------------------------------------------------------------------------- fixtures
# A toy document with a known answer for every baseline (positions are document words):
#   S1: Mary(0) met(1) two(2) doctors(3) .(4)
#   S2: The(5) doctors(6) saw(7) her(8) cat(9) and(10) Mary(11) smiled(12) .(13)
#   S3: She(14) thanked(15) them(16) .(17)
# clusters: 1 = Mary, her, Mary, She; 2 = two doctors, The doctors, them; 3 = her cat.

TOY_CONLL = [
    ("Mary", "(1)"), ("met", "_"), ("two", "(2"), ("doctors", "2)"), (".", "_"),
    ("The", "(2"), ("doctors", "2)"), ("saw", "_"), ("her", "(3|(1)"), ("cat", "3)"),
    ("and", "_"), ("Mary", "(1)"), ("smiled", "_"), (".", "_"),
    ("She", "(1)"), ("thanked", "_"), ("them", "(2)"), (".", "_"),
]

TOY_CONLLU = """# newdoc id = toy
# sent_id = toy-1
# text = Mary met two doctors.
1	Mary	Mary	PROPN	NNP	Number=Sing	2	nsubj	_	_
2	met	meet	VERB	VBD	Tense=Past	0	root	_	_
3	two	two	NUM	CD	NumType=Card	4	nummod	_	_
4	doctors	doctor	NOUN	NNS	Number=Plur	2	obj	_	_
5	.	.	PUNCT	.	_	2	punct	_	_

# sent_id = toy-2
# text = The doctors saw her cat and Mary smiled.
1	The	the	DET	DT	Definite=Def	2	det	_	_
2	doctors	doctor	NOUN	NNS	Number=Plur	3	nsubj	_	_
3	saw	see	VERB	VBD	Tense=Past	0	root	_	_
4	her	her	PRON	PRP$	Gender=Fem|Number=Sing|Person=3|Poss=Yes	5	nmod:poss	_	_
5	cat	cat	NOUN	NN	Number=Sing	3	obj	_	_
6	and	and	CCONJ	CC	_	8	cc	_	_
7	Mary	Mary	PROPN	NNP	Number=Sing	8	nsubj	_	_
8	smiled	smile	VERB	VBD	Tense=Past	3	conj	_	_
9	.	.	PUNCT	.	_	3	punct	_	_

# sent_id = toy-3
# text = She thanked them.
1	She	she	PRON	PRP	Case=Nom|Gender=Fem|Number=Sing|Person=3	2	nsubj	_	_
2	thanked	thank	VERB	VBD	Tense=Past	0	root	_	_
3	them	they	PRON	PRP	Case=Acc|Number=Plur|Person=3	2	obj	_	_
4	.	.	PUNCT	.	_	2	punct	_	_

"""


def conll_text(rows, begin: str = "# begin document \n") -> str:
    body = "".join(f"{i}\t{form}\t{cell}\n" for i, (form, cell) in enumerate(rows))
    return begin + body + "# end document\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def toy_doc(tmp_path) -> coref.CorefDoc:
    a = write(tmp_path / "toy.conll", conll_text(TOY_CONLL))
    b = write(tmp_path / "toy.conllu", TOY_CONLLU)
    return coref.load_document(a, b)


@pytest.fixture
def toy_window(toy_doc, tokenizer) -> coref.CorefWindow:
    (win,) = coref.windows([toy_doc], tokenizer, max_tokens=128, first_only=True)
    return win


def spans(doc):
    return {(m.start, m.end, m.cluster) for m in doc.mentions}


# ----------------------------------------------------------------------------- bracket cells and the reader


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
    assert coref.parse_coref_cell(cell) == expected


@pytest.mark.parametrize("cell", ["(", "1", "((1)", "(1)|", "(1))", "x(1)"])
def test_parse_coref_cell_rejects_garbage(cell):
    with pytest.raises(ValueError):
        coref.parse_coref_cell(cell)


def test_reader_nested_multitoken_and_pipe(tmp_path):
    rows = [("A", "(1(2"), ("B", "2)"), ("C", "_"), ("D", "1)|(3)"), ("E", "(1)(4)")]
    got = coref.read_coref_conll(write(tmp_path / "x.conll", conll_text(rows)))
    assert got.forms == ["A", "B", "C", "D", "E"]
    assert set(got.spans) == {(0, 3, "1"), (0, 1, "2"), (3, 3, "3"), (4, 4, "1"), (4, 4, "4")}
    assert got.lines == [2, 3, 4, 5, 6]


def test_reader_same_id_nested_closes_innermost(tmp_path):
    rows = [("a", "(5"), ("b", "(5"), ("c", "5)"), ("d", "5)")]
    got = coref.read_coref_conll(write(tmp_path / "x.conll", conll_text(rows)))
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
        coref.read_coref_conll(path)
    assert info.value.path == path
    assert info.value.line == line
    assert fragment in str(info.value)
    assert f"bad.conll:{line}" in str(info.value)


def test_reader_lenient_mode_warns_and_skips(tmp_path):
    rows = [("a", "(1"), ("b", "(2)"), ("c", "2)"), ("d", "(3)")]
    path = write(tmp_path / "bad.conll", conll_text(rows))
    with pytest.warns(coref.CorefFormatWarning) as record:
        got = coref.read_coref_conll(path, strict=False)
    assert set(got.spans) == {(1, 1, "2"), (3, 3, "3")}
    messages = " ".join(str(r.message) for r in record)
    assert "bad.conll:4" in messages and "bad.conll:2" in messages


# ----------------------------------------------------------------------------- documents, heads, types


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
    doc = coref.load_document(a, b)
    assert doc.words == ["do", "n't", "go"]
    assert doc.heads.tolist() == [2, 2, -1]
    assert doc.mentions[0].kind == "nominal"  # a VERB head: neither pronoun nor proper


def test_token_count_mismatch_names_both_files(tmp_path):
    a = write(tmp_path / "toy.conll", conll_text(TOY_CONLL[:-1]))
    b = write(tmp_path / "toy.conllu", TOY_CONLLU)
    with pytest.raises(MalformedInputError) as info:
        coref.load_document(a, b)
    assert info.value.path == a and "17 tokens" in str(info.value) and "toy.conllu has 18" in str(info.value)


def test_form_mismatch_names_line_but_empty_form_takes_conllu_form(tmp_path):
    rows = list(TOY_CONLL)
    rows[3] = ("doctor", "2)")
    a = write(tmp_path / "toy.conll", conll_text(rows))
    b = write(tmp_path / "toy.conllu", TOY_CONLLU)
    with pytest.raises(MalformedInputError) as info:
        coref.load_document(a, b)
    assert info.value.line == 5 and "'doctor'" in str(info.value)
    rows[3] = ("", "2)")  # the GUM_news_iodine case: an empty form in the .conll file
    write(a, conll_text(rows))
    assert coref.load_document(a, b).words[3] == "doctors"


def test_malformed_conllu_names_its_line(tmp_path):
    a = write(tmp_path / "toy.conll", conll_text(TOY_CONLL))
    bad = TOY_CONLLU.replace("Tense=Past\t0\troot", "Tense=Past\tx\troot", 1)
    b = write(tmp_path / "toy.conllu", bad)
    with pytest.raises(MalformedInputError) as info:
        coref.load_document(a, b)
    assert info.value.path == b and info.value.line == 5


def test_mention_head_rules():
    #          0   1   2   3   4
    heads = np.array([1, -1, 3, 1, 1])
    upos = ["DET", "NOUN", "ADJ", "NOUN", "PUNCT"]
    assert coref.mention_head(0, 1, heads, upos) == 1  # the root is the one token headed outside
    assert coref.mention_head(2, 3, heads, upos) == 3
    assert coref.mention_head(2, 4, heads, upos) == 3  # a tie with punctuation: the content word
    assert coref.mention_head(0, 0, heads, upos) == 0
    cyclic = np.array([1, 0])  # no token headed outside (not a tree): the last token
    assert coref.mention_head(0, 1, cyclic, ["NOUN", "NOUN"]) == 1
    two_roots = np.array([-1, -1])  # a span over two sentences: the last root
    assert coref.mention_head(0, 1, two_roots, ["NOUN", "NOUN"]) == 1


@pytest.mark.parametrize(
    "upos, xpos, kind",
    [("PRON", "PRP", "pronoun"), ("PRON", "DT", "pronoun"), ("DET", "WP", "pronoun"), ("PROPN", "NNP", "proper"),
     ("NOUN", "NNP", "nominal"), ("NOUN", "NN", "nominal"), ("NUM", "CD", "nominal")],
)
def test_mention_kind(upos, xpos, kind):
    assert coref.mention_kind(upos, xpos) == kind


def test_agreement_features_lexicon_over_feats():
    assert coref.agreement_features("They", "pronoun", {"Number": "Sing"}) == ("plur", None, 3)
    assert coref.agreement_features("thou", "pronoun", {"Number": "Sing", "Person": "2"}) == ("sing", None, 2)
    assert coref.agreement_features("cats", "nominal", {"Number": "Plur"}) == ("plur", None, 3)


# ----------------------------------------------------------------------------- windows and queries


def test_queries_of_the_toy_window(toy_window):
    w = toy_window
    assert w.words[0] == "Mary" and len(w.words) == 18
    got = {(w.mentions[q.mention].start, w.mentions[q.mention].end): q for q in w.queries}
    # "her cat" and the first mentions have no antecedent
    assert set(got) == {(5, 6), (8, 8), (11, 11), (14, 14), (16, 16)}
    q = got[(11, 11)]
    assert q.candidate_words == (0, 3, 6, 8, 9) and q.gold_words == {0, 8}
    assert [w.mentions[j].head for j in q.candidates] == [9, 8, 6, 3, 0]  # nearest first
    assert coref.count_queries([w]) == {"all": 5, "pronoun": 3, "proper": 1, "nominal": 1}


def test_windows_are_whole_sentences_within_budget(toy_doc, tokenizer):
    wins = coref.windows([toy_doc], tokenizer, max_tokens=16, first_only=False, keep_empty=True)
    assert [w.sentences for w in wins] == [(0, 2), (2, 3)]  # 5 + 9 words + [CLS] [SEP] = 16 pieces
    for w in wins:
        assert len(w.encoded) <= 16
        assert w.words == toy_doc.words[w.offset : w.offset + len(w.words)]
        for m in w.mentions:
            assert 0 <= m.start <= m.head <= m.end < len(w.words)
    # the last window has mentions but no antecedent inside it: dropped unless keep_empty
    assert [w.sentences for w in coref.windows([toy_doc], tokenizer, 16, first_only=False)] == [(0, 2)]
    assert len(coref.windows([toy_doc], tokenizer, 16, first_only=True, keep_empty=True)) == 1


def test_overlong_sentence_is_truncated_and_its_late_mentions_dropped(toy_doc, tokenizer):
    wins = coref.windows([toy_doc], tokenizer, max_tokens=8, first_only=False, keep_empty=True)
    second = [w for w in wins if w.sentences == (1, 2)][0]
    assert len(second.encoded) == 8 and len(second.words) == 6  # The doctors saw her cat and | Mary smiled .
    assert all(m.end < 6 for m in second.mentions)
    assert (8 - 5, 9 - 5) in {(m.start, m.end) for m in second.mentions}
    with pytest.raises(ParameterError):
        coref.windows([toy_doc], tokenizer, max_tokens=4)


# ----------------------------------------------------------------------------- baselines


def test_baselines_on_the_toy_document(toy_window):
    w = toy_window
    by_head = {q.head: q for q in w.queries}
    nearest = {h: coref.predict_nearest(w, q) for h, q in by_head.items()}
    head_match = {h: coref.predict_head_match(w, q) for h, q in by_head.items()}
    rule = {h: coref.predict_rule_based(w, q) for h, q in by_head.items()}
    assert nearest == {6: 3, 8: 6, 11: 9, 14: 11, 16: 14}
    assert head_match == {6: 3, 8: 6, 11: 0, 14: 11, 16: 14}  # "her", "She", "them": no same head -> nearest
    assert rule == {6: 3, 8: 0, 11: 0, 14: 11, 16: 6}  # sieve 2, 3, 1, 3, 3
    res = coref.baselines([w])
    assert (res["nearest"].correct, res["nearest"].n["all"]) == ({"all": 2, "pronoun": 1, "proper": 0, "nominal": 1}, 5)
    assert res["head_match"].correct == {"all": 3, "pronoun": 1, "proper": 1, "nominal": 1}
    assert res["rule_based"].accuracy("all") == 1.0
    assert res["nearest"].accuracy("pronoun") == pytest.approx(1 / 3)


def test_sieves_in_order(toy_window):
    w = toy_window
    m = {(x.start, x.end): x for x in w.mentions}
    assert coref.agrees(m[(8, 8)], m[(0, 0)]) and not coref.agrees(m[(8, 8)], m[(5, 6)])
    assert not coref.agrees(m[(16, 16)], m[(14, 14)]) and coref.agrees(m[(16, 16)], m[(2, 3)])
    assert [name for name, _ in coref.SIEVES][0] == "exact string match"
    # exact string match beats a nearer head-word match
    q = [q for q in w.queries if q.head == 11][0]
    assert coref.predict_rule_based(w, q) == 0


# ----------------------------------------------------------------------------- attention heads


def hand_maps(win: coref.CorefWindow, n_words: int) -> np.ndarray:
    """word_attn[1 layer, 3 heads, w, w]: head 0 -> a gold antecedent, head 1 -> a wrong candidate,
    head 2 -> a gold antecedent but most attention on a non-candidate word (the query itself)."""
    a = np.full((1, 3, n_words, n_words), 0.01)
    for q in win.queries:
        gold = max(q.gold_words)
        wrong = max(c for c in q.candidate_words if c not in q.gold_words)
        a[0, 0, q.head, gold] = 0.5
        a[0, 1, q.head, wrong] = 0.5
        a[0, 2, q.head, gold] = 0.2
        a[0, 2, q.head, q.head] = 0.7
    return a


def test_score_queries_on_hand_built_maps(toy_window):
    maps = hand_maps(toy_window, len(toy_window.words))
    ok = coref.score_queries(maps, toy_window.queries)
    assert ok.shape == (1, 3, 5)
    assert ok[0, 0].all() and not ok[0, 1].any() and ok[0, 2].all()
    red = coref.CorefHeadReducer([toy_window], 1, 3)
    red.add(maps, toy_window.queries)
    res = red.result()
    assert res.accuracy("all").tolist() == [[1.0, 0.0, 1.0]]
    assert res.n == {"all": 5, "pronoun": 3, "proper": 1, "nominal": 1}
    assert res.best("all") == (0, 0)
    table = res.best_heads()
    assert list(table["type"]) == list(coref.COLUMNS) and table.loc[0, "head"] == "1-1"


def test_score_queries_ties_go_to_the_nearest_candidate(toy_window):
    maps = np.zeros((1, 1, 18, 18))
    q = [q for q in toy_window.queries if q.head == 11][0]  # candidates 0 3 6 8 9, gold 0 and 8
    maps[0, 0, 11, [0, 9]] = 0.5  # tie between gold 0 and wrong 9: nearest (9) wins
    assert not coref.score_queries(maps, [q])[0, 0, 0]
    maps[0, 0, 11, 8] = 0.5  # tie between 0, 8 and 9: still 9
    assert not coref.score_queries(maps, [q])[0, 0, 0]
    maps[0, 0, 11, 9] = 0.0
    assert coref.score_queries(maps, [q])[0, 0, 0]


def test_score_queries_with_positions_matches_full_map(toy_window):
    rng = np.random.default_rng(0)
    full = rng.random((2, 3, 18, 18))
    pos = coref.query_words(toy_window.queries)
    sub = full[:, :, pos][:, :, :, pos]
    np.testing.assert_array_equal(
        coref.score_queries(full, toy_window.queries), coref.score_queries(sub, toy_window.queries, pos)
    )
    with pytest.raises(ValueError):
        coref.score_queries(sub[:, :, 1:, 1:], toy_window.queries, pos[1:])


def test_partial_word_attention_equals_full_conversion(toy_window):
    rng = np.random.default_rng(1)
    n = len(toy_window.encoded)
    attn = rng.random((2, 2, n, n)).astype(np.float32)
    attn /= attn.sum(-1, keepdims=True)
    full = coref.word_attention(attn, toy_window.encoded)
    assert full.shape == (2, 2, 18, 18)
    pos = coref.query_words(toy_window.queries)
    part = coref.word_attention(attn, toy_window.encoded, positions=pos)
    np.testing.assert_allclose(part, full[:, :, pos][:, :, :, pos], rtol=1e-6, atol=1e-7)


def test_head_accuracy_arrays_round_trip():
    res = coref.CorefHeadAccuracy(
        {c: np.arange(6).reshape(2, 3) + i for i, c in enumerate(coref.COLUMNS)},
        {"all": 9, "pronoun": 5, "proper": 4, "nominal": 0},
    )
    back = coref.CorefHeadAccuracy.from_arrays(res.to_arrays())
    assert back.n == res.n
    for c in coref.COLUMNS:
        np.testing.assert_array_equal(back.correct[c], res.correct[c])
    assert np.isnan(back.accuracy("nominal")).all()
    assert back.best("all") == (1, 2)
    with pytest.raises(EmptyDataError):
        back.best("nominal")
    with pytest.raises(ParameterError):
        back.accuracy("pronouns")


def test_streaming_equals_direct_computation(tmp_path, tokenizer, tiny_bert):
    a = write(tmp_path / "toy.conll", conll_text(TOY_CONLL))
    b = write(tmp_path / "toy.conllu", TOY_CONLLU)
    doc = coref.load_document(a, b)
    # a second, longer document (so a batch pads), made of the toy text twice
    a2 = write(tmp_path / "toy2.conll", conll_text(TOY_CONLL * 2))
    b2 = write(tmp_path / "toy2.conllu", TOY_CONLLU + TOY_CONLLU.replace("# newdoc id = toy\n", ""))
    doc2 = coref.load_document(a2, b2)
    wins = coref.windows([doc, doc2], tokenizer, max_tokens=64, first_only=False)
    assert len(wins) >= 2 and len({len(w.encoded) for w in wins}) > 1
    streamed = coref.evaluate_heads(tiny_bert, wins, batch_size=2, progress=False)

    maps = collect_maps(tiny_bert, [w.encoded for w in wins])
    correct = {c: np.zeros((tiny_bert.n_layers, tiny_bert.n_heads), dtype=np.int64) for c in coref.COLUMNS}
    n = {c: 0 for c in coref.COLUMNS}
    for w, m in zip(wins, maps):
        ok = coref.score_queries(coref.word_attention(m, w.encoded), w.queries)
        for k, q in enumerate(w.queries):
            for c in ("all", q.kind):
                correct[c] += ok[:, :, k]
                n[c] += 1
    assert streamed.n == n and n["all"] == sum(len(w.queries) for w in wins)
    for c in coref.COLUMNS:
        np.testing.assert_array_equal(streamed.correct[c], correct[c])
    with pytest.raises(EmptyDataError):
        coref.evaluate_heads(tiny_bert, [], progress=False)


# ----------------------------------------------------------------------------- Table 2


def test_table2_layout_and_values(toy_window):
    base = coref.baselines([toy_window])
    correct = {"all": [[1, 4]], "pronoun": [[0, 2]], "proper": [[1, 1]], "nominal": [[0, 1]]}
    heads = coref.CorefHeadAccuracy(
        {c: np.array(v) for c, v in correct.items()}, {"all": 5, "pronoun": 3, "proper": 1, "nominal": 1}
    )
    t = coref.table2(heads, base)
    assert list(t.index) == ["Nearest", "Head-word match", "Rule-based", "Best head (1-2)", "mentions (n)"]
    assert t.loc["Nearest", "all"] == pytest.approx(40.0)
    assert t.loc["Best head (1-2)", "pronoun"] == pytest.approx(200 / 3)
    assert t.loc["mentions (n)", "pronoun"] == 3
    assert t.loc["Rule-based", "paper all"] == 69 and t.loc["Best head (1-2)", "paper nominal"] == 58
    assert np.isnan(t.loc["mentions (n)", "paper all"])
    assert "paper all" not in coref.table2(None, base, with_paper=False).columns
    assert coref.paper_table2().loc["Head 5-4", "all"] == 65.0


# ----------------------------------------------------------------------------- splits and the data folder


def make_data_dir(root: Path, names: list[str], splits_md: str) -> None:
    gum = root / "coref" / "gum"
    write(gum / "splits.md", splits_md)
    for name in names:
        write(gum / "coref_ontogum_conll" / f"{name}.conll", conll_text(TOY_CONLL))
        write(gum / "dep_conllu" / f"{name}.conllu", TOY_CONLLU)


def test_splits_and_load_split(tmp_path, monkeypatch):
    md = "# Splits\n\n## dev\n\n  * GUM_a\n  * GUM_reddit_x\n  * GUM_b\n\n## test\n\n  * GUM_c\n"
    make_data_dir(tmp_path, ["GUM_a", "GUM_b", "GUM_c", "GUM_d", "GUM_e"], md)
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    assert coref.read_splits() == {"dev": ["GUM_a", "GUM_reddit_x", "GUM_b"], "test": ["GUM_c"]}
    assert coref.split_documents("dev") == ["GUM_a", "GUM_b"]  # reddit documents are not shipped
    assert coref.split_documents("train") == ["GUM_d", "GUM_e"]  # no train section: the rest
    docs = coref.load_split("dev", max_docs=1)
    assert [d.name for d in docs] == ["GUM_a"] and len(docs[0].mentions) == 8
    files = coref.split_files("dev", max_docs=1)
    assert [f.name for f in files] == ["splits.md", "GUM_a.conll", "GUM_a.conllu"]
    with pytest.raises(ParameterError):
        coref.split_documents("validation")
    with pytest.raises(ParameterError):
        coref.load_split("dev", max_docs=0)
    write(tmp_path / "coref" / "gum" / "splits.md", md + "  * GUM_missing\n")
    with pytest.raises(MissingDataError):
        coref.split_documents("test")


def test_splits_md_without_heading_is_malformed(tmp_path):
    path = write(tmp_path / "splits.md", "# Splits\n  * GUM_a\n")
    with pytest.raises(MalformedInputError) as info:
        coref.read_splits(path)
    assert info.value.line == 2


def test_paper_comparison_verdicts_follow_the_numbers(toy_window):
    base = coref.baselines([toy_window])
    hm = {c: 100 * base["head_match"].accuracy(c) for c in coref.COLUMNS}
    n = base["nearest"].n
    # head 1-1 is right on every query: it beats head-word match by (100 - hm) points
    correct = {c: np.array([[n[c], 0]]) for c in coref.COLUMNS}
    rows = coref.paper_comparison(coref.CorefHeadAccuracy(correct, dict(n)), base)
    by = {r["quantity"]: r for r in rows}
    assert by["best head, antecedent selection accuracy (all mentions)"]["verdict"] == "not comparable"
    hm_row = by["best head minus head-word match (points, all mentions)"]
    assert hm_row["paper"] == 13 and hm_row["ours"] == pytest.approx(round(100 - hm["all"], 1))
    expected = "agrees" if 100 - hm["all"] >= 10 else ("partly agrees" if 100 > hm["all"] else "disagrees")
    assert hm_row["verdict"] == expected
    # a head that is always wrong falls below every baseline
    wrong = {c: np.zeros((1, 2), dtype=np.int64) for c in coref.COLUMNS}
    rows = {r["quantity"]: r for r in coref.paper_comparison(coref.CorefHeadAccuracy(wrong, dict(n)), base)}
    assert rows["best head minus head-word match (points, all mentions)"]["verdict"] == "disagrees"
    assert all(r["verdict"] in ("agrees", "partly agrees", "disagrees", "not comparable") for r in rows.values())


def test_cached_head_evaluation_round_trips(toy_window, tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    first = coref.evaluate_heads(tiny_bert, [toy_window], 2, progress=False, use_cache=True)
    assert list((tmp_path / "cache" / "coref_heads").glob("*.npz"))
    again = coref.evaluate_heads(tiny_bert, [toy_window], 2, progress=False, use_cache=True)
    direct = coref.evaluate_heads(tiny_bert, [toy_window], 2, progress=False)
    for c in coref.COLUMNS:
        assert np.array_equal(first.correct[c], direct.correct[c])
        assert np.array_equal(again.correct[c], direct.correct[c])
    assert again.n == direct.n
