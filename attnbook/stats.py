"""Statistics shared by every chapter: metrics, paired tests, resampling, rank agreement, permutation tests.

Pure NumPy/SciPy on arrays; nothing here knows about models, data files or papers.

* metrics: :func:`accuracy`, :func:`f1_binary`, :func:`pearson`, :func:`spearman` (GLUE's, Wang et al. 2018);
* paired tests on per-example correctness: :func:`mcnemar_exact`, :func:`paired_ttest`;
* multiple comparisons: :func:`adjust_pvalues` (Holm 1979; Bonferroni; Benjamini-Hochberg);
* the bootstrap (Efron & Tibshirani 1993): :func:`bootstrap_counts` (seeded resample counts, so many
  statistics can share one set of draws);
* :func:`rank_agreement` of two per-head arrays; :func:`group_permutation_test` (are same-label heads
  closer than random relabellings would make them?);
* seeds: :func:`over_seeds`, the one rule (:data:`SEED_POLICY`) every chapter combines fine-tuning seeds by.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from attnbook.core.errors import EmptyDataError, ParameterError


def _pair(pred: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pred, gold = np.asarray(pred).ravel(), np.asarray(gold).ravel()
    if pred.shape != gold.shape:
        raise ParameterError(f"{pred.size} predictions for {gold.size} gold labels")
    if pred.size == 0:
        raise EmptyDataError("no predictions to score")
    return pred, gold


# Kept, not sklearn's accuracy_score: the same numbers, 80-330x slower a call (benchmarks/libraries.py).
def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    """Share of predictions equal to the gold label."""
    pred, gold = _pair(pred, gold)
    return float(np.mean(pred == gold))


# Kept, not sklearn's f1_score: the same numbers, 90-340x slower; it refuses multiclass or absent labels.
def f1_binary(pred: np.ndarray, gold: np.ndarray, positive: int = 1) -> float:
    """F1 of the ``positive`` class; 0 when there is no true positive (e.g. nothing predicted positive).

    This is how an untrained classifier that always predicts "not a paraphrase"
    scores 0 F1 on MRPC in Kovaleva et al.'s Table 1.
    """
    pred, gold = _pair(pred, gold)
    tp = float(np.sum((pred == positive) & (gold == positive)))
    fp = float(np.sum((pred == positive) & (gold != positive)))
    fn = float(np.sum((pred != positive) & (gold == positive)))
    if tp == 0.0:
        return 0.0
    return 2.0 * tp / (2.0 * tp + fp + fn)


# Kept, not scipy's pearsonr: 9.5-18x slower (it adds a p-value), 1e-16 off; it raises for one pair.
def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r; NaN when either side is constant (the correlation is undefined)."""
    x, y = _pair(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    xc, yc = x - x.mean(), y - y.mean()
    denom = float(np.sqrt(np.sum(xc * xc) * np.sum(yc * yc)))
    if denom == 0.0 or not np.isfinite(denom):
        return float("nan")
    return float(np.clip(np.sum(xc * yc) / denom, -1.0, 1.0))


# Kept, not scipy's rankdata: identical ranks, 2.2-2.9x slower on 1,500 tied scores; NaN makes it all NaN.
def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x`` with ties given the mean of the ranks they span."""
    x = np.asarray(x, dtype=np.float64).ravel()
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(x.size, dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], x.size]
    # every member of a tie group [s, e) gets the mean of ranks s+1 .. e (vectorised: a bootstrap resample has
    # hundreds of tie groups, and the Python loop over them it replaces is timed in ``make bench``)
    ranks[order] = np.repeat((starts + 1 + ends) / 2.0, ends - starts)
    return ranks


# Kept, not scipy's spearmanr: 2.7x slower on 1,500 tied scores (1e-19 off).
def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks; NaN when either side is constant."""
    x, y = _pair(x, y)
    return pearson(average_ranks(x), average_ranks(y))


# Kept: scipy.stats.bootstrap draws the same indices (batches of 200) but hands out no indices to reuse.
def bootstrap_indices(n: int, n_resamples: int, seed: int, chunk: int = 200) -> Iterable[np.ndarray]:
    """Resamples of ``n`` example indices (with replacement), ``[resample, n]`` in chunks; seeded."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_resamples:
        k = min(chunk, n_resamples - done)
        yield rng.integers(0, n, size=(k, n))
        done += k


# Kept: scipy.stats.bootstrap has no counts; a [resample, unit] matrix scores many statistics at once.
def bootstrap_counts(n: int, n_resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """``counts[resample, example]``: how often each example is drawn in each resample.

    The same draws as :func:`bootstrap_delta` with the same seed, so a whole sweep can be
    bootstrapped at once for a per-example metric (``deltas = counts @ per_example_diff / n``).
    """
    out = np.zeros((n_resamples, n), dtype=np.float64)
    row = 0
    for idx in bootstrap_indices(n, n_resamples, seed):
        for r in idx:
            out[row] = np.bincount(r, minlength=n)
            row += 1
    return out


def bootstrap_summary(delta: float, resampled: np.ndarray, confidence: float) -> dict:
    """Percentile interval and two-sided p-value ((count + 1) / (R + 1) on the far side of 0, doubled)."""
    alpha = (1 - confidence) / 2
    below, above = int(np.sum(resampled <= 0)), int(np.sum(resampled >= 0))
    return {
        "delta": float(delta),
        "ci_low": float(np.quantile(resampled, alpha)),
        "ci_high": float(np.quantile(resampled, 1 - alpha)),
        "p_value": min(1.0, 2 * (min(below, above) + 1) / (len(resampled) + 1)),
    }


def mcnemar_exact(base_correct: np.ndarray, new_correct: np.ndarray) -> dict:
    """McNemar's exact test for paired accuracies.

    ``b``: examples the baseline gets right and the intervened model wrong; ``c``: the reverse.
    Under no difference ``c ~ Binomial(b + c, 1/2)``; the two-sided exact p-value is returned.
    """
    from scipy.stats import binomtest

    base_correct, new_correct = np.asarray(base_correct, bool), np.asarray(new_correct, bool)
    if base_correct.shape != new_correct.shape:
        raise ParameterError(f"paired arrays differ in shape: {base_correct.shape} vs {new_correct.shape}")
    b = int(np.sum(base_correct & ~new_correct))
    c = int(np.sum(~base_correct & new_correct))
    p = 1.0 if b + c == 0 else float(binomtest(c, b + c, 0.5).pvalue)
    return {"b": b, "c": c, "p_value": p}


def paired_ttest(base_correct: np.ndarray, new_correct: np.ndarray) -> float:
    """Two-sided paired t-test on per-example correctness (Michel §3.2 report a t-test for BERT;
    whether theirs was paired is not stated). Identical predictions give p = 1."""
    from scipy.stats import ttest_rel

    diff = np.asarray(new_correct, float) - np.asarray(base_correct, float)
    if np.all(diff == diff[0]):
        return 1.0 if diff[0] == 0 else 0.0
    return float(ttest_rel(np.asarray(new_correct, float), np.asarray(base_correct, float)).pvalue)


# Kept, not statsmodels' multipletests: 65 MB for 15 lines; its Holm calls gc.collect() (0.2-0.4 s a call).
def adjust_pvalues(p: Sequence[float], method: str = "holm") -> np.ndarray:
    """Family-wise (``"holm"``, ``"bonferroni"``) or false-discovery (``"fdr_bh"``) adjusted p-values;
    ``"none"`` returns them unchanged."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0 or method == "none":
        return p.copy()
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "bonferroni":
        adj = np.minimum(1.0, ranked * m)
    elif method == "holm":
        adj = np.minimum(1.0, np.maximum.accumulate(ranked * (m - np.arange(m))))
    elif method == "fdr_bh":
        adj = np.minimum(1.0, np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1])
    else:
        raise ParameterError(f"correction is 'holm', 'bonferroni', 'fdr_bh' or 'none', got {method!r}")
    out = np.empty(m)
    out[order] = adj
    return out


def rank_agreement(a: np.ndarray, b: np.ndarray, *, k: int = 10) -> dict:
    """Pearson r and Spearman ρ (with p-values) of two ``values[layer, head]``, and the overlap of their
    top-``k`` heads (shared / k; chance is k / n_heads)."""
    from scipy.stats import pearsonr, spearmanr

    x, y = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape or x.size < 3:
        raise ParameterError(f"need two arrays of the same shape with at least 3 heads, got {np.shape(a)} and {np.shape(b)}")
    if np.all(x == x[0]) or np.all(y == y[0]):
        pr = sr = (float("nan"), float("nan"))
    else:
        pr, sr = pearsonr(x, y), spearmanr(x, y)
    k = min(k, x.size)
    top_a, top_b = set(np.argsort(-x, kind="stable")[:k]), set(np.argsort(-y, kind="stable")[:k])
    return {
        "pearson": float(pr[0]),
        "pearson_p": float(pr[1]),
        "spearman": float(sr[0]),
        "spearman_p": float(sr[1]),
        "top_k": k,
        "top_k_overlap": len(top_a & top_b) / k,
        "top_k_chance": k / x.size,
    }


@dataclass
class GroupTest:
    """Are heads with the same label (e.g. layer) closer to each other than to the rest?

    ``statistic = between_mean - within_mean`` (positive: same-label heads are closer);
    ``p_value`` is the one-sided permutation p-value ``(1 + #{null >= statistic}) / (1 + n)``
    over ``n_permutations`` random relabellings with the same group sizes. ``ratio`` is
    ``within_mean / between_mean``. ``nn_same`` is the share of heads whose nearest other
    head has the same label; ``nn_chance`` its expectation under random labels.
    """

    within_mean: float
    between_mean: float
    ratio: float
    statistic: float
    p_value: float
    n_permutations: int
    null_mean: float
    null_std: float
    nn_same: float
    nn_chance: float
    group_within: dict = field(default_factory=dict)


def group_permutation_test(
    distances: np.ndarray,
    labels: Sequence[Any],
    *,
    n_permutations: int = 10000,
    seed: int = 0,
    block: int = 500,
) -> GroupTest:
    """Permutation test of "same-label heads are close" on a square distance matrix (Clark §6).

    Labels are shuffled ``n_permutations`` times (seeded); each shuffle's mean within-label
    distance is computed for all shuffles at once as ``trace(O^T D O)`` with one-hot ``O``.
    """
    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or not np.allclose(d, d.T):
        raise ValueError(f"expected a symmetric square distance matrix, got shape {d.shape}")
    n = d.shape[0]
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"expected {n} labels, got shape {labels.shape}")
    if n_permutations < 1:
        raise ParameterError(f"n_permutations must be positive, got {n_permutations}")
    groups, codes = np.unique(labels, return_inverse=True)
    sizes = np.bincount(codes)
    n_within = int(np.sum(sizes * (sizes - 1)))  # ordered pairs
    n_all = n * (n - 1)
    if n_within == 0 or n_within == n_all:
        raise ParameterError("the labels must put some, but not all, pairs of heads in the same group")
    total = float(d.sum())

    def within_sums(code_rows: np.ndarray) -> np.ndarray:  # code_rows[perm, head]
        onehot = np.zeros((code_rows.shape[0], n, len(groups)))
        np.put_along_axis(onehot, code_rows[..., None], 1.0, axis=2)
        return np.einsum("pig,pig->p", onehot, d @ onehot)

    obs_within = float(within_sums(codes[None])[0])
    within_mean = obs_within / n_within
    between_mean = (total - obs_within) / (n_all - n_within)
    statistic = between_mean - within_mean

    rng = np.random.default_rng(seed)
    null = np.empty(n_permutations)
    for start in range(0, n_permutations, block):
        k = min(block, n_permutations - start)
        perm = rng.permuted(np.broadcast_to(codes, (k, n)), axis=1)
        w = within_sums(perm)
        null[start : start + k] = (total - w) / (n_all - n_within) - w / n_within
    p = (1 + int(np.sum(null >= statistic - 1e-12))) / (1 + n_permutations)

    off = d + np.diag(np.full(n, np.inf))
    nn = np.argmin(off, axis=1)
    nn_same = float(np.mean(codes[nn] == codes))
    nn_chance = float(np.sum(sizes * (sizes - 1)) / (n * (n - 1)))
    group_within = {}
    for g, name in enumerate(groups):
        idx = np.flatnonzero(codes == g)
        if len(idx) > 1:
            sub = d[np.ix_(idx, idx)]
            group_within[_plain(name)] = float(sub.sum() / (len(idx) * (len(idx) - 1)))
    return GroupTest(
        within_mean=within_mean, between_mean=between_mean, ratio=within_mean / between_mean,
        statistic=statistic, p_value=p, n_permutations=n_permutations,
        null_mean=float(null.mean()), null_std=float(null.std()),
        nn_same=nn_same, nn_chance=nn_chance, group_within=group_within,
    )


def _plain(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


# ----------------------------------------------------------------------------- estimates with intervals


@dataclass(frozen=True)
class Estimate:
    """A number measured on a sample, with its 95% interval and what the interval resamples.

    ``low``/``high`` are ``None`` for a number that is not a sample estimate (a count over all the data,
    a setting); ``n`` units of kind ``unit`` (``"segments"``, ``"dev examples"``, ``"seeds"`` ...) were resampled.
    """

    value: float
    low: float | None = None
    high: float | None = None
    n: int | None = None
    unit: str = ""
    #: for an interval over seeds (:func:`over_seeds`): its degrees of freedom (Satterthwaite), the variance of the
    #: mean that the seed-to-seed spread contributes (``s^2 / k``) and the dev examples' own variance
    df: float | None = None
    seed_var: float | None = None
    item_var: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def bounds(self) -> tuple[float, float]:
        """``(low, high)``; a number without an interval is its own interval ``(value, value)``."""
        return (self.low, self.high) if self.has_interval else (self.value, self.value)

    def text(self, fmt: str = ".3g") -> str:
        """``"0.62 [0.58, 0.66]"`` (or just the value when there is no interval)."""
        if not self.has_interval:
            return format(self.value, fmt)
        return f"{format(self.value, fmt)} [{format(self.low, fmt)}, {format(self.high, fmt)}]"

    def scaled(self, factor: float) -> "Estimate":
        """The same estimate in other units (e.g. x 100 for points)."""
        s = lambda x: None if x is None else x * factor  # noqa: E731
        lo, hi = s(self.low), s(self.high)
        if factor < 0 and lo is not None:
            lo, hi = hi, lo
        v = lambda x: None if x is None else x * factor * factor  # noqa: E731
        return Estimate(self.value * factor, lo, hi, self.n, self.unit, self.df, v(self.seed_var), v(self.item_var))

    def as_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n, "unit": self.unit}


# Kept: scipy.stats.bootstrap makes this interval only of the resamples it draws itself; this takes any draws.
def percentile_interval(resampled: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval over axis 0 of ``resampled[resample, ...]``."""
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence}")
    a = (1 - confidence) / 2
    r = np.asarray(resampled, dtype=np.float64)
    return np.quantile(r, a, axis=0), np.quantile(r, 1 - a, axis=0)


# Kept, not scipy.stats.bootstrap: same draws, sums 1e-16 apart; per head 25-32x slower and 22x the memory.
def resampled_ratio(numerators: np.ndarray, denominators: np.ndarray | None = None, *, n_resamples: int = 2000,
                    seed: int = 0) -> np.ndarray:
    """Bootstrap over units of a ratio of sums: ``sum_u num[u] / sum_u den[u]`` in every resample.

    ``numerators[unit, ...]`` (and ``denominators``, same leading axis; default: one per unit, i.e. the mean)
    are per-unit totals: per-segment sums of attention, per-sentence counts of right edges, per-example
    correctness. Units are drawn with replacement, ``n_resamples`` times, seeded. Returns ``[resample, ...]``.
    """
    num = np.asarray(numerators, dtype=np.float64)
    if num.shape[0] == 0:
        raise EmptyDataError("no units to resample")
    den = np.ones(num.shape[0]) if denominators is None else np.asarray(denominators, dtype=np.float64)
    if den.shape[0] != num.shape[0]:
        raise ParameterError(f"{num.shape[0]} numerators but {den.shape[0]} denominators")
    counts = bootstrap_counts(num.shape[0], n_resamples, seed)  # [resample, unit]
    top = np.tensordot(counts, num, axes=(1, 0))
    bottom = np.tensordot(counts, den, axes=(1, 0))
    if bottom.ndim < top.ndim:  # one denominator per unit for every statistic
        bottom = bottom.reshape(bottom.shape + (1,) * (top.ndim - bottom.ndim))
    with np.errstate(invalid="ignore", divide="ignore"):
        return top / bottom


def ratio_estimate(numerators: np.ndarray, denominators: np.ndarray | None = None, *, unit: str = "units",
                   n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Estimate:
    """:class:`Estimate` of a ratio of sums over units (a mean when there are no denominators), with its
    percentile bootstrap interval (:func:`resampled_ratio`). Scalars only; see :func:`ratio_intervals` for arrays."""
    num = np.asarray(numerators, dtype=np.float64)
    den = np.ones(num.shape[0]) if denominators is None else np.asarray(denominators, dtype=np.float64)
    if num.ndim != 1:
        raise ParameterError(f"expected one value per unit, got shape {num.shape}")
    value = float(num.sum() / den.sum())
    lo, hi = percentile_interval(resampled_ratio(num, den, n_resamples=n_resamples, seed=seed), confidence)
    return Estimate(value, float(lo), float(hi), int(num.shape[0]), unit)


def proportion_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson exact interval of a binomial proportion ``k / n``."""
    from scipy.stats import beta

    if n <= 0 or not 0 <= k <= n:
        raise ParameterError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    a = 1 - confidence
    low = 0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return low, high


def mean_interval(values: Sequence[float], *, unit: str = "seeds", confidence: float = 0.95,
                  bounds: tuple[float, float] | None = None) -> Estimate:
    """Mean of a few independent runs (seeds) with Student's t interval (no interval for a single run).

    ``bounds`` clips the interval to the values the quantity can take (e.g. ``(0, 1)`` for an accuracy).
    Runs that all give the same number get an interval of width zero: the spread between seeds says nothing
    about the sampling error inside each run, so combine it with a per-run interval where that matters.
    """
    from scipy.stats import t as student

    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise EmptyDataError("no values to average")
    m = float(v.mean())
    if v.size < 2:
        return Estimate(m, None, None, int(v.size), unit)
    half = float(student.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    low, high = m - half, m + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Estimate(m, low, high, int(v.size), unit)


#: The book's one rule for combining fine-tuning seeds, stated on every page that combines them.
SEED_POLICY = ("Seeds are combined one way throughout the book: each fine-tuning seed is one replicate scored on the same "
               "examples as the others, and a quantity is the mean over the seeds. Its 95% interval counts both sources "
               "of error: the seed-to-seed spread (the variance of the seeds' values over their number) and each "
               "run's own error over its examples (the mean of the runs' item variances, an upper bound for the "
               "seed-averaged score's, since the seeds share their examples), with Student's t on Satterthwaite's "
               "degrees of freedom. The estimand is the same for every row: the recipe's expected score over seeds "
               "and over examples drawn like the evaluation set. A one-seed row has no seed spread of its own; where "
               "its table measures one on other rows it borrows that pooled spread, and otherwise it says that its "
               "interval counts the examples only.")

#: the z of a two-sided 95% interval, to read a run's standard error back from its interval
_Z975 = 1.959963984540054


def _item_se(run: Estimate) -> float | None:
    """A run's own standard error over its examples, read back from its 95% interval (normal: bootstrap and exact
    intervals over hundreds of examples)."""
    if not run.has_interval:
        return None
    return (run.high - run.low) / 2 / _Z975


def over_seeds(runs: Sequence[Estimate], *, bounds: tuple[float, float] | None = None,
               seed_sd: tuple[float, float] | None = None, confidence: float = 0.95) -> Estimate:
    """Combine one :class:`Estimate` per seed by :data:`SEED_POLICY`, the book's only seed-combining rule.

    The value is the mean over the seeds. Its variance has two components (variance components, as in a two-way
    seeds x examples design): the seed-to-seed variance over the number of seeds, ``s^2 / k`` (``k - 1`` degrees of
    freedom), and the runs' own item variance, the mean of their squared standard errors read from their 95%
    intervals (an upper bound for the variance of the seed-averaged score over examples: the seeds share their
    examples, so their item errors are correlated; degrees of freedom: the examples less one). The interval is
    Student's t on Satterthwaite's degrees of freedom, clipped to ``bounds``; a run's resolution floor (an interval
    widened to one example's worth) is kept because its interval is.

    ``seed_sd``: ``(sd, df)`` of one run's seed-to-seed standard deviation measured elsewhere (a table's other rows),
    used when there is a single seed (a one-seed row then has the same estimand as the others). One seed without it:
    the run's own estimate, whose interval counts the examples only. Runs with no interval and identical values
    have no measured error at all: refused, since a zero-width interval would claim certainty."""
    from scipy.stats import t as student

    runs = list(runs)
    if not runs:
        raise EmptyDataError("no seeds to combine")
    k = len(runs)
    values = np.array([r.value for r in runs], dtype=np.float64)
    ses = [_item_se(r) for r in runs]
    if any(se is None for se in ses) and not all(se is None for se in ses):
        raise ParameterError("combine seeds whose estimates all have an interval over their examples, or none")
    item = float(np.mean(np.square(ses))) if ses[0] is not None else 0.0
    n_items = min(int(r.n) for r in runs) if all(r.n for r in runs) else 0
    df_item = max(n_items - 1, 1) if item > 0 else math.inf
    if k >= 2:
        spread = float(np.ptp(values)) > 1e-12 * max(1.0, float(np.max(np.abs(values))))
        between, df_between = (float(values.var(ddof=1)) / k if spread else 0.0), float(k - 1)
    elif seed_sd is not None:
        between, df_between = float(seed_sd[0]) ** 2, float(seed_sd[1])
    else:
        return runs[0]
    total = between + item
    if total <= 0:
        raise ParameterError(f"{k} seeds with the same value and no interval over their examples: give each run's "
                             "Estimate with its interval (its examples' error), so the combined interval is not zero-wide")
    denom = (between ** 2 / df_between if between > 0 else 0.0) + (item ** 2 / df_item if item > 0 else 0.0)
    df = total ** 2 / denom if denom > 0 else math.inf
    half = float(student.ppf(0.5 + confidence / 2, df)) * math.sqrt(total)
    m = float(values.mean())
    low, high = m - half, m + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    unit = "seeds" if k >= 2 else "seed (seed spread borrowed)"
    return Estimate(m, low, high, k, unit, df, between, item)


def pooled_seed_sd(groups: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """The pooled seed-to-seed standard deviation of several groups of seeds (one group per row of a table) and its
    degrees of freedom, ``sum(k_i - 1)``; ``None`` when no group has two seeds."""
    ss, df = 0.0, 0
    for g in groups:
        v = np.asarray(list(g), dtype=np.float64)
        if v.size >= 2:
            ss += float(np.sum((v - v.mean()) ** 2))
            df += v.size - 1
    return (math.sqrt(ss / df), float(df)) if df else None


def median_interval(values: Sequence[float], *, unit: str = "values", confidence: float = 0.95) -> Estimate:
    """The median of ``values`` with its distribution-free interval from order statistics (the binomial
    sign-test interval: no assumption about the distribution, and robust to outliers on either side).

    The interval ``[x_(k), x_(n-k+1)]`` uses the largest ``k`` whose coverage reaches ``confidence``; with too few
    values for any such ``k`` (fewer than 6 at 95%) the estimate has no interval."""
    from scipy.stats import binom

    v = np.sort(np.asarray(values, dtype=np.float64))
    n = int(v.size)
    if n == 0:
        raise EmptyDataError("no values for a median")
    med = float(np.median(v))
    alpha = 1.0 - confidence
    # coverage of [x_(k), x_(n-k+1)] (1-based) is 1 - 2 * P(Binom(n, 1/2) <= k - 1)
    ks = [k for k in range(1, n // 2 + 1) if 2.0 * binom.cdf(k - 1, n, 0.5) <= alpha]
    if not ks:
        return Estimate(med, None, None, n, unit)
    k = max(ks)
    return Estimate(med, float(v[k - 1]), float(v[n - k]), n, unit)

