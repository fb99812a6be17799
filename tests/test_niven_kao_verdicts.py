"""Issue 17 in chapter 7: every row states the rule that judged it, carries its interval, and the closing
paragraphs say what this run fine-tuned and follow the rows (regression tests for defects 5 and 8); issue 47: the
accuracy rows' tolerances come from the paper's own seed spread and every accuracy is held against this run's
constant predictor."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
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
    return M.comparisons(not_rows=_not_rows(8100, 12000, 20000) if not_rows is None else not_rows,
                              bert=bert_runs, train=labelled_items(100, 60), test=labelled_items(444), **kw)


def _by(rows):
    return {(r.experiment, r.quantity): r for r in rows}


# ---- defect 8: the rule a row states is the rule that judged it, one rule per kind of quantity --------------------


def test_cue_rows_state_the_rule_that_judged_them():
    # productivity 0.675 on 12000 applicable items vs the paper's 0.61: 6.5 points off. The row states the rule that
    # judged it, with the source of its tolerance (the paper's two decimals; another draw of as many items)
    rows = _by(_rows({}, _not_rows(8100, 12000, 20000)))
    row = rows[('§4 cue "not" (train+dev+test), Table 2', "productivity")]
    rule = M.cue_rule("productivity", 12000, 0.61)
    assert row.rule == rule.words and "the paper prints two decimals, ±0.005" in row.rule
    assert row.verdict == verdict.DISAGREES
    assert verdict.judge(rule, 0.61, Estimate(0.675, row.low, row.high)) == row.verdict


def test_one_rule_per_kind_of_quantity_and_every_row_states_it():
    runs = {"full": fake_runs([0.70, 0.71, 0.72], test_adv_accuracy=[0.45, 0.46, 0.47]),
            "W": fake_runs([0.66, 0.67, 0.68], "W"), "CW": fake_runs([0.55, 0.56, 0.57], "CW")}
    adv = {"full": fake_runs([0.5, 0.51, 0.5], original_half_accuracy=[0.6, 0.62, 0.61],
                             negated_half_accuracy=[0.4, 0.4, 0.39])}
    rows = _rows(runs, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444),
                 words={"bov": fake_runs([0.56, 0.57, 0.58]).assign(inputs=["full", "W", "W"])},
                 agreement={"x": {"identical": 4, "n_shipped": 4}},
                 adversarial_cues=cues.cue_statistics(adversarial_items(4)))
    assert all(r.rule for r in rows)
    for r in rows:
        if r.verdict == verdict.NOT_COMPARABLE:
            continue
        if r.quantity in (M.Q_MEAN, M.Q_MEDIAN, M.Q_MAX, M.Q_MEAN + " (vs BERT Base)", M.Q_GAP, M.Q_HALVES):
            assert "(tolerance: the paper's spread over its 20 seeds" in r.rule, r
            assert "0.03 in accuracy" not in r.rule and "±0.08" not in r.rule  # the old fixed band
        elif r.quantity == M.Q_ADV_MEAN:
            assert r.rule == M.below_chance_rule(0.5).words, r
        if r.experiment.startswith("§4"):
            assert "the paper prints two decimals" in r.rule
        # each outcome is what the stated rule gives for the stated interval
        assert r.rejudged() == r.verdict, r


def test_accuracy_tolerances_come_from_the_papers_own_seed_spread():
    """Regression (issue 47): every accuracy row was judged within ±0.03 (agrees) / ±0.08 (partly) of the paper, so a
    constant predictor at 0.50 partly agreed with the paper's BoV 0.564. The tolerance is now the paper's own spread
    over its 20 seeds: the 95% half-width of its statistic (agrees), one seed's SD (partly), at least one item."""
    bert = M.accuracy_rule(0.09, 444)
    assert bert.agree == pytest.approx(1.959964 * 0.09 / np.sqrt(20), rel=1e-3) and bert.partly == 0.09
    bov = M.accuracy_rule(0.02, 444, paper_margin=0.046)
    assert bov.agree == pytest.approx(0.00877, rel=1e-3) and bov.partly == 0.02 and bov.signed
    assert M.accuracy_rule(0.0, 888).agree == pytest.approx(1 / 888, rel=1e-3)  # the floor: one item
    median = M.accuracy_rule(0.09, 444, "median")
    assert median.agree == pytest.approx(bert.agree * np.sqrt(np.pi / 2), rel=1e-3)
    assert M.max_sd(20) == pytest.approx(0.525, abs=0.003)  # the SD of the largest of 20 normal draws
    assert not M.accuracy_rule(0.09, 444, paper_margin=0.014).signed  # the paper's own interval holds 0: no sign
    # the constant predictor (0.518 on ARCT's test file) against the paper's BoV 0.564, on a narrow interval
    constant = Estimate(0.0, -0.005, 0.005)
    assert verdict.judge(verdict.Within(0.03, 0.08), 0.046, constant) == verdict.PARTLY  # the old rule
    assert verdict.judge(bov, 0.046, constant) == verdict.DISAGREES
    # surely below the constant predictor while the paper is surely above it: disagrees, whatever the bands
    assert verdict.judge(M.accuracy_rule(0.09, 444, paper_margin=0.153), 0.153,
                         Estimate(-0.03, -0.05, -0.01)) == verdict.DISAGREES


def test_accuracy_rows_are_held_against_this_runs_constant_predictor():
    """Regression (issue 47): a near-chance row compared the accuracy with the paper's near-chance number and only
    mentioned the constant predictor in its note. Now every accuracy row is judged as its margin over the constant
    predictor (always the training set's majority answer, on the same test file as the paper's)."""
    train = labelled_items(100, 60)  # majority label 1
    test = labelled_items(444, 230)  # as ARCT's test file: 230 of 444 labelled 1, the constant predictor 0.518
    rows = _by(M.comparisons(not_rows=_not_rows(8100, 12000, 20000), bert={}, train=train, test=test,
                                  words={"bov": fake_runs([0.515, 0.52, 0.518])}))
    bov = rows[("§3/§5 BoV (C, R, W)", M.Q_MEAN)]
    c = 230 / 444
    assert bov.paper == f"{0.564 - c:+.3f} (0.564 − {c:.3f})" and bov.paper_value == pytest.approx(0.564 - c)
    est = M.seed_estimate([0.515, 0.52, 0.518], 444)
    assert (bov.value, bov.low, bov.high) == pytest.approx((est.value - c, est.low - c, est.high - c))
    assert bov.verdict in (verdict.INCONCLUSIVE, verdict.DISAGREES)  # never agrees at the constant predictor's level
    assert f"less the constant predictor's {c:.3f}" in bov.note


def test_the_chapter_text_states_no_rule_of_its_own():
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert not re.search(r"within \d+ points|±\s?\d", prose)  # the old table text: "within 3 points agree, within 8"
    assert "rule" in prose


# ---- intervals: over seeds (t), over test items (exact), over items (exact); counts without --------------------


def test_mean_rows_carry_the_seed_rules_interval_and_a_single_run_an_exact_one():
    rows = _by(_rows({"full": fake_runs([0.62, 0.67, 0.72])},
                     words={"bilstm": fake_runs([0.60])}))
    mean = rows[(M.E_FULL, M.Q_MEAN)]
    est = stats.over_seeds([M.run_estimate(v, 444) for v in (0.62, 0.67, 0.72)], bounds=(0.0, 1.0))
    assert (mean.low, mean.high, mean.n, mean.unit) == (pytest.approx(est.low - 0.5), pytest.approx(est.high - 0.5),
                                                        3, "seeds")
    assert est.seed_var > 0 and est.item_var > 0  # the seeds' spread and the test items' own error
    # 0.17 over the constant predictor vs the paper's 0.171: the interval is too wide for ±0.039: inconclusive
    assert mean.verdict == verdict.INCONCLUSIVE
    one = rows[("§3/§5 BiLSTM (C, R, W)", M.Q_MEAN)]
    low, high = stats.proportion_interval(round(0.60 * 444), 444)
    assert (one.low, one.high, one.n) == (pytest.approx(low - 0.5), pytest.approx(high - 0.5), 444)
    assert one.unit == "test items (one run)" and "counts its 444 test items only" in one.detectable


def test_a_one_seed_row_borrows_the_seed_spread_its_table_measures():
    # the degenerate-run filter can leave one seed of a probe while the others keep three: that row borrows the
    # pooled seed spread of the BERT rows (the book's seed rule) instead of counting the test items only
    dev = labelled_items(316, 158)
    bert = {"full": fake_runs([0.60, 0.66, 0.72], dev_accuracy=[0.7] * 3),
            "W": fake_runs([0.64, 0.5, 0.5], "W", dev_accuracy=[0.7, 0.5, 0.5])}
    rows = _by(_rows(bert, dev=dev))
    w = rows[(M.probe_experiment("W"), M.Q_MEAN)]
    alone = M.run_estimate(0.64, 444)
    assert w.n == 1 and w.unit == "seed (seed spread borrowed)"
    assert w.low < alone.low - 0.5 and w.high > alone.high - 0.5
    assert "seed spread borrowed from the table's other rows" in w.detectable


def test_a_maximum_is_compared_only_over_the_papers_number_of_seeds():
    # issue 32: with fewer seeds than the paper's 20 there is no maximum row (it was "not comparable"); the median is
    # shown instead (tests/test_rows32_niven_kao.py)
    few = _by(_rows({"full": fake_runs([0.70, 0.77, 0.74])}))
    assert (M.E_FULL, M.Q_MAX) not in few and (M.E_FULL, M.Q_MEDIAN) in few
    twenty = _by(_rows({"full": fake_runs([0.70] * 19 + [0.77])}))[(M.E_FULL, M.Q_MAX)]
    low, high = stats.proportion_interval(round(0.77 * 444), 444)
    assert twenty.rule == M.accuracy_rule(0.09, 444, "max", "Table 3", 0.77 - 0.5).words
    assert twenty.verdict == verdict.AGREES  # 0.27 over the constant predictor, as the paper's 0.770 - 0.5
    assert (twenty.low, twenty.high) == (pytest.approx(low - 0.5), pytest.approx(high - 0.5))
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
    est = M.combined_estimate([0.60, 0.64, 0.62], [0.42, 0.38, 0.37], 444, 444, sign=1)
    assert (halves.low, halves.high, halves.unit) == (pytest.approx(est.low), pytest.approx(est.high), "seeds")
    assert halves.low < 0.95 and halves.high > 1.05  # two halves of 444 items each: about ±0.07
    assert halves.verdict == verdict.INCONCLUSIVE  # too wide for the paper's adversarial spread, doubled
    for key in (("§6 adversarial files", "items our transform reproduces exactly"),
                ("§6 adversarial test set", "max |productivity − 0.5| over warrant cues")):
        row = rows[key]
        assert row.low is None and row.high is None and "exact count" in row.unit
        assert row.verdict == verdict.AGREES and row.rule == M.COUNT_RULE.words
    assert "no interval" in rows[("§6 adversarial test set", "max |productivity − 0.5| over warrant cues")].note


def test_one_seed_sums_combine_the_two_runs_standard_errors():
    # each side's standard error read from its exact interval, combined as for a sum of independent accuracies (the
    # Bonferroni sum of two 97.5% intervals it replaces was about 1.6 times too wide as a standard error)
    se = lambda k: (lambda lo, hi: (hi - lo) / 2 / 1.959963984540054)(*stats.proportion_interval(k, 444))  # noqa: E731
    half = 1.959963984540054 * np.hypot(se(round(0.6 * 444)), se(round(0.45 * 444)))
    est = M.combined_estimate([0.6], [0.45], 444, 444, sign=1)
    assert est.value == pytest.approx(1.05) and (est.low, est.high) == pytest.approx((1.05 - half, 1.05 + half))
    gap = M.combined_estimate([0.6], [0.45], 444, 444, sign=-1)
    assert (gap.low, gap.high) == pytest.approx((0.15 - half, 0.15 + half))
    wide = M.seed_estimate([0.2, 0.9], 444)  # an interval cut to what an accuracy can be
    assert wide.low == 0.0 and wide.high == 1.0


# ---- classifiers no better than their constant predictor; rows that cannot fail ----------------------------------


def test_rows_on_a_classifier_near_its_constant_predictor_are_judged_by_their_rule():
    # issue 32: these rows were "not comparable" (the classifier not shown better than its constant predictor); a
    # near-chance result is compared with the paper's near-chance numbers, a wide interval is inconclusive
    rows = _by(_rows({"full": fake_runs([0.50, 0.51, 0.505], test_adv_accuracy=[0.49, 0.5, 0.5]),
                      "W": fake_runs([0.5, 0.5, 0.5], "W")},
                     test_adv=adversarial_items(444), words={"bov": fake_runs([0.50, 0.51])}))
    for key in (("§3/§5 BoV (C, R, W)", M.Q_MEAN), (M.E_FULL, M.Q_MEAN), (M.E_ORIGINAL_ADV, M.Q_ADV_MEAN),
                (M.E_WARRANTS, M.Q_GAP), (M.probe_experiment("W"), M.Q_MEAN)):
        assert rows[key].verdict != verdict.NOT_COMPARABLE, key
        assert rows[key].verdict != verdict.AGREES, key
        assert "(tolerance: " in rows[key].rule, key
    assert "less the constant predictor's 0.500 (one answer for every item" in rows[(M.E_FULL, M.Q_MEAN)].note
    assert M.constant_accuracy(labelled_items(10, 7), labelled_items(20, 5)) == 0.25  # always label 1
    assert M.constant_accuracy(labelled_items(10, 5), labelled_items(20, 5)) == 0.75  # tie: the better constant


def test_partial_inputs_that_cannot_see_the_claim_cannot_fail_on_the_adversarial_set():
    adv = {k: fake_runs([0.5, 0.5], k, original_half_accuracy=[0.7, 0.7], negated_half_accuracy=[0.3, 0.3])
           for k in ("W", "RW", "CW")}
    rows = _by(_rows({}, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444)))
    for k in ("W", "RW"):
        assert rows[(M.adversarial_experiment(k), M.Q_MEAN)].verdict == verdict.NOT_COMPARABLE
        assert "cannot fail" in rows[(M.adversarial_experiment(k), M.Q_HALVES)].rule
    # 0.5 vs the paper's 0.501, SD 0.01 over its 20 seeds: two seeds on 888 items cannot show it within ±0.0044
    cw = rows[(M.adversarial_experiment("CW"), M.Q_MEAN)]
    assert cw.verdict == verdict.INCONCLUSIVE and cw.paper_value == pytest.approx(0.001)


# ---- defect 5: the closing paragraphs say what was fine-tuned and follow the rows ---------------------------------


def test_the_warrants_finding_carries_the_fine_tuning_caveat():
    runs = {"full": fake_runs([0.70, 0.71, 0.72]), "W": fake_runs([0.69, 0.70, 0.705], "W")}
    rows = _rows(runs)
    top = M.agreement_markdown(rows, pairwise.TrainConfig(trainable_layers=1), n_layers=6, model_name="MiniLM")
    # gap 0.012 against the paper's 0.015: its interval over three seeds and 444 items is within the wider band only
    assert "The warrants alone come near the full input here: the gap lies within the rule's wider band" in top
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
    # two seeds near chance (no dev set to filter them): the gap is judged (issue 32; it was "cannot test"); with the
    # test items' own error in its interval, two seeds cannot show it as small as the paper's
    constant = {"full": fake_runs([0.50, 0.51]), "W": fake_runs([0.50, 0.50], "W")}
    rows = _rows(constant)
    text = M.agreement_markdown(rows, pairwise.TrainConfig(trainable_layers=1), n_layers=6)
    assert _by(rows)[(M.E_WARRANTS, M.Q_GAP)].verdict != verdict.NOT_COMPARABLE
    assert "As in the paper" not in text


def test_adversarial_finding_follows_its_rows():
    # at chance on both halves: the paper's near-chance claim is judged (issue 32; it was "cannot be judged")
    # at chance on both halves, two seeds: the paper's 0.504 (SD 0.01 over its 20 seeds) is known to ±0.0044, and two
    # seeds on 888 items cannot show this run within that (issue 47: it agreed within ±0.03)
    adv = {"full": fake_runs([0.5, 0.5], original_half_accuracy=[0.49, 0.5], negated_half_accuracy=[0.51, 0.5])}
    rows = _rows({}, adversarial=adv, adv_train=labelled_items(100), test_adv=adversarial_items(444))
    assert M.adversarial_markdown(rows).startswith("On the adversarial test set the mean test accuracy less the "
                                                   "constant predictor's +0.000 [")
    assert "is too uncertain to tell whether it sits at chance" in M.adversarial_markdown(rows)
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
