"""Issue 17 in chapter 7: every row states the rule that judged it, carries its interval, and the closing
paragraphs say what this run fine-tuned and follow the rows (regression tests for defects 5 and 8)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arct_items import adversarial_items, fake_runs, labelled_items, toy_items
from attnbook import stats, verdict
from attnbook.stats import Estimate
from attnbook.studies.niven_kao import cues, pairwise
from attnbook.studies.niven_kao import paper as M

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "07_arct_cues.ipynb"


def _not_rows(productive: int, applicable: int, items: int):
    """A :func:`M.not_cue_table` with given counts in every split (only the counts matter to the rows)."""
    table = M.not_cue_table({s: toy_items() for s in ("train", "dev", "test", "all")})
    table["items"], table["applicability"], table["productive"] = items, applicable, productive
    table["productivity"], table["coverage"] = round(productive / applicable, 3), round(applicable / items, 3)
    return table


def _rows(bert_runs, not_rows=None, **kw):
    return M.paper_comparison(not_rows=_not_rows(8100, 12000, 20000) if not_rows is None else not_rows,
                              bert=bert_runs, train=labelled_items(100, 60), test=labelled_items(444), **kw)


def _by(rows):
    return {(r.experiment, r.quantity): r for r in rows}


# ---- defect 8: the rule a row states is the rule that judged it, one rule per kind of quantity --------------------


def test_cue_rows_state_the_rule_that_judged_them():
    # productivity 0.675 on 12000 applicable items vs the paper's 0.61: 6.5 points off, interval +-0.009.
    # The old table said "within 3 points agree, within 8 partly" (-> partly) but judged the cue rows by 2/5
    # (-> disagrees). Now the row says which rule it used, and that rule gives its outcome.
    rows = _by(_rows({}, _not_rows(8100, 12000, 20000)))
    row = rows[('§4 cue "not" (train+dev+test), Table 2', "productivity")]
    assert row.rule == M.CUE_RULE.words == (
        "within 0.02 in productivity or coverage agrees, within 0.05 partly (95% interval decides)")
    assert row.verdict == verdict.DISAGREES
    assert verdict.judge(M.CUE_RULE, 0.61, Estimate(0.675, row.low, row.high)) == row.verdict


def test_one_rule_per_kind_of_quantity_and_every_row_states_it():
    runs = {"full": fake_runs([0.70, 0.71, 0.72], test_adv_accuracy=[0.45, 0.46, 0.47]),
            "W": fake_runs([0.66, 0.67, 0.68], "W"), "CW": fake_runs([0.55, 0.56, 0.57], "CW")}
    adv = {"full": fake_runs([0.5, 0.51, 0.5], original_half_accuracy=[0.6, 0.62, 0.61],
                             negated_half_accuracy=[0.4, 0.4, 0.39])}
    rows = _rows(runs, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444),
                 words={"bov": fake_runs([0.56, 0.57, 0.58]).assign(inputs=["full", "W", "W"])},
                 agreement={"x": {"identical": 4, "n_shipped": 4}},
                 adversarial_cues=cues.cue_statistics(adversarial_items(4)))
    stated = {r.rule for r in rows}
    assert all(r.rule for r in rows)
    assert stated <= {rule.words for rule in M.RULES} | {r.rule for r in rows if r.verdict == "not comparable"}
    for r in rows:
        if "accuracy" in r.quantity or r.quantity in (M.Q_GAP, M.Q_HALVES):
            expected = M.BELOW_CHANCE_RULE if r.experiment == M.E_ORIGINAL_ADV else M.ACCURACY_RULE
            assert r.rule == expected.words or r.verdict == "not comparable", r
        if r.experiment.startswith("§4"):
            assert r.rule == M.CUE_RULE.words
    # and each outcome is what the stated rule gives for the stated interval
    for r in rows:
        rule = {rule.words: rule for rule in M.RULES}.get(r.rule)
        if rule is None or rule is M.COUNT_RULE:
            continue
        value = float(str(r.ours).split(" ")[0])
        assert verdict.judge(rule, r.paper, Estimate(value, r.low, r.high)) == r.verdict, r


def test_the_chapter_text_states_no_rule_of_its_own():
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert not re.search(r"within \d+ points|±\s?\d", prose)  # the old table text: "within 3 points agree, within 8"
    assert "rule" in prose


# ---- intervals: over seeds (t), over test items (exact), over items (exact); counts without --------------------


def test_mean_rows_carry_a_t_interval_over_seeds_and_a_single_run_an_exact_one():
    rows = _by(_rows({"full": fake_runs([0.62, 0.67, 0.72])},
                     words={"bilstm": fake_runs([0.60])}))
    mean = rows[(M.E_FULL, M.Q_MEAN)]
    t = stats.mean_interval([0.62, 0.67, 0.72])
    assert (mean.low, mean.high, mean.n, mean.unit) == (pytest.approx(t.low), pytest.approx(t.high), 3,
                                                                      "seeds")
    # 0.67 vs the paper's 0.671 agreed before; the interval [0.546, 0.794] is too wide for +-0.08: inconclusive
    assert mean.verdict == verdict.INCONCLUSIVE
    one = rows[("§3/§5 BiLSTM (C, R, W)", M.Q_MEAN)]
    low, high = stats.proportion_interval(round(0.60 * 444), 444)
    assert (one.low, one.high, one.n) == (pytest.approx(low), pytest.approx(high), 444)
    assert one.unit == "test items (one run)"


def test_a_maximum_is_compared_only_over_the_papers_number_of_seeds():
    # issue 32: with fewer seeds than the paper's 20 there is no maximum row (it was "not comparable"); the median is
    # compared instead (tests/test_rows32_niven_kao.py)
    few = _by(_rows({"full": fake_runs([0.70, 0.77, 0.74])}))
    assert (M.E_FULL, M.Q_MAX) not in few and (M.E_FULL, M.Q_MEDIAN) in few
    twenty = _by(_rows({"full": fake_runs([0.70] * 19 + [0.77])}))[(M.E_FULL, M.Q_MAX)]
    low, high = stats.proportion_interval(round(0.77 * 444), 444)
    assert twenty.rule == M.ACCURACY_RULE.words and twenty.verdict == verdict.AGREES
    assert (twenty.low, twenty.high) == (pytest.approx(low), pytest.approx(high))
    assert "given the 20 seeds run" in twenty.note


def test_cue_rows_are_exact_counts_over_items():
    # issue 32: a census of the files the paper counted has no sampling interval (it had a binomial one)
    rows = _by(_rows({}, _not_rows(810, 1218, 1970)))
    prod, cov = (rows[('§4 cue "not" (train+dev+test), Table 2', q)] for q in ("productivity", "coverage"))
    assert (prod.low, prod.high, cov.low, cov.high) == (None, None, None, None)
    assert "810 of 1218 items where the cue applies: a census" in prod.note and "1218 of 1970 items" in cov.note
    assert (M.productivity_vs_chance(_not_rows(810, 1218, 1970).iloc[0]).low,
            M.productivity_vs_chance(_not_rows(810, 1218, 1970).iloc[0]).high) == pytest.approx(
        stats.proportion_interval(810, 1218))  # the prose's question: does the cue beat a coin?
    assert prod.n == 1218 and cov.n == 1970 and {r.experiment for r in rows.values()} == {
        '§4 cue "not" (train+dev+test), Table 2', '§4 cue "not" (train), Table 2', '§4 cue "not" (dev), Table 2',
        '§4 cue "not" (test), Table 2'}


def test_halves_sum_has_an_interval_and_exact_counts_have_none():
    adv = {"full": fake_runs([0.5, 0.5, 0.5], original_half_accuracy=[0.60, 0.64, 0.62],
                             negated_half_accuracy=[0.42, 0.38, 0.37])}
    rows = _by(_rows({}, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444),
                     agreement={"x": {"identical": 9, "n_shipped": 9}},
                     adversarial_cues=cues.cue_statistics(adversarial_items(6))))
    halves = rows[(M.adversarial_experiment("full"), M.Q_HALVES)]
    t = stats.mean_interval([1.02, 1.02, 0.99])
    assert (halves.low, halves.high, halves.unit) == (pytest.approx(t.low), pytest.approx(t.high), "seeds")
    assert halves.verdict == verdict.AGREES
    for key in (("§6 adversarial files", "items our transform reproduces exactly"),
                ("§6 adversarial test set", "max |productivity − 0.5| over warrant cues")):
        row = rows[key]
        assert row.low is None and row.high is None and "exact count" in row.unit
        assert row.verdict == verdict.AGREES and row.rule == M.COUNT_RULE.words
    assert "no interval" in rows[("§6 adversarial test set", "max |productivity − 0.5| over warrant cues")].note


def test_one_seed_sums_combine_two_exact_intervals():
    est = M.combined_estimate([0.6], [0.45], 444, 444, sign=1)
    a = stats.proportion_interval(round(0.6 * 444), 444, 0.975)
    b = stats.proportion_interval(round(0.45 * 444), 444, 0.975)
    assert est.value == pytest.approx(1.05) and (est.low, est.high) == pytest.approx((a[0] + b[0], a[1] + b[1]))
    gap = M.combined_estimate([0.6], [0.45], 444, 444, sign=-1)
    assert (gap.low, gap.high) == pytest.approx((a[0] - b[1], a[1] - b[0]))
    wide = M.seed_estimate([0.2, 0.9], 444)  # a t-interval cut to what an accuracy can be
    assert wide.low == 0.0 and wide.high == 1.0


# ---- classifiers no better than their constant predictor; rows that cannot fail ----------------------------------


def test_rows_on_a_classifier_near_its_constant_predictor_are_judged_by_their_rule():
    # issue 32: these rows were "not comparable" (the classifier not shown better than its constant predictor); a
    # near-chance result is compared with the paper's near-chance numbers, a wide interval is inconclusive
    rows = _by(_rows({"full": fake_runs([0.50, 0.51, 0.505], test_adv_accuracy=[0.49, 0.5, 0.5]),
                      "W": fake_runs([0.5, 0.5, 0.5], "W")},
                     test_adv=adversarial_items(444), words={"bov": fake_runs([0.50, 0.51])}))
    for key in (("§3/§5 BoV (C, R, W)", M.Q_MEAN), (M.E_FULL, M.Q_MEAN), (M.E_FULL, M.Q_MEDIAN),
                (M.E_ORIGINAL_ADV, M.Q_MEAN), (M.E_WARRANTS, M.Q_GAP), (M.probe_experiment("W"), M.Q_MEAN)):
        assert rows[key].verdict != verdict.NOT_COMPARABLE, key
        assert rows[key].rule in (M.ACCURACY_RULE.words, M.BELOW_CHANCE_RULE.words), key
    assert "its constant predictor (one answer for every item) scores 0.500 here" in rows[(M.E_FULL, M.Q_MEAN)].note
    assert M.constant_accuracy(labelled_items(10, 7), labelled_items(20, 5)) == 0.25  # always label 1
    assert M.constant_accuracy(labelled_items(10, 5), labelled_items(20, 5)) == 0.75  # tie: the better constant


def test_partial_inputs_that_cannot_see_the_claim_cannot_fail_on_the_adversarial_set():
    adv = {k: fake_runs([0.5, 0.5], k, original_half_accuracy=[0.7, 0.7], negated_half_accuracy=[0.3, 0.3])
           for k in ("W", "RW", "CW")}
    rows = _by(_rows({}, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444)))
    for k in ("W", "RW"):
        assert rows[(M.adversarial_experiment(k), M.Q_MEAN)].verdict == verdict.NOT_COMPARABLE
        assert "cannot fail" in rows[(M.adversarial_experiment(k), M.Q_HALVES)].rule
    assert rows[(M.adversarial_experiment("CW"), M.Q_MEAN)].verdict == verdict.AGREES  # 0.5 vs 0.501


# ---- defect 5: the closing paragraphs say what was fine-tuned and follow the rows ---------------------------------


def test_the_warrants_finding_carries_the_fine_tuning_caveat():
    runs = {"full": fake_runs([0.70, 0.71, 0.72]), "W": fake_runs([0.69, 0.70, 0.705], "W")}
    rows = _rows(runs)
    top = M.agreement_markdown(rows, pairwise.TrainConfig(trainable_layers=1), n_layers=6, model_name="MiniLM")
    assert "As in the paper, the warrants alone get about as far as the full input here" in top
    assert "only the top 1 of 6 layers (plus pooler and classifier) fine-tuned" in top
    assert "not BERT fine-tuned in full as in the paper" in top
    full = M.agreement_markdown(rows, pairwise.TrainConfig(trainable_layers=None), n_layers=6, model_name="BERT")
    assert "every layer fine-tuned" in full and "pre-trained weights" not in full


def test_the_warrants_finding_follows_the_gap_row_not_the_maxima():
    # the old paragraph: max 0.75 vs max 0.71, within 0.06 -> "As in the paper, the warrants alone carry most of it."
    # whatever the spread of the seeds; here the per-seed gaps 0.02, 0.15, 0.01 leave the interval far too wide
    runs = {"full": fake_runs([0.70, 0.75, 0.72]), "W": fake_runs([0.68, 0.60, 0.71], "W")}
    text = M.agreement_markdown(_rows(runs), pairwise.TrainConfig(trainable_layers=1), n_layers=6, model_name="m")
    assert "As in the paper" not in text
    assert "This run cannot tell whether the warrants alone carry most of it" in text
    # two seeds near chance (no dev set to filter them): the gap is judged (issue 32; it was "cannot test"), and the
    # sentence says that the full input itself fell short of the paper's
    constant = {"full": fake_runs([0.50, 0.51]), "W": fake_runs([0.50, 0.50], "W")}
    text = M.agreement_markdown(_rows(constant), pairwise.TrainConfig(trainable_layers=1), n_layers=6)
    assert "though the full input itself falls short of the paper's, so the gap says little" in text


def test_adversarial_finding_follows_its_rows():
    # at chance on both halves: the paper's near-chance claim is judged (issue 32; it was "cannot be judged")
    adv = {"full": fake_runs([0.5, 0.5], original_half_accuracy=[0.49, 0.5], negated_half_accuracy=[0.51, 0.5])}
    rows = _rows({}, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444))
    assert M.adversarial_markdown(rows).startswith("As in the paper, BERT trained for the adversarial test ends at "
                                                   "chance there")
    cannot = {"W": fake_runs([0.5, 0.5], "W")}  # warrants alone cannot tell the two copies apart: cannot fail
    rows = _rows({}, adversarial=cannot, adv_train=labelled_items(100), test_adv=adversarial_items(444))
    assert M.adversarial_markdown(rows, "W").startswith("The adversarial test cannot be judged here: cannot fail")
    adv = {"full": fake_runs([0.62, 0.64, 0.63], original_half_accuracy=[0.7, 0.72, 0.71],
                             negated_half_accuracy=[0.54, 0.56, 0.55])}
    rows = _rows({}, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444))
    text = M.adversarial_markdown(rows)
    assert text.startswith("Unlike in the paper, BERT does not end at chance")
    assert "not about 1: it answers the two copies of an item differently" in text


def test_cue_prose_is_generated_from_the_counts():
    table = cues.cue_statistics(toy_items())
    text = M.cue_markdown(table, min_applicability=1)
    assert text.startswith('The cue that applies to the most items is "not"')
    rows = _not_rows(160, 250, 444)
    assert M.not_cue_markdown(rows).endswith('On the test set, too, "not" marks the correct warrant more often than '
                                              "chance.")
    assert "is no longer shown to be a useful cue" in M.not_cue_markdown(_not_rows(128, 250, 444))
