"""Michel et al. §3.3, §4.2-4.3: iterative pruning curves, cached curves of a classifier, safe shares and curve
areas, one head per layer, the speed test's inputs."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.engine.inputs import Batch
from attnbook.engine.interventions import head_mask
from attnbook.engine.sweeps import accuracy, accuracy_points
from attnbook.studies.michel import pruning as mp
from attnbook.studies.michel.importance import head_importance, single_head_ablation
from attnbook.studies.michel.pruning import (
    iterative_pruning,
    masks_from_order,
    pruning_curves,
    pruning_order,
    pruning_schedule,
    summarize_curves,
)

from test_importance import _inputs, dev_batches
from tiny_models import Named, tiny_classifier


def test_pruning_schedule_follows_the_bert_script():
    sched = pruning_schedule(144, 0.05)
    assert [n for _, n in sched] == [int(144 * p / 100) for p in range(0, 101, 5)]
    sched = pruning_schedule(12, 0.1)
    assert [s for s, _ in sched][-1] == 1.0 and sched[0] == (0.0, 0)
    assert [n for _, n in pruning_schedule(10, 0.3)] == [0, 3, 6, 9, 10]
    with pytest.raises(ParameterError):
        pruning_schedule(12, 0.0)


def test_pruning_follows_a_planted_importance():
    model = tiny_classifier(seed=4)
    batches = dev_batches(seed=4)
    rng = np.random.default_rng(0)
    planted = rng.permutation(12).reshape(3, 4).astype(float)  # value k = k-th head to go
    curve = iterative_pruning(model, batches, importance=planted, step=0.25)
    assert curve["n_pruned"].tolist() == [0, 3, 6, 9, 12]
    expected = pruning_order(planted)
    assert [tuple(x) for x in np.argwhere(planted == 0)] == [expected[0]]
    labels = " ".join(curve["newly_pruned"]).split()
    assert labels == [f"{l + 1}-{h + 1}" for l, h in expected]
    gold = np.concatenate([b["labels"].numpy() for b in batches])
    with torch.no_grad():
        base_logits = torch.cat([model(**_inputs(b)).logits for b in batches]).numpy()
    assert curve["score"].iloc[0] == accuracy(base_logits, gold) and curve["delta"].iloc[0] == 0.0
    # the scores are those of the cumulative masks
    masks = masks_from_order(expected, [0, 3, 6, 9, 12], (3, 4))
    assert masks[2].sum() == 6
    with torch.no_grad(), head_mask(model, masks[2]):
        logits = torch.cat([model(**_inputs(b)).logits for b in batches]).numpy()
    assert curve["score"].iloc[2] == accuracy(logits, gold)
    assert curve["delta"].iloc[2] == pytest.approx(accuracy(logits, gold) - accuracy(base_logits, gold))


def test_array_ordering_equals_importance_argument():
    model = tiny_classifier(seed=5)
    batches = dev_batches(seed=5)
    values = np.arange(12, dtype=float).reshape(3, 4)[::-1].copy()
    a = iterative_pruning(model, batches, ordering=values, step=0.25)
    b = iterative_pruning(model, batches, importance=values, step=0.25)
    assert a["score"].tolist() == b["score"].tolist()
    assert a["newly_pruned"].tolist() == b["newly_pruned"].tolist()


def test_importance_ordering_uses_the_computed_scores():
    model = tiny_classifier(seed=6)
    batches = dev_batches(seed=6)
    imp = head_importance(model, batches)
    curve = iterative_pruning(model, batches, step=0.25)
    first = curve["newly_pruned"].iloc[1].split()
    l, h = pruning_order(imp)[0]
    assert first[0] == f"{l + 1}-{h + 1}"


def test_recomputed_importance_prunes_cumulatively():
    model = tiny_classifier(seed=7)
    batches = dev_batches(seed=7)
    curve = iterative_pruning(model, batches, recompute=True, step=0.25)
    assert curve["ordering"].iloc[0] == "importance (recomputed)"
    pruned = [set(s.split()) for s in curve["newly_pruned"]]
    assert [len(p) for p in pruned] == [0, 3, 3, 3, 3]
    assert len(set().union(*pruned)) == 12  # every head pruned exactly once


def test_ablation_ordering_prunes_the_least_harmful_head_first():
    model = tiny_classifier(seed=8)
    batches = dev_batches(seed=8)
    abl = single_head_ablation(model, batches)
    curve = iterative_pruning(model, batches, ordering="ablation", step=1 / 12)
    l, h = np.unravel_index(np.argmax(abl.delta), abl.delta.shape)
    assert curve["newly_pruned"].iloc[1] == f"{l + 1}-{h + 1}"


def test_random_orderings_and_summary():
    model = tiny_classifier(seed=9)
    batches = dev_batches(seed=9)
    curves = pruning_curves(model, batches, orderings=("importance", "random"), seeds=(0, 1, 2), step=0.5)
    rand = curves[curves["ordering"] == "random"]
    assert sorted(rand["seed"].unique().tolist()) == [0, 1, 2]
    orders = [" ".join(rand[rand["seed"] == s]["newly_pruned"]) for s in (0, 1, 2)]
    assert len(set(orders)) == 3
    summary = summarize_curves(curves)
    row = summary[(summary["ordering"] == "random") & (summary["share_target"] == 0.5)].iloc[0]
    vals = rand[rand["share_target"] == 0.5]["score"]
    assert row["n_runs"] == 3 and row["mean"] == pytest.approx(vals.mean()) and row["std"] == pytest.approx(vals.std())
    imp_row = summary[summary["ordering"] == "importance"].iloc[0]
    assert imp_row["n_runs"] == 1 and imp_row["std"] == 0.0


# ----------------------------------------------------------------------------- what a curve says


def test_largest_safe_share_and_curve_area():
    curve = pd.DataFrame({"share_pruned": [0, 0.1, 0.2, 0.3, 0.4], "score": [90, 89.5, 89.2, 88.0, 89.9]})
    assert mp.largest_safe_share(curve, 90, 1.0) == pytest.approx(0.2)  # stops at the first step beyond tolerance
    assert mp.largest_safe_share(curve, 95, 1.0) == 0.0
    assert mp.curve_area(curve, 0.2) == pytest.approx((90 + 89.5 + 89.2) / 3)


def _curves():
    return pd.DataFrame({
        "ordering": ["random"] * 6 + ["by I"] * 3,
        "seed": [0, 0, 0, 1, 1, 1, None, None, None],
        "share_pruned": [0.0, 0.5, 1.0] * 3,
        "score": [90.0, 89.0, 50.0, 90.0, 85.0, 40.0, 90.0, 89.5, 60.0],
    })


def test_random_band_aggregates_over_seeds():
    band = mp.random_band(_curves())
    assert band["share_pruned"].tolist() == [0.0, 0.5, 1.0]
    assert band.loc[1, "mean"] == pytest.approx(87.0) and band.loc[1, "min"] == 85 and band.loc[1, "max"] == 89
    assert band.loc[1, "n_runs"] == 2 and band.loc[0, "std"] == 0
    assert mp.random_band(_curves()[lambda c: c["ordering"] != "random"]).empty


def test_safe_shares_and_areas_per_ordering():
    curves = _curves()
    safe = mp.safe_shares(curves, 90.0, 1.0)
    # the random mean is 87 at half pruned: not safe; "by I" keeps 89.5 at half pruned
    assert safe == {"by I": 0.5, mp.RANDOM_MEAN: 0.0}
    assert list(safe) == ["by I", mp.RANDOM_MEAN]
    area = mp.curve_areas(curves, max_share=0.5)
    assert area == pytest.approx({"by I": (90 + 89.5) / 2, "random": (90 + 87) / 2})
    without_random = mp.safe_shares(curves[curves["ordering"] != "random"], 90.0, 1.0)
    assert without_random[mp.RANDOM_MEAN] == 0.0


# ----------------------------------------------------------------------------- cached curves of a classifier


def test_pruning_curve_is_cached_and_keeps_seed_none(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    clf = Named(key="clf", model=tiny_classifier(seed=20))
    data = [Batch.from_mapping(b) for b in dev_batches(seed=20)]
    values = np.arange(12.0).reshape(3, 4)
    calls = []
    real = mp.iterative_pruning

    def counting(*args, **kwargs):
        calls.append(kwargs.get("ordering"))
        return real(*args, **kwargs)

    monkeypatch.setattr(mp, "iterative_pruning", counting)
    fresh = mp.pruning_curve(clf, data, values, accuracy, step=0.25)
    again = mp.pruning_curve(clf, data, values, accuracy, step=0.25)
    assert len(calls) == 1
    assert fresh["seed"].tolist() == again["seed"].tolist() == [None] * 5
    assert fresh.drop(columns="seed").to_dict("records") == again.drop(columns="seed").to_dict("records")
    assert np.allclose(fresh["score"], real(clf.model, data, accuracy, ordering=values, step=0.25)["score"])
    # anything that changes the curve is in the key
    mp.pruning_curve(clf, data, values, accuracy, step=0.5)
    mp.pruning_curve(clf, data, -values, accuracy, step=0.25)
    mp.pruning_curve(clf, data, values, accuracy_points, step=0.25)
    mp.pruning_curve(clf, data, "importance", accuracy, step=0.25, recompute=True)
    assert len(calls) == 5
    rand = mp.pruning_curve(clf, data, "random", accuracy, step=0.5, seeds=(0, 1))
    rand_again = mp.pruning_curve(clf, data, "random", accuracy, step=0.5, seeds=(0, 1))
    mp.pruning_curve(clf, data, "random", accuracy, step=0.5, seeds=(0, 2))
    assert len(calls) == 7
    assert rand["seed"].tolist() == rand_again["seed"].tolist() == [0, 0, 0, 1, 1, 1]


def test_curves_by_ordering_names_the_orderings():
    clf = Named(key="clf", model=tiny_classifier(seed=21))
    data = [Batch.from_mapping(b) for b in dev_batches(seed=21)]
    values = np.arange(12.0).reshape(3, 4)
    curves = mp.curves_by_ordering(clf, data, {mp.BY_IMPORTANCE: values, mp.BY_ABLATION: -values}, accuracy,
                                   step=0.5, seeds=(3,))
    assert curves["ordering"].tolist() == [mp.BY_IMPORTANCE] * 3 + [mp.BY_ABLATION] * 3 + [mp.RANDOM] * 3
    assert curves["seed"].tolist()[-3:] == [3, 3, 3]
    own = iterative_pruning(clf.model, data, accuracy, ordering=-values, step=0.5)
    assert curves["score"].tolist()[3:6] == own["score"].tolist()


# ----------------------------------------------------------------------------- one head per layer, speed


def test_one_head_per_layer_mask_and_sweep():
    mask = mp.one_head_per_layer_mask([2, 0], 3)
    assert mask.tolist() == [[0, 0, 1], [1, 0, 0]]
    with pytest.raises(ParameterError):
        mp.one_head_per_layer_mask([3], 3)
    model = tiny_classifier(seed=22)
    batches = dev_batches(seed=22)
    res = mp.one_head_per_layer(model, batches, [1, 3, 0], accuracy)
    assert res.names == ["one head per layer"] and res.scores.shape == (1,)
    xi = mp.one_head_per_layer_mask([1, 3, 0], 4)
    with torch.no_grad(), head_mask(model, xi):
        logits = torch.cat([model(**_inputs(b)).logits for b in batches]).numpy()
    assert np.allclose(res.outputs[0], logits, atol=1e-5)


def test_throughput_pool_pads_to_the_longest():
    b = Batch(torch.tensor([[1, 2, 0], [3, 4, 5]]), torch.tensor([[1, 1, 0], [1, 1, 1]]))
    pool = mp.throughput_pool([b, b], 3)
    assert pool["input_ids"].shape == (3, 3)
    assert pool["attention_mask"].sum().item() == 2 + 3 + 2


def test_speed_numbers_record_the_gain_per_batch_size():
    speed = pd.DataFrame({"batch_size": [1, 4], "gain_pct": [1.234, -5.678], "n_pruned": [36, 36]})
    assert mp.speed_numbers(speed, 0.5) == {"share": 0.5, "n_pruned": 36, "gain_pct": {"1": 1.23, "4": -5.68}}
