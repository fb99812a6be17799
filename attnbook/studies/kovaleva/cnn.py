"""The pattern CNN of Kovaleva et al. §4.1: 8 convolutional layers with ReLU, trained on labelled maps.

Kovaleva et al. annotated about 400 maps by hand, trained a CNN with 8 convolutional layers and
ReLUs on them (F1 0.86) and used it to count the classes of Fig. 2; their CNN was not released.
This module has the book's CNN (:class:`PatternCNN`) on maps resized to small images
(:func:`maps_to_images`), trained from scratch by the book's one training loop
(:func:`train_cnn`, :func:`attnbook.engine.train.fit`), seeded, stratified k-fold
cross-validation (:func:`cross_validate_cnn`) and the same for a decision tree on the transparent
features (:func:`cross_validate_features`, the baseline). :func:`trained_cnn` and
:func:`cross_validated_cnn` are the cached measurements a chapter calls: their cache keys are the
content digests of the images and labels they learn from.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.train import Recipe, epochs_of, fit
from attnbook.stats import Estimate, bootstrap_counts, percentile_interval
from attnbook.studies.kovaleva.patterns import CLASSES


# ---------------------------------------------------------------------------------------------
# the CNN (Kovaleva §4.1: 8 convolutional layers with ReLU)
# ---------------------------------------------------------------------------------------------
def maps_to_images(maps: Sequence[np.ndarray | torch.Tensor], size: int = 32) -> torch.Tensor:
    """Resize maps to ``[n_maps, 1, size, size]`` images, each divided by its maximum.

    Maps of any length are resized with antialiased bilinear interpolation (downsampling
    averages neighbouring cells; upsampling interpolates), so a 1-cell-wide diagonal stays
    a visible line. Dividing by the maximum is what a heatmap does: the picture, not the
    absolute weights, is classified - as a human annotator sees it.
    """
    out = torch.empty(len(maps), 1, size, size)
    for i, m in enumerate(maps):
        t = torch.as_tensor(np.asarray(m, dtype=np.float32)) if not isinstance(m, torch.Tensor) else m.float()
        out[i] = resize_images(t[None, None], size)[0]
    return out


def resize_images(x: torch.Tensor, size: int) -> torch.Tensor:
    """``x[n, 1, h, w]`` -> ``[n, 1, size, size]``, divided by each image's maximum."""
    y = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    y = y.clamp(min=0)
    return y / y.amax(dim=(-1, -2), keepdim=True).clamp(min=1e-9)


class PatternCNN(nn.Module):
    """8 convolutional layers (3x3, batch norm, ReLU) in four pairs, then a linear layer.

    Kovaleva et al. give only "8 convolutional layers and ReLU activation functions". This
    book's choices: widths ``(w, w, 2w, 2w, 4w, 4w, 8w, 8w)`` with ``w = 4``; batch norm
    after each convolution (trains reliably from a few hundred maps); max-pooling after
    each of the first three pairs (``size`` -> ``size / 8``); then the feature map is
    flattened - not averaged, because *where* the ink is (column 0 is ``[CLS]``, the
    diagonal) is what tells the classes apart - and a linear layer gives the five
    logits. Input: ``[n, 1, size, size]`` from :func:`maps_to_images` (size divisible by 8).
    """

    def __init__(self, size: int = 32, width: int = 4, n_classes: int = len(CLASSES)):
        super().__init__()
        if size % 8:
            raise ParameterError(f"the CNN's input size must be divisible by 8, got {size}")
        widths = [width, width, 2 * width, 2 * width, 4 * width, 4 * width, 8 * width, 8 * width]
        layers: list[nn.Module] = []
        c_in = 1
        for i, c_out in enumerate(widths):  # 8 convolutional layers
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU()]
            if i in (1, 3, 5):
                layers.append(nn.MaxPool2d(2))
            c_in = c_out
        self.size = size
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(c_in * (size // 8) ** 2, n_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))

    def __digest__(self) -> dict:
        """What identifies a trained CNN in a cache key (:func:`attnbook.core.cache.digest`): its weights."""
        return {"size": int(self.size), "state": dict(self.state_dict())}


def train_cnn(
    images: torch.Tensor,
    labels: np.ndarray | torch.Tensor,
    *,
    epochs: int = 40,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    class_weights: bool = True,
) -> PatternCNN:
    """Train a :class:`PatternCNN` from scratch; seeded.

    The book's training loop (:func:`attnbook.engine.train.fit`) with a cosine learning-rate schedule; cross-entropy weighted by inverse class
    frequency (the labelled set is unbalanced, as the paper's was). No augmentation: a
    flipped or transposed map is not a map BERT would produce (a transposed Vertical map
    is horizontal).
    """
    torch.manual_seed(seed)
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    if len(y) != len(images):
        raise ParameterError(f"{len(images)} images but {len(y)} labels")
    if len(y) == 0:
        raise EmptyDataError("no labelled maps to train the pattern CNN on")
    model = PatternCNN(size=int(images.shape[-1]))
    weight = None
    if class_weights:
        counts = torch.bincount(y, minlength=len(CLASSES)).float()
        weight = torch.where(counts > 0, counts.sum() / (len(CLASSES) * counts.clamp(min=1)), torch.zeros_like(counts))
    criterion = nn.CrossEntropyLoss(weight=weight)
    gen = torch.Generator().manual_seed(seed)

    def epoch_order(_: int) -> list[torch.Tensor]:
        order = torch.randperm(len(y), generator=gen)
        return [order[start : start + batch_size] for start in range(0, len(y), batch_size)]

    fit(model, epochs_of(epoch_order, epochs), lambda m, idx: criterion(m(images[idx]), y[idx]),
        Recipe(lr=lr, schedule="cosine", fused=False))
    return model


def predict_cnn(model: PatternCNN, images: torch.Tensor, batch_size: int = 256) -> np.ndarray:
    """Class indices for ``images[n, 1, size, size]``."""
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            out.append(model(images[start : start + batch_size]).argmax(-1))
    return torch.cat(out).numpy() if out else np.zeros(0, dtype=np.int64)


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray, average: str = "macro") -> float:
    """F1 averaged over the classes present in ``y_true`` (``"macro"``: each class counts once;
    ``"weighted"``: by class frequency). Kovaleva et al. do not say which F1 their 0.86 is."""
    from sklearn.metrics import f1_score

    labels = sorted(set(np.asarray(y_true).tolist()))
    return float(f1_score(y_true, y_pred, labels=labels, average=average, zero_division=0))


def f1_estimate(y_true: np.ndarray, y_pred: np.ndarray, *, n_resamples: int = 2000, seed: int = 0,
                unit: str = "labelled maps") -> Estimate:
    """Macro F1 (:func:`macro_f1`, over the classes present in ``y_true``) with its 95% percentile bootstrap
    interval over the maps (each resample weighs the maps by how often it draws them)."""

    y, p = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    if len(y) == 0:
        raise EmptyDataError("no maps to score")
    present = sorted(set(y.tolist()))
    Y = (y[:, None] == np.array(present)[None, :]).astype(np.float64)
    P = (p[:, None] == np.array(present)[None, :]).astype(np.float64)
    w = bootstrap_counts(len(y), n_resamples, seed).astype(np.float64)
    tp, fp, fn = w @ (Y * P), w @ ((1 - Y) * P), w @ (Y * (1 - P))
    denom = 2 * tp + fp + fn
    f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0).mean(1)
    lo, hi = percentile_interval(f1)
    return Estimate(macro_f1(y, p), float(lo), float(hi), len(y), unit)


def learnable_classes(labels: np.ndarray, k: int) -> tuple[np.ndarray, str]:
    """Which maps a ``k``-fold cross-validation can use: ``(keep mask, note)``. A class with fewer than ``k`` maps
    cannot be in every fold, so its maps are dropped; the note names it, and every class with no map at all."""
    y = np.asarray(labels, dtype=np.int64)
    counts = np.bincount(y[y >= 0], minlength=len(CLASSES))
    rare = [c for c in range(len(CLASSES)) if 0 < counts[c] < k]
    absent = [CLASSES[c] for c in range(len(CLASSES)) if counts[c] == 0]
    keep = (y >= 0) & ~np.isin(y, rare)
    parts = []
    if absent:
        parts.append(f"no labelled map of {', '.join(absent)}, so the CNN cannot learn it")
    if rare:
        parts.append(", ".join(f"{CLASSES[c]} ({counts[c]} maps)" for c in rare)
                     + f" dropped: fewer maps than the {k} folds")
    return keep, "; ".join(parts)


def cross_validate_cnn(
    images: torch.Tensor,
    labels: np.ndarray,
    *,
    k: int = 5,
    seed: int = 0,
    **train_kwargs: Any,
) -> dict[str, Any]:
    """Stratified ``k``-fold cross-validation of the pattern CNN (Kovaleva §4.1 reports F1 0.86).

    Returns ``macro_f1`` and ``weighted_f1`` (over the pooled out-of-fold predictions),
    ``fold_f1`` (macro F1 of each fold), ``accuracy``, ``confusion`` (``[true, predicted]`` over :data:`CLASSES`) and
    ``predictions`` (out-of-fold class index of every map).
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(labels, dtype=np.int64)
    present = np.bincount(y, minlength=len(CLASSES))
    if len(y) < k or present[present > 0].min() < k:
        raise EmptyDataError(
            f"{k}-fold cross-validation needs at least {k} maps of every class present; counts: "
            + ", ".join(f"{c} {int(n)}" for c, n in zip(CLASSES, present))
        )
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    pred = np.zeros_like(y)
    fold_f1 = []
    for fold, (tr, te) in enumerate(skf.split(np.zeros(len(y)), y)):
        model = train_cnn(images[tr], y[tr], seed=seed + fold, **train_kwargs)
        pred[te] = predict_cnn(model, images[te])
        fold_f1.append(macro_f1(y[te], pred[te]))
    return {
        "macro_f1": macro_f1(y, pred),
        "weighted_f1": macro_f1(y, pred, "weighted"),
        "fold_f1": fold_f1,
        "accuracy": float((pred == y).mean()),
        "confusion": confusion(y, pred),
        "predictions": pred,
    }


def cross_validate_features(
    features: np.ndarray, labels: np.ndarray, *, k: int = 5, seed: int = 0, max_depth: int = 4
) -> dict[str, Any]:
    """The same cross-validation for a shallow decision tree on the transparent features.

    A baseline for the CNN: how far do a dozen interpretable numbers get?
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.tree import DecisionTreeClassifier

    y = np.asarray(labels, dtype=np.int64)
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    pred = np.zeros_like(y)
    for tr, te in skf.split(features, y):
        tree = DecisionTreeClassifier(max_depth=max_depth, random_state=seed, class_weight="balanced")
        pred[te] = tree.fit(features[tr], y[tr]).predict(features[te])
    return {"macro_f1": macro_f1(y, pred), "weighted_f1": macro_f1(y, pred, "weighted"),
            "accuracy": float((pred == y).mean()), "confusion": confusion(y, pred), "predictions": pred}


def confusion(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """``counts[true, predicted]`` over :data:`CLASSES`."""
    m = np.zeros((len(CLASSES), len(CLASSES)), dtype=np.int64)
    np.add.at(m, (np.asarray(y_true), np.asarray(y_pred)), 1)
    return m


def classifier_scores(labels: np.ndarray, proposed: np.ndarray, tree: Mapping[str, Any], cv: Mapping[str, Any],
                      folds: int):
    """The three classifiers of the labelled maps side by side (macro F1, weighted F1, accuracy, 3 decimals):
    the rule set's proposals (no training), the decision tree on the features and the CNN (both ``folds``-fold
    cross-validated; ``tree`` from :func:`cross_validate_features`, ``cv`` from :func:`cross_validated_cnn`)."""
    import pandas as pd

    y = np.asarray(labels)
    proposed = np.asarray(proposed)
    return pd.DataFrame([
        {"classifier": "rule set (the proposal, no training)", "macro F1": macro_f1(y, proposed),
         "weighted F1": macro_f1(y, proposed, "weighted"), "accuracy": float((proposed == y).mean())},
        {"classifier": "decision tree on the features (CV)", "macro F1": tree["macro_f1"],
         "weighted F1": tree["weighted_f1"], "accuracy": tree["accuracy"]},
        {"classifier": f"8-layer CNN ({folds}-fold CV)", "macro F1": float(cv["macro_f1"]),
         "weighted F1": float(cv["weighted_f1"]), "accuracy": float(cv["accuracy"])},
    ]).round(3)


# ---------------------------------------------------------------------------------------------
# cached: the CNN cross-validated and trained on a labelled set
# ---------------------------------------------------------------------------------------------
def cnn_to_arrays(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """A trained :class:`PatternCNN`'s state as arrays (``state/<name>``) for the cache."""
    out = {f"state/{k}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    out["size"] = np.array(int(model.size))
    return out


def cnn_from_arrays(arrays: Mapping[str, np.ndarray]) -> PatternCNN:
    """Rebuild the CNN stored by :func:`cnn_to_arrays` (in eval mode)."""
    model = PatternCNN(size=int(arrays["size"]))
    state = {k[len("state/"):]: torch.as_tensor(np.asarray(v)) for k, v in arrays.items() if k.startswith("state/")}
    model.load_state_dict(state)
    model.eval()
    return model


@cache.memoized("kovaleva_cnn_cv")
def cross_validated_cnn(images: torch.Tensor, labels: np.ndarray, *, k: int = 5, seed: int = 0, epochs: int = 40
                        ) -> dict[str, np.ndarray]:
    """:func:`cross_validate_cnn` of the labelled ``images``, cached by the images' and labels' content, ``k``,
    ``seed`` and ``epochs`` (Kovaleva §4.1 reports F1 0.86). Values are arrays (``macro_f1`` a 0-d one)."""
    cv = cross_validate_cnn(images, labels, k=k, seed=seed, epochs=epochs)
    return {name: np.asarray(v) for name, v in cv.items()}


@cache.memoized("kovaleva_cnn")
def trained_cnn_arrays(images: torch.Tensor, labels: np.ndarray, *, seed: int = 0, epochs: int = 40
                       ) -> dict[str, np.ndarray]:
    """The weights of the CNN trained on all labelled ``images`` (:func:`train_cnn`), cached by content."""
    return cnn_to_arrays(train_cnn(images, labels, epochs=epochs, seed=seed))


def trained_cnn(images: torch.Tensor, labels: np.ndarray, *, seed: int = 0, epochs: int = 40) -> PatternCNN:
    """The CNN trained on all labelled ``images`` (:func:`trained_cnn_arrays`, cached), in eval mode."""
    return cnn_from_arrays(trained_cnn_arrays(images, labels, seed=seed, epochs=epochs))


def f1_markdown(cnn_f1, note: str = "") -> str:
    """The CNN's cross-validated macro F1 with its interval, as the chapter states it."""
    return (f"CNN macro F1 with its 95% interval over the reviewed maps: **{cnn_f1.text('.2f')}**"
            + (f" ({note})" if note else "") + ".")
