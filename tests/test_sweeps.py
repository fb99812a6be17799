"""Sweeps over heads and layers (fast = naive). Score functions: test_scores.py; paired statistics: test_sweep_stats.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.engine.interventions import disable_heads, head_mask
from attnbook.engine import sweeps
from attnbook.engine.sweeps import (
    accuracy,
    classification_batches,
    evaluate_configs,
    fast_path_check,
    first_touched_layer,
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


def test_scores_stay_importable_from_sweeps():
    from attnbook.engine import scores

    for name in ("accuracy", "accuracy_points", "correct", "f1_positive", "task_score_fn", "ScoreFn"):
        assert getattr(sweeps, name) is getattr(scores, name)
