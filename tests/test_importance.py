"""Michel et al.: head importance (§4.1), cached and compared across tasks and halves; single / all-but-one
ablations (§3.2-§3.3). Iterative pruning is tests/test_michel_pruning.py."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from attnbook.core import cache
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.engine.interventions import head_mask
from attnbook.engine.inputs import Batch
from attnbook.engine.sweeps import SweepResult, accuracy, sweep_all_but_one
from attnbook.studies.heads_off import effects as hs
from attnbook.studies.michel import importance as imp
from attnbook.studies.michel.importance import (
    ablation_significance,
    best_head_per_layer,
    default_loss,
    head_importance,
    normalize_per_layer,
)

from tiny_models import Named, tiny_classifier


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


def mean_abs_gradient_one_by_one(model, batches, loss_fn, gates):
    """``mean |dL(x)/dxi|`` at ``xi = gates[layer, head]``, one example at a time with a shared xi (the reference)."""
    total, n = np.zeros(gates.shape), 0
    for b in batches:
        for i in range(b["input_ids"].shape[0]):
            one = {k: v[i : i + 1] for k, v in b.items()}
            xi = torch.tensor(gates, dtype=torch.float64, requires_grad=True)
            with head_mask(model, xi):
                loss = loss_fn(model(**_inputs(one)).logits, one["labels"]).sum()
            (g,) = torch.autograd.grad(loss, xi)
            total += g.abs().numpy()
            n += 1
    return total / n


def test_importance_is_the_mean_absolute_per_example_gradient():
    """Eq. 2: |dL(x)/dxi| per example, averaged; checked one example at a time with a shared xi."""
    model = tiny_classifier(seed=2, dtype=torch.float64)
    batches = dev_batches(seed=2)
    got = head_importance(model, batches, normalize=False)
    expected = mean_abs_gradient_one_by_one(model, batches, default_loss, np.ones((3, 4)))
    assert np.allclose(got, expected, rtol=1e-8, atol=1e-12)


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


def test_significant_names_lists_the_marked_rows():
    table = ablation_significance(SweepResult(
        "configs", "mask", np.zeros(2), 0.5, np.stack([_onehot(np.r_[np.ones(60, int), np.zeros(240, int)]),
                                                         _onehot(np.zeros(300, int))]),
        _onehot(np.zeros(300, int)), np.zeros(300, int), ["hurt", "same"]))
    assert imp.significant_names(table) == ["hurt"]


def _classifier(key, seed):
    """What the cached functions need of a LoadedModel: the weights' identity and the module."""
    return Named(key=key, model=tiny_classifier(seed=seed))


def test_importance_of_is_cached_under_the_classifier_key_and_the_data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    clf = _classifier("clf-a", 12)
    data = [Batch.from_mapping(b) for b in dev_batches(seed=12)]
    calls = []
    real = imp.head_importance

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(imp, "head_importance", counting)
    first = imp.importance_of(clf, data)
    again = imp.importance_of(clf, data)
    assert len(calls) == 1 and np.array_equal(first, again)
    assert np.allclose(first, real(clf.model, data))
    imp.importance_of(clf, data[:1])  # other data: computed
    imp.importance_of(Named(key="clf-b", model=clf.model), data)  # other weights: computed
    assert len(calls) == 3
    with cache.disabled():  # the cache switched off for the process: computed, nothing read
        imp.importance_of(clf, data)
    assert len(calls) == 4


def test_importance_on_halves_uses_disjoint_halves(monkeypatch):
    clf = _classifier("clf-h", 13)
    data = [Batch.from_mapping(b) for b in dev_batches(seed=13)]
    a, b = imp.importance_on_halves(clf, data, 5)
    ia, ib = hs.halves(12, 5)
    assert np.allclose(a, head_importance(clf.model, hs.subset_batches(data, ia)))
    assert np.allclose(b, head_importance(clf.model, hs.subset_batches(data, ib)))
    assert not np.allclose(a, b)


def test_task_agreement_matrix_and_pairs():
    rng = np.random.default_rng(0)
    x = rng.random((3, 4))
    scores = {"A": x, "B": 2 * x + 1, "C": -x}
    rho, pairs = imp.task_agreement(scores)
    assert list(rho.index) == list(rho.columns) == ["A", "B", "C"]
    assert np.allclose(np.diag(rho.to_numpy()), 1.0)
    assert [(a, b) for a, b, _ in pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert [r for _, _, r in pairs] == pytest.approx([1.0, -1.0, -1.0])
    assert imp.task_agreement({"A": x})[1] == []


def test_importance_by_task_keeps_known_scores_and_reads_each_tasks_training_data(monkeypatch):
    made, read = [], []
    known = {"SST-2": np.ones((3, 4))}

    def fake_classifier(base, task, recipe, seed, **kw):
        made.append(task)
        return _classifier(f"clf-{task}", 14)

    def fake_data(tokenizer, task, split, cap, seed, **kw):
        read.append((task, split, cap, seed))
        return SimpleNamespace(path=f"/data/{task}/{split}"), [Batch.from_mapping(b) for b in dev_batches(seed=14)]

    monkeypatch.setattr(hs, "classifier", fake_classifier)
    monkeypatch.setattr(hs, "task_data", fake_data)
    scores, paths = imp.importance_by_task(SimpleNamespace(tokenizer=None), ["SST-2", "RTE", "MRPC"], {}, 0, cap=8,
                                           data_seed=1, known=known)
    assert list(scores) == ["SST-2", "RTE", "MRPC"] and scores["SST-2"] is known["SST-2"]
    assert made == ["RTE", "MRPC"] and read == [("RTE", "train", 8, 1), ("MRPC", "train", 8, 1)]
    assert paths == ["/data/RTE/train", "/data/MRPC/train"]
    assert np.allclose(np.linalg.norm(scores["RTE"], axis=1), 1.0)


def test_chosen_heads_choose_on_one_half_and_test_on_the_other():
    model = tiny_classifier(seed=15)
    data = [Batch.from_mapping(b) for b in dev_batches(n_batches=3, seed=15)]
    sweep = sweep_all_but_one(model, data, "mask", accuracy)
    a, b = hs.halves(18, 0)
    best = imp.chosen_heads(sweep, a, b, accuracy, alpha=0.05)
    on_a, on_b = hs.subset_sweep(sweep, a, accuracy), hs.subset_sweep(sweep, b, accuracy)
    assert best["head"].tolist() == (np.argmax(on_a.scores, axis=1) + 1).tolist()
    picked = np.argmax(on_a.scores, axis=1)
    assert best["delta_evaluation"].tolist() == pytest.approx([on_b.delta[l, h] for l, h in enumerate(picked)])
    sig = ablation_significance(on_b, test="ttest").set_index("name")
    assert best["p (half B)"].tolist() == pytest.approx([sig.loc[f"only {lab}", "p_value"] for lab in best["label"]])
    assert best["significant"].tolist() == (best["p (half B)"] < 0.05).tolist()
