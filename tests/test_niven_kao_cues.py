"""Niven & Kao's cues (§4), the adversarial transform (§6) and the baselines without training."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arct_items import item, toy_items
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.arct import labels_of
from attnbook.studies.niven_kao import cues as A


@pytest.fixture
def toy():
    return toy_items()


# ---- tokenisation and cue statistics --------------------------------------------------------


def test_tokenize_expands_negation_only_when_asked():
    assert A.tokenize("People DON'T care, it's fine") == ["people", "do", "not", "care", "it", "s", "fine"]
    expected = ["you", "can", "not", "we", "can", "not", "they", "will", "not"]
    assert A.tokenize("you cannot; we can't; they won't") == expected
    assert A.tokenize("people don't care", negation="keep") == ["people", "don", "t", "care"]
    assert A.tokenize("it isn\u2019t") == ["it", "is", "not"]
    with pytest.raises(ParameterError):
        A.tokenize("x", negation="maybe")


def test_not_cue_by_hand(toy):
    # items 1 and 2 have "not" in one warrant only (correct in 1, wrong in 2); item 4 has it in both
    row = A.cue_row(toy, "not")
    assert (row["applicability"], row["productivity"], row["coverage"]) == (2, 0.5, 0.5)
    assert row["productive"] == 1
    # without the contraction rule "can't" is no "not": item 4 counts too, and "not" is in its correct warrant
    row = A.cue_row(toy, "not", negation="keep")
    assert row["applicability"] == 3
    assert row["productivity"] == pytest.approx(2 / 3)
    assert row["coverage"] == pytest.approx(0.75)


def test_cue_table_by_hand(toy):
    table = A.cue_statistics(toy).set_index("cue")
    assert table.loc["cats", "applicability"] == 1 and table.loc["cats", "productivity"] == 1.0
    assert table.loc["dogs", "applicability"] == 1 and table.loc["dogs", "productivity"] == 0.0
    assert table.loc["not good", "order"] == 2 and table.loc["not good", "productivity"] == 1.0
    assert table.loc["can not", "productivity"] == 0.0  # item 4: "can not" is in the wrong warrant
    assert "it" not in table.index  # in both warrants of every item where it occurs: never applicable
    assert "are nice" not in table.index
    assert table.loc["not", "coverage"] == 0.5


def test_top_cues_filters_and_sorts(toy):
    table = A.cue_statistics(toy)
    top = A.top_cues(table, min_applicability=2)
    assert list(top["cue"]) == ["not"]
    bigrams = A.top_cues(table, order=2, n=None)
    assert set(bigrams["order"]) == {2}
    prod = A.top_cues(table, n=None)["productivity"].to_numpy()
    assert np.all(np.diff(prod) <= 0)
    with pytest.raises(ParameterError):
        A.top_cues(table, by="magic")


def reference_statistics(items, orders=(1, 2)):
    """The formulas of Niven & Kao §4, written out literally (slow, for checking)."""
    sets = [tuple(A.ngrams(A.tokenize(w), orders) for w in it.warrants) for it in items]
    vocab = set().union(*[s[0] | s[1] for s in sets])
    out = {}
    for k in vocab:
        alpha = sum(any(k in s[j] and k not in s[1 - j] for j in (0, 1)) for s in sets)
        prod = sum(any(k in s[j] and k not in s[1 - j] and it.label == j for j in (0, 1)) for s, it in zip(sets, items))
        if alpha:
            out[k] = (alpha, prod / alpha, alpha / len(items))
    return out


WORDS = st.sampled_from(["not", "no", "is", "do", "always", "never", "good", "bad", "will", "can't"])
WARRANT = st.lists(WORDS, min_size=0, max_size=5).map(" ".join)
ITEMS = st.lists(st.tuples(WARRANT, WARRANT, st.integers(0, 1)), min_size=1, max_size=12).map(
    lambda rows: [item(i, w0 or "x", w1 or "x", y) for i, (w0, w1, y) in enumerate(rows)]
)


@settings(max_examples=60, deadline=None)
@given(ITEMS)
def test_cue_statistics_property(items):
    table = A.cue_statistics(items)
    for col in ("productivity", "coverage"):
        assert ((table[col] >= 0) & (table[col] <= 1)).all()
    assert (table["applicability"] <= len(items)).all() and (table["productive"] <= table["applicability"]).all()
    ref = reference_statistics(items)
    got = {r.cue: (r.applicability, r.productivity, r.coverage) for r in table.itertuples()}
    assert got.keys() == ref.keys()
    for k, (a, p, c) in ref.items():
        assert got[k][0] == a and got[k][1] == pytest.approx(p) and got[k][2] == pytest.approx(c)
    # moving the correct warrant to the other slot changes no statistic
    swapped = [replace(it, warrant0=it.warrant1, warrant1=it.warrant0, label=1 - it.label) for it in items]
    assert A.cue_statistics(swapped).set_index("cue").sort_index().equals(table.set_index("cue").sort_index())


@settings(max_examples=40, deadline=None)
@given(ITEMS)
def test_adversarial_data_neutralises_every_cue(items):
    """§6: with each warrant pair present under both labels, every warrant cue has productivity exactly 1/2."""
    claim_map = {"Claim one": "Claim one is false"}
    adv = A.make_adversarial(items, claim_map)
    table = A.cue_statistics(adv)
    assert (table["productivity"] == 0.5).all()
    assert len(table) == 0 or A.max_cue_gap(table) == 0.0
    assert A.cues_at_chance(table) == (len(table), len(table))


def test_cue_statistics_empty():
    with pytest.raises(EmptyDataError):
        A.cue_statistics([])


def test_max_cue_gap(toy):
    # "cats" and "dogs" have productivity 1 and 0: both half a unit from chance
    assert A.max_cue_gap(A.cue_statistics(toy)) == 0.5
    assert A.max_cue_gap(A.cue_statistics(toy[:2])) == 0.5
    assert np.isnan(A.max_cue_gap(A.cue_statistics([item(0, "same words", "same words", 0)])))  # no cue applies
    # "not" is at exactly 1/2 (right in item 1, wrong in item 2); "cats" and "dogs" are at 1 and 0
    at_half, n = A.cues_at_chance(A.cue_statistics(toy))
    assert n == len(A.cue_statistics(toy)) and 0 < at_half < n
    assert A.cues_at_chance(A.cue_statistics(toy).query("cue in ['cats', 'dogs', 'not']")) == (1, 3)


# ---- the adversarial transform --------------------------------------------------------------


def test_negate_claims_inverts_label_and_keeps_warrants(toy):
    claim_map = {"Claim one": "Claim one is not true"}
    adv = A.negate_claims(toy, claim_map)
    for orig, new in zip(toy, adv):
        assert new.id == orig.id + "-adversarial" and new.flag is True
        assert new.claim == "Claim one is not true"
        assert new.warrants == orig.warrants and new.reason == orig.reason
        assert new.label == 1 - orig.label
        assert new.correct_warrant == orig.alternative_warrant  # R ∧ A → ¬C


def test_make_adversarial_layout(toy):
    full = A.make_adversarial(toy, {"Claim one": "Not claim one"})
    assert len(full) == 2 * len(toy)
    assert [it.flag for it in full] == [False] * 4 + [True] * 4
    assert [it.id for it in full[:4]] == [it.id for it in toy]
    assert labels_of(full).sum() == len(toy)  # every warrant pair once per label


def test_adversarial_halves(toy):
    full = A.make_adversarial(toy, {"Claim one": "Not claim one"})
    halves = A.adversarial_halves(full)
    assert list(halves) == ["original_half", "negated_half"]
    assert [it.id for it in halves["original_half"]] == ["id1", "id2", "id3", "id4"]
    assert [it.id for it in halves["negated_half"]] == [f"id{i}-adversarial" for i in range(1, 5)]


def test_missing_negation_names_the_claim(toy):
    with pytest.raises(A.MissingNegationError) as err:
        A.negate_claims(toy, {"another claim": "x"})
    assert "Claim one" in str(err.value) and "id1" in str(err.value)


def test_swap_warrants_keeps_the_correct_warrant(toy):
    swapped = A.swap_warrants(toy)
    for orig, new in zip(toy, swapped[len(toy):]):
        assert new.id == orig.id + "_swapped" and new.claim == orig.claim
        assert new.correct_warrant == orig.correct_warrant and new.label == 1 - orig.label


def test_agreement_with_shipped_counts_differences(toy):
    ours = A.make_adversarial(toy, {"Claim one": "Not claim one"})
    shipped = list(ours)
    shipped[5] = replace(shipped[5], claim="Claim one is wrong")
    shipped[6] = replace(shipped[6], label=1 - shipped[6].label)
    rep = A.agreement_with_shipped(ours, shipped)
    assert rep["matched_ids"] == 8 and rep["identical"] == 6
    assert rep["claim_differs"] == 1 and rep["label_differs"] == 1
    assert rep["examples"] == [ours[5].id, ours[6].id]
    assert rep["agreement"] == pytest.approx(0.75)


def test_transform_agreement_checks_every_constructed_file(toy):
    claim_map = {"Claim one": "Not claim one"}
    data = {split: toy for split in ("train", "dev", "test")}
    data.update({f"{split}-adv-negated": A.make_adversarial(toy, claim_map) for split in ("train", "dev", "test")})
    data["train-swapped"] = A.swap_warrants(toy)
    data["test-adv-negated"] = [replace(it, label=1 - it.label) if it.id == "id2-adversarial" else it
                                for it in data["test-adv-negated"]]
    agreement = A.transform_agreement(data, claim_map)
    assert list(agreement) == ["train-adv-negated", "dev-adv-negated", "test-adv-negated", "train-swapped"]
    assert [a["identical"] for a in agreement.values()] == [8, 8, 7, 8]
    assert agreement["test-adv-negated"]["label_differs"] == 1
    table = A.agreement_table(agreement)
    assert list(table.columns) == list(A.AGREEMENT_COLUMNS) and list(table.index) == list(agreement)
    assert table.loc["test-adv-negated", "identical"] == 7


# ---- baselines without training -------------------------------------------------------------


def test_majority_and_cue_baselines(toy):
    train = [item(9, "a", "b", 1), item(10, "a", "b", 1), item(11, "a", "b", 0)]
    assert A.majority_label(train) == 1
    assert A.majority_baseline(train, toy) == 0.5
    preds, applicable = A.cue_predictions(toy, "not", majority=1)
    assert preds.tolist() == [0, 0, 1, 1] and applicable.tolist() == [True, True, False, False]
    res = A.cue_baseline(train, toy, "not")
    assert res["accuracy"] == 0.5 and res["coverage"] == 0.5 and res["accuracy_where_applicable"] == 0.5
    r1, _ = A.cue_predictions(toy * 10, "not", fallback="random", seed=3)
    r2, _ = A.cue_predictions(toy * 10, "not", fallback="random", seed=3)
    assert np.array_equal(r1, r2) and set(r1[2::4]) == {0, 1}


def test_chapter_tables(toy):
    rows = A.not_cue_table({"train": toy, "all": toy}).set_index("split")
    assert rows.loc["all", "paper productivity"] is None and rows.loc["all", "productivity"] == 0.5
    assert rows.loc["all", "coverage (whole word)"] == 0.75
    given = A.not_cue_table({"all": toy}, paper={"all": {"productivity": 0.9, "coverage": 0.1}}).set_index("split")
    assert given.loc["all", "paper productivity"] == 0.9 and given.loc["all", "paper coverage"] == 0.1
    base = A.baseline_table(toy, {"test": toy}).set_index("test set")
    assert base.loc["test", "majority label"] == 0.5 and base.loc["test", "cue applies to"] == 0.5
