"""What would decide the undecided claims (attnbook.chapters.decide): planned samples, the parameter that sets them,
the cheapest choice that reaches a decided share."""
from __future__ import annotations

import pytest

from attnbook import verdict
from attnbook.chapters import decide
from attnbook.chapters.params import chapter_params
from attnbook.stats import Estimate


def results():
    """Chapter 5 with two undecided per-task claims over dev examples, one decided claim and one direction-only claim,
    and chapter 7 with an undecided claim over seeds."""
    gain = verdict.Within(1.0, 2.0, unit="points", signed=True)
    rows5 = [verdict.row("§4.6", "SST-2: layer 1 off (points)", paper=3.2, ours=Estimate(1.5, -1.0, 4.0, 96, "dev examples"),
                         rule=gain),
             verdict.row("§4.6", "MRPC: layer 1 off (points)", paper=3.2, ours=Estimate(0.5, -4.0, 5.0, 96, "dev examples"),
                         rule=gain),
             verdict.row("§4.6", "decided", paper=3.2, ours=Estimate(3.1, 2.9, 3.3, 96, "dev examples"), rule=gain),
             verdict.row("§4.6", "direction only", paper="> 0", ours=Estimate(0.1, -1.0, 1.2, 96, "dev examples"),
                         rule=verdict.Beyond(0.0))]
    rows7 = [verdict.row("§4", "accuracy", paper=0.71, ours=Estimate(0.70, 0.62, 0.78, 3, "seeds", df=3.0,
                                                                     seed_var=0.0009, item_var=0.0003),
                         rule=verdict.Within(0.03, 0.08))]
    return {"05_kovaleva_disabling": {"params": {}, "comparisons": [r.as_dict() for r in rows5]},
            "07_arct_cues": {"params": {}, "comparisons": [r.as_dict() for r in rows7]}}


def test_each_undecided_claim_gets_its_planned_sample_and_the_parameter_that_sets_it():
    found = {x.quantity: x for x in decide.needs(results())}
    assert set(found) == {"SST-2: layer 1 off (points)", "MRPC: layer 1 off (points)", "accuracy"}  # not the others
    sst = found["SST-2: layer 1 off (points)"]
    assert (sst.param, sst.key, sst.n) == ("dev_caps", "SST-2", 96)
    se = 2.5 / verdict.Z975
    assert sst.planned[1] == pytest.approx(96 * (se / (1.0 / (verdict.Z975 + verdict.Z90))) ** 2)
    assert found["MRPC: layer 1 off (points)"].factor > sst.factor
    arct = found["accuracy"]
    assert arct.param == "n_seeds" and arct.planned[0] < arct.planned[1]


def test_the_cheapest_claims_are_chosen_until_the_target_share_is_expected():
    res = results()
    found = decide.needs(res)
    chosen, share = decide.choose(res, found, target=0.5)
    # 5 claims: 1 decided now, the direction-only and the 3 planned undecided; each chosen one counts 0.8
    assert share["now"] == pytest.approx(0.2) and share["claims"] == 5
    assert [x.quantity for x in chosen] == ["SST-2: layer 1 off (points)", "MRPC: layer 1 off (points)"][:len(chosen)]
    assert share["expected"] >= 0.5 or share["expected"] == share["best"]
    over = decide.overrides(chosen)
    assert over["05_kovaleva_disabling"]["dev_caps"]["SST-2"] == chosen[0].target > 96


def test_a_count_two_parameters_share_goes_to_the_one_the_experiment_names():
    params = chapter_params("02_clark_probing", "quick")  # both counts are 2,001 (UD EWT's dev set)
    assert params.syntax_sentences == params.probe_dev_sentences == 2001
    assert decide._param_for(2001, "q", "sentences", params, "§5 probing classifiers") == ("probe_dev_sentences", None)
    assert decide._param_for(2001, "q", "sentences", params, "§4.2 heads as parsers") == ("syntax_sentences", None)


def test_a_book_already_at_its_target_says_so(monkeypatch):
    res = results()
    text = decide.report(res, target=0.1)
    assert "already 20% decided, at or above the target 10%" in text


def test_the_plan_reads_the_parameters_a_results_file_recorded():
    """Regression: a results file records its ``chapter`` and ``profile`` beside the parameters; reading the record
    back raised on ``chapter``, and the plan silently fell back to the profile's values, so a chapter run with a
    larger dev cap was planned as if run with the profile's."""
    gain = verdict.Within(1.0, 2.5)
    row = verdict.row("§4.6 Fig. 9", "SST-2: layer 1 off (points)", paper=-5.0,
                      ours=Estimate(-4.0, -9.0, 1.0, 300, "dev examples"), rule=gain)
    recorded = {**chapter_params("05_kovaleva_disabling", "quick").as_dict(),
                "dev_caps": {"SST-2": 300, "MRPC": 96, "RTE": 64, "STS-B": 96, "default": 96}}
    assert recorded["chapter"] == "05_kovaleva_disabling" and recorded["profile"] == "quick"
    found = decide.needs({"05_kovaleva_disabling": {"params": recorded, "comparisons": [row.as_dict()]}})
    assert [(x.param, x.key, x.n) for x in found] == [("dev_caps", "SST-2", 300)]
