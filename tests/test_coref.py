"""Tests for attnbook.studies.clark.coref (Clark et al. §4.3): windows, queries, baselines, head scoring, Table 2."""
from __future__ import annotations

import numpy as np
import pytest
from toy_gum import TOY_CONLL, TOY_CONLLU, conll_text, toy_files, write

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data import gum
from attnbook.engine.extract import collect_maps
from attnbook.studies.clark import coref


@pytest.fixture
def toy_doc(tmp_path) -> gum.CorefDoc:
    return gum.load_document(*toy_files(tmp_path))


@pytest.fixture
def toy_window(toy_doc, tokenizer) -> coref.CorefWindow:
    (win,) = coref.windows([toy_doc], tokenizer, max_tokens=128, first_only=True)
    return win


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
    doc = gum.load_document(a, b)
    # a second, longer document (so a batch pads), made of the toy text twice
    a2 = write(tmp_path / "toy2.conll", conll_text(TOY_CONLL * 2))
    b2 = write(tmp_path / "toy2.conllu", TOY_CONLLU + TOY_CONLLU.replace("# newdoc id = toy\n", ""))
    doc2 = gum.load_document(a2, b2)
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
    # per document (the bootstrap's units): the documents' counts add up to the totals, paired with the baselines'
    assert streamed.docs == coref.document_order(wins) and streamed.doc_correct.shape[0] == len(streamed.docs)
    for k, c in enumerate(coref.COLUMNS):
        np.testing.assert_array_equal(streamed.doc_correct[:, k].sum(0), correct[c])
        assert streamed.doc_n[:, k].sum() == n[c]
    base = coref.baselines(wins)["head_match"]
    assert base.docs == streamed.docs
    np.testing.assert_array_equal(base.doc_n, streamed.doc_n)
    assert base.doc_correct[:, 0].sum() == base.correct["all"]
    with pytest.raises(EmptyDataError):
        coref.evaluate_heads(tiny_bert, [], progress=False)


def test_cached_head_evaluation_round_trips(toy_window, tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    first = coref.evaluate_heads(tiny_bert, [toy_window], 2, progress=False)
    assert list((tmp_path / "cache" / "coref_heads").glob("*.npz"))
    again = coref.evaluate_heads(tiny_bert, [toy_window], 2, progress=False)
    direct = coref.evaluate_heads(tiny_bert, [toy_window], 2, progress=False)
    for c in coref.COLUMNS:
        assert np.array_equal(first.correct[c], direct.correct[c])
        assert np.array_equal(again.correct[c], direct.correct[c])
    assert again.n == direct.n
    assert again.docs == direct.docs == [toy_window.doc]
    np.testing.assert_array_equal(again.doc_correct, direct.doc_correct)
    np.testing.assert_array_equal(again.doc_n, direct.doc_n)


def test_table2_layout_and_values(toy_window):
    base = coref.baselines([toy_window])
    correct = {"all": [[1, 4]], "pronoun": [[0, 2]], "proper": [[1, 1]], "nominal": [[0, 1]]}
    heads = coref.CorefHeadAccuracy(
        {c: np.array(v) for c, v in correct.items()}, {"all": 5, "pronoun": 3, "proper": 1, "nominal": 1}
    )
    t = coref.table2(heads, base)
    assert list(t.index) == ["Nearest", "Head-word match", "Rule-based", "Best head (1-2)", "mentions (n)"]
    assert list(t.columns) == list(coref.COLUMNS)
    assert t.loc["Nearest", "all"] == pytest.approx(40.0)
    assert t.loc["Best head (1-2)", "pronoun"] == pytest.approx(200 / 3)
    assert t.loc["mentions (n)", "pronoun"] == 3
    assert list(coref.table2(None, base).index) == ["Nearest", "Head-word match", "Rule-based", "mentions (n)"]
    with pytest.raises(EmptyDataError):
        coref.table2(None, {})
