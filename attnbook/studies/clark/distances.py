"""How far apart two attention heads are: Jensen-Shannon divergence over the same tokens (Clark et al. §6).

**What is measured.** The distance between heads ``H_i`` and ``H_j`` is the
Jensen-Shannon divergence between their attention distributions from the same
token, accumulated over every (real, unpadded) query token of the data:

    ``D(H_i, H_j) = sum_{token in data} JS(H_i(token), H_j(token))``    (Clark §6)

with natural logarithms, so each term lies in ``[0, ln 2]``. The book reports the
sum and the **mean** (the sum divided by the number of tokens, Fig. 6's caption
speaks of an average); MDS and clustering use the mean, which only rescales the
sum, so neither the picture nor the clusters change.

**How it is computed.** ``JS(p, q) = H(m) - (H(p) + H(q)) / 2`` with
``m = (p + q) / 2``. Everything is a sum over (query, key) entries, so a whole
corpus reduces to three kinds of running totals per batch:

* per head: ``sum a log a`` and ``sum a`` (the mass, = the number of queries);
* per pair of heads: ``T_ij = sum (a_i + a_j) log(a_i + a_j)``,

and then ``D_ij = (E_i + E_j)/2 - T_ij/2 + ln2 (mass_i + mass_j)/2`` with
``E_i = sum a_i log a_i``. The pairwise term is the only one that cannot be
factorised; :func:`pairwise_xlogx_sums` computes it for all ``n(n-1)/2`` pairs at
once, over cache-sized column chunks (72 heads -> 2,556 pairs; 144 -> 10,296).
No attention map is kept.

**Differences from the released code** (stated, not copied): Clark et al.'s code
smooths every map as ``0.001/L + 0.999 * attn`` (``L`` the segment length) before
the divergence and sums rather than averages. Smoothing is the ``smoothing``
parameter here (default ``0``: the paper's formula; JS needs no smoothing
because ``m > 0`` wherever ``p > 0``). The released code also fed every token
with segment id 0; the book's segments use 0/1 (:mod:`attnbook.studies.clark.segments`).

Heads are flattened layer-major everywhere in Clark §6: head ``k`` is layer ``k // n_heads``,
head ``k % n_heads`` (the order of :func:`attnbook.core.heads.all_head_labels`). Next:
:mod:`attnbook.studies.clark.embedding` (MDS) and :mod:`attnbook.studies.clark.clusters`.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.extract import Batch, Encoded, stream_attention
from attnbook.stats import bootstrap_counts

LN2 = math.log(2.0)


# ---------------------------------------------------------------------------------------------
# Jensen-Shannon divergence
# ---------------------------------------------------------------------------------------------


def js_divergence(p: np.ndarray, q: np.ndarray, axis: int = -1) -> np.ndarray:
    """Jensen-Shannon divergence (natural log) between distributions along ``axis``.

    ``JS(p, q) = KL(p || m)/2 + KL(q || m)/2`` with ``m = (p + q)/2``; equals
    ``scipy.spatial.distance.jensenshannon(p, q) ** 2``. Inputs must be distributions
    (non-negative, summing to 1); ``0 log 0`` counts as 0.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    m = (p + q) / 2
    from scipy.special import xlogy

    return np.sum(xlogy(p, p) + xlogy(q, q), axis=axis) / 2 - np.sum(xlogy(m, m), axis=axis)


def smooth(attn: torch.Tensor, smoothing: float) -> torch.Tensor:
    """``smoothing / L + (1 - smoothing) * attn`` over the last axis (``L`` keys): the released code's 0.001."""
    if not 0.0 <= smoothing < 1.0:
        raise ParameterError(f"smoothing must be in [0, 1), got {smoothing}")
    if smoothing == 0.0:
        return attn
    return attn * (1.0 - smoothing) + smoothing / attn.shape[-1]


def pairwise_xlogx_sums(a: torch.Tensor, chunk: int = 2048, workers: int | None = None) -> torch.Tensor:
    """``T[p] = sum_n (a[i, n] + a[j, n]) * log(a[i, n] + a[j, n])`` for every pair ``i < j``.

    ``a[head, entry]`` holds non-negative numbers (attention weights of many (query, key)
    entries, flattened). Returns a float64 vector over pairs in the condensed order of
    :func:`scipy.spatial.distance.squareform` (``(0,1), (0,2), ..., (1,2), ...``).

    Work is ``n_pairs * n_entries`` logarithms; it is done row by row over column
    chunks of ``chunk`` entries so every intermediate stays in the CPU cache, with
    float32 arithmetic inside a chunk and float64 accumulation across chunks.

    Parallelism: the rows are shared among ``workers`` Python threads (default: torch's
    thread count), each running single-threaded torch ops (they release the GIL). The
    thousands of small ops per batch would otherwise each open an OpenMP parallel region,
    which is slower than one thread whenever the cores are shared with other processes.
    """
    if a.ndim != 2:
        raise ValueError(f"expected a[head, entry], got shape {tuple(a.shape)}")
    n_heads, n_entries = a.shape
    n_pairs = n_heads * (n_heads - 1) // 2
    out = torch.zeros(n_pairs, dtype=torch.float64)
    if n_pairs == 0 or n_entries == 0:
        return out
    a = a.contiguous()
    starts = [i * n_heads - i * (i + 1) // 2 for i in range(n_heads)]  # condensed offset of row i
    previous = torch.get_num_threads()
    workers = max(1, min(workers or previous, n_heads - 1))
    # balance the pairs: deal rows (row i has n_heads - 1 - i pairs) out longest first
    groups: list[list[int]] = [[] for _ in range(workers)]
    load = [0] * workers
    for i in range(n_heads - 1):
        w = load.index(min(load))
        groups[w].append(i)
        load[w] += n_heads - 1 - i
    try:
        torch.set_num_threads(1)
        if workers == 1:
            _xlogx_rows(a, groups[0], out, starts, chunk)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(workers) as pool:
                for f in [pool.submit(_xlogx_rows, a, g, out, starts, chunk) for g in groups]:
                    f.result()
    finally:
        torch.set_num_threads(previous)
    return out


def _xlogx_rows(a: torch.Tensor, rows: Sequence[int], out: torch.Tensor, starts: Sequence[int], chunk: int) -> None:
    """Accumulate the pairs ``(i, j > i)`` of ``rows`` into ``out`` (each row owns its slice of ``out``)."""
    torch.set_num_threads(1)  # per thread: OpenMP keeps the setting per calling thread
    with torch.inference_mode():  # thread-local: the caller's mode does not reach a worker thread
        _xlogx_rows_inner(a, rows, out, starts, chunk)


def _xlogx_rows_inner(a: torch.Tensor, rows: Sequence[int], out: torch.Tensor, starts: Sequence[int],
                      chunk: int) -> None:
    n_heads, n_entries = a.shape
    tiny = torch.finfo(a.dtype).tiny
    width = min(chunk, n_entries)
    total = torch.empty(n_heads - 1, width, dtype=a.dtype)
    logs = torch.empty(n_heads - 1, width, dtype=a.dtype)
    for c0 in range(0, n_entries, width):
        block = a[:, c0 : c0 + width]
        n = block.shape[1]
        for i in rows:
            rest = n_heads - 1 - i
            m = total[:rest, :n]
            lg = logs[:rest, :n]
            torch.add(block[i + 1 :], block[i], out=m)
            torch.clamp(m, min=tiny, out=lg)  # 0 log 0 = 0: log of a tiny number times exactly 0
            lg.log_().mul_(m)
            out[starts[i] : starts[i] + rest] += lg.sum(1, dtype=torch.float64)


def condensed_to_square(values: np.ndarray, n: int) -> np.ndarray:
    """Symmetric ``[n, n]`` matrix from a condensed vector (zero diagonal)."""
    from scipy.spatial.distance import squareform

    values = np.asarray(values, dtype=np.float64)
    if values.shape != (n * (n - 1) // 2,):
        raise ValueError(f"expected {n * (n - 1) // 2} pair values for {n} heads, got shape {values.shape}")
    return squareform(values, checks=False)


def condensed(square: np.ndarray) -> np.ndarray:
    """The pair values ``i < j`` of a square symmetric distance matrix (scipy's condensed order); checks the shape."""
    from scipy.spatial.distance import squareform

    square = np.asarray(square, dtype=np.float64)
    if square.ndim != 2 or square.shape[0] != square.shape[1]:
        raise ValueError(f"expected a square distance matrix, got shape {square.shape}")
    if not np.allclose(square, square.T, atol=1e-9 * max(1.0, float(np.abs(square).max(initial=0.0)))):
        raise ValueError("the distance matrix is not symmetric")
    return squareform(square, checks=False)


#: groups of segments whose totals are kept apart (even, so that even- and odd-indexed segments stay separable):
#: the bootstrap of chapter 3 resamples these groups, each a fixed share of the segments
N_GROUPS = 40


def resampled_distances(arrays: dict[str, np.ndarray], n_resamples: int = 200, seed: int = 0) -> np.ndarray:
    """``js_mean[resample, i, j]``: the mean JS divergences recomputed in ``n_resamples`` bootstrap resamples of the
    groups of segments of :class:`HeadDistances` (``arrays`` is its result; groups without tokens are left out)."""

    sums, tokens = np.asarray(arrays["js_sum_groups"], np.float64), np.asarray(arrays["n_tokens_groups"], np.float64)
    keep = tokens > 0
    if keep.sum() < 2:
        raise EmptyDataError("fewer than two groups of segments: nothing to resample")
    sums, tokens = sums[keep], tokens[keep]
    counts = bootstrap_counts(len(tokens), n_resamples, seed)
    mean = np.maximum(counts @ sums, 0.0) / (counts @ tokens)[:, None]  # [resample, pair]
    n = int(round((1 + math.sqrt(1 + 8 * sums.shape[1])) / 2))
    out = np.zeros((n_resamples, n, n))
    i, j = np.triu_indices(n, 1)
    out[:, i, j] = mean
    out[:, j, i] = mean
    return out


#: consecutive examples that share a group (before the even/odd split): a batch touches few groups, and segments
#: drawn next to each other (often from one article) are resampled together
GROUP_RUN = 8


def group_of(index: int) -> int:
    """The group of example ``index``: ``2 * ((index // GROUP_RUN) % (N_GROUPS // 2)) + index % 2`` (so the group's
    parity is the example's: even- and odd-indexed examples never share a group)."""
    return 2 * ((int(index) // GROUP_RUN) % (N_GROUPS // 2)) + int(index) % 2


def n_groups(arrays: dict[str, np.ndarray]) -> int:
    """How many groups of segments :func:`resampled_distances` resamples (the groups with tokens)."""
    return int(np.sum(np.asarray(arrays["n_tokens_groups"]) > 0))


class HeadDistances:
    """Streaming reducer of Clark §6 head distances; see the module docstring for the formula.

    ``update(attn[batch, layer, head, query, key], batch)`` folds the real query rows
    of each example (their real keys only) into running totals. Options:

    * ``smoothing`` - mix every distribution with uniform attention over the example's
      keys before comparing (the released code used 0.001; the paper states none);
    * ``query_fraction`` - compare heads on a random share of each example's query
      tokens (``1.0``: all of them, the paper). The draw depends only on ``seed`` and the
      example's index, never on batching, so results do not depend on batch size;
    * the totals are kept separately for :data:`N_GROUPS` groups of examples (:func:`group_of`: runs
      of :data:`GROUP_RUN` consecutive examples, even- and odd-indexed apart), so ``result()`` also gives two independent
      half-sample estimates (even- and odd-indexed examples: split-half reliability of the
      distances and of the MDS picture) and the per-group totals that a bootstrap over groups of
      segments resamples (:func:`resampled_distances`), in memory that does not grow with the data.

    ``result()`` returns arrays (heads flattened layer-major):
    ``js_sum[i, j]``, ``js_mean[i, j]`` (per query token), ``js_mean_halves[2, i, j]``,
    ``n_tokens`` (queries compared), ``n_tokens_halves[2]``, ``entropy[i]`` (mean
    attention entropy of each head over the same queries, nats), ``n_examples``,
    ``js_sum_groups[group, pair]`` (condensed, :func:`condensed` order) and ``n_tokens_groups[group]``.
    """

    def __init__(
        self,
        n_layers: int,
        n_heads: int,
        *,
        smoothing: float = 0.0,
        query_fraction: float = 1.0,
        seed: int = 0,
        chunk: int = 2048,
    ):
        if not 0.0 < query_fraction <= 1.0:
            raise ParameterError(f"query_fraction must be in (0, 1], got {query_fraction}")
        smooth(torch.zeros(1), smoothing)  # validates the value
        self.n_layers, self.n_heads = int(n_layers), int(n_heads)
        self.n = self.n_layers * self.n_heads
        self.smoothing, self.query_fraction, self.seed, self.chunk = float(smoothing), float(query_fraction), int(seed), int(chunk)
        n_pairs = self.n * (self.n - 1) // 2
        g = N_GROUPS
        self.pair_xlogx = np.zeros((g, n_pairs))
        self.head_xlogx = np.zeros((g, self.n))
        self.head_mass = np.zeros((g, self.n))
        self.n_tokens = np.zeros(g, dtype=np.int64)
        self.n_examples = 0

    def query_positions(self, index: int, length: int) -> np.ndarray:
        """The query positions of example ``index`` (of ``length`` real tokens) that are compared."""
        if self.query_fraction >= 1.0:
            return np.arange(length)
        k = max(1, int(round(self.query_fraction * length)))
        rng = np.random.default_rng([self.seed, int(index)])
        return np.sort(rng.choice(length, size=k, replace=False))

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        if attn.ndim != 5 or attn.shape[1] != self.n_layers or attn.shape[2] != self.n_heads:
            raise ValueError(
                f"expected attn[batch, {self.n_layers}, {self.n_heads}, query, key], got {tuple(attn.shape)}"
            )
        attn = attn.float()
        rows: list[list[torch.Tensor]] = [[] for _ in range(N_GROUPS)]
        for b, index in enumerate(batch.index):
            n = int(batch.lengths[b])
            q = torch.from_numpy(self.query_positions(index, n))
            maps = attn[b, :, :, :n, :n].reshape(self.n, n, n).index_select(1, q)  # [head, query, key]
            maps = smooth(maps, self.smoothing)
            half = group_of(int(index))
            rows[half].append(maps.reshape(self.n, -1))
            self.n_tokens[half] += len(q)
            self.n_examples += 1
        for half in range(N_GROUPS):
            if not rows[half]:
                continue
            a = torch.cat(rows[half], dim=1)
            self.head_xlogx[half] += torch.special.xlogy(a, a).sum(1, dtype=torch.float64).numpy()
            self.head_mass[half] += a.sum(1, dtype=torch.float64).numpy()
            self.pair_xlogx[half] += pairwise_xlogx_sums(a, self.chunk).numpy()

    def _js_condensed(self, groups) -> np.ndarray:
        e = np.atleast_2d(self.head_xlogx[groups]).sum(0)
        mass = np.atleast_2d(self.head_mass[groups]).sum(0)
        t = np.atleast_2d(self.pair_xlogx[groups]).sum(0)
        i, j = np.triu_indices(self.n, 1)
        return (e[i] + e[j]) / 2 - t / 2 + LN2 * (mass[i] + mass[j]) / 2

    def _js_sum(self, groups) -> np.ndarray:
        return condensed_to_square(np.maximum(self._js_condensed(groups), 0.0), self.n)  # rounding can leave -1e-9

    def result(self) -> dict[str, np.ndarray]:
        total = int(self.n_tokens.sum())
        if total == 0:
            raise EmptyDataError("HeadDistances saw no query tokens")
        js_sum = self._js_sum(slice(None))
        parity = [np.arange(h, N_GROUPS, 2) for h in (0, 1)]  # even / odd examples (N_GROUPS is even)
        halves = np.stack([self._js_sum(p) / max(int(self.n_tokens[p].sum()), 1) for p in parity])
        return {
            "js_sum": js_sum,
            "js_mean": js_sum / total,
            "js_mean_halves": halves,
            "n_tokens": np.array(total),
            "n_tokens_halves": np.array([self.n_tokens[p].sum() for p in parity]),
            "js_sum_groups": np.stack([self._js_condensed(g) for g in range(N_GROUPS)]),
            "n_tokens_groups": self.n_tokens.copy(),
            "entropy": -self.head_xlogx.sum(0) / total,
            "n_examples": np.array(self.n_examples),
        }


@cache.memoized("head_distances", ignore=("batch_size", "progress"))
def measure_head_distances(
    loaded,
    segments: Sequence[Encoded],
    *,
    smoothing: float = 0.0,
    query_fraction: float = 1.0,
    seed: int = 0,
    batch_size: int = 16,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """Stream ``loaded`` over ``segments`` and return :class:`HeadDistances` arrays (Clark §6); cached by model,
    segments and parameters."""
    if not segments:
        raise EmptyDataError("no segments to compare heads on")
    reducer = HeadDistances(
        loaded.n_layers, loaded.n_heads, smoothing=smoothing, query_fraction=query_fraction, seed=seed
    )
    (arrays,) = stream_attention(
        loaded, segments, [reducer], batch_size=batch_size, progress=progress, desc="head distances (§6)"
    )
    return dict(arrays)


def off_diagonal(distances: np.ndarray) -> np.ndarray:
    """The distances between two different heads (the diagonal, a head with itself, left out)."""
    d = np.asarray(distances)
    return d[~np.eye(d.shape[0], dtype=bool)]


def summary(arrays: dict[str, np.ndarray]) -> dict:
    """The key numbers of :func:`measure_head_distances`' arrays: tokens compared, range and median of the
    mean JS between two heads, and the whole matrix (4 decimals)."""
    d = arrays["js_mean"]
    off = off_diagonal(d)
    return {
        "n_tokens_compared": int(arrays["n_tokens"]),
        "js_mean_range": [float(off.min()), float(off.max())],
        "js_mean_median": float(np.median(off)),
        "distances": d.round(4).tolist(),
    }


def describe(arrays: dict[str, np.ndarray]) -> str:
    """One line: how many tokens the heads were compared on, and the spread of their distances."""
    off = off_diagonal(arrays["js_mean"])
    return (f"heads compared on {int(arrays['n_tokens']):,} query tokens; mean JS between two heads: "
            f"median {np.median(off):.3f}, from {off.min():.3f} to {off.max():.3f} nats (ln 2 = {np.log(2):.3f})")
