"""Michel et al.: head importance, single / all-but-one ablations, iterative pruning."""
from __future__ import annotations

import numpy as np

from attnbook.engine.sweeps import sweep_all_but_one
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.studies.michel.importance import (
    ablation_significance,
    best_head_per_layer,
    default_loss,
    head_importance,
    iterative_pruning,
    masks_from_order,
    normalize_per_layer,
    pruning_curves,
    pruning_order,
    pruning_schedule,
    single_head_ablation,
    summarize_curves,
)
from attnbook.engine.interventions import head_mask
from attnbook.engine.sweeps import SweepResult, accuracy

from tiny_models import tiny_classifier


def dev_batches(n_batches=2, batch_size=6, seed=0, num_labels=3):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        lengths = torch.randint(3, 10, (batch_size,), generator=g)
        width = int(lengths.max())
        ids = torch.randint(5, 64, (batch_size, width), generator=g)
        mask = (torch.arange(width)[None] < lengths[:, None]).long()
        out.append(
            {
                "input_ids": ids * mask,
                "attention_mask": mask,
                "token_type_ids": torch.zeros_like(ids),
                "labels": torch.randint(0, num_labels, (batch_size,), generator=g),
            }
        )
    return out


def _inputs(b):
    return {k: v for k, v in b.items() if k != "labels"}


def test_importance_shape_and_normalisation():
    model = tiny_classifier(seed=1)
    batches = dev_batches(seed=1)
    raw = head_importance(model, batches, normalize=False)
    norm = head_importance(model, batches)
    assert raw.shape == norm.shape == (3, 4)
    assert np.all(raw >= 0) and raw.max() > 0
    assert np.allclose(np.sqrt((norm**2).sum(1)), 1.0)
    assert np.allclose(norm, raw / np.linalg.norm(raw, axis=1, keepdims=True))
    assert model.config._attn_implementation == "eager"


def test_importance_is_the_mean_absolute_per_example_gradient():
    """Eq. 2: |dL(x)/dxi| per example, averaged; checked one example at a time with a shared xi."""
    model = tiny_classifier(seed=2, dtype=torch.float64)
    batches = dev_batches(seed=2)
    got = head_importance(model, batches, normalize=False)
    total, n = np.zeros((3, 4)), 0
    for b in batches:
        for i in range(b["input_ids"].shape[0]):
            one = {k: v[i : i + 1] for k, v in b.items()}
            xi = torch.ones(3, 4, dtype=torch.float64, requires_grad=True)
            with head_mask(model, xi):
                loss = default_loss(model(**_inputs(one)).logits, one["labels"]).sum()
            (g,) = torch.autograd.grad(loss, xi)
            total += g.abs().numpy()
            n += 1
    assert np.allclose(got, total / n, rtol=1e-8, atol=1e-12)


def test_token_granularity_bounds_the_example_one():
    """Sum_t |g_t| >= |Sum_t g_t|: token-level totals dominate example-level totals."""
    model = tiny_classifier(seed=3, dtype=torch.float64)
    batches = dev_batches(seed=3)
    n_examples = sum(b["input_ids"].shape[0] for b in batches)
    n_tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    per_example = head_importance(model, batches, normalize=False) * n_examples
    per_token = head_importance(model, batches, normalize=False, granularity="token") * n_tokens
    assert np.all(per_token >= per_example - 1e-10)
    assert np.any(per_token > per_example * 1.01)
    with pytest.raises(ParameterError):
        head_importance(model, batches, granularity="word")


def test_normalize_per_layer_keeps_empty_layers_zero():
    v = np.array([[3.0, 4.0], [0.0, 0.0]])
    assert np.allclose(normalize_per_layer(v), [[0.6, 0.8], [0.0, 0.0]])


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


def test_all_but_one_keeps_exactly_one_head():
    model = tiny_classifier(seed=10)
    batches = dev_batches(seed=10)
    res = sweep_all_but_one(model, batches, "mask", accuracy)
    assert res.scores.shape == (3, 4) and res.names[5] == "only 2-2"
    xi = np.ones((3, 4), dtype=np.float32)
    xi[1] = 0
    xi[1, 1] = 1
    with torch.no_grad(), head_mask(model, xi):
        logits = torch.cat([model(**_inputs(b)).logits for b in batches]).numpy()
    assert np.allclose(res.outputs[1, 1], logits, atol=1e-5)
    best = best_head_per_layer(res)
    assert best["head"].tolist() == (np.argmax(res.scores, axis=1) + 1).tolist()
    assert best["delta_selection"].tolist() == pytest.approx(res.delta.max(axis=1).tolist())
    other = sweep_all_but_one(model, dev_batches(seed=11), "mask", accuracy)
    both = best_head_per_layer(res, other)
    picked = np.argmax(res.scores, axis=1)
    assert both["delta_evaluation"].tolist() == pytest.approx([other.delta[l, h] for l, h in enumerate(picked)])


def _onehot(pred):
    return np.eye(2)[pred]


def test_ablation_significance_on_planted_effects():
    n = 300
    gold = np.zeros(n, dtype=int)
    base = np.r_[np.zeros(150, int), np.ones(150, int)]
    hurt = base.copy()
    hurt[:60] = 1
    same = base.copy()
    outs = np.stack([_onehot(hurt), _onehot(same)])
    sweep = SweepResult("configs", "mask", np.array([accuracy(o, gold) for o in outs]), 0.5, outs, _onehot(base), gold, ["hurt", "same"])
    for test in ("ttest", "bootstrap"):
        table = ablation_significance(sweep, test=test, n_resamples=300)
        assert table["significant"].tolist() == [True, False]
        assert table.loc[0, "delta"] == pytest.approx(-0.2)
        assert table.loc[1, "p_value"] == 1.0
