"""Michel et al. beside this run: the paper's numbers, each comparison rule at its thresholds, Table 4, the text."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnbook import verdict
from attnbook.engine.sweeps import SweepResult
from attnbook.studies.michel import paper
from attnbook.studies.michel import pruning as mp


def sweep(delta):
    delta = np.asarray(delta, dtype=float)
    return SweepResult("single_heads", "mask", 50.0 + delta, 50.0, np.zeros((*delta.shape, 1, 2)), np.zeros((1, 2)),
                       np.zeros(1), [str(i) for i in range(delta.size)])


def sig_table(flags, deltas):
    return pd.DataFrame({"name": [str(i) for i in range(len(flags))], "delta": deltas, "significant": flags})


def test_ablation_rows():
    abl = sweep([[0.0, -6.25], [6.25, 0.0]])
    most, some = paper.ablation_rows(abl, sig_table([False, True, False, False], [0, -6.25, 6.25, 0]), 0.01)
    assert most["paper"] == "most (WMT: 88 of 96)" and most["ours"] == "3 of 4" and most["verdict"] == verdict.AGREES
    assert most["note"] == "paired t-test, p < 0.01, as the paper (no correction)"
    assert some["ours"] == 1 and some["verdict"] == verdict.AGREES
    half = paper.ablation_rows(sweep([[0.0, -1.0], [-1.0, 0.0]]), sig_table([True, True, False, False], [0] * 4), 0.01)
    assert half[0]["verdict"] == verdict.DISAGREES  # 2 of 4 is not "most"
    assert half[1]["ours"] == 0 and half[1]["verdict"] == verdict.DISAGREES


def test_one_head_rows():
    def rows(flags):
        return paper.one_head_rows(pd.DataFrame({"significant": flags}))[0]

    assert rows([False] * 6)["verdict"] == verdict.AGREES and rows([False] * 6)["ours"] == "0 of 6"
    assert rows([True] * 3 + [False] * 3)["verdict"] == verdict.PARTLY
    assert rows([True] * 4 + [False] * 2)["verdict"] == verdict.DISAGREES
    assert rows([False])["paper"] == "0 of 12"


def test_across_rows():
    r, book = paper.across_rows({"pearson": 0.512, "pearson_p": 0.01}, "MNLI-m vs MNLI-mm", True,
                                [("A", "B", 0.2), ("A", "C", 0.4), ("B", "C", 0.3)])
    assert (r["paper"], r["ours"], r["verdict"], r["note"]) == (0.68, 0.51, verdict.AGREES, "MNLI-m vs MNLI-mm")
    assert book["ours"] == pytest.approx(0.3) and book["verdict"] == verdict.NOT_COMPARABLE
    assert book["note"] == "A/B 0.20, A/C 0.40, B/C 0.30"
    partly, none = paper.across_rows({"pearson": 0.3, "pearson_p": 0.01}, "x", False, [])
    assert partly["verdict"] == verdict.PARTLY and partly["note"].startswith("quick: two halves")
    assert none["ours"] == "n/a" and none["note"] == ""
    assert paper.across_rows({"pearson": 0.3, "pearson_p": 0.2}, "x", False, [])[0]["verdict"] == verdict.DISAGREES
    assert paper.across_rows({"pearson": -0.6, "pearson_p": 0.0}, "x", False, [])[0]["verdict"] == verdict.DISAGREES


def test_pruning_rows():
    safe = {mp.BY_ABLATION: 0.1, mp.BY_IMPORTANCE: 0.3, mp.RANDOM_MEAN: 0.0}
    area = {mp.BY_ABLATION: 80.0, mp.BY_IMPORTANCE: 80.0, mp.RANDOM: 79.96}
    share, oracle, rand, one = paper.pruning_rows(safe, area, -5.1, 1.0)
    assert (share["paper"], share["ours"], share["verdict"]) == ("40%", "30%", verdict.AGREES)
    assert share["note"] == "tolerance 1 point(s)"
    assert oracle["ours"] == "80.0 vs 80.0" and oracle["verdict"] == verdict.AGREES
    assert rand["ours"] == "80.0 vs 80.0" and rand["verdict"] == verdict.AGREES  # 80.0 > 79.96
    assert one["ours"] == -5.1 and one["verdict"] == verdict.AGREES
    _, _, _, one = paper.pruning_rows(safe, area, -4.9, 1.0)
    assert one["verdict"] == verdict.PARTLY
    _, _, _, one = paper.pruning_rows(safe, area, -1.0, 1.0)
    assert one["verdict"] == verdict.DISAGREES
    share = paper.pruning_rows({**safe, mp.BY_IMPORTANCE: 0.15}, area, 0, 2.0)[0]
    assert share["verdict"] == verdict.PARTLY and share["note"] == "tolerance 2 point(s)"
    assert paper.pruning_rows({**safe, mp.BY_IMPORTANCE: 0.1}, area, 0, 1.0)[0]["verdict"] == verdict.DISAGREES
    assert paper.pruning_rows(safe, {**area, mp.BY_ABLATION: 80.5}, 0, 1.0)[1]["verdict"] == verdict.DISAGREES


def speed_table(gains, sizes=(1, 4)):
    n = len(sizes)
    return pd.DataFrame({"batch_size": list(sizes), "original_mean": [10.0] * n, "original_std": [0.5] * n,
                         "pruned_mean": [10.0 * (1 + g / 100) for g in gains], "pruned_std": [0.0] * n,
                         "gain_pct": list(gains), "n_pruned": [36] * n})


def test_speed_share_rows_and_table4():
    assert paper.speed_share(0.25) == 0.25 and paper.speed_share(0.0) == 0.5
    row = paper.speed_rows(speed_table([1.0, 20.3]), 0.5)[0]
    assert row["quantity"] == "speed gain at batch 4" and row["paper"] == "+17.5% (50% pruned, GPU)"
    assert row["ours"] == "+20.3% (50% pruned, CPU)" and row["verdict"] == verdict.AGREES
    assert paper.speed_rows(speed_table([1.0, 3.0]), 0.5)[0]["verdict"] == verdict.PARTLY
    assert paper.speed_rows(speed_table([1.0, -3.0]), 0.25)[0]["ours"] == "-3.0% (25% pruned, CPU)"
    t4 = paper.table4(speed_table([1.9, 10.0, 0.0], (1, 4, 8)), 0.25)
    assert list(t4.columns) == ["batch size", "original (ex/s)", "pruned 25% (ex/s)", "gain", "paper original",
                                "paper pruned 50%"]
    assert t4["paper original"].tolist() == ["17.0", "67.3", "—"]
    assert t4["paper pruned 50%"].tolist() == ["17.3 (+1.9%)", "69.1 (+2.7%)", "—"]
    assert t4["original (ex/s)"].iloc[0] == "10.0 ± 0.5" and t4["gain"].tolist() == ["+1.9%", "+10.0%", "+0.0%"]
    assert paper.table4(speed_table([0.0, 0.0], (16, 64)), 0.5)["paper pruned 50%"].tolist() == [
        "134.0 (+17.5%)", "146.6 (+17.5%)"]


def test_dynamics_rows_leave_out_checkpoints_at_chance():
    summary = pd.DataFrame({"unpruned": [52.0, 70.0, 80.0], "safe": [1.0, 0.1, 0.4], "rho_final": [0.1, 0.5, 1.0]},
                           index=["10% of training", "50% of training", "100% of training"])
    row = paper.dynamics_rows(summary, majority=50.0)[0]
    assert row["ours"] == "10% at 50% of training, 40% at the end" and row["verdict"] == verdict.AGREES
    assert row["note"] == "left out, at chance level: 10% of training" and row["paper"] == "lower early, ~40% later"
    flat = summary.assign(safe=[1.0, 0.4, 0.4])
    assert paper.dynamics_rows(flat, 50.0)[0]["verdict"] == verdict.PARTLY
    later = paper.dynamics_rows(summary.iloc[1:].assign(safe=[0.5, 0.4]), 50.0)[0]
    assert later["verdict"] == verdict.DISAGREES and later["note"] == ""
    none = paper.dynamics_rows(summary, majority=76.0)[0]
    assert none["ours"] == "n/a" and none["verdict"] == verdict.NOT_COMPARABLE


def test_comparisons_in_the_papers_order_through_the_verdict_rule():
    abl = sweep([[0.0, -6.25], [6.25, 0.0]])
    safe = {mp.BY_ABLATION: 0.0, mp.BY_IMPORTANCE: 0.0, mp.RANDOM_MEAN: 0.0}
    area = {mp.BY_ABLATION: 50.0, mp.BY_IMPORTANCE: 50.0, mp.RANDOM: 49.2}
    summary = pd.DataFrame({"unpruned": [50.0, 56.25], "safe": [0.0, 0.0], "rho_final": [0.9, 1.0]},
                           index=["50% of training", "100% of training"])
    rows = paper.comparisons(
        ablation=abl, significance=sig_table([False] * 4, [0, -6.25, 6.25, 0]),
        chosen=pd.DataFrame({"significant": [False] * 6}), across={"pearson": -0.02, "pearson_p": 0.8},
        between="dev half A vs half B", out_of_domain=False, task_pairs=[("SST-2", "STS-B", 0.043)], safe=safe,
        area=area, one_head_delta=-18.75, speed=speed_table([15.4, 20.3]), share=0.5, dynamics=summary,
        majority=50.0, disable_vs_mask={"spearman": 0.333}, alpha=0.01, tolerance=1.0)
    assert [r["experiment"] for r in rows] == ["§3.2", "§3.2", "§3.3, App. A", "§3.4", "§3.4 (book)", "§4.2",
                                               "§4.2 Fig. 3", "§4.2 Fig. 3", "§3.3/§4.2", "§4.3 Table 4", "§6 Fig. 5",
                                               "book"]
    assert [r["verdict"] for r in rows] == [
        verdict.AGREES, verdict.AGREES, verdict.AGREES, verdict.DISAGREES, verdict.NOT_COMPARABLE, verdict.DISAGREES,
        verdict.AGREES, verdict.AGREES, verdict.AGREES, verdict.AGREES, verdict.NOT_COMPARABLE, verdict.NOT_COMPARABLE]
    assert rows[8]["ours"] == -18.8 and rows[-1]["ours"] == 0.33
    assert set(rows[0]) == {"experiment", "quantity", "paper", "ours", "verdict", "note"}


def test_the_chapters_sentences():
    abl = sweep([[0.0, -6.25], [6.25, -12.5]])
    text = paper.ablation_markdown(abl, sig_table([False, True, True, False], [0, -6.25, 6.25, -12.5]), 0.01)
    assert text == ("Baseline accuracy 50.0. Of 4 heads, **2** change the accuracy significantly (t-test, p < 0.01): "
                    "1 lower it, 1 raise it; 1 heads' removal raises the score at all. Δ ranges from -12.50 to +6.25 "
                    "points.")
    text = paper.one_head_markdown(pd.DataFrame({"significant": [False, True, False]}), -18.75)
    assert "**1 of 3**" in text and "(one head per layer, 3 heads in all)" in text and "**-18.8** points" in text
    table = pd.DataFrame({"agreement": [verdict.AGREES, verdict.NOT_COMPARABLE, verdict.AGREES, verdict.DISAGREES]})
    text = paper.agreement_markdown(table, "tiny", "SST-2", 56.25, 16, 50.0)
    assert text.startswith("**Agreement.** Of 4 comparisons, 2 agrees, 1 not comparable, 1 disagrees. ")
    assert "(accuracy 56.2 on 16 dev examples, majority class 50.0)" in text
    assert "within 5 points of always predicting the majority class" not in text
    assert "within 5 points of always predicting the majority class" in paper.agreement_markdown(
        table, "tiny", "SST-2", 54.0, 16, 50.0)
