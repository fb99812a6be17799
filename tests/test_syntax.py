"""Clark §4.2: heads as dependency classifiers on hand-built trees and maps; streaming equals direct."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.studies.clark import syntax
from attnbook.data.conllu import Sentence
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.extract import collect_maps
from attnbook.engine.wordlevel import token_to_word_attention


RELS = ("All", "prep", "pobj", "det", "nsubj", "poss")


def make_sentence(rows: list[tuple[str, int, str, str]]) -> Sentence:
    """``rows``: (word, 1-based head or 0, deprel, xpos)."""
    n = len(rows)
    words, heads, rels, xpos = (list(c) for c in zip(*rows))
    return Sentence(
        ids=list(range(1, n + 1)), words=words, lemmas=words, upos=["X"] * n, xpos=xpos, feats=["_"] * n,
        head=heads, deprel=rels, deps=["_"] * n, misc=["_"] * n,
    )


CAT = make_sentence([
    ("the", 2, "det", "DT"), ("cat", 3, "nsubj", "NN"), ("sat", 0, "root", "VBD"), ("on", 6, "case", "IN"),
    ("the", 6, "det", "DT"), ("mat", 3, "obl", "NN"), (".", 3, "punct", "."),
])


DOG = make_sentence([
    ("john", 3, "nmod:poss", "NNP"), ("'s", 1, "case", "POS"), ("dog", 4, "nsubj", "NN"), ("barked", 0, "root", "VBD"),
])


def edge_set(edges: syntax.Edges, relations, name):
    r = list(relations).index(name)
    return {(int(d), int(h), int(a)) for q, d, h, a in zip(edges.rel, edges.dep, edges.head, edges.alt) if q == r}


def test_ud_edges_follow_the_documented_mapping():
    e = syntax.sentence_edges(CAT, RELS)
    assert edge_set(e, RELS, "All") == {(0, 1, -1), (1, 2, -1), (3, 5, -1), (4, 5, -1), (5, 2, -1), (6, 2, -1)}
    assert edge_set(e, RELS, "prep") == {(3, 2, -1)}  # the preposition depends on what the PP modifies
    assert edge_set(e, RELS, "pobj") == {(5, 3, -1)}  # the noun depends on its preposition (case reversed)
    assert edge_set(e, RELS, "det") == {(0, 1, -1), (4, 5, -1)}
    assert edge_set(e, RELS, "nsubj") == {(1, 2, -1)}
    no_punct = syntax.sentence_edges(CAT, ["All"], exclude_punct=True)
    assert len(no_punct) == 5 and 6 not in no_punct.dep

    d = syntax.sentence_edges(DOG, RELS)
    assert edge_set(d, RELS, "poss") == {(0, 2, 1)}  # 's is an accepted alternative dependent
    assert edge_set(d, RELS, "prep") == set() and edge_set(d, RELS, "pobj") == set()  # 's is not a preposition
    with pytest.raises(ParameterError):
        syntax.sentence_edges(CAT, ["iobj"])


def hand_maps(n_words: int, targets: list[list[int]]) -> np.ndarray:
    """Word-level maps [1, heads, W, W] (W = n_words + 2): each row puts 0.4 on [SEP],
    0.3 on its target word and spreads the rest; [CLS] is word 0 and [SEP] word W-1."""
    W = n_words + 2
    maps = np.zeros((1, len(targets), W, W), dtype=np.float32)
    for h, tgt in enumerate(targets):
        for q in range(W):
            row = np.full(W, 0.3 / (W - 2))
            row[W - 1] = 0.4
            if 1 <= q <= n_words:
                row[tgt[q - 1]] += 0.3
            maps[0, h, q] = row / row.sum()
    return maps


def test_hand_built_heads_both_directions(tokenizer):
    (enc,) = syntax.encode_sentences(tokenizer, [CAT], relations=RELS)
    # encoded words: [CLS]=0, the=1 cat=2 sat=3 on=4 the=5 mat=6 .=7, [SEP]=8
    gold_parent = [2, 3, 6, 6, 6, 3, 3]  # every word attends to its gold head; the root (sat) to mat
    previous = [2, 1, 2, 3, 4, 5, 6]  # every word attends to the previous word; the first word to the next
    acc = syntax.evaluate_word_maps([hand_maps(7, [gold_parent, previous])], [enc], RELS)
    a = acc.accuracy()
    R = list(RELS).index
    D2H, H2D = 0, 1
    # head 0: dependents attend to their heads -> perfect dep->head; head->dep only mat->sat (sat looks at mat)
    assert a[R("All"), 0, 0, D2H] == 1.0
    assert a[R("All"), 0, 0, H2D] == pytest.approx(1 / 6)
    for rel in ("det", "nsubj"):
        assert a[R(rel), 0, 0, D2H] == 1.0 and a[R(rel), 0, 0, H2D] == 0.0
    # UD makes "mat" the head of "on": such a head looks from the preposition to its object,
    # which is pobj's head->dep direction, and misses SD's prep edge on->sat
    assert a[R("pobj"), 0, 0, H2D] == 1.0 and a[R("pobj"), 0, 0, D2H] == 0.0
    assert a[R("prep"), 0, 0, H2D] == 0.0 and a[R("prep"), 0, 0, D2H] == 0.0
    # head 1: previous word
    assert a[R("All"), 0, 1, D2H] == pytest.approx(1 / 6)  # only the->cat (first word looks right)
    assert a[R("prep"), 0, 1, D2H] == 1.0  # on -> sat is one to the left
    assert a[R("All"), 0, 1, H2D] == pytest.approx(3 / 6)  # cat<-the, sat<-cat, mat<-the
    assert a[R("det"), 0, 1, H2D] == 1.0 and a[R("det"), 0, 1, D2H] == 0.5
    assert a[R("nsubj"), 0, 1, H2D] == 1.0 and a[R("pobj"), 0, 1, H2D] == 0.0
    assert np.isnan(a[R("poss")]).all() and acc.total[R("poss")] == 0

    assert acc.best("det") == (0, 0, "dep->head", 1.0)
    assert acc.best("All") == (0, 0, "dep->head", 1.0)
    assert acc.best("pobj") == (0, 0, "head->dep", 1.0)
    np.testing.assert_array_equal(acc.for_relation("det", "head->dep"), [[0.0, 1.0]])
    with pytest.raises(EmptyDataError):
        acc.best("poss")


def test_cls_and_sep_and_self_are_never_predicted():
    maps = np.zeros((1, 1, 5, 5), dtype=np.float32)
    maps[..., 0] = 0.5  # [CLS]
    maps[..., 4] = 0.3  # [SEP]
    maps[0, 0, np.arange(5), np.arange(5)] += 0.15  # self
    maps[0, 0, 1, 3] = 0.05
    maps[0, 0, 2, 1] = 0.05
    maps[0, 0, 3, 2] = 0.05
    pred = syntax.head_predictions(maps, [0, 4])
    assert pred[0, 0, 1:4].tolist() == [3, 1, 2]


def test_possessive_clitic_counts_as_the_dependent(tokenizer):
    (enc,) = syntax.encode_sentences(tokenizer, [DOG], relations=RELS)
    # encoded: [CLS]=0 john=1 's=2 dog=3 barked=4 [SEP]=5; john looks at barked, 's looks at dog (like head 7-6)
    acc = syntax.evaluate_word_maps([hand_maps(4, [[4, 3, 4, 3]])], [enc], RELS)
    assert acc.accuracy()[list(RELS).index("poss"), 0, 0, 0] == 1.0
    acc2 = syntax.evaluate_word_maps([hand_maps(4, [[4, 1, 4, 3]])], [enc], RELS)
    assert acc2.accuracy()[list(RELS).index("poss"), 0, 0, 0] == 0.0


def test_fixed_offset_baselines(tokenizer):
    encoded = syntax.encode_sentences(tokenizer, [CAT, DOG], relations=RELS)
    maps = [hand_maps(7, [[1] * 7]), hand_maps(4, [[1] * 4])]
    acc = syntax.evaluate_word_maps(maps, encoded, RELS)
    off = acc.offsets
    bc = acc.baseline_correct
    # CAT head-minus-dependent: +1 the-cat, +1 cat-sat, +2 on-mat, +1 the-mat, -3 mat-sat, -4 .-sat
    # DOG: +2 john-dog, -1 's-john, +1 dog-barked
    assert bc[list(RELS).index("All"), off.index(1)] == 4
    assert bc[list(RELS).index("All"), off.index(-3)] == 1
    assert acc.total[list(RELS).index("All")] == 9
    assert acc.baseline("det") == (1, 1.0)
    assert acc.baseline("prep") == (-1, 1.0)
    assert acc.baseline("pobj") == (-2, 1.0)
    # poss: john->dog is +2 and 's->dog is +1: both offsets count as right
    assert bc[list(RELS).index("poss"), off.index(1)] == 1 and bc[list(RELS).index("poss"), off.index(2)] == 1
    assert syntax.right_branching_uas([CAT, DOG]) == pytest.approx(4 / 9)
    assert syntax.right_branching_uas([CAT], exclude_punct=True) == pytest.approx(3 / 5)


def test_truncation_drops_edges_past_the_kept_words(tokenizer):
    (enc,) = syntax.encode_sentences(tokenizer, [CAT], relations=RELS, max_tokens=6)  # 4 words fit
    assert enc.meta["n_words_kept"] == [4]
    e = enc.meta["edges"]
    assert e.dep.max() <= 4 and e.head.max() <= 4  # encoded positions of the 4 kept words are 1..4
    assert len(e) == 5 and enc.meta["n_dropped_edges"] == 6


def test_table1_has_labels_and_counts(tokenizer):
    encoded = syntax.encode_sentences(tokenizer, [CAT, DOG], relations=RELS)
    acc = syntax.evaluate_word_maps([hand_maps(7, [[2, 3, 6, 6, 6, 3, 3]]), hand_maps(4, [[3, 1, 4, 3]])],
                                    encoded, RELS)
    t = syntax.table1(acc)
    assert list(t.relation) == list(RELS)
    row = t.set_index("relation").loc["det"]
    assert row["head"] == "1-1" and row["accuracy"] == 100.0
    assert not [c for c in t.columns if c.startswith("paper")]  # the paper's columns are paper.table1's
    assert t.set_index("relation").loc["All", "n"] == 9
    prefs = syntax.direction_preference(acc).set_index("relation")
    assert prefs.loc["det", "best_dep_to_head"] == 100.0


def test_streaming_equals_direct_on_a_tiny_bert(tiny_bert, tokenizer):
    story = make_sentence([("a", 4, "det", "DT"), ("very", 3, "advmod", "RB"), ("unbelievably", 4, "amod", "JJ"),
                           ("story", 0, "root", "NN")])
    sents = [CAT, DOG, story]
    streamed = syntax.evaluate_heads(tiny_bert, sents, batch_size=2, relations=RELS, progress=False)
    encoded = syntax.encode_sentences(tokenizer, sents, relations=RELS)
    maps = collect_maps(tiny_bert, encoded, batch_size=2)
    word_maps = [token_to_word_attention(m, e.words) for m, e in zip(maps, encoded)]
    direct = syntax.evaluate_word_maps(word_maps, encoded, RELS)
    np.testing.assert_array_equal(streamed.correct, direct.correct)
    np.testing.assert_array_equal(streamed.total, direct.total)
    np.testing.assert_array_equal(streamed.baseline_correct, direct.baseline_correct)
    assert streamed.n_sentences == 3
    assert streamed.correct.shape == (len(RELS), tiny_bert.n_layers, tiny_bert.n_heads, 2)
    # the per-sentence counts, in input order whatever the batching, add up to the totals
    assert streamed.sentence_correct.shape == (3,) + streamed.correct.shape
    np.testing.assert_array_equal(streamed.sentence_correct.sum(0), streamed.correct)
    np.testing.assert_array_equal(streamed.sentence_total.sum(0), streamed.total)
    np.testing.assert_array_equal(streamed.sentence_baseline.sum(0), streamed.baseline_correct)
    for k in range(3):
        one = syntax.evaluate_word_maps([word_maps[k]], [encoded[k]], RELS)
        np.testing.assert_array_equal(streamed.sentence_correct[k], one.correct)
        np.testing.assert_array_equal(streamed.sentence_total[k], one.total)
        np.testing.assert_array_equal(streamed.sentence_baseline[k], one.baseline_correct)
    both = streamed + direct
    assert both.sentence_correct.shape[0] == 6 and both.n_sentences == 6


def test_cached_evaluation_round_trips(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    first = syntax.evaluate_heads(tiny_bert, [CAT, DOG], relations=RELS, progress=False)
    assert list((tmp_path / "syntax_heads").glob("*.npz"))
    second = syntax.evaluate_heads(tiny_bert, [CAT, DOG], relations=RELS, progress=False)
    np.testing.assert_array_equal(first.correct, second.correct)
    np.testing.assert_array_equal(first.sentence_correct, second.sentence_correct)
    np.testing.assert_array_equal(first.sentence_total, second.sentence_total)
    assert second.relations == list(RELS) and second.offsets == list(syntax.OFFSETS)


def test_best_heads_by_relation_names_each_heads_relations(tokenizer):
    encoded = syntax.encode_sentences(tokenizer, [CAT, DOG], relations=RELS)
    acc = syntax.evaluate_word_maps([hand_maps(7, [[2, 3, 6, 6, 6, 3, 3]]), hand_maps(4, [[3, 1, 4, 3]])],
                                    encoded, RELS)
    best = syntax.best_heads_by_relation(acc)
    assert sorted(r for rels in best.values() for r in rels) == sorted(r for r in RELS if acc.total[RELS.index(r)])
    layer, head, _, _ = acc.best("det")
    assert "det" in best[f"{layer + 1}-{head + 1}"]
