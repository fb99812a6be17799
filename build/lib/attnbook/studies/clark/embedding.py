"""The heads drawn in a plane: metric MDS on the head distances, its stress and stability (Clark et al. §6, Fig. 6).

Clark §6 embeds the heads in 2-D by multidimensional scaling on the Jensen-Shannon distances
of :mod:`attnbook.studies.clark.distances` and reads the picture. How faithful the picture is
is a number here: the raw stress SMACOF minimises and Kruskal's stress-1 (:class:`Stress`).
:func:`split_half_stability` compares the distances and pictures of two disjoint halves of the
segments. Heads are layer-major (head ``k`` is layer ``k // n_heads``).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnbook.studies.clark.distances import condensed

@dataclass
class Stress:
    """How well 2-D distances ``d`` reproduce dissimilarities ``delta`` (over pairs ``i < j``).

    * ``raw`` - ``sum (d - delta)^2``, what metric MDS (SMACOF) minimises;
    * ``stress1`` - Kruskal's (1964) stress-1, ``sqrt(raw / sum d^2)``: 0 perfect,
      ~0.05 good, ~0.1 fair, >= 0.2 poor (Kruskal's verbal scale);
    * ``correlation`` - Pearson correlation of ``d`` with ``delta``.
    """

    raw: float
    stress1: float
    correlation: float


def stress(dissimilarities: np.ndarray, coords: np.ndarray) -> Stress:
    """:class:`Stress` of an embedding ``coords[n, dim]`` for square ``dissimilarities[n, n]``."""
    from scipy.spatial.distance import pdist

    delta = condensed(dissimilarities)
    d = pdist(np.asarray(coords, dtype=np.float64))
    raw = float(np.sum((d - delta) ** 2))
    denom = float(np.sum(d**2))
    corr = float(np.corrcoef(d, delta)[0, 1]) if d.std() > 0 and delta.std() > 0 else float("nan")
    return Stress(raw=raw, stress1=math.sqrt(raw / denom) if denom > 0 else float("nan"), correlation=corr)


@dataclass
class MDSResult:
    """A 2-D embedding of the heads (``coords[head, 2]``, layer-major) and its :class:`Stress`."""

    coords: np.ndarray
    stress: Stress
    init: str

    def summary(self) -> dict:
        """The key numbers: raw stress, stress-1, correlation of the distances, and the winning start."""
        return {"raw": self.stress.raw, "stress1": self.stress.stress1, "correlation": self.stress.correlation,
                "init": self.init}

    def describe(self) -> str:
        """One sentence with the stress (Markdown)."""
        return (f"Stress-1 **{self.stress.stress1:.3f}** (raw stress {self.stress.raw:.3f}); the plane's distances "
                f"correlate with the divergences at r = {self.stress.correlation:.3f}.")


def _mds(init: str, n_init: int, seed: int, max_iter: int, eps: float):
    from sklearn.manifold import MDS

    params = inspect.signature(MDS).parameters
    kw: dict[str, Any] = dict(n_components=2, n_init=n_init, max_iter=max_iter, eps=eps, random_state=seed,
                              normalized_stress=False)
    if "metric_mds" in params:  # scikit-learn >= 1.8
        kw.update(metric_mds=True, metric="precomputed", init=init)
    else:
        kw.update(metric=True, dissimilarity="precomputed")
    return MDS(**kw)


def mds_embedding(
    distances: np.ndarray,
    *,
    seed: int = 0,
    n_init: int = 4,
    max_iter: int = 3000,
    eps: float = 1e-9,
    orient_by: np.ndarray | None = None,
) -> MDSResult:
    """Metric MDS (Kruskal 1964; scikit-learn's SMACOF) on precomputed distances, as in Clark §6.

    Runs SMACOF from ``n_init`` seeded random starts and, where scikit-learn offers it,
    from classical MDS; keeps the embedding with the lowest raw stress. The result is
    centred and rotated onto its principal axes (distances are unchanged); with
    ``orient_by`` (a number per head, e.g. its layer), the axes are flipped so that the
    first axis increases with it.
    """
    from sklearn.manifold import MDS

    d = np.asarray(distances, dtype=np.float64)
    condensed(d)
    if d.shape[0] < 3:
        raise ValueError("MDS needs at least 3 heads")
    inits = ["random"]
    if "metric_mds" in inspect.signature(MDS).parameters:
        inits.append("classical_mds")
    best: MDSResult | None = None
    for init in inits:
        coords = _mds(init, n_init if init == "random" else 1, seed, max_iter, eps).fit_transform(d)
        s = stress(d, coords)
        if best is None or s.raw < best.stress.raw - 1e-12:
            best = MDSResult(coords, s, init)
    assert best is not None
    best.coords = orient(best.coords, orient_by)
    return best


def orient(coords: np.ndarray, by: np.ndarray | None = None) -> np.ndarray:
    """Centre ``coords``, rotate them onto their principal axes, and flip axes to follow ``by``."""
    x = np.asarray(coords, dtype=np.float64)
    x = x - x.mean(0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    x = x @ vt.T
    for k in range(x.shape[1]):
        if by is not None and np.std(by) > 0 and np.std(x[:, k]) > 0:
            sign = np.sign(np.corrcoef(x[:, k], by)[0, 1]) or 1.0
        else:
            sign = np.sign(x[np.argmax(np.abs(x[:, k])), k]) or 1.0
        x[:, k] *= sign
    return x


def procrustes_disparity(a: np.ndarray, b: np.ndarray) -> float:
    """Scipy's Procrustes disparity between two embeddings of the same heads (0 = same shape).

    Both are standardised (centred, unit Frobenius norm) and ``b`` is optimally rotated,
    reflected and scaled onto ``a``; the disparity is the remaining sum of squares, in [0, 1].
    """
    from scipy.spatial import procrustes

    return float(procrustes(np.asarray(a, float), np.asarray(b, float))[2])


def split_half_stability(js_mean_halves: np.ndarray, seed: int = 0) -> dict[str, float]:
    """How reproducible the distances are: two disjoint halves of the segments (even / odd index).

    ``correlation`` - Pearson correlation of the two halves' pairwise distances;
    ``max_relative_difference`` - the largest ``|d1 - d2| / mean(d1, d2)`` over pairs;
    ``procrustes`` - :func:`procrustes_disparity` of the two halves' MDS embeddings (0: same picture).
    """
    h = np.asarray(js_mean_halves, dtype=np.float64)
    a, b = condensed(h[0]), condensed(h[1])
    mean = (a + b) / 2
    emb = [mds_embedding(h[k], seed=seed).coords for k in (0, 1)]
    return {
        "correlation": float(np.corrcoef(a, b)[0, 1]),
        "max_relative_difference": float(np.max(np.abs(a - b) / np.where(mean > 0, mean, 1.0))),
        "procrustes": procrustes_disparity(emb[0], emb[1]),
    }


def orientation_markdown(coords: np.ndarray, layers: np.ndarray, strong: float = 0.5) -> str:
    """What the MDS plane's axes show about the layers (Markdown), generated from the numbers: the first axis is
    said to run from early to late layers only when its coordinate correlates with the layer at ``|r| >= strong``."""
    x = np.asarray(coords, dtype=np.float64)
    by = np.asarray(layers, dtype=np.float64)
    r = [float(np.corrcoef(x[:, k], by)[0, 1]) if np.std(x[:, k]) > 0 and np.std(by) > 0 else float("nan")
         for k in range(x.shape[1])]
    head = ("The plane is rotated onto its main axes and each axis flipped so that its coordinate grows with the "
            "layer where it can (the distances do not change). ")
    if abs(r[0]) >= strong:
        return head + f"The first axis then runs from early to late layers (correlation with the layer r = {r[0]:.2f})."
    second = (f"; the second axis follows them more (r = {r[1]:.2f})" if len(r) > 1 and abs(r[1]) >= strong
              else f"; nor does the second (r = {r[1]:.2f})" if len(r) > 1 else "")
    return head + (f"The layers do not order the first axis (correlation of its coordinate with the layer r = "
                   f"{r[0]:.2f}){second}.")
