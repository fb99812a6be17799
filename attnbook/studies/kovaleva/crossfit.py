"""Kovaleva §4.6's best head and best layer chosen without the winner's curse: cross-fitting over two halves of a
sweep's dev examples.

:func:`split_changes` scores every configuration's change on each half of the swept examples (and in every bootstrap
resample, split afresh); :func:`cross_fitted` chooses on one half and scores on the other, both ways, and averages.
Nothing here runs a model: the changes come from a sweep's outputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from attnbook.core.errors import ParameterError
from attnbook.stats import Estimate, bootstrap_counts, percentile_interval
from attnbook.studies.heads_off.effects import halves, resolution, weighted_scores


#: the unit of a cross-fitted estimate (:func:`cross_fitted`)
CROSS_FITTED = "dev examples (paired, cross-fitted halves)"


@dataclass(frozen=True)
class SplitChanges:
    """Every configuration's change (points, the task's metric) on two halves of a sweep's dev examples, paired with
    the baseline on the same examples: ``point[half, config]`` on the seeded split of the examples themselves, and
    ``draws[half, resample, config]`` in every bootstrap resample, the resample's examples split into two halves
    afresh (an example drawn twice stays in one half). ``names`` label the configurations (1-based), ``n`` is the
    number of swept examples; :func:`cross_fitted` chooses and scores with them."""

    point: np.ndarray
    draws: np.ndarray
    names: list[str]
    n: int

    def select(self, configs: Sequence[int]) -> "SplitChanges":
        """The same changes restricted to the configurations ``configs`` (indices in ``names`` order)."""
        idx = list(configs)
        return SplitChanges(self.point[:, idx], self.draws[:, :, idx], [self.names[i] for i in idx], self.n)

    def labelled(self, prefix: str) -> "SplitChanges":
        """The same changes with ``prefix`` before every name (to tell the tasks apart when several are joined)."""
        return SplitChanges(self.point, self.draws, [f"{prefix}{x}" for x in self.names], self.n)


def _half_masks(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """``[resample, example]`` True for the examples of half A: each row a fresh seeded split of ``range(n)`` into
    ``n // 2`` and ``n - n // 2`` examples."""
    rng = np.random.default_rng([seed, 1])
    mask = np.zeros((n_resamples, n), dtype=bool)
    for r in range(n_resamples):
        mask[r, rng.permutation(n)[: n // 2]] = True
    return mask


def split_changes(sweep: Any, task: str, *, n_resamples: int = 2000, seed: int = 0) -> SplitChanges:
    """:class:`SplitChanges` of ``sweep`` (a :class:`~attnbook.engine.sweep_result.SweepResult`, or anything with
    ``baseline_outputs``, ``flat_outputs()``, ``gold`` and ``names``): the halves are
    :func:`~attnbook.studies.heads_off.effects.halves` of the examples (``seed``); the resamples are
    :func:`~attnbook.stats.bootstrap_counts` (the same draws as :func:`resampled_deltas` with the same ``seed``)
    times a fresh split per resample, scored by
    :func:`~attnbook.studies.heads_off.effects.weighted_scores` (so F1 and Pearson r are the metric of each
    weighted half, not a mean of per-example changes)."""
    gold = np.asarray(sweep.gold)
    n = len(gold)
    a, _ = halves(n, seed)
    weights = np.zeros((2 + 2 * n_resamples, n))  # the two halves, then every resample's half A, then its half B
    weights[0, a] = 1.0
    weights[1] = 1.0 - weights[0]
    counts = bootstrap_counts(n, n_resamples, seed)
    mask = _half_masks(n, n_resamples, seed)
    np.multiply(counts, mask, out=weights[2:2 + n_resamples])
    np.multiply(counts, ~mask, out=weights[2 + n_resamples:])
    del counts, mask
    base = np.nan_to_num(weighted_scores(task, sweep.baseline_outputs, gold, weights))
    d = np.stack([np.nan_to_num(weighted_scores(task, o, gold, weights)) - base for o in sweep.flat_outputs()],
                 axis=1)
    draws = d[2:].reshape(2, n_resamples, -1)
    return SplitChanges(d[:2], draws, [str(x) for x in sweep.names], n)


@dataclass(frozen=True)
class CrossFit:
    """A cross-fitted choice (:func:`cross_fitted`): ``estimate``, the chosen configuration's change (points) with
    its 95% interval; ``chosen``, the configurations chosen on half A and on half B of the examples; ``stable``, the
    share of bootstrap resamples in which both halves choose the same configuration; ``candidates``, how many
    configurations the choice was among."""

    estimate: Estimate
    chosen: tuple[str, str]
    stable: float
    candidates: int

    def chosen_text(self) -> str:
        """``"2-3 on both halves"`` or ``"2-3 on one half, 4-1 on the other"``."""
        a, b = self.chosen
        return f"{a} on both halves" if a == b else f"{a} on one half, {b} on the other"


def cross_fitted(parts: Sequence[SplitChanges], *, largest: bool = True, confidence: float = 0.95) -> CrossFit:
    """Choose the configuration with the largest change (``largest=False``: the smallest) among every configuration
    of ``parts`` (one :class:`SplitChanges` per task; each task's examples are halved and resampled on their own) on
    half A and score it on half B; choose on B and score on A; the estimate is the mean of the two scores. Each
    score is measured on examples the choice did not see, so under no true effect it centres on 0 however many
    configurations were tried.

    The interval re-does the split, the choice and the scoring in every bootstrap resample. The resamples' own
    centre can sit below the estimate (when one configuration truly helps, a resampled half, with its repeated
    examples, picks it less often than the sample's half does), so the interval is the resamples' spread around
    their median placed on the estimate, ``[est + q(2.5%) - median, est + q(97.5%) - median]``, widened to at least ``±``
    :func:`~attnbook.studies.heads_off.effects.resolution` of the smallest task's examples. The estimate's ``n``
    is the examples of all parts together."""
    parts = list(parts)
    if not parts:
        raise EmptyDataError("no configurations to choose among")
    if len({p.draws.shape[1] for p in parts}) != 1:
        raise ParameterError("the parts of a cross-fitted choice need the same number of bootstrap resamples")
    point = np.concatenate([p.point for p in parts], axis=1)
    draws = np.concatenate([p.draws for p in parts], axis=2)
    names = [x for p in parts for x in p.names]
    sign = 1.0 if largest else -1.0
    pick = lambda v: np.argmax(sign * v, axis=-1)  # noqa: E731  first of ties, in ``names`` order
    ca, cb = int(pick(point[0])), int(pick(point[1]))
    value = float((point[1, ca] + point[0, cb]) / 2)
    ia, ib = pick(draws[0]), pick(draws[1])
    rows = np.arange(draws.shape[1])
    values = (draws[1, rows, ia] + draws[0, rows, ib]) / 2
    alpha = (1 - confidence) / 2
    lo_q, mid, hi_q = np.quantile(values, [alpha, 0.5, 1 - alpha])
    floor = resolution(min(p.n for p in parts), confidence)
    low, high = min(value + lo_q - mid, value - floor), max(value + hi_q - mid, value + floor)
    n = sum(p.n for p in parts)
    est = Estimate(value, float(low), float(high), int(n), CROSS_FITTED)
    return CrossFit(est, (names[ca], names[cb]), float(np.mean(ia == ib)), len(names))
