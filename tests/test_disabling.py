"""Kovaleva §4.6 (chapter 5): the disabling check and the summaries of the single-head and layer sweeps."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from attnbook.core.errors import ParameterError
from attnbook.engine.inputs import Batch
from attnbook.engine.models import wrap_model
from attnbook.studies.kovaleva import disabling as D
from attnbook.studies.kovaleva import crossfit as C


@pytest.fixture
def tiny_classifier(tiny_bert):
    from transformers import BertForSequenceClassification

    clf = BertForSequenceClassification(tiny_bert.model.config)
    clf.bert.load_state_dict(tiny_bert.model.state_dict())
    clf.eval()
    return wrap_model(clf, tiny_bert.tokenizer, "tiny classifier")


def test_disable_check_gives_uniform_weights_and_leaves_other_heads(tiny_classifier, tokenizer):
    enc = tokenizer(["the cat sat on the mat", "a dog"], ["it was happy", "barks"], padding=True, return_tensors="pt")
    batch = Batch.from_mapping(enc)
    for layer, head in ((0, 0), (1, 2)):
        check = D.disable_check(tiny_classifier, batch, layer, head)
        assert check["L"] == int(enc["attention_mask"][0].sum())
        assert check["uniform_error"] < 1e-6 and check["other_heads_change"] < 1e-6
    short = D.disable_check(tiny_classifier, Batch.from_mapping({k: v[1:] for k, v in enc.items()}))
    assert short["L"] == int(enc["attention_mask"][1].sum())  # padded row: L counts the real tokens only
    assert short["uniform_error"] < 1e-6
    assert tiny_classifier.model.config._attn_implementation == "eager"  # the intervention is undone


def _sweep(delta, baseline=80.0, gold=(0, 1, 1, 1)):
    delta = np.asarray(delta, dtype=float)
    return SimpleNamespace(delta=delta, baseline_score=baseline, gold=np.array(gold))


class _Split:
    """A scored dev split: its examples (``len``) and the size of the whole split."""

    def __init__(self, n: int, n_total: int):
        self.n, self.n_total = n, n_total

    def __len__(self) -> int:
        return self.n


def test_baselines_and_dev_caps():
    single = {"SST-2": _sweep([[1.0]], 80.04), "STS-B": _sweep([[1.0]], 12.36, gold=(0.5, 2.0))}
    dev = {"SST-2": _Split(4, 872), "STS-B": _Split(2, 1500)}
    b = D.baselines(single, dev)
    assert b["task"].tolist() == ["SST-2", "STS-B"] and b["metric"].tolist() == ["accuracy", "Pearson r"]
    assert b["this run"].tolist() == [80.0, 12.4] and b["constant predictor"].tolist() == [75.0, 0.0]
    assert b["dev examples"].tolist() == [4, 2] and b["of"].tolist() == [872, 1500]
    caps = {"SST-2": 160, "default": 96}
    assert D.dev_cap(caps, "SST-2") == 160 and D.dev_cap(caps, "RTE") == 96 and D.dev_cap({}, "RTE") is None


def test_head_summary_best_worst_and_numbers():
    single = {"RTE": _sweep([[1.0, -2.0], [0.5, 3.0]], 60.0)}
    table, numbers = D.head_summary(single)
    row = table.iloc[0]
    assert (row["best head off"], row["best gain"]) == ("2-2", 3.0)
    assert (row["worst head off"], row["worst change"]) == ("1-2", -2.0)
    assert row["mean change (random head)"] == 0.625
    assert row["heads that help"] == 0.75 and row["heads that hurt"] == 0.25
    assert numbers["RTE"]["best_head"] == "2-2" and numbers["RTE"]["delta"] == [[1.0, -2.0], [0.5, 3.0]]
    assert numbers["RTE"]["share_better"] == 0.75


def _holm(names, delta, significant, mcnemar=True):
    t = pd.DataFrame({"name": names, "delta": delta, "ci_low": np.array(delta) - 1, "ci_high": np.array(delta) + 1,
                      "p_normal": 0.5, "p_holm": [0.01 if s else 0.9 for s in significant], "significant": significant,
                      "test": "McNemar" if mcnemar else "bootstrap (normal)"})
    if mcnemar:
        t["p_mcnemar"] = 0.02
    return t


def test_significance_summary_and_layer_table():
    tables = {"SST-2": _holm(["1-1", "1-2", "2-1"], [2.0, -3.0, -1.0], [True, True, False]),
              "STS-B": _holm(["1-1", "1-2", "2-1"], [0.5, -0.5, 0.1], [False, False, False], mcnemar=False)}
    picked, gains, losses = D.significance_summary(tables)
    assert gains == {"SST-2": ["1-1"], "STS-B": []} and losses == {"SST-2": ["1-2"], "STS-B": []}
    assert picked["head off"].tolist() == ["1-1", "1-2", "1-1", "1-2"]
    assert picked["which"].tolist() == ["best", "worst"] * 2
    assert picked.loc[0, "95% interval"] == "[+1.00, +3.00]" and picked.loc[0, "p"] == 0.02
    assert picked.loc[2, "p"] == 0.5 and picked["survives"].tolist() == [True, True, False, False]
    layers = {"SST-2": _sweep([1.234, -0.5]), "STS-B": _sweep([0.0, -2.0])}
    ltables = {"SST-2": pd.DataFrame({"significant": [True, False], "p_holm": [0.01234, 0.5]}),
               "STS-B": pd.DataFrame({"significant": [False, True], "p_holm": [0.9, 0.04]})}
    t = D.layer_table(layers, ltables, 2)
    assert t.index.tolist() == ["layer 1 off", "layer 2 off"]
    assert t["SST-2"].tolist() == ["+1.23*", "-0.50"] and t["STS-B"].tolist() == ["+0.00", "-2.00*"]
    assert D.layer_numbers(layers, ltables)["SST-2"] == {"delta": [1.234, -0.5], "p_holm": [0.0123, 0.5]}


def test_runs_to_sweep_skip_classifiers_that_did_not_learn():
    """Issue 18: chapter 5's head findings skip a (task, seed) whose classifier is no better than its constant
    predictor, and say so; the smoke profile sweeps them anyway (its rows stay not comparable)."""
    learned = {("SST-2", 0): "", ("SST-2", 1): "", ("RTE", 0): "constant", ("RTE", 1): "constant",
               ("MRPC", 0): "constant", ("MRPC", 1): ""}
    runs = D.runs_to_sweep(learned)
    assert runs == [("SST-2", 0), ("SST-2", 1), ("MRPC", 1)]
    assert D.runs_to_sweep(learned, include_unlearned=True) == list(learned)
    main = D.primary_runs(D.runs_to_sweep(learned, include_unlearned=True), ["MRPC", "SST-2", "RTE"], learned)
    assert main == {"MRPC": ("MRPC", 1), "SST-2": ("SST-2", 0), "RTE": ("RTE", 0)}  # learned seeds first
    assert D.task_reasons(learned, ["SST-2", "RTE", "MRPC"]) == {
        "SST-2": "", "RTE": "seed 0: constant; seed 1: constant", "MRPC": ""}
    text = D.skipped_markdown(learned, runs, D.primary_runs(runs, ["SST-2", "MRPC"], learned))
    assert "Not swept (no learned classifier): RTE seed 0, RTE seed 1, MRPC seed 0." in text
    assert "The figures show SST-2 seed 0, MRPC seed 1." in text
    effects = {k: f"e{k}" for k in learned}
    main_e, why, per_seed = D.verdict_inputs(effects, learned, main, ["SST-2", "RTE", "MRPC"])
    assert main_e == {"MRPC": "e('MRPC', 1)", "SST-2": "e('SST-2', 0)", "RTE": "e('RTE', 0)"}
    assert why == {"SST-2": "", "RTE": "constant", "MRPC": ""}
    assert per_seed == {"SST-2": {0: "e('SST-2', 0)", 1: "e('SST-2', 1)"}, "MRPC": {1: "e('MRPC', 1)"}}


def test_cross_seed_agreement_of_head_effects():
    rng = np.random.default_rng(0)
    shared = rng.standard_normal((6, 12))
    deltas = {0: shared, 1: shared + 0.1 * rng.standard_normal((6, 12)), 2: rng.standard_normal((6, 12))}
    table = D.cross_seed_agreement(deltas, top_k=5)
    assert table["seeds"].tolist() == ["0 vs 1", "0 vs 2", "1 vs 2"]
    assert table.loc[0, "Spearman"] > 0.9 and abs(table.loc[1, "Spearman"]) < 0.5
    assert table.loc[0, "top-k overlap"] >= 0.6 and table.loc[0, "chance overlap"] == pytest.approx(5 / 72)
    # the most harmful heads are the most negative changes
    flipped = D.cross_seed_agreement({0: shared, 1: -shared}, top_k=5)
    assert flipped.loc[0, "top-k overlap"] == 0.0
    summary = D.agreement_summary({"A": table, "B": D.cross_seed_agreement({0: shared}, 5)})
    assert set(summary) == {"A"} and summary["A"]["pairs"] == 3
    assert summary["A"]["spearman"] == pytest.approx(table["Spearman"].mean())
    assert list(D.agreement_table({"A": table}).columns) == ["task", "seeds", "Spearman", "top-k overlap",
                                                             "chance overlap"]
    assert D.by_task({("A", 0): 1, ("A", 2): 3, ("B", 1): 2}) == {"A": {0: 1, 2: 3}, "B": {1: 2}}


def test_chapter5_bookkeeping_lives_in_the_package():
    """Issue 21: chapter 5 records its numbers and prints its sentences through the package (unit-tested here),
    under the results file's keys the chapter always used."""
    import pandas as pd

    from attnbook.studies.kovaleva import disabling, word_match

    check = {"L": 7, "uniform_error": 1.5e-8, "other_heads_change": 0.0}
    assert disabling.check_numbers(check) == {"disable_check": {"uniform_error": 1.5e-8, "other_heads_change": 0.0}}
    assert "L = 7 tokens" in disabling.check_text(check, "SST-2") and "head 1-1" in disabling.check_text(check, "SST-2")
    table = pd.DataFrame([{"task": "SST-2", "this run": 85.2}])
    numbers = disabling.baseline_numbers(table, {("SST-2", 0): "", ("RTE", 0): "not better than the majority"},
                                         {"SST-2": list(range(5))})
    assert numbers == {"dev_baselines": [{"task": "SST-2", "this run": 85.2}],
                       "not_learned": {"RTE/seed 0": "not better than the majority"},
                       "dev_examples_swept": {"SST-2": 5}}
    share = np.zeros((2, 3))
    share[1, 2] = 0.4
    m = {"share": share, "chance": 0.1, "n_queries": 12, "hurting": [(1, 2), (0, 0)], "top_matching": (1, 2),
         "percentiles": {"2-3": 1.0, "1-1": 0.2}}
    assert word_match.match_text("MRPC", m) == ("MRPC: 12 tokens with a copy in the other sentence; uniform attention "
                                                "would give 0.100; strongest word-matching head 2-3 (0.400)")
    assert set(word_match.all_numbers({"MRPC": m})) == {"word_match_MRPC"}
    styled = word_match.match_table({"MRPC": m}, {"MRPC": np.full((2, 3), -1.25)})
    html = styled.to_html()
    assert "2-3" in html and "-1.25" in html and "100%" in html
    assert word_match.match_table({}, {}) is None


def test_held_out_test_disables_the_sweeps_best_head_and_layer_on_other_examples(tiny_classifier, tokenizer):
    """Issue 32: the best head and layer of a sweep are chosen on the swept examples and tested again on others;
    the held-out changes are those of disabling exactly that head (that layer) on the other examples."""
    import dataclasses

    from attnbook.engine import sweeps
    from attnbook.engine.scores import task_score_fn

    score = task_score_fn("SST-2")
    texts = ["a fine film", "dull and slow", "the best of the year", "not good", "it was fun", "a mess",
             "lovely work", "boring", "great cast", "awful"]
    labels = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0])
    chosen_on = sweeps.classification_batches(tokenizer, texts[:6], None, labels[:6], batch_size=3)
    tested_on = sweeps.classification_batches(tokenizer, texts[6:], None, labels[6:], batch_size=2)
    model = tiny_classifier.model
    single = sweeps.sweep_single_heads(model, chosen_on, "disable", score)
    layers = sweeps.sweep_layers(model, chosen_on, "disable", score)
    rng = np.random.default_rng(0)  # a random classifier changes little; make the choice unambiguous
    single = dataclasses.replace(single, scores=single.scores + rng.uniform(0, 0.01, single.scores.shape))
    configs, names = D.chosen_configs(single, layers)
    (l, h), layer = np.unravel_index(np.argmax(single.delta), single.delta.shape), int(np.argmax(layers.delta))
    assert names == [f"{l + 1}-{h + 1}", f"layer {layer + 1}"]
    assert configs[0].sum() == 1 and configs[0, l, h] and configs[1].sum() == configs.shape[2] and configs[1, layer].all()
    got = D.held_out_test(tiny_classifier, single, layers, tested_on, "SST-2", score, n_resamples=200)
    direct = sweeps.sweep_configs(model, tested_on, configs, "disable", score)
    assert got.head == names[0] and got.layer == layer and (got.n_chosen, got.n_tested) == (6, 4)
    assert got.head_gain.value == pytest.approx(direct.delta[0]) and got.layer_gain.value == pytest.approx(direct.delta[1])
    assert got.head_gain.low <= got.head_gain.value <= got.head_gain.high
    table = D.held_out_table({("SST-2", 0): got})
    assert table.loc[0, "best head off (chosen)"] == names[0] and table.loc[0, "tested on"] == 4
    assert D.held_out_numbers({("SST-2", 0): got})["held_out_SST-2_seed0"]["layer"] == layer + 1


def test_split_changes_score_each_half_with_the_tasks_metric():
    """:func:`D.split_changes`: on the seeded halves, each configuration's change is the task's metric of that half
    (F1 here, not a mean of per-example changes); in every resample the bootstrap counts are split into two halves
    afresh, an example's copies in one half."""
    from attnbook.stats import bootstrap_counts
    from attnbook.studies.heads_off.effects import halves, weighted_scores
    from test_calibration_kovaleva import fake_sweep

    sweep = fake_sweep(np.random.default_rng(1), 60, (2, 3), f1=True, flip_rate=0.2)
    got = D.split_changes(sweep, "MRPC", n_resamples=50, seed=4)
    assert got.point.shape == (2, 6) and got.draws.shape == (2, 50, 6) and got.n == 60 and got.names[4] == "2-2"
    a, b = halves(60, 4)
    for half, idx in ((0, a), (1, b)):
        w = np.zeros((1, 60))
        w[0, idx] = 1
        base = weighted_scores("MRPC", sweep.baseline_outputs, sweep.gold, w)[0]
        want = [weighted_scores("MRPC", o, sweep.gold, w)[0] - base for o in sweep.flat_outputs()]
        assert np.allclose(got.point[half], want)
    counts, mask = bootstrap_counts(60, 50, 4), C._half_masks(60, 50, 4)
    assert (mask.sum(1) == 30).all() and not (mask[0] == mask[1]).all()
    w = (counts * ~mask)[7:8]
    base = weighted_scores("MRPC", sweep.baseline_outputs, sweep.gold, w)[0]
    want = weighted_scores("MRPC", sweep.flat_outputs()[2], sweep.gold, w)[0] - base
    assert got.draws[1, 7, 2] == pytest.approx(want)


def test_cross_fitted_chooses_on_one_half_and_scores_on_the_other():
    """:func:`D.cross_fitted`: half A's best is scored on half B and half B's on half A, the estimate their mean
    (here both picks gain nothing on the other half: 0, where the same-data best gains 2.5); the interval is the
    resamples' spread, re-choosing in each, placed on the estimate and floored; the choice can be the smallest and
    can run across tasks (each part's configurations named apart)."""
    point = np.array([[5.0, 0.0, 1.0], [0.0, 4.0, 1.0]])
    draws = np.repeat(point[:, None, :], 200, axis=1) + 10.0  # resamples centred away from the estimate
    draws = draws + np.random.default_rng(0).normal(0, 0.5, draws.shape)
    part = D.SplitChanges(point, draws, ["1-1", "1-2", "1-3"], 5000)
    fit = D.cross_fitted([part])
    assert fit.estimate.value == 0.0 and fit.chosen == ("1-1", "1-2") and fit.candidates == 3
    assert fit.estimate.low < 0.0 < fit.estimate.high < 2.0  # recentred: not around the resamples' +10
    assert fit.estimate.unit == D.CROSS_FITTED and fit.estimate.n == 5000
    assert fit.chosen_text() == "1-1 on one half, 1-2 on the other"
    low = D.cross_fitted([part], largest=False)
    assert low.estimate.value == pytest.approx((4.0 + 5.0) / 2) and low.chosen == ("1-2", "1-1")
    tight = D.SplitChanges(point, np.repeat(point[:, None, :], 200, axis=1), part.names, 96)
    floor = D.cross_fitted([tight]).estimate  # no spread in the resamples: the resolution floor of 96 examples
    assert floor.high - floor.low == pytest.approx(2 * D.resolution(96))
    other = D.SplitChanges(point + 3.0, draws + 3.0, part.names, 96)
    joint = D.cross_fitted([part.labelled("SST-2 "), other.labelled("MRPC ")])
    assert joint.chosen == ("MRPC 1-1", "MRPC 1-2") and joint.candidates == 6 and joint.estimate.n == 5096
    assert part.select([2]).names == ["1-3"] and part.select([2]).draws.shape == (2, 200, 1)
    with pytest.raises(ParameterError):
        D.cross_fitted([part, D.SplitChanges(point, draws[:, :10], part.names, 10)])


def test_sweep_effects_cross_fit_the_best_head_and_layer():
    """:func:`D.sweep_effects` gives the cross-fitted best head and best layer, the choice behind them, the
    same-data pick (for the notes) and the halves for choices across tasks."""
    from attnbook.engine.sweep_result import SweepResult
    from test_calibration_kovaleva import fake_sweep

    rng = np.random.default_rng(2)
    fake = fake_sweep(rng, 200, (2, 3), planted=20.0)
    single = SweepResult("single_heads", "disable", fake.scores, fake.baseline_score, fake.outputs,
                         fake.baseline_outputs, fake.gold, fake.names)
    lay = fake_sweep(rng, 200, (2,))
    layers = SweepResult("layers", "disable", lay.scores, lay.baseline_score, lay.outputs, lay.baseline_outputs,
                         fake.gold, lay.names)
    e = D.sweep_effects(single, layers, "SST-2", n_resamples=200)
    assert e["best_head"] == "1-1" and e["best_choice"].chosen == ("1-1", "1-1")  # the planted head, both halves
    assert e["best"].low > 0 and e["best"].unit == D.CROSS_FITTED and e["n"] == 200
    assert e["best_same_data"].value == pytest.approx(fake.delta.max())
    assert e["best_layer"].unit == D.CROSS_FITTED and e["layer_split"].names == ["layer 1", "layer 2"]
    assert e["head_split"].point.shape == (2, 6) and e["resampled"].shape == (200, 2, 3)
    assert len(e["layers"]) == 2 and e["layers"][0].high - e["layers"][0].low >= 2 * D.resolution(200) - 1e-9
