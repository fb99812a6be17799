"""Sweeps over heads and layers (fast = naive), and the paired statistics of chapter 5."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.engine.interventions import disable_heads, head_mask
from attnbook.engine.sweeps import (
    fast_path_check,
    SweepResult,
    accuracy,
    adjust_pvalues,
    bootstrap_delta,
    classification_batches,
    compare_to_baseline,
    evaluate_configs,
    f1_positive,
    first_touched_layer,
    mcnemar_exact,
    surviving_gains,
    task_score_fn,
    sweep_configs,
    sweep_layers,
    sweep_single_heads,
)

from tiny_models import tiny_classifier


def dev_batches(n_batches=3, batch_size=5, seed=0, num_labels=3):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        lengths = torch.randint(3, 12, (batch_size,), generator=g)
        width = int(lengths.max())
        ids = torch.randint(5, 64, (batch_size, width), generator=g)
        mask = (torch.arange(width)[None] < lengths[:, None]).long()
        ids = ids * mask
        labels = torch.randint(0, num_labels, (batch_size,), generator=g)
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids), "labels": labels})
    return out


@pytest.mark.parametrize("mode", ["disable", "mask"])
@pytest.mark.parametrize("per_forward", [None, 1, 3])
def test_fast_single_head_sweep_equals_naive(mode, per_forward):
    model = tiny_classifier(seed=1)
    batches = dev_batches(seed=1)
    fast = sweep_single_heads(model, batches, mode, fast=True, configs_per_forward=per_forward)
    naive = sweep_single_heads(model, batches, mode, fast=False)
    assert fast.outputs.shape == (3, 4, 15, 3)
    assert np.max(np.abs(fast.outputs - naive.outputs)) < 1e-5
    assert np.max(np.abs(fast.baseline_outputs - naive.baseline_outputs)) < 1e-5
    assert np.array_equal(fast.scores, naive.scores)
    # the interventions changed something (the comparison is not vacuous)
    assert np.max(np.abs(fast.outputs - fast.baseline_outputs[None, None])) > 1e-3


@pytest.mark.parametrize("mode", ["disable", "mask"])
def test_fast_layer_sweep_equals_naive(mode):
    model = tiny_classifier(seed=2)
    batches = dev_batches(seed=2)
    fast = sweep_layers(model, batches, mode)
    naive = sweep_layers(model, batches, mode, fast=False)
    assert fast.scores.shape == (3,)
    assert np.max(np.abs(fast.outputs - naive.outputs)) < 1e-5
    assert fast.names == ["layer 1", "layer 2", "layer 3"]


def test_fast_path_on_a_bare_encoder_equals_naive(tokenizer):
    from conftest import make_tiny_bert

    model = make_tiny_bert(tokenizer, seed=3)
    batches = dev_batches(seed=3, num_labels=2)
    configs = np.zeros((3, 2, 4), dtype=bool)
    configs[0, 0, 1] = configs[1, 1, 3] = True
    configs[2, :, :2] = True
    fast, base_f = evaluate_configs(model, batches, configs, "disable")
    naive, base_n = evaluate_configs(model, batches, configs, "disable", fast=False)
    assert fast.shape == (3, 15, 32)
    assert torch.max(torch.abs(fast - naive)) < 1e-5
    assert torch.max(torch.abs(base_f - base_n)) < 1e-5


def test_sweep_agrees_with_the_context_managers():
    model = tiny_classifier(seed=4)
    batches = dev_batches(seed=4)
    sweep = sweep_single_heads(model, batches, "disable")
    gold = np.concatenate([b["labels"].numpy() for b in batches])
    for layer, head in [(0, 2), (2, 1)]:
        with torch.no_grad(), disable_heads(model, [(layer, head)]):
            logits = torch.cat([model(**{k: v for k, v in b.items() if k != "labels"}).logits for b in batches])
        assert np.allclose(sweep.outputs[layer, head], logits.numpy(), atol=1e-5)
        assert sweep.scores[layer, head] == accuracy(logits.numpy(), gold)
    xi = np.ones((3, 4), dtype=np.float32)
    xi[1, 3] = 0
    masked = sweep_single_heads(model, batches, "mask")
    with torch.no_grad(), head_mask(model, xi):
        logits = torch.cat([model(**{k: v for k, v in b.items() if k != "labels"}).logits for b in batches])
    assert np.allclose(masked.outputs[1, 3], logits.numpy(), atol=1e-5)


def test_identity_configuration_is_the_baseline_and_nothing_below_is_rerun():
    model = tiny_classifier(seed=5)
    batches = dev_batches(seed=5)
    configs = np.ones((2, 3, 4), dtype=np.float32)
    configs[1, 2, 0] = 0.0
    assert first_touched_layer(torch.as_tensor(configs), "mask").tolist() == [3, 2]
    res = sweep_configs(model, batches, configs, "mask")
    assert np.array_equal(res.outputs[0], res.baseline_outputs)
    assert res.scores[0] == res.baseline_score


def test_sweep_result_table_and_delta():
    model = tiny_classifier(seed=6)
    res = sweep_single_heads(model, dev_batches(seed=6), "mask")
    table = res.table()
    assert list(table["name"][:5]) == ["1-1", "1-2", "1-3", "1-4", "2-1"]
    assert table["layer"].min() == 1 and table["head"].max() == 4
    assert np.allclose(table["delta"].to_numpy(), res.delta.reshape(-1))
    assert res.predictions().shape == (3, 4, 15)
    assert res.scores[2, 1] == np.mean(res.predictions()[2, 1] == res.gold)


def test_classification_batches_from_a_tokenizer(tokenizer):
    batches = classification_batches(
        tokenizer, ["a cat sat", "dogs bark loudly at night", "hi"], ["on a mat", "yes", "there"], [0, 1, 1], batch_size=2
    )
    assert [b.size for b in batches] == [2, 1]
    assert batches[0].labels.tolist() == [0, 1]
    assert set(batches[0].inputs) == {"input_ids", "attention_mask", "token_type_ids"}
    assert batches[0].inputs["token_type_ids"].max() == 1  # pairs get segment ids
    with pytest.raises(ParameterError):
        classification_batches(tokenizer, ["a"], ["b", "c"], [0])


def test_scores():
    logits = np.array([[2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    gold = np.array([0, 1, 0, 1])
    assert accuracy(logits, gold) == 0.5
    # predicted positives: rows 1, 2; gold positives: rows 1, 3; tp = 1
    assert f1_positive(logits, gold) == pytest.approx(2 * 1 / 4)
    assert task_score_fn("RTE")(logits, gold) == pytest.approx(50.0)
    assert task_score_fn("MRPC")(logits, gold) == pytest.approx(50.0)
    scores = np.array([[0.1], [0.4], [0.2], [0.9]])
    assert task_score_fn("STS-B")(scores, np.array([1.0, 4.0, 2.0, 9.0])) == pytest.approx(100.0)


# ----------------------------------------------------------------------------- statistics


def _onehot(pred, n_classes=2):
    return np.eye(n_classes)[pred]


def test_bootstrap_is_seeded_and_zero_for_identical_systems():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 200)
    base = _onehot(rng.integers(0, 2, 200))
    same = bootstrap_delta(base, base.copy(), gold, n_resamples=300, seed=1)
    assert same["delta"] == 0 and same["ci_low"] == 0 and same["ci_high"] == 0 and same["p_value"] == 1.0
    new = _onehot(np.where(rng.random(200) < 0.3, gold, rng.integers(0, 2, 200)))
    a = bootstrap_delta(base, new, gold, n_resamples=300, seed=1)
    b = bootstrap_delta(base, new, gold, n_resamples=300, seed=1)
    assert a == b
    assert a["ci_low"] <= a["delta"] <= a["ci_high"]


def test_bootstrap_detects_a_clear_gain_and_matches_generic_path():
    gold = np.zeros(300, dtype=int)
    base = _onehot(np.r_[np.zeros(150, int), np.ones(150, int)])  # 50 % right
    new = _onehot(np.r_[np.zeros(240, int), np.ones(60, int)])  # 80 % right, paired superset
    fast = bootstrap_delta(base, new, gold, n_resamples=500, seed=3)
    assert fast["delta"] == pytest.approx(0.3)
    assert fast["ci_low"] > 0.2 and fast["p_value"] < 0.01
    generic = bootstrap_delta(base, new, gold, lambda o, g: accuracy(o, g), n_resamples=500, seed=3)
    assert generic == pytest.approx(fast)


def test_mcnemar_exact_values():
    base = np.array([True] * 5 + [False] * 10)
    new = np.array([True] * 5 + [True] * 10)
    res = mcnemar_exact(base, new)
    assert (res["b"], res["c"]) == (0, 10)
    assert res["p_value"] == pytest.approx(2 * 0.5**10)
    assert mcnemar_exact(base, base)["p_value"] == 1.0
    one_each = mcnemar_exact(np.array([True, False]), np.array([False, True]))
    assert one_each["p_value"] == pytest.approx(1.0)


def test_adjust_pvalues_by_hand():
    p = [0.01, 0.04, 0.03, 0.5]
    assert np.allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 1.0])
    # holm: sorted 0.01*4, 0.03*3, 0.04*2, 0.5*1 with running max -> 0.04, 0.09, 0.09, 0.5
    assert np.allclose(adjust_pvalues(p, "holm"), [0.04, 0.09, 0.09, 0.5])
    # BH: sorted ranks 1..4: 0.04, 0.06, 0.0533, 0.5 -> running min from the top
    assert np.allclose(adjust_pvalues(p, "fdr_bh"), [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert np.allclose(adjust_pvalues(p, "none"), p)
    with pytest.raises(ParameterError):
        adjust_pvalues(p, "sidak")


def _planted_sweep():
    """Three interventions on 400 examples: a big gain, a tiny gain, a loss."""
    n = 400
    gold = np.zeros(n, dtype=int)
    base_pred = np.r_[np.zeros(200, int), np.ones(200, int)]
    big = base_pred.copy()
    big[200:300] = 0  # +100 right
    tiny = base_pred.copy()
    tiny[200:203] = 0  # +3 right
    loss = base_pred.copy()
    loss[:60] = 1  # -60 right
    outs = np.stack([_onehot(big), _onehot(tiny), _onehot(loss)])
    base = _onehot(base_pred)
    scores = np.array([accuracy(o, gold) for o in outs])
    return SweepResult("configs", "disable", scores, accuracy(base, gold), outs, base, gold, ["big", "tiny", "loss"])


def test_surviving_gains_keep_only_the_real_gain():
    sweep = _planted_sweep()
    table = compare_to_baseline(sweep, n_resamples=400, seed=0)
    assert list(table["name"]) == ["big", "tiny", "loss"]
    assert table.loc[0, "c"] == 100 and table.loc[0, "b"] == 0
    assert table.loc[2, "delta"] == pytest.approx(-0.15)
    for test in ("mcnemar", "bootstrap"):
        gains = surviving_gains(table, test=test, alpha=0.05)
        assert list(gains["name"]) == ["big", "tiny"]
        assert gains["survives"].tolist() == [True, False]
    direct = surviving_gains(sweep, n_resamples=400)
    assert direct["survives"].tolist() == [True, False]


def test_compare_to_baseline_matches_per_intervention_bootstrap():
    sweep = _planted_sweep()
    table = compare_to_baseline(sweep, n_resamples=300, seed=4)
    generic = compare_to_baseline(sweep, lambda o, g: accuracy(o, g), n_resamples=300, seed=4, mcnemar=False)
    for i, outs in enumerate(sweep.flat_outputs()):
        bs = bootstrap_delta(sweep.baseline_outputs, outs, sweep.gold, n_resamples=300, seed=4)
        assert table.loc[i, "delta"] == pytest.approx(bs["delta"])
        assert (table.loc[i, "ci_low"], table.loc[i, "ci_high"]) == pytest.approx((bs["ci_low"], bs["ci_high"]))
        assert table.loc[i, "p_bootstrap"] == pytest.approx(bs["p_value"])
    assert np.allclose(generic[["delta", "ci_low", "ci_high", "p_bootstrap"]], table[["delta", "ci_low", "ci_high", "p_bootstrap"]])
    assert "p_mcnemar" not in generic


def test_last_layer_for_cls_only_equals_whole_layer():
    """The fast path computes the last layer for the [CLS] query alone; the head's output is unchanged."""
    from attnbook.engine.sweeps import EncoderStack

    model = tiny_classifier(seed=3)
    batch = dev_batches(n_batches=1, seed=3)[0]
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    short, whole = EncoderStack(model), EncoderStack(model, cls_only=False)
    assert short.cls_only and not whole.cls_only
    with torch.inference_mode():
        hidden, mask = short.layer_inputs(inputs)
        reference = model(**inputs).logits
        for start in range(len(short.layers) + 1):
            a = short.run_from(start, hidden[start], mask)
            b = whole.run_from(start, hidden[start], mask)
            assert torch.allclose(a, b, atol=1e-5), start
        assert torch.allclose(short.run_from(0, hidden[0], mask), reference, atol=1e-5)


def test_fast_path_check_compares_outputs():
    out = fast_path_check(tiny_classifier(seed=7), dev_batches(n_batches=1, seed=7), "mask")
    assert out["max_abs_output_diff"] < 1e-5 and out["n_configs"] == 12 and out["mode"] == "mask"
