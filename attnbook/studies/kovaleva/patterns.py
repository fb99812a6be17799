"""The five self-attention patterns of Kovaleva et al. §4.1 (Fig. 1): the classes, synthetic maps, map features, rules.

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

This module defines the classes and the transparent route to them:

* synthetic generators of each class (:func:`synthetic_map`, :func:`synthetic_dataset`),
  which explain the classes and test the classifiers;
* per-map features (:func:`map_features`, batched :func:`map_features_batch`) and a
  documented rule set over them (:class:`PatternRules`, :func:`classify_rules`).

The CNN is in :mod:`attnbook.studies.kovaleva.cnn`, the book's labelled maps in
:mod:`attnbook.studies.kovaleva.labels`, the class shares over a corpus (Fig. 2) in
:mod:`attnbook.studies.kovaleva.taxonomy`.

A *map* here is one head's ``attn[query, key]`` (rows sum to 1) together with the
input's ``segment_ids`` (0 for ``[CLS]``, sentence A and its ``[SEP]``; 1 for
sentence B and the final ``[SEP]``) and its special-token positions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnbook.core.errors import ParameterError

#: the five classes of Kovaleva et al. §4.1, in the paper's order (class index = position)
CLASSES: tuple[str, ...] = ("Vertical", "Diagonal", "Vertical+Diagonal", "Block", "Heterogeneous")
CLASS_INDEX = {name: i for i, name in enumerate(CLASSES)}

#: the transparent per-map features, in the column order of :func:`map_features_batch`
FEATURES: tuple[str, ...] = ("special", "cls", "sep", "diag", "prev", "self", "next", "diag_lift", "local_lift", "stripe", "block",
                             "block_chance", "entropy", "pair")


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
