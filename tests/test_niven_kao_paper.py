"""Niven & Kao's numbers beside this run: the paper's tables, the comparison rows and the closing paragraph."""
from __future__ import annotations

import pytest

from arct_items import fake_runs, item, toy_items
from attnbook import verdict
from attnbook.studies.niven_kao import bert
from attnbook.studies.niven_kao import paper as M


def test_paper_numbers_are_consistent():
    P = M.PAPER
    assert P["table3"]["BERT"]["full"] == {k: P["table1"]["BERT (Large)"][k] for k in ("mean", "std", "median", "max")}
    assert P["table3"]["BERT"]["W"]["max"] == 0.712 and P["table3"]["BERT"]["RW"]["max"] == 0.750
    assert P["table4"]["BERT"]["full"]["max"] == 0.533
    assert P["not_cue"]["all"] == {"productivity": 0.61, "coverage": 0.64}


def test_not_cue_table_puts_table_2_beside_ours():
    toy = toy_items()
    rows = M.not_cue_table({"train": toy, "all": toy}).set_index("split")
    assert rows.loc["all", "paper productivity"] == 0.61 and rows.loc["all", "productivity"] == 0.5
    assert rows.loc["train", "paper coverage"] == 0.66
    assert rows.loc["all", "coverage (whole word)"] == 0.75


def test_paper_comparison_verdicts_follow_the_numbers():
    toy = [item(0, "it is not good", "it is good", 0), item(1, "no", "not so", 1)]
    not_rows = M.not_cue_table({"train": toy, "dev": toy, "test": toy, "all": toy})
    bert_runs = {"full": fake_runs([0.70, 0.77, 0.74], test_adv_accuracy=[0.45, 0.48, 0.47]),
                 "W": fake_runs([0.50, 0.52, 0.51], "W")}
    adv = {"full": fake_runs([0.50, 0.53], original_half_accuracy=[0.6, 0.5], negated_half_accuracy=[0.4, 0.5])}
    rows = M.paper_comparison(not_rows=not_rows, bert=bert_runs, adversarial=adv, adversarial_cue_gap=0.0,
                              words={"bov": fake_runs([0.56, 0.57])})
    by = {(r["experiment"], r["quantity"]): r for r in rows}
    assert by[("§3 BERT, full input (C, R, W)", "test accuracy, max")]["verdict"] == "agrees"
    assert by[("§5 probe, BERT (W)", "test accuracy, max")]["verdict"] == "disagrees"  # 0.52 vs 0.712
    gap = by[("§5 finding: warrants alone", "max(full) − max(W), points")]
    assert gap["ours"] == pytest.approx(0.25) and gap["verdict"] == "disagrees"
    assert by[("§6 trained on original data, tested adversarially", "test accuracy, mean")]["verdict"] == "agrees"
    assert by[("§6 adversarial test, BERT (C, R, W)", "original half + negated half")]["ours"] == pytest.approx(1.0)
    assert by[("§3/§5 BoV (C, R, W)", "test accuracy, mean")]["verdict"] == "agrees"
    assert by[('§4 cue "not" (train+dev+test)', "productivity")]["verdict"] == "disagrees"  # 0.5 vs 0.61
    assert by[("§6 adversarial test set", "max |productivity − 0.5| over warrant cues")]["verdict"] == "agrees"
    from attnbook.chapters.results import VERDICTS

    assert all(r["verdict"] in VERDICTS for r in rows)


def test_comparison_thresholds_are_the_stated_ones():
    toy = toy_items()
    not_rows = M.not_cue_table({"all": toy})
    rows = {r["quantity"]: r for r in M.paper_comparison(
        not_rows=not_rows, bert={"full": fake_runs([0.70, 0.72], test_adv_accuracy=[0.52, 0.52])},
        agreement={"x": {"identical": 3, "n_shipped": 4}})}
    # max 0.72 vs 0.77: 5 points, within 8 -> partly; mean 0.71 vs 0.671: 3.9 points -> partly
    assert rows["test accuracy, max"]["verdict"] == verdict.PARTLY
    assert rows["test accuracy, mean"]["verdict"] == verdict.PARTLY
    assert rows["test accuracy, median"]["verdict"] == verdict.AGREES  # 0.71 vs 0.712
    assert [r for q, r in rows.items() if "tested adversarially" in r["experiment"]][0]["verdict"] == verdict.PARTLY
    assert rows["items our transform reproduces exactly"]["verdict"] == verdict.PARTLY


def test_seed_tables_in_the_papers_layout():
    table = M.seed_table({"x": fake_runs([0.5, 0.7])}, paper={"x": {"mean": 0.6, "max": 0.8}})
    assert table.loc[0, "max"] == 0.7 and table.loc[0, "paper max"] == 0.8 and table.loc[0, "seeds"] == 2
    words = {"bov": fake_runs([0.5, 0.6]).assign(inputs=["full", "W"]), "bilstm": fake_runs([0.55])}
    t1 = M.table1_seed_table(fake_runs([0.6, 0.7]), words).set_index("experiment")
    assert list(t1.index) == ["BERT (this run)", "BOV (this run)", "BiLSTM (this run)"]
    assert t1.loc["BOV (this run)", "seeds"] == 1 and t1.loc["BOV (this run)", "paper mean"] == 0.564
    assert t1.loc["BERT (this run)", "paper max"] == 0.770
    assert list(M.table1_seed_table(fake_runs([0.6]))["experiment"]) == ["BERT (this run)"]
    t3 = M.probe_seed_table({"full": fake_runs([0.6]), "CW": fake_runs([0.55], "CW")}).set_index("experiment")
    assert list(t3.index) == ["C, R, W", "C, W"] and t3.loc["C, W", "paper median"] == 0.503
    full = fake_runs([0.6, 0.7], test_adv_accuracy=[0.4, 0.45])
    t4 = M.adversarial_seed_table(full, {"W": fake_runs([0.5, 0.5], "W")}).set_index("experiment")
    assert t4.loc["C, R, W, trained on original data", "mean"] == 0.425
    assert "paper mean" not in t4.columns or t4["paper mean"].iloc[0] != t4["paper mean"].iloc[0]  # no paper row
    assert t4.loc["W, trained on train-swapped", "paper max"] == 0.502


def test_run_markdown_names_what_was_trained():
    cfg = bert.TrainConfig(epochs=2, lr=2e-3, batch_size=32, trainable_layers=1)
    text = M.run_markdown(cfg, n_seeds=2, n_layers=6, max_length=48, n_train=48, n_dev=24, n_test=24)
    assert text.startswith("This run: 2 seeds, 2 epochs, lr 0.002, 32 items per step, at most 48 pieces per pair")
    assert "**the top 1 of 6 layers**" in text and "(paper: every layer, 20 seeds)" in text
    assert "48 training, 24 dev and 24 test items" in text
    assert "**every layer**" in M.run_markdown(bert.TrainConfig(), n_seeds=1, n_layers=12, max_length=80,
                                               n_train=1, n_dev=1, n_test=1)


def test_agreement_markdown_counts_rows_and_states_the_findings():
    rows = [{"verdict": v} for v in ("agrees", "disagrees", "agrees", "partly agrees")]
    close = {"full": fake_runs([0.70, 0.75]), "W": fake_runs([0.68, 0.70], "W")}
    text = M.agreement_markdown(rows, close, {"full": fake_runs([0.5, 0.52])})
    first, second, third = text.split("\n\n")
    assert first == "**Agreement.** Of 4 comparisons, 2 agrees, 1 disagrees, 1 partly agrees."
    assert "reaches 75.0% on the test set (paper: 77.0%); with the warrants alone 70.0% (paper: 71.2%)" in second
    assert second.endswith("As in the paper, the warrants alone carry most of it.")
    assert third == "On the adversarial test set the mean is 51.0% and the best seed 52.0% (paper: 50.4% and 53.3%)."
    far = {"full": fake_runs([0.75]), "W": fake_runs([0.60], "W")}
    assert "Unlike in the paper" in M.agreement_markdown(rows, far)
    assert M.agreement_markdown(rows, {"full": fake_runs([0.7])}).count("\n\n") == 0
