"""Clark §6 MDS: stress, recovery of planar configurations, orientation, Procrustes, split-half stability."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform
from toy_clark import planted

from attnbook.studies.clark import embedding


def test_stress_is_zero_for_an_exact_embedding_and_matches_the_formula():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(12, 2))
    d = squareform(pdist(x))
    s = embedding.stress(d, x)
    assert s.raw == pytest.approx(0.0, abs=1e-20) and s.stress1 == pytest.approx(0.0, abs=1e-10)
    assert s.correlation == pytest.approx(1.0)
    rot = np.array([[0.6, -0.8], [0.8, 0.6]])
    assert embedding.stress(d, x @ rot + 3.0).stress1 == pytest.approx(0.0, abs=1e-7)
    y = x.copy()
    y[0] += [1.0, 0.5]
    dy = pdist(y)
    s2 = embedding.stress(d, y)
    assert s2.raw == pytest.approx(np.sum((dy - pdist(x)) ** 2))
    assert s2.stress1 == pytest.approx(np.sqrt(np.sum((dy - pdist(x)) ** 2) / np.sum(dy**2)))


def test_mds_recovers_a_planar_configuration():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(15, 2))
    d = squareform(pdist(x))
    res = embedding.mds_embedding(d, seed=0)
    assert res.coords.shape == (15, 2)
    assert res.stress.stress1 < 1e-3
    assert embedding.procrustes_disparity(x, res.coords) < 1e-5
    np.testing.assert_allclose(res.coords.mean(0), 0.0, atol=1e-9)


def test_mds_of_non_planar_distances_has_positive_stress_and_orientation_follows_labels():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(20, 6))
    order = np.arange(20)
    x[:, 0] += order * 0.8  # a trend along the labels
    res = embedding.mds_embedding(squareform(pdist(x)), seed=1, orient_by=order)
    assert res.stress.stress1 > 0.05
    assert np.corrcoef(res.coords[:, 0], order)[0, 1] > 0
    # a 3-D cube cannot be drawn in 2-D without error
    cube = np.array(list(itertools.product([0, 1], repeat=3)), float)
    assert embedding.mds_embedding(squareform(pdist(cube))).stress.stress1 > 0.05


def test_procrustes_disparity_ignores_rotation_scale_and_sees_shuffling():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(10, 2))
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert embedding.procrustes_disparity(x, 3 * x @ rot + 1) < 1e-12
    assert embedding.procrustes_disparity(x, x[rng.permutation(10)]) > 0.1


def test_split_half_stability():
    d = planted(n_layers=3, n_heads=4, spread=0.3, seed=4)
    rng = np.random.default_rng(0)
    noise = squareform(rng.normal(scale=0.01, size=66))
    halves = np.stack([d, np.abs(d + noise) * (1 - np.eye(12))])
    st = embedding.split_half_stability(halves)
    assert st["correlation"] > 0.99 and st["procrustes"] < 0.01
    shuffled = np.stack([d, d[np.ix_(rng.permutation(12), rng.permutation(12))]])
    shuffled[1] = (shuffled[1] + shuffled[1].T) / 2
    np.fill_diagonal(shuffled[1], 0)
    assert embedding.split_half_stability(shuffled)["correlation"] < 0.9


def test_mds_result_summary_and_description():
    d = planted(n_layers=3, n_heads=3, spread=0.2, seed=6)
    mds = embedding.mds_embedding(d, seed=0)
    s = mds.summary()
    assert list(s) == ["raw", "stress1", "correlation", "init"]
    assert s["raw"] == mds.stress.raw and s["stress1"] == mds.stress.stress1 and s["init"] == mds.init
    assert mds.describe().startswith(f"Stress-1 **{mds.stress.stress1:.3f}** (raw stress {mds.stress.raw:.3f})")
