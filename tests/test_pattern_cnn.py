"""Kovaleva §4.1 pattern CNN: architecture, images, training, cross-validation, the cached CNN."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.studies.kovaleva import cnn as C
from attnbook.studies.kovaleva import patterns as PT


def test_cnn_has_eight_conv_layers():
    model = C.PatternCNN(size=32)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 8
    assert model(torch.zeros(3, 1, 32, 32)).shape == (3, len(PT.CLASSES))
    with pytest.raises(ParameterError):
        C.PatternCNN(size=30)


def test_images_are_resized_and_scaled():
    rng = np.random.default_rng(0)
    maps = [PT.synthetic_map("Diagonal", n, rng)[0] for n in (9, 40, 100)]
    imgs = C.maps_to_images(maps, size=32)
    assert imgs.shape == (3, 1, 32, 32)
    np.testing.assert_allclose(imgs.amax(dim=(-1, -2)).squeeze().numpy(), 1.0, rtol=1e-6)
    # a diagonal map stays diagonal: the diagonal of the image is darker than the far corner
    for img in imgs[:, 0]:
        assert img.diagonal().mean() > 3 * img[0, -8:].mean()


def test_cnn_learns_synthetic_classes():
    torch.set_num_threads(1)
    maps, _, y = PT.synthetic_dataset(24, seed=1, lengths=(10, 48))
    test_maps, _, test_y = PT.synthetic_dataset(8, seed=2, lengths=(10, 48))
    model = C.train_cnn(C.maps_to_images(maps, 32), y, epochs=15, seed=0)
    pred = C.predict_cnn(model, C.maps_to_images(test_maps, 32))
    assert C.macro_f1(test_y, pred) >= 0.8, C.confusion(test_y, pred)


def test_cross_validation_reports_and_checks_counts():
    torch.set_num_threads(1)
    maps, _, y = PT.synthetic_dataset(6, seed=5, lengths=(10, 24))
    imgs = C.maps_to_images(maps, 16)
    cv = C.cross_validate_cnn(imgs, y, k=3, seed=0, epochs=2)
    assert cv["confusion"].sum() == len(y) and len(cv["fold_f1"]) == 3
    assert 0 <= cv["macro_f1"] <= 1 and cv["predictions"].shape == y.shape
    with pytest.raises(EmptyDataError):
        C.cross_validate_cnn(imgs, y, k=7, seed=0, epochs=1)  # only 6 maps per class
    tree = C.cross_validate_features(PT.features_matrix(maps, [PT.synthetic_layout(len(m), False, np.random.default_rng(0))
                                                              for m in maps]), y, k=3)
    assert tree["confusion"].sum() == len(y)


def test_cnn_arrays_round_trip_gives_same_outputs():
    torch.manual_seed(0)
    model = C.PatternCNN(size=16, width=2)
    model.eval()
    x = torch.rand(3, 1, 16, 16)
    # width is not stored: the round trip rebuilds the default width, so use the default here
    model = C.PatternCNN(size=16)
    model.eval()
    arrays = C.cnn_to_arrays(model)
    again = C.cnn_from_arrays(arrays)
    with torch.no_grad():
        assert torch.allclose(model(x), again(x))
    assert not again.training


def test_cnn_digest_is_its_weights():
    torch.manual_seed(0)
    a = C.PatternCNN(size=16)
    b = C.cnn_from_arrays(C.cnn_to_arrays(a))
    assert cache.digest(a) == cache.digest(b)
    torch.manual_seed(1)
    assert cache.digest(C.PatternCNN(size=16)) != cache.digest(a)


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """An empty cache, 15 small synthetic maps as images with their labels, and the seeds of every CNN trained."""
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    torch.set_num_threads(1)
    maps, _, y = PT.synthetic_dataset(3, seed=5, lengths=(10, 20))
    calls = []
    real = C.train_cnn

    def train(*args, **kwargs):
        calls.append(kwargs.get("seed"))
        return real(*args, **kwargs)

    monkeypatch.setattr(C, "train_cnn", train)
    return C.maps_to_images(maps, 16), y, calls


def test_trained_cnn_is_cached_by_images_labels_and_recipe(counted):
    imgs, y, calls = counted
    a = C.trained_cnn(imgs, y, seed=0, epochs=1)
    b = C.trained_cnn(imgs, y, seed=0, epochs=1)
    assert len(calls) == 1 and cache.digest(a) == cache.digest(b) and not b.training
    with cache.disabled():
        fresh = C.trained_cnn(imgs, y, seed=0, epochs=1)
    assert len(calls) == 2 and cache.digest(fresh) == cache.digest(a)  # seeded: the same weights again
    C.trained_cnn(imgs, y, seed=1, epochs=1)
    C.trained_cnn(imgs, y, seed=0, epochs=2)
    C.trained_cnn(imgs, np.roll(y, 1), seed=0, epochs=1)
    C.trained_cnn(imgs.flip(-1), y, seed=0, epochs=1)
    assert len(calls) == 6  # every change of images, labels or recipe is a new entry


def test_cross_validated_cnn_is_cached(counted):
    imgs, y, calls = counted
    cv = C.cross_validated_cnn(imgs, y, k=3, seed=0, epochs=1)
    assert len(calls) == 3  # one CNN per fold
    again = C.cross_validated_cnn(imgs, y, k=3, seed=0, epochs=1)
    assert len(calls) == 3 and set(again) == set(cv)
    assert float(again["macro_f1"]) == float(cv["macro_f1"]) and np.array_equal(again["confusion"], cv["confusion"])
    direct = C.cross_validate_cnn(imgs, y, k=3, seed=0, epochs=1)
    assert float(cv["macro_f1"]) == direct["macro_f1"] and np.array_equal(cv["predictions"], direct["predictions"])
    C.cross_validated_cnn(imgs, y, k=2, seed=0, epochs=1)
    assert len(calls) == 3 + 3 + 2


def test_classifier_scores_table():
    y = np.array([0, 0, 1, 1, 4])
    proposed = np.array([0, 1, 1, 1, 4])
    tree = {"macro_f1": 0.5, "weighted_f1": 0.6, "accuracy": 0.7}
    cv = {"macro_f1": np.array(0.25), "weighted_f1": np.array(0.3), "accuracy": np.array(0.4)}
    t = C.classifier_scores(y, proposed, tree, cv, 3)
    assert list(t["classifier"]) == ["rule set (the proposal, no training)", "decision tree on the features (CV)",
                                     "8-layer CNN (3-fold CV)"]
    assert t.loc[0, "accuracy"] == 0.8 and t.loc[0, "macro F1"] == round(C.macro_f1(y, proposed), 3)
    assert t.loc[2, "macro F1"] == 0.25 and t.loc[1, "weighted F1"] == 0.6
