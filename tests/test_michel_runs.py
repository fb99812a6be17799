"""Chapter 6 over several fine-tuning seeds (issue 18): per-seed analysis, agreement between seeds, joined intervals."""
from __future__ import annotations


import time

import numpy as np
import pytest
import torch
from test_importance import dev_batches
from tiny_models import Named, tiny_classifier

from attnbook.engine.inputs import Batch
from attnbook.engine.scores import accuracy_points
from attnbook.stats import Estimate
from attnbook.studies.heads_off import effects as hs
from attnbook.studies.heads_off.learned import Learned
from attnbook.studies.michel import importance as imp
from attnbook.studies.michel import pruning as mp
from attnbook.studies.michel import runs as michel_runs


def test_across_seeds_uses_the_books_seed_rule():
    e = michel_runs.across_seeds([Estimate(0.5, 0.4, 0.6, 100, "dev examples"), Estimate(0.1, -0.1, 0.3, 100, "dev examples")])
    assert e.value == pytest.approx(0.3) and e.unit == "seeds" and e.low < -0.1 and e.high > 0.6  # not the union
    assert e.item_var > 0 and e.seed_var == pytest.approx(0.08 / 2)  # both sources of error
    one = michel_runs.across_seeds([Estimate(0.5, 0.4, 0.6, 100, "dev examples")])
    assert one.unit == "dev examples" and one.low == 0.4


def test_across_seeds_keeps_each_runs_resolution_floor_and_its_variance_components():
    """Regression (issue 47): the seeds' intervals were dropped (t over the seed values only), so a run's resolution
    floor never reached the combined interval, and renaming the unit dropped the interval's degrees of freedom and
    variance components (the deciding-sample statements read them)."""
    floor = hs.resolution(160)  # about 2.3 points on chapter 6's 160 dev examples
    runs = [Estimate(v, v, v, 160, "dev examples (paired)") for v in (-0.5, -0.4, -0.6)]  # no example changed
    got = michel_runs.across_seeds(runs, floor=floor)
    alone = michel_runs.across_seeds([michel_runs.with_floor(r, floor) for r in runs])
    assert (got.low, got.high) == (alone.low, alone.high)
    assert got.high - got.low >= 2 * floor  # old: t over the three values, about ±0.25
    assert got.item_var == pytest.approx((floor / 1.959963984540054) ** 2)
    named = michel_runs.across_seeds(runs, "points", floor=floor)
    assert named.unit == "points" and (named.df, named.seed_var, named.item_var) == (got.df, got.seed_var, got.item_var)
    assert michel_runs.with_floor(Estimate(1.0, 0.0, 3.0), 0.5) == Estimate(1.0, 0.0, 3.0)  # already wider
    assert michel_runs.with_floor(Estimate(1.0), 0.5) == Estimate(1.0)  # no interval: nothing to widen


def status(ok: bool) -> Learned:
    return Learned("SST-2", ok, "" if ok else "below", 60.0, 55.0, 65.0, 50.0, 100, 5.0 if ok else -1.0, 15.0, 0.6)


def test_analysed_skips_seeds_that_did_not_learn():
    runs = [michel_runs.SeedRun(s, None, status(s != 1)) for s in (0, 1, 2)]
    todo, ok = michel_runs.analysed(runs)
    assert [r.seed for r in todo] == [0, 2] and ok
    todo, ok = michel_runs.analysed([runs[1]])
    assert [r.seed for r in todo] == [1] and not ok


def test_analyse_every_seed_and_their_agreement():
    dev_b = [Batch.from_mapping(b) for b in dev_batches(seed=32)]
    imp_b = [Batch.from_mapping(b) for b in dev_batches(seed=31)]
    runs = []
    for s in (0, 1):
        clf = Named(key=f"tiny-{s}", model=tiny_classifier(seed=50 + s))
        run = michel_runs.SeedRun(s, clf, status(True))
        measured = michel_runs.analyse(run, "MNLI-m", dev_b, imp_b, accuracy_points, step=0.5, random_seeds=[0, 1],
                                       tolerance=1.0, n_resamples=100)
        assert run.ablation is None and measured.ablation is not None  # a stage's result is never changed
        runs.append(measured)
    r = runs[0]
    assert r.effects.shape[0] == 12 and r.effect_draws.shape == (100, 3, 4)
    assert set(r.curve_stats) == {mp.BY_IMPORTANCE, mp.BY_ABLATION, mp.RANDOM}
    own = mp.iterative_pruning(r.classifier.model, dev_b, accuracy_points, ordering=r.importance, step=0.5)
    by_imp = r.curves[r.curves["ordering"] == mp.BY_IMPORTANCE]
    assert np.allclose(by_imp["score"].to_numpy(), own["score"].to_numpy())  # the cached sweep is the same curve
    assert r.curve_stats[mp.BY_IMPORTANCE]["safe"].value == mp.largest_safe_share(by_imp, r.ablation.baseline_score, 1.0)
    agree = michel_runs.seed_agreement(runs, k=3)
    assert agree["pairs"]["seeds"].tolist() == ["0 vs 1"] and agree["rho_importance"].low is None
    band = michel_runs.curve_band(runs)
    assert band["n_seeds"].tolist() == [2, 2, 2] and (band["spread"] >= 0).all()
    allc = michel_runs.all_curves(runs)
    assert f"{mp.BY_IMPORTANCE}, seed 1" in set(allc["ordering"]) and (allc["ordering"] == mp.RANDOM).sum() == 12
    halves = hs.halves(len(r.ablation.gold), 0)
    rho = imp.delta_correlation(hs.subset_sweep(r.ablation, halves[0], accuracy_points),
                                hs.subset_sweep(r.ablation, halves[1], accuracy_points), "MNLI-m", n_resamples=100)
    assert -1 <= rho.low <= rho.high <= 1 and rho.n == 12


def test_speed_runs_pair_original_and_pruned_block_by_block():
    from attnbook.studies.michel.pruning import (
        speed_runs,
        speed_summary,
        throughput_pool,
    )

    model = tiny_classifier(seed=3)
    pool = throughput_pool([Batch.from_mapping(b) for b in dev_batches(seed=4)], 8)
    runs = speed_runs(model, pool, np.arange(12.0).reshape(3, 4), 0.5, batch_sizes=[1, 4], n_examples=8, repeats=2)
    # batch 1: 8 batches in 8 blocks, batch 4: 2 batches in 2 blocks; each block once per repeat
    assert runs.shape[0] == 2 * 8 + 2 * 2 and set(runs["repeat"]) == {0, 1} and runs["n_pruned"].iloc[0] == 6
    summary = speed_summary(runs)
    assert summary["batch_size"].tolist() == [1, 4] and summary["gain"].iloc[0].n == 16
    assert summary["gain"].iloc[0].low is not None and summary["gain"].iloc[1].low is None  # 4 pairs: no 95% interval


class _Sleeper(torch.nn.Module):
    """A "model" whose forward sleeps 20 ms, three times longer once ``load["busy"]`` (a competitor) is on."""

    def __init__(self, load):
        super().__init__()
        self.weight, self.load = torch.nn.Parameter(torch.zeros(1)), load

    def forward(self, **inputs):
        self.load["calls"] += 1
        self.load["busy"] = self.load["calls"] > self.load["switch"]
        time.sleep(0.02 * (3 if self.load["busy"] else 1))


def test_a_competitor_that_starts_midway_cannot_make_a_speed_up():
    """Regression (issue 30): the speed-up row read +37.8% [-80.6, +156.3] on a busy machine. Timed as before (all of
    the original model, then all of the pruned one), a load that starts halfway makes two equal models look 3x apart;
    timed in alternating blocks, the median pair sees no difference."""
    from attnbook.engine.pruning import interleaved_throughput, measure_throughput
    from attnbook.stats import median_interval

    pool = {"input_ids": torch.zeros(4, 3, dtype=torch.long)}
    load = {"calls": 0, "busy": False, "switch": 10}
    a, b = _Sleeper(load), _Sleeper(load)
    before = [measure_throughput(m, pool, [1], n_examples=8, repeats=1, warmup=1)[0]["examples_per_s"]
              for m in (a, b)]
    assert before[0] / before[1] > 2  # the old way: "a" looks more than twice as fast as its twin
    load.update(calls=0, busy=False, switch=20)
    pairs = interleaved_throughput([a, b], pool, [1], n_examples=8, repeats=3, blocks=8, warmup=1)
    gains = [100.0 * (p["seconds"][0] / p["seconds"][1] - 1.0) for p in pairs]
    est = median_interval(gains)
    assert abs(est.value) < 25 and est.n == 24


def test_median_interval_is_the_sign_test_interval():
    from attnbook.stats import median_interval

    v = np.arange(1.0, 11.0)  # n = 10: k = 2 gives coverage 1 - 2 * P(B <= 1) = 0.9785
    est = median_interval(v[::-1])
    assert (est.value, est.low, est.high, est.n) == (5.5, 2.0, 9.0, 10)
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]).low is None  # 5 values cannot reach 95%
    assert median_interval([1, 2, 3, 4, 5, 6]).low == 1.0  # 6 values: [min, max] covers 96.9%