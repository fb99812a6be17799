"""The one training loop (attnbook.engine.train): schedule, optimiser groups, selection, callbacks."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from attnbook.core.errors import ModelError, ParameterError
from attnbook.engine.train import Recipe, epochs_of, fit, lr_factor, make_optimizer, param_groups


def test_lr_schedule_warms_up_then_decays():
    total = 50
    f = np.array([lr_factor(s, total, 0.1) for s in range(total)])
    assert np.all(np.diff(f[:5]) > 0) and f[4] == pytest.approx(1.0)  # 5 warm-up updates reach the peak
    assert f[5] == pytest.approx(1.0) and np.all(np.diff(f[5:]) < 0) and 0 < f[-1] < 0.05  # then linear decay


def test_no_warmup_means_decay_from_the_first_update():
    """Regression: ARCT's own schedule warmed up for one update when warmup rounded to 0 updates, so its
    second update ran at the full rate; the one schedule decays from the first update on."""
    assert [lr_factor(s, 4, 0.0) for s in range(4)] == [1.0, 0.75, 0.5, 0.25]
    assert [lr_factor(s, 4, 0.1) for s in range(4)] == [1.0, 0.75, 0.5, 0.25]  # round(0.4) = 0 warm-up updates


def _regression(seed=0, n=64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.1 * torch.randn(n, generator=g)
    return x, y


def _batches(n, size, epochs, seed=0):
    rng = np.random.default_rng(seed)
    return epochs_of(lambda _: [torch.as_tensor(b) for b in np.array_split(rng.permutation(n), n // size)], epochs)


def test_fit_learns_and_logs_every_update():
    x, y = _regression()
    model = nn.Linear(3, 1)
    loss = lambda m, idx: ((m(x[idx]).squeeze(-1) - y[idx]) ** 2).mean()  # noqa: E731
    log = fit(model, _batches(64, 8, 20), loss, Recipe(lr=0.05, warmup=0.1))
    assert log.n_steps == len(log.losses) == len(log.lrs) == 160 and len(log.history) == 20
    assert log.losses[-1] < 0.1 * log.losses[0]
    assert log.lrs[0] == pytest.approx(0.05 / 16) and max(log.lrs) == pytest.approx(0.05) and log.lrs[-1] < 0.001
    assert not model.training


def test_weight_decay_spares_biases_and_layernorm():
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    model.LayerNorm = model[1]
    decay, no_decay = param_groups(nn.ModuleDict({"dense": nn.Linear(3, 4), "LayerNorm": nn.LayerNorm(4)}), 0.01)
    assert [p.shape for p in decay["params"]] == [torch.Size([4, 3])] and decay["weight_decay"] == 0.01
    assert len(no_decay["params"]) == 3 and no_decay["weight_decay"] == 0.0
    frozen = nn.Linear(2, 2)
    frozen.weight.requires_grad_(False)
    assert sum(len(g["params"]) for g in param_groups(frozen, 0.1)) == 1


def test_adamw_without_decay_is_adam():
    """The loop's optimiser reproduces plain Adam exactly when no weight decay is asked for."""
    x, y = _regression(1)
    a, b = nn.Linear(3, 1), nn.Linear(3, 1)
    b.load_state_dict(a.state_dict())
    opt_a = make_optimizer(a, Recipe(lr=0.01, fused=False))
    opt_b = torch.optim.Adam(b.parameters(), lr=0.01)
    for _ in range(5):
        for m, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            ((m(x).squeeze(-1) - y) ** 2).mean().backward()
            opt.step()
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)


def test_select_best_restores_the_best_epoch_and_plateau_lowers_the_lr():
    model = nn.Linear(1, 1, bias=False)
    scores = iter([0.5, 0.9, 0.7, 0.8])
    weights = []

    def evaluate(m):
        weights.append(float(m.weight.detach()))
        return next(scores)

    loss = lambda m, _: (m(torch.ones(1, 1)) - 10.0).pow(2).sum()  # noqa: E731
    log = fit(model, [[0], [0], [0], [0]], loss, Recipe(lr=0.1, schedule="constant", plateau_factor=0.1, select="best"),
              evaluate=evaluate)
    assert log.best_epoch == 2 and float(model.weight) == pytest.approx(weights[1])
    assert log.lrs == pytest.approx([0.1, 0.1, 0.1, 0.01])  # the third epoch scored worse than the second
    assert [h["metric"] for h in log.history] == [0.5, 0.9, 0.7, 0.8]


def test_cosine_schedule_steps_per_epoch():
    model = nn.Linear(1, 1)
    loss = lambda m, _: m(torch.ones(1, 1)).sum()  # noqa: E731
    log = fit(model, [[0, 0]] * 4, loss, Recipe(lr=1.0, schedule="cosine"))
    expected = [0.5 * (1 + np.cos(np.pi * e / 4)) for e in range(4)]
    assert log.lrs == pytest.approx([v for v in expected for _ in range(2)])


def test_counts_weight_the_epoch_loss_and_add_up():
    model = nn.Linear(1, 1)
    losses = iter([1.0, 3.0])

    def loss(m, n):
        return m(torch.zeros(1, 1)).sum() * 0 + next(losses), {"n": n, "correct": 1}

    log = fit(model, [[1, 3]], loss, Recipe(lr=0.1, schedule="constant"))
    assert log.history[0]["loss"] == pytest.approx((1.0 * 1 + 3.0 * 3) / 4)
    assert log.counts == {"n": 4.0, "correct": 2.0}


def test_save_callbacks_stop_after_and_seed():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    loss = lambda m, _: m(torch.ones(4, 2)).pow(2).sum()  # noqa: E731
    saved = []
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    log = fit(model, [[0] * 10], loss, Recipe(lr=0.01), save_steps=[2, 5], stop_after=5, seed=7,
              on_save=lambda step, lg: saved.append((step, lg.n_steps, model.training)))
    assert torch.equal(torch.rand(1), before)  # the loop's seed left the caller's generator alone
    assert saved == [(2, 2, False), (5, 5, False)] and log.n_steps == 5
    assert log.lrs[1] == pytest.approx(0.01 * lr_factor(1, 10, 0.0))  # the schedule of the whole run


def test_divergence_and_bad_recipes_are_refused():
    model = nn.Linear(1, 1)
    with pytest.raises(ModelError, match="diverged"):
        fit(model, [[0]], lambda m, _: m(torch.ones(1, 1)).sum() * float("nan"), Recipe(lr=0.1))
    with pytest.raises(ParameterError):
        Recipe(lr=0.0)
    with pytest.raises(ParameterError):
        Recipe(lr=0.1, schedule="step")
    with pytest.raises(ParameterError):
        fit(model, [[0]], lambda m, _: m(torch.ones(1, 1)).sum(), Recipe(lr=0.1, select="best"))
