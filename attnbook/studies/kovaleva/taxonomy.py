"""The five self-attention patterns of Kovaleva et al. §4.1 (Fig. 1-2).

Kovaleva et al. sorted BERT's attention maps into five classes:

* **Vertical** - most attention goes to the special tokens ``[CLS]`` and ``[SEP]``
  (stripes down the map's columns);
* **Diagonal** - attention to the previous or the following token (a band along
  the diagonal);
* **Vertical+Diagonal** - a mixture of the two;
* **Block** - attention stays inside each sentence of a two-sentence input
  (two squares on the diagonal);
* **Heterogeneous** - none of the above; the only class that may carry
  input-specific (linguistic) information.

They annotated about 400 maps by hand, trained a CNN with 8 convolutional layers
and ReLUs on them (F1 0.86), and used it to estimate the share of each class
over up to 1000 validation examples per GLUE task (Fig. 2: Heterogeneous from
32% on MRPC to 61% on QQP). Their CNN was not released.

This module has

* synthetic generators of each class (:func:`synthetic_map`, :func:`synthetic_dataset`),
  which explain the classes and test the classifiers;
* transparent per-map features (:func:`map_features`) and a documented rule set
  over them (:func:`classify_rules`);
* an 8-layer CNN in torch (:class:`PatternCNN`), trained and evaluated with
  seeded, stratified k-fold cross-validation (:func:`cross_validate_cnn`);
* the book's own labelled set (``assets/pattern_labels.json``): identifiers of
  GLUE dev inputs, layer, head and label, from which the maps are regenerated
  deterministically (:func:`load_pattern_labels`, :func:`labelled_maps`);
* a streaming reducer that counts the classes per head over a corpus (Fig. 2,
  :class:`PatternCounter`, :func:`pattern_proportions`);
* pictures: PNG thumbnails without matplotlib (:func:`render_thumbnails`),
  Altair heatmaps (:func:`heatmap_chart`) and an ipywidgets annotation tool
  (:func:`annotation_widget`).

A *map* here is one head's ``attn[query, key]`` (rows sum to 1) together with the
input's ``segment_ids`` (0 for ``[CLS]``, sentence A and its ``[SEP]``; 1 for
sentence B and the final ``[SEP]``) and its special-token positions.
"""
from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core.paths import PACKAGE_DIR
from attnbook.core.errors import EmptyDataError, MalformedInputError, ParameterError
from attnbook.engine.extract import Batch, Encoded
from attnbook.core.io import atomic_write_bytes, atomic_write_json
from attnbook.engine.train import Recipe, epochs_of, fit

#: the five classes of Kovaleva et al. §4.1, in the paper's order (class index = position)
CLASSES: tuple[str, ...] = ("Vertical", "Diagonal", "Vertical+Diagonal", "Block", "Heterogeneous")
CLASS_INDEX = {name: i for i, name in enumerate(CLASSES)}

#: the transparent per-map features, in the column order of :func:`map_features_batch`
FEATURES: tuple[str, ...] = ("special", "cls", "sep", "diag", "prev", "self", "next", "diag_lift", "local_lift", "stripe", "block",
                             "block_chance", "entropy", "pair")

#: where the book's labelled set lives
ASSETS = PACKAGE_DIR / "assets"
LABELS_FILE = ASSETS / "pattern_labels.json"


def check_class(name: str) -> int:
    """Index of a class name; :class:`ParameterError` naming the five classes otherwise."""
    if name not in CLASS_INDEX:
        raise ParameterError(f"unknown attention pattern {name!r}; the classes are: {', '.join(CLASSES)}")
    return CLASS_INDEX[name]


# ---------------------------------------------------------------------------------------------
# synthetic maps
# ---------------------------------------------------------------------------------------------
def synthetic_layout(n: int, pair: bool, rng: np.random.Generator) -> np.ndarray:
    """``segment_ids`` of an ``n``-token input ``[CLS] A [SEP] (B [SEP])``; a pair splits at a random point."""
    if n < (5 if pair else 3):
        raise ParameterError(f"a synthetic {'pair' if pair else 'single'} input needs more tokens than {n}")
    seg = np.zeros(n, dtype=np.int64)
    if pair:
        first_sep = int(rng.integers(2, n - 2))  # at least one token in each sentence
        seg[first_sep + 1 :] = 1
    return seg


def special_positions(segment_ids: np.ndarray) -> np.ndarray:
    """Positions of ``[CLS]`` (0) and each ``[SEP]`` (the last token of every segment) in a layout."""
    seg = np.asarray(segment_ids)
    n = len(seg)
    ends = [i for i in range(n) if i == n - 1 or seg[i + 1] != seg[i]]
    return np.array(sorted({0, *ends}), dtype=np.int64)


def _rows_normalise(m: np.ndarray) -> np.ndarray:
    m = np.clip(m, 0, None) + 1e-12
    return m / m.sum(-1, keepdims=True)


def _vertical(n: int, specials: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    weights = rng.dirichlet(np.full(len(specials), 0.7))
    m = np.zeros((n, n))
    m[:, specials] = weights
    if rng.random() < 0.3:  # sometimes a punctuation-like stripe as well
        j = int(rng.integers(1, n - 1))
        m[:, j] += rng.uniform(0.1, 0.4)
    return m


def _diagonal(n: int, rng: np.random.Generator) -> np.ndarray:
    offsets = np.array([-1, 0, 1])
    weights = rng.dirichlet(np.array([1.0, 0.3, 1.0]))
    dominant = int(rng.choice([0, 2]))  # most diagonal heads look mainly back or mainly forward
    weights[dominant] += 1.5
    m = np.zeros((n, n))
    for off, w in zip(offsets, weights):
        idx = np.arange(max(0, -off), min(n, n - off))
        m[idx, idx + off] += w
    return m


def _block(n: int, seg: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    same = (seg[:, None] == seg[None, :]).astype(float)
    texture = rng.gamma(1.0, 1.0, size=(n, n))
    return same * texture


def _heterogeneous(n: int, rng: np.random.Generator) -> np.ndarray:
    m = rng.gamma(0.25, 1.0, size=(n, n))  # spiky, input-specific rows
    # a few content tokens every row looks at, at arbitrary distances
    for j in rng.choice(np.arange(1, n - 1), size=min(3, n - 2), replace=False):
        m[:, j] += rng.uniform(0.0, 0.6) * rng.random(n)
    return m


def synthetic_map(
    kind: str,
    n: int,
    rng: np.random.Generator,
    *,
    pair: bool | None = None,
    noise: float = 0.1,
) -> tuple[np.ndarray, np.ndarray]:
    """One synthetic map of class ``kind``: ``(attn[query, key], segment_ids)``, rows summing to 1.

    ``noise`` mixes each row with a random distribution (weight ``noise``). Block maps
    are always two-sentence inputs; the other classes are pairs when ``pair`` (default:
    a coin flip). Vertical+Diagonal mixes a vertical and a diagonal map with a weight
    drawn from [0.35, 0.65].
    """
    index = check_class(kind)
    if not 0.0 <= noise < 1.0:
        raise ParameterError(f"noise is a mixing weight in [0, 1), got {noise}")
    if kind == "Block":
        pair = True
    elif pair is None:
        pair = bool(rng.random() < 0.5)
    seg = synthetic_layout(n, pair, rng)
    specials = special_positions(seg)
    if index == 0:
        m = _rows_normalise(_vertical(n, specials, rng))
    elif index == 1:
        m = _rows_normalise(_diagonal(n, rng))
    elif index == 2:
        w = rng.uniform(0.35, 0.65)
        m = w * _rows_normalise(_vertical(n, specials, rng)) + (1 - w) * _rows_normalise(_diagonal(n, rng))
    elif index == 3:
        m = _rows_normalise(_block(n, seg, rng))
    else:
        m = _rows_normalise(_heterogeneous(n, rng))
    if noise > 0:
        m = (1 - noise) * m + noise * _rows_normalise(rng.gamma(0.5, 1.0, size=(n, n)))
    return m.astype(np.float32), seg


def synthetic_dataset(
    n_per_class: int,
    seed: int = 0,
    *,
    lengths: tuple[int, int] = (10, 64),
    noise: tuple[float, float] = (0.0, 0.25),
) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """``n_per_class`` synthetic maps of every class: ``(maps, segment_ids, labels)``.

    Lengths are drawn uniformly from ``lengths`` (inclusive), noise levels from ``noise``.
    """
    rng = np.random.default_rng(seed)
    maps, segs, labels = [], [], []
    for _ in range(n_per_class):
        for c, kind in enumerate(CLASSES):
            n = int(rng.integers(lengths[0], lengths[1] + 1))
            m, s = synthetic_map(kind, n, rng, noise=float(rng.uniform(*noise)))
            maps.append(m)
            segs.append(s)
            labels.append(c)
    return maps, segs, np.array(labels, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# transparent features
# ---------------------------------------------------------------------------------------------
def map_features_batch(
    attn: torch.Tensor,
    query_mask: torch.Tensor,
    special_mask: torch.Tensor,
    segment_ids: torch.Tensor,
) -> torch.Tensor:
    """Per-map features ``[..., feature]`` (names in :data:`FEATURES`) for padded maps.

    ``attn[b, ..., query, key]`` with per-input masks ``[b, seq]``. Every feature is an
    average over the input's real query rows (each row is one token's distribution):

    * ``special`` - attention to ``[CLS]`` and ``[SEP]`` (``cls`` and ``sep`` apart);
    * ``diag`` - attention to the previous token, the token itself and the next token
      (``prev``, ``self``, ``next`` apart), special tokens excluded (they count as
      ``special``);
    * ``diag_lift`` - how much darker the ±1 band is than the rest of the map: the mean
      weight of a band cell over the mean weight of an ordinary cell off the band (1 when
      the band does not stand out; a visible diagonal is several times darker);
      ``local_lift`` is the same for the ±3 band (a broad, blurry diagonal);
    * ``stripe`` - the largest attention one ordinary token receives from tokens more
      than one position away (a vertical stripe on, say, a full stop);
    * ``block`` - of the attention that goes neither to special tokens nor to the ±1
      band, the share that stays inside the query's own sentence; ``block_chance`` is
      that share under uniform attention (0 and 0 for one-sentence inputs);
    * ``entropy`` - row entropy divided by ``log(n)`` (1 = uniform);
    * ``pair`` - 1 for two-sentence inputs.
    """
    attn = attn.float()
    b = attn.shape[0]
    extra = attn.dim() - 3  # dimensions between batch and query (layer, head, ...)
    view = (b,) + (1,) * extra

    qm = query_mask.float()
    sm = special_mask.float() * qm
    n = qm.sum(1).clamp(min=1)
    seq = qm.shape[1]
    pos = torch.arange(seq)
    dist = (pos[:, None] - pos[None, :]).abs()

    def rowmean(per_row: torch.Tensor) -> torch.Tensor:  # [b, ..., q] -> [b, ...]
        return (per_row * qm.view(view + (seq,))).sum(-1) / n.view(view)

    sm_k = sm.view(view + (1, seq))
    cls_mask = torch.zeros_like(sm)
    cls_mask[:, 0] = sm[:, 0]
    cls = rowmean((attn * cls_mask.view(view + (1, seq))).sum(-1))
    special = rowmean((attn * sm_k).sum(-1))
    sep = special - cls

    ordinary_k = (qm - sm).view(view + (1, seq))
    feats_diag = []
    for off in (-1, 0, 1):  # key = query + off
        band = (pos[None, :] - pos[:, None] == off).float()
        feats_diag.append(rowmean((attn * band * ordinary_k).sum(-1)))
    prev, self_, nxt = feats_diag
    diag = prev + self_ + nxt

    far = (dist > 1).float()
    rest = attn * far * ordinary_k * qm.view(view + (seq, 1))
    ordinary = (qm - sm)[:, None, :] * qm[:, :, None]  # [b, q, k]: real query, ordinary key

    def band_lift(width: int) -> torch.Tensor:
        inside = (dist <= width).float()
        cells_in = (inside * ordinary).sum((-1, -2)).clamp(min=1).view(view)
        cells_out = ((1 - inside) * ordinary).sum((-1, -2)).clamp(min=1).view(view)
        w = ordinary.view((b,) + (1,) * extra + (seq, seq))
        mass_in = (attn * inside * w).sum((-1, -2))
        mass_out = (attn * (1 - inside) * w).sum((-1, -2))
        return (mass_in / cells_in) / (mass_out / cells_out).clamp(min=1e-9)

    diag_lift = band_lift(1)
    local_lift = band_lift(3)
    col = rest.sum(-2) / n.view(view + (1,))  # [b, ..., key]
    stripe = col.amax(-1)

    seg = segment_ids.long()
    same = (seg[:, :, None] == seg[:, None, :]).float().view(view + (seq, seq))
    rest_mass = rest.sum((-1, -2))
    block = (rest * same).sum((-1, -2)) / rest_mass.clamp(min=1e-9)
    pair = ((seg * qm.long()).amax(1) > 0).float()  # [b]
    allowed = (far * (qm - sm)[:, None, :] * qm[:, :, None])  # [b, q, k]
    same_b = (seg[:, :, None] == seg[:, None, :]).float()
    chance = (allowed * same_b).sum((-1, -2)) / allowed.sum((-1, -2)).clamp(min=1e-9)
    block = block * pair.view(view)
    chance = (chance * pair).view(view).expand_as(block)

    p = attn.clamp(min=1e-12)
    ent = -(attn * p.log()).sum(-1)
    entropy = rowmean(ent) / torch.log(n.clamp(min=2)).view(view)

    out = [special, cls, sep, diag, prev, self_, nxt, diag_lift, local_lift, stripe, block, chance, entropy,
           pair.view(view).expand_as(block)]
    return torch.stack(out, dim=-1)


def map_features(attn: np.ndarray, segment_ids: np.ndarray, special: np.ndarray | None = None) -> dict[str, float]:
    """The :data:`FEATURES` of one unpadded map ``attn[query, key]`` (see :func:`map_features_batch`).

    ``special`` (positions of ``[CLS]``/``[SEP]``) defaults to :func:`special_positions` of the layout.
    """
    a = torch.as_tensor(np.asarray(attn, dtype=np.float32))
    n = a.shape[-1]
    if a.shape != (n, n):
        raise ParameterError(f"one map is attn[query, key] (square), got shape {tuple(a.shape)}")
    seg = torch.as_tensor(np.asarray(segment_ids, dtype=np.int64))
    if seg.shape != (n,):
        raise ParameterError(f"segment_ids has {tuple(seg.shape)} entries for a {n}x{n} map")
    sp = special_positions(segment_ids) if special is None else np.asarray(special)
    smask = torch.zeros(1, n)
    smask[0, torch.as_tensor(sp, dtype=torch.long)] = 1.0
    f = map_features_batch(a[None], torch.ones(1, n), smask, seg[None])[0]
    return {name: float(v) for name, v in zip(FEATURES, f)}


def features_matrix(maps: Sequence[np.ndarray], segments: Sequence[np.ndarray]) -> np.ndarray:
    """``features[map, feature]`` for a list of unpadded maps."""
    return np.array([[map_features(m, s)[k] for k in FEATURES] for m, s in zip(maps, segments)], dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# the rule set
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PatternRules:
    """Thresholds of the transparent classifier (:func:`classify_rules`).

    Three summary numbers drive it: the *vertical mass* ``v = special + stripe``
    (attention to ``[CLS]``/``[SEP]`` plus the strongest other column), the *diagonal
    share* ``d_rel = diag / (1 - special)`` (how much of the attention that does not go
    to a special token stays on the ±1 band) and the *band lift*
    ``max(diag_lift, local_lift)`` (how much darker the ±1 or ±3 band is than the other
    ordinary cells: what makes a diagonal *visible* next to a dark ``[CLS]`` column).
    In order:

    1. ``v >= vertical``: **Vertical+Diagonal** if the band lift is at least ``lift``, else **Vertical**;
    2. ``d_rel >= diagonal``, or ``d_rel >= diagonal_min`` with a clearly visible band
       (band lift ``>= strong_lift``): **Vertical+Diagonal** if ``special >= mix_special``,
       else **Diagonal**;
    3. a pair with ``block >= block`` and excess over chance
       ``(block - block_chance) / (1 - block_chance) >= block_excess`` (the attention that is
       neither special nor local stays inside the query's own sentence far more than
       uniform attention would): **Block**;
    4. otherwise **Heterogeneous**.

    The defaults were set by looking at rendered maps of the embedded model and are only
    a *proposal*: the shipped labels were reviewed by eye (``assets/pattern_labels.json``,
    fields ``proposed`` and ``how``).
    """

    vertical: float = 0.42
    lift: float = 2.0
    diagonal: float = 0.5
    diagonal_min: float = 0.2
    strong_lift: float = 5.0
    mix_special: float = 0.2
    block: float = 0.8
    block_excess: float = 0.5

    def classify(self, feats: torch.Tensor) -> torch.Tensor:
        """Class indices ``[...]`` from features ``[..., feature]`` (columns in :data:`FEATURES`)."""
        f = {name: feats[..., i] for i, name in enumerate(FEATURES)}
        v = f["special"] + f["stripe"]
        d_rel = f["diag"] / (1 - f["special"]).clamp(min=1e-6)
        excess = (f["block"] - f["block_chance"]) / (1 - f["block_chance"]).clamp(min=1e-6)
        block = (f["pair"] > 0) & (f["block"] >= self.block) & (excess >= self.block_excess)
        out = torch.full(v.shape, CLASS_INDEX["Heterogeneous"], dtype=torch.long)
        out[block] = CLASS_INDEX["Block"]
        lift = torch.maximum(f["diag_lift"], f["local_lift"])
        diagonal = (d_rel >= self.diagonal) | ((d_rel >= self.diagonal_min) & (lift >= self.strong_lift))
        out[diagonal] = CLASS_INDEX["Diagonal"]
        out[diagonal & (f["special"] >= self.mix_special)] = CLASS_INDEX["Vertical+Diagonal"]
        vertical = v >= self.vertical
        out[vertical] = CLASS_INDEX["Vertical"]
        out[vertical & (lift >= self.lift)] = CLASS_INDEX["Vertical+Diagonal"]
        return out


DEFAULT_RULES = PatternRules()


def classify_rules(attn: np.ndarray, segment_ids: np.ndarray, rules: PatternRules = DEFAULT_RULES) -> str:
    """The class name the rule set gives one unpadded map ``attn[query, key]``."""
    f = map_features(attn, segment_ids)
    vec = torch.tensor([[f[k] for k in FEATURES]])
    return CLASSES[int(rules.classify(vec)[0])]


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
        out[i] = _resize(t[None, None], size)[0]
    return out


def _resize(x: torch.Tensor, size: int) -> torch.Tensor:
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


# ---------------------------------------------------------------------------------------------
# counting classes over a corpus (Fig. 2)
# ---------------------------------------------------------------------------------------------
Classifier = Callable[[torch.Tensor, Batch], torch.Tensor]


def _batch_layout(batch: Batch, cls_id: int, sep_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    qm = batch.query_mask
    special = (torch.isin(batch.input_ids, torch.tensor([cls_id, sep_id])).float()) * qm
    return qm, special, batch.token_type_ids


def rule_classifier(cls_id: int, sep_id: int, rules: PatternRules = DEFAULT_RULES) -> Classifier:
    """A classifier for :class:`PatternCounter`: the rule set on every map of a batch."""

    def classify(attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        qm, special, seg = _batch_layout(batch, cls_id, sep_id)
        return rules.classify(map_features_batch(attn, qm, special, seg))

    return classify


def cnn_classifier(model: PatternCNN, size: int = 32) -> Classifier:
    """A classifier for :class:`PatternCounter`: the CNN on every (unpadded, resized) map of a batch."""

    def classify(attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        b, n_layers, n_heads = attn.shape[:3]
        out = torch.empty(b, n_layers, n_heads, dtype=torch.long)
        model.eval()
        with torch.no_grad():
            for i in range(b):
                n = int(batch.lengths[i])
                imgs = _resize(attn[i, :, :, :n, :n].reshape(-1, 1, n, n).float(), size)
                out[i] = model(imgs).argmax(-1).view(n_layers, n_heads)
        return out

    return classify


class PatternCounter:
    """Streaming reducer: how often each head's map falls in each class (Kovaleva Fig. 2).

    ``result()``: ``counts[layer, head, class]`` (maps of each class), ``fractions[class]``
    (share of all maps: the Fig. 2 bar of one task) and ``n_examples``.
    """

    def __init__(self, classify: Classifier):
        self.classify = classify
        self.counts: np.ndarray | None = None
        self.n_examples = 0

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        labels = self.classify(attn, batch)  # [batch, layer, head]
        onehot = torch.nn.functional.one_hot(labels, len(CLASSES)).sum(0).numpy()
        self.counts = onehot if self.counts is None else self.counts + onehot
        self.n_examples += attn.shape[0]

    def result(self) -> dict[str, np.ndarray]:
        if self.counts is None:
            raise EmptyDataError("no examples were classified")
        total = self.counts.sum()
        return {"counts": self.counts, "fractions": self.counts.sum((0, 1)) / total,
                "n_examples": np.array(self.n_examples)}


def pattern_proportions(
    loaded, examples: Sequence[Encoded], classify: Classifier | dict[str, Classifier], *, batch_size: int = 16,
    progress: bool = False,
) -> dict[str, np.ndarray] | dict[str, dict[str, np.ndarray]]:
    """Class counts and shares over ``examples`` (one task's dev inputs) for ``loaded`` (Fig. 2).

    ``classify`` is one classifier (returns one :class:`PatternCounter` result) or a dict of
    them (returns a dict of results; every classifier sees the same forward passes).
    """
    from attnbook.engine.extract import stream_attention

    if not examples:
        raise EmptyDataError("no examples to classify")
    many = isinstance(classify, dict)
    counters = {k: PatternCounter(c) for k, c in (classify.items() if many else [("_", classify)])}
    out = stream_attention(loaded, examples, counters, batch_size=batch_size, progress=progress,
                           desc="classifying patterns")
    return out if many else out["_"]


# ---------------------------------------------------------------------------------------------
# GLUE dev inputs and the book's labelled set
# ---------------------------------------------------------------------------------------------
def read_glue_texts(task: str, split: str = "dev") -> list[tuple[str, str | None]]:
    """The texts of a GLUE split as ``(first, second or None)``; list position ``i`` is *row* ``i``.

    Rows are the data lines of the task's TSV in file order (header excluded), read with
    :func:`attnbook.data.glue.read_tsv` (which names file and line of a malformed row).
    """
    from attnbook.data.glue import read_tsv, task_path

    return [(ex.text_a.strip(), ex.text_b.strip() if ex.text_b is not None else None)
            for ex in read_tsv(task_path(task, split), task)]


def encode_text(tokenizer, first: str, second: str | None = None, *, max_tokens: int = 128, meta: dict | None = None
                ) -> Encoded:
    """``[CLS] first [SEP] (second [SEP])`` with the tokenizer's own truncation (longest side first)."""
    enc = tokenizer(first, second, truncation=True, max_length=max_tokens)
    ids = list(enc["input_ids"])
    types = list(enc.get("token_type_ids", [0] * len(ids)))
    return Encoded(input_ids=ids, token_type_ids=types, tokens=tokenizer.convert_ids_to_tokens(ids),
                   meta=dict(meta or {}))


def glue_examples(tokenizer, task: str, n: int | None = None, *, seed: int = 0, split: str = "dev",
                  max_tokens: int = 128) -> list[Encoded]:
    """Up to ``n`` encoded rows of a GLUE split, a seeded random sample (all rows, in order, if ``n`` is None).

    ``meta`` holds ``task``, ``split`` and ``row`` (0-based data row), so every map can be traced back.
    """
    texts = read_glue_texts(task, split)
    rows = list(range(len(texts)))
    if n is not None and n < len(rows):
        rows = sorted(np.random.default_rng(seed).choice(len(rows), size=n, replace=False).tolist())
    return [encode_text(tokenizer, *texts[r], max_tokens=max_tokens, meta={"task": task, "split": split, "row": r})
            for r in rows]


@dataclass(frozen=True)
class LabelledMap:
    """One labelled map: where it comes from and its class."""

    task: str
    split: str
    row: int
    layer: int  # 0-based
    head: int  # 0-based
    label: str
    proposed: str  # what the shipped rule set says
    how: str  # "rules, confirmed by eye" or "rules, corrected by eye"
    n_tokens: int | None = None  # encoded length, checked on regeneration


_REQUIRED = ("task", "split", "row", "layer", "head", "label", "proposed", "how")


def sample_label_ids(
    tasks: Sequence[str], rows_per_task: int, heads_per_row: int, n_layers: int, n_heads: int, seed: int = 0,
    n_rows: dict[str, int] | None = None,
) -> list[tuple[str, int, int, int]]:
    """Seeded sample of ``(task, row, layer, head)``: ``rows_per_task`` dev rows per task, ``heads_per_row`` heads each."""
    rng = np.random.default_rng(seed)
    out = []
    for task in tasks:
        total = (n_rows or {}).get(task) or len(read_glue_texts(task))
        rows = sorted(rng.choice(total, size=min(rows_per_task, total), replace=False).tolist())
        for r in rows:
            for flat in sorted(rng.choice(n_layers * n_heads, size=heads_per_row, replace=False).tolist()):
                out.append((task, int(r), flat // n_heads, flat % n_heads))
    return out


def load_pattern_labels(path: Path | str | None = None) -> tuple[dict, list[LabelledMap]]:
    """The shipped labelled set: ``(header, labels)``; the header says how maps are regenerated.

    Raises :class:`MalformedInputError` naming the entry when a label is not one of
    :data:`CLASSES` or a field is missing.
    """
    path = Path(path) if path is not None else LABELS_FILE
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MalformedInputError(path, exc.lineno, exc.msg) from exc
    if "maps" not in doc or "header" not in doc:
        raise MalformedInputError(path, None, "a labels file has 'header' and 'maps'")
    out = []
    for i, entry in enumerate(doc["maps"]):
        missing = [k for k in _REQUIRED if k not in entry]
        if missing:
            raise MalformedInputError(path, None, f"map entry {i} lacks field(s) {', '.join(missing)}")
        item = LabelledMap(**{k: entry[k] for k in LabelledMap.__dataclass_fields__ if k in entry})
        for name in (item.label, item.proposed):
            if name not in CLASS_INDEX:
                raise MalformedInputError(path, None, f"map entry {i} has unknown class {name!r}")
        out.append(item)
    return doc["header"], out


def labelled_maps(loaded, labels: Sequence[LabelledMap], *, max_tokens: int = 128, batch_size: int = 16,
                  header: dict | None = None) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Regenerate the labelled maps: ``(maps, segment_ids, label indices)`` in the order of ``labels``.

    Each distinct (task, split, row) is encoded with :func:`encode_text` and run once. An
    input whose encoded length differs from the recorded ``n_tokens`` raises
    :class:`MalformedInputError` (the data or the tokenizer changed). With the file's
    ``header``, a model other than the one the labels were made on gives a warning: the
    labels describe that model's maps.
    """
    import warnings

    from attnbook.engine.extract import stream_attention

    if header is not None:
        made_on = header.get("model", {}).get("fingerprint")
        if made_on and loaded.fingerprint != made_on:
            warnings.warn(
                f"the labels were made on maps of {header['model'].get('name')} (weights {made_on}); "
                f"{loaded.name} ({loaded.fingerprint}) has other maps, so the labels may not fit them",
                stacklevel=2,
            )
    keys = sorted({(m.task, m.split, m.row) for m in labels})
    texts = {}
    for task, split in sorted({(t, s) for t, s, _ in keys}):
        texts[(task, split)] = read_glue_texts(task, split)
    examples = [encode_text(loaded.tokenizer, *texts[(t, s)][r], max_tokens=max_tokens, meta={"key": (t, s, r)})
                for t, s, r in keys]
    lengths = {ex.meta["key"]: len(ex) for ex in examples}
    wanted: dict[tuple, list[int]] = {}
    for i, m in enumerate(labels):
        key = (m.task, m.split, m.row)
        if m.n_tokens is not None and lengths[key] != m.n_tokens:
            raise MalformedInputError(
                LABELS_FILE, None,
                f"{m.task} {m.split} row {m.row} encodes to {lengths[key]} tokens, the label was made on "
                f"{m.n_tokens}: the GLUE file or the tokenizer differs from the ones the labels were made with")
        wanted.setdefault(key, []).append(i)
    maps: list[np.ndarray | None] = [None] * len(labels)
    segs: list[np.ndarray | None] = [None] * len(labels)

    class _Pick:
        def update(self, attn: torch.Tensor, batch: Batch) -> None:
            for b, ex in enumerate(batch.examples):
                n = int(batch.lengths[b])
                for i in wanted[ex.meta["key"]]:
                    maps[i] = attn[b, labels[i].layer, labels[i].head, :n, :n].numpy().copy()
                    segs[i] = np.asarray(ex.token_type_ids, dtype=np.int64)

        def result(self) -> None:
            return None

    stream_attention(loaded, examples, [_Pick()], batch_size=batch_size, progress=False)
    y = np.array([CLASS_INDEX[m.label] for m in labels], dtype=np.int64)
    return maps, segs, y  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# pictures: PNG thumbnails (no matplotlib), Altair heatmaps, an annotation widget
# ---------------------------------------------------------------------------------------------
#: one colour per class for thumbnail frames and charts (Vertical, Diagonal, V+D, Block, Heterogeneous)
CLASS_COLOURS: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180), (44, 160, 44), (148, 103, 189), (255, 127, 14), (214, 39, 40),
)


def png_bytes(image: np.ndarray) -> bytes:
    """Encode ``uint8`` ``image[h, w]`` (grey) or ``[h, w, 3]`` (RGB) as PNG bytes (zlib only)."""
    img = np.asarray(image, dtype=np.uint8)
    if img.ndim == 2:
        img = img[:, :, None]
    h, w, c = img.shape
    colour_type = {1: 0, 3: 2}[c]
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def map_image(attn: np.ndarray, size: int = 64, gamma: float = 1.0) -> np.ndarray:
    """A ``uint8`` grey picture of one map (dark = high weight, like the paper's Fig. 1).

    Maps shorter than ``size`` are enlarged with nearest-neighbour cells; longer maps are
    shrunk by taking the maximum over each pixel's block of cells, so one-token-wide
    stripes and diagonals never disappear. ``gamma`` < 1 brightens weak weights.
    """
    a = np.asarray(attn, dtype=np.float32)
    n = a.shape[0]
    if n <= size:
        idx = np.minimum((np.arange(size) * n) // size, n - 1)
        img = a[idx][:, idx]
    else:
        starts = (np.arange(size) * n) // size
        img = np.maximum.reduceat(np.maximum.reduceat(a, starts, axis=0), starts, axis=1)
    img = (img / max(float(img.max()), 1e-9)) ** gamma
    return (255 * (1 - img)).astype(np.uint8)


def thumbnail_mosaic(maps: Sequence[np.ndarray], labels: Sequence[int] | None = None, *, cols: int = 10,
                     size: int = 64, frame: int = 3, gap: int = 4) -> np.ndarray:
    """RGB mosaic of map thumbnails, row-major, each framed in its class colour (grey if unlabelled)."""
    rows = (len(maps) + cols - 1) // cols
    cell = size + 2 * frame + gap
    out = np.full((rows * cell + gap, cols * cell + gap, 3), 255, dtype=np.uint8)
    for i, m in enumerate(maps):
        r, c = divmod(i, cols)
        y, x = gap + r * cell, gap + c * cell
        colour = CLASS_COLOURS[int(labels[i])] if labels is not None else (150, 150, 150)
        out[y : y + size + 2 * frame, x : x + size + 2 * frame] = colour
        out[y + frame : y + frame + size, x + frame : x + frame + size] = map_image(m, size)[:, :, None]
    return out


def render_thumbnails(path: Path | str, maps: Sequence[np.ndarray], labels: Sequence[int] | None = None, **kw) -> Path:
    """Write :func:`thumbnail_mosaic` as a PNG file (atomically); returns the path."""
    path = Path(path)
    atomic_write_bytes(path, png_bytes(thumbnail_mosaic(maps, labels, **kw)))
    return path


def heatmap_chart(attn: np.ndarray, tokens: Sequence[str] | None = None, *, title: str = "", size: int = 220):
    """An Altair heatmap of one map (query rows, key columns; darker = more attention)."""
    import altair as alt
    import pandas as pd

    a = np.asarray(attn, dtype=np.float32)
    n = a.shape[0]
    names = [f"{i:03d} {t}" for i, t in enumerate(tokens)] if tokens is not None else [f"{i:03d}" for i in range(n)]
    q, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    df = pd.DataFrame({"query": [names[i] for i in q.ravel()], "key": [names[j] for j in k.ravel()],
                       "weight": a.ravel()})
    show_axis = tokens is not None and n <= 40
    axis = alt.Axis(labels=show_axis, ticks=show_axis, labelExpr="slice(datum.label, 4)", title=None)
    return (
        alt.Chart(df, title=title)
        .mark_rect(strokeWidth=0)
        .encode(
            x=alt.X("key:O", sort=names, axis=axis),
            y=alt.Y("query:O", sort=names, axis=axis),
            color=alt.Color("weight:Q", legend=None,
                            scale=alt.Scale(range=["#ffffff", "#000000"], domain=[0, float(a.max())])),
            tooltip=["query", "key", alt.Tooltip("weight:Q", format=".3f")],
        )
        .properties(width=size, height=size)
    )


def class_examples_chart(maps: Sequence[np.ndarray], labels: Sequence[int], *, per_class: int = 1, size: int = 140):
    """Fig. 1 in Altair: the first ``per_class`` maps of each class side by side, titled by class."""
    import altair as alt

    charts = []
    for c, name in enumerate(CLASSES):
        picks = [i for i, y in enumerate(labels) if int(y) == c][:per_class]
        charts += [heatmap_chart(maps[i], title=name, size=size) for i in picks]
    if not charts:
        raise EmptyDataError("no labelled maps to show")
    return alt.hconcat(*charts)


def proportions_chart(fractions: dict[str, np.ndarray]):
    """Fig. 2 in Altair: a stacked bar per task of the share of each class."""
    import altair as alt
    import pandas as pd

    rows = [{"task": task, "class": name, "share": float(f[c]), "order": c}
            for task, f in fractions.items() for c, name in enumerate(CLASSES)]
    colours = ["#%02x%02x%02x" % c for c in CLASS_COLOURS]
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(
            x=alt.X("task:N", title=None),
            y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of maps"),
            color=alt.Color("class:N", sort=list(CLASSES), scale=alt.Scale(domain=list(CLASSES), range=colours)),
            order="order:Q",
            tooltip=["task", "class", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(width=60 * len(fractions), height=220)
    )


def annotation_widget(
    maps: Sequence[np.ndarray],
    ids: Sequence[dict],
    out_path: Path | str,
    *,
    proposed: Sequence[int] | None = None,
    size: int = 256,
):
    """An ipywidgets tool for labelling maps by hand (a seminar exercise on §4.1).

    Shows one map at a time as a picture, with one button per class, plus Back and Skip.
    Every click writes all labels so far to ``out_path`` (JSON, atomically): ``{"maps":
    [{...id fields..., "label": class}]}``; labels already in the file are loaded first,
    so a session can be resumed. ``ids[i]`` identifies map ``i`` (e.g. task, row, layer,
    head); ``proposed`` (class indices) pre-highlights a suggestion. Returns the widget
    (a ``VBox``); ``widget.state`` exposes ``index`` and ``labels`` for scripting.
    """
    import ipywidgets as widgets

    if len(maps) != len(ids):
        raise ParameterError(f"{len(maps)} maps but {len(ids)} ids")
    if not maps:
        raise EmptyDataError("no maps to annotate")
    out_path = Path(out_path)
    keys = [json.dumps(d, sort_keys=True) for d in ids]
    labels: dict[str, str] = {}
    if out_path.exists():
        for entry in json.loads(out_path.read_text()).get("maps", []):
            e = dict(entry)
            label = e.pop("label")
            labels[json.dumps(e, sort_keys=True)] = label
    state = {"index": next((i for i, k in enumerate(keys) if k not in labels), 0), "labels": labels}

    image = widgets.Image(format="png", width=size, height=size)
    info = widgets.HTML()
    buttons = [widgets.Button(description=name, layout=widgets.Layout(width="150px")) for name in CLASSES]
    back = widgets.Button(description="◀ Back")
    skip = widgets.Button(description="Skip ▶")

    def save() -> None:
        entries = [dict(ids[i], label=labels[k]) for i, k in enumerate(keys) if k in labels]
        atomic_write_json(out_path, {"classes": list(CLASSES), "maps": entries})

    def show() -> None:
        i = state["index"]
        if i >= len(maps):
            info.value = f"<b>done</b>: {sum(k in labels for k in keys)} of {len(maps)} maps labelled -> {out_path}"
            return
        image.value = png_bytes(map_image(maps[i], size))
        current = labels.get(keys[i])
        hint = CLASSES[int(proposed[i])] if proposed is not None else None
        for b, name in zip(buttons, CLASSES):
            b.button_style = "success" if name == current else ("info" if name == hint else "")
        info.value = (f"map {i + 1} of {len(maps)}: <code>{keys[i]}</code><br>"
                      f"label: <b>{current or '-'}</b>" + (f" (suggested: {hint})" if hint else ""))

    def choose(name: str):
        def handler(_button=None) -> None:
            i = state["index"]
            if i < len(maps):
                labels[keys[i]] = name
                save()
                state["index"] = i + 1
            show()

        return handler

    for b, name in zip(buttons, CLASSES):
        b.on_click(choose(name))

    def go(step: int):
        def handler(_button=None) -> None:
            state["index"] = min(max(0, state["index"] + step), len(maps))
            show()

        return handler

    back.on_click(go(-1))
    skip.on_click(go(+1))
    show()
    box = widgets.VBox([info, image, widgets.HBox(buttons), widgets.HBox([back, skip])])
    box.state = state  # type: ignore[attr-defined]
    box.buttons = dict(zip(CLASSES, buttons))  # type: ignore[attr-defined]
    return box
