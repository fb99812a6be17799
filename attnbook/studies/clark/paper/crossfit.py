"""The best head of many, estimated with its choice inside the estimate: cross-fitting over units, bootstrapped whole.

Clark §4.2 and §4.3 report the best of many heads (and of several fixed offsets). Scored on the sentences or
documents it was chosen on, the best of 144 heads looks better than it is: under no true difference between the heads,
its margin is the largest of 144 noisy numbers. Cross-fitting removes that: the units (sentences, documents) are split
into two random halves, the head (and the offset) is chosen on half A and scored on half B, chosen on B and scored on
A, and the two scores are pooled, so every unit is scored by a choice made without it. The point estimate is the mean
over :data:`N_SPLITS` random halvings (one halving alone would add its own luck to the number); the 95% interval
redoes the halving, the choice and the scoring in every bootstrap resample of the units (a unit drawn twice stays in
one half), so it counts the choice's own variability.

Every function works on per-unit counts ``x[unit, candidate]`` whose denominators (edges, mentions) are the same for
all candidates of one choice, so the best candidate of a half is the one with the largest sum there (ties: the first,
as :meth:`attnbook.studies.clark.syntax.HeadAccuracy.best` and
:meth:`attnbook.studies.clark.coref.CorefHeadAccuracy.best` break them). Nothing here knows about heads or papers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnbook.stats import bootstrap_counts

#: random halvings the point estimate averages over
N_SPLITS = 100


@dataclass(frozen=True)
class Draws:
    """Weights and halves of the units for every draw, made by :func:`make_draws`: ``weights[draw, unit]`` (how often a
    unit is drawn; ones for the point estimate's halvings), ``half_a[draw, unit]`` (whether the unit is in half A), and
    the weights of each half, ``a`` and ``b`` (``float32``: sums of counts stay exact up to 16 million)."""

    weights: np.ndarray
    half_a: np.ndarray
    a: np.ndarray
    b: np.ndarray


def make_draws(weights: np.ndarray, half_a: np.ndarray) -> Draws:
    """:class:`Draws` of ``weights[draw, unit]`` halved by ``half_a[draw, unit]``."""
    w = np.asarray(weights, dtype=np.float32)
    return Draws(w, half_a, w * half_a, w * ~half_a)


def halves(n_units: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``half_a[draw, unit]``: a random half of the units in every draw (``n_units // 2`` of them in half A)."""
    ranks = np.argsort(rng.random((n_draws, n_units)), axis=1)
    return ranks < n_units // 2


def draws(n_units: int, *, n_resamples: int, seed: int, n_splits: int = N_SPLITS) -> tuple[Draws, Draws]:
    """The point estimate's halvings (every unit once, ``n_splits`` random halves) and the bootstrap's draws
    (:func:`attnbook.stats.bootstrap_counts` with ``seed``, the draws every other interval of the chapter uses, each
    resample halved at random), seeded."""
    rng = np.random.default_rng([seed, 4242])
    point = make_draws(np.ones((n_splits, n_units)), halves(n_units, n_splits, rng))
    boot = make_draws(bootstrap_counts(n_units, n_resamples, seed), halves(n_units, n_resamples, rng))
    return point, boot


def half_sums(x: np.ndarray, d: Draws) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate's sums on half A and on half B of every draw, ``[draw, ...]`` (``x[unit, ...]``)."""
    x = np.asarray(x)
    flat = x.astype(np.float32).reshape(x.shape[0], -1)
    shape = (-1,) + tuple(x.shape[1:])
    return (d.a @ flat).reshape(shape).astype(np.float64), (d.b @ flat).reshape(shape).astype(np.float64)


def crossfit(sums_a: np.ndarray, sums_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cross-fitted sum of the best candidate: ``sums_b[choice on A] + sums_a[choice on B]`` per draw, with the two
    choices (``sums_*[draw, candidate]``; the best candidate of a half is the one with the largest sum there)."""
    ka, kb = sums_a.argmax(1), sums_b.argmax(1)
    rows = np.arange(sums_a.shape[0])
    return sums_b[rows, ka] + sums_a[rows, kb], ka, kb


def scored_elsewhere(x: np.ndarray, d: Draws, ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
    """Sums of ``x[unit, candidate]`` for the candidate chosen on the other half: ``x[:, ka]`` summed over half B and
    ``x[:, kb]`` over half A, per draw (scores another column of counts with a choice made on one column)."""
    x = np.asarray(x, dtype=np.float64)
    return np.einsum("ru,ur->r", d.b, x[:, ka]) + np.einsum("ru,ur->r", d.a, x[:, kb])
