"""Paired statistics of a sweep (attnbook.engine.sweep_stats): bootstrap of Δ, McNemar, gains that survive a
correction."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook.core.errors import ParameterError
from attnbook.engine.sweep_stats import bootstrap_delta, compare_to_baseline, surviving_gains
from attnbook.engine.sweeps import SweepResult, accuracy
from attnbook.stats import adjust_pvalues, mcnemar_exact


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
