"""Clustering attention heads by how they attend (Clark et al. §6, Fig. 6).

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

**Then** (§6): heads are embedded in 2-D by metric MDS on the precomputed
distances (:func:`mds_embedding`, with raw stress and Kruskal's stress-1), the
claim "heads in the same layer are close" is tested against random layer
labels (:func:`group_permutation_test`), the distances are clustered
hierarchically (:func:`cluster_heads`), and each head is tagged with the
behaviours found in chapters 1-2 (:func:`head_behaviours`).

Heads are flattened layer-major everywhere here: head ``k`` is layer
``k // n_heads``, head ``k % n_heads`` (the order of
:func:`attnbook.core.heads.all_head_labels`).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from attnbook.core.errors import AttnbookError, EmptyDataError, ParameterError
from attnbook.engine.extract import Batch, Encoded
from attnbook.stats import GroupTest, group_permutation_test
from attnbook.core.heads import all_head_labels, head_label, parse_head_label
from attnbook import verdict

CODE_VERSION = "clustering-1"
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


class HeadDistances:
    """Streaming reducer of Clark §6 head distances; see the module docstring for the formula.

    ``update(attn[batch, layer, head, query, key], batch)`` folds the real query rows
    of each example (their real keys only) into running totals. Options:

    * ``smoothing`` - mix every distribution with uniform attention over the example's
      keys before comparing (the released code used 0.001; the paper states none);
    * ``query_fraction`` - compare heads on a random share of each example's query
      tokens (``1.0``: all of them, the paper). The draw depends only on ``seed`` and the
      example's index, never on batching, so results do not depend on batch size;
    * the totals are kept separately for even- and odd-indexed examples, so
      ``result()`` also gives two independent half-sample estimates (split-half
      reliability of the distances and of the MDS picture, at no extra cost).

    ``result()`` returns arrays (heads flattened layer-major):
    ``js_sum[i, j]``, ``js_mean[i, j]`` (per query token), ``js_mean_halves[2, i, j]``,
    ``n_tokens`` (queries compared), ``n_tokens_halves[2]``, ``entropy[i]`` (mean
    attention entropy of each head over the same queries, nats), ``n_examples``.
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
        self.pair_xlogx = np.zeros((2, n_pairs))
        self.head_xlogx = np.zeros((2, self.n))
        self.head_mass = np.zeros((2, self.n))
        self.n_tokens = np.zeros(2, dtype=np.int64)
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
        rows: list[list[torch.Tensor]] = [[], []]
        for b, index in enumerate(batch.index):
            n = int(batch.lengths[b])
            q = torch.from_numpy(self.query_positions(index, n))
            maps = attn[b, :, :, :n, :n].reshape(self.n, n, n).index_select(1, q)  # [head, query, key]
            maps = smooth(maps, self.smoothing)
            half = int(index) % 2
            rows[half].append(maps.reshape(self.n, -1))
            self.n_tokens[half] += len(q)
            self.n_examples += 1
        for half in (0, 1):
            if not rows[half]:
                continue
            a = torch.cat(rows[half], dim=1)
            self.head_xlogx[half] += torch.special.xlogy(a, a).sum(1, dtype=torch.float64).numpy()
            self.head_mass[half] += a.sum(1, dtype=torch.float64).numpy()
            self.pair_xlogx[half] += pairwise_xlogx_sums(a, self.chunk).numpy()

    def _js_sum(self, half: slice | int) -> np.ndarray:
        e = np.atleast_2d(self.head_xlogx[half]).sum(0)
        mass = np.atleast_2d(self.head_mass[half]).sum(0)
        t = np.atleast_2d(self.pair_xlogx[half]).sum(0)
        i, j = np.triu_indices(self.n, 1)
        js = (e[i] + e[j]) / 2 - t / 2 + LN2 * (mass[i] + mass[j]) / 2
        return condensed_to_square(np.maximum(js, 0.0), self.n)  # rounding can leave -1e-9

    def result(self) -> dict[str, np.ndarray]:
        total = int(self.n_tokens.sum())
        if total == 0:
            raise EmptyDataError("HeadDistances saw no query tokens")
        js_sum = self._js_sum(slice(None))
        halves = np.stack(
            [self._js_sum(h) / max(int(self.n_tokens[h]), 1) for h in (0, 1)]
        )
        return {
            "js_sum": js_sum,
            "js_mean": js_sum / total,
            "js_mean_halves": halves,
            "n_tokens": np.array(total),
            "n_tokens_halves": self.n_tokens.copy(),
            "entropy": -self.head_xlogx.sum(0) / total,
            "n_examples": np.array(self.n_examples),
        }


def measure_head_distances(
    loaded,
    segments: Sequence[Encoded],
    *,
    smoothing: float = 0.0,
    query_fraction: float = 1.0,
    seed: int = 0,
    batch_size: int = 16,
    surface: bool = False,
    progress: bool = True,
    use_cache: bool = False,
) -> dict[str, np.ndarray]:
    """Stream ``loaded`` over ``segments`` and return :class:`HeadDistances` arrays (Clark §6).

    With ``surface``, chapter 1's statistics (:class:`attnbook.studies.clark.surface.SurfaceStats`, Clark §3)
    are measured in the same pass and returned under ``surface/<name>`` keys, for when
    chapter 1's results are not available. With ``use_cache`` the arrays are cached by model
    fingerprint, segment digest, parameters and :data:`CODE_VERSION`.
    """
    from attnbook.engine.extract import stream_attention

    if not segments:
        raise EmptyDataError("no segments to compare heads on")

    def compute() -> dict[str, np.ndarray]:
        reducers: dict[str, Any] = {
            "js": HeadDistances(
                loaded.n_layers, loaded.n_heads, smoothing=smoothing, query_fraction=query_fraction, seed=seed
            )
        }
        if surface:
            reducers["surface"] = _surface_reducer(loaded.tokenizer)
        out = stream_attention(
            loaded, segments, reducers, batch_size=batch_size, progress=progress, desc="head distances (§6)"
        )
        arrays = dict(out["js"])
        for k, v in (out.get("surface") or {}).items():
            arrays[f"surface/{k}"] = np.asarray(v)
        return arrays

    if not use_cache:
        return compute()
    from attnbook.core import cache

    parts = {
        "model": loaded.key, "data": cache.digest(segments), "code": CODE_VERSION,
        "params": {"smoothing": smoothing, "query_fraction": query_fraction, "seed": seed, "surface": surface},
    }
    return cache.cached_arrays("head_distances", parts, compute)


def _surface_reducer(tokenizer):
    try:
        from attnbook.studies.clark.surface import SurfaceStats
    except ImportError as exc:  # pragma: no cover - the module ships with the package
        raise AttnbookError(
            "chapter 1's per-head statistics are needed; run chapter 1 first: "
            "attnbook run 01_clark_surface_patterns"
        ) from exc
    return SurfaceStats.for_tokenizer(tokenizer)


# ---------------------------------------------------------------------------------------------
# MDS
# ---------------------------------------------------------------------------------------------


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

    delta = _condensed(dissimilarities)
    d = pdist(np.asarray(coords, dtype=np.float64))
    raw = float(np.sum((d - delta) ** 2))
    denom = float(np.sum(d**2))
    corr = float(np.corrcoef(d, delta)[0, 1]) if d.std() > 0 and delta.std() > 0 else float("nan")
    return Stress(raw=raw, stress1=math.sqrt(raw / denom) if denom > 0 else float("nan"), correlation=corr)


def _condensed(square: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import squareform

    square = np.asarray(square, dtype=np.float64)
    if square.ndim != 2 or square.shape[0] != square.shape[1]:
        raise ValueError(f"expected a square distance matrix, got shape {square.shape}")
    if not np.allclose(square, square.T, atol=1e-9 * max(1.0, float(np.abs(square).max(initial=0.0)))):
        raise ValueError("the distance matrix is not symmetric")
    return squareform(square, checks=False)


@dataclass
class MDSResult:
    """A 2-D embedding of the heads (``coords[head, 2]``, layer-major) and its :class:`Stress`."""

    coords: np.ndarray
    stress: Stress
    init: str


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
    _condensed(d)
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


# ---------------------------------------------------------------------------------------------
# "Heads in the same layer are close": a permutation test
# ---------------------------------------------------------------------------------------------








def layer_labels(n_layers: int, n_heads: int) -> np.ndarray:
    """1-based layer number of every head, layer-major."""
    return np.repeat(np.arange(1, n_layers + 1), n_heads)


def layer_permutation_test(distances: np.ndarray, n_layers: int, n_heads: int, **kw) -> GroupTest:
    """:func:`group_permutation_test` with every head labelled by its layer (Clark §6's observation)."""
    return group_permutation_test(distances, layer_labels(n_layers, n_heads), **kw)


# ---------------------------------------------------------------------------------------------
# Hierarchical clustering
# ---------------------------------------------------------------------------------------------


@dataclass
class Clustering:
    """Average-linkage clustering of the heads and one cut of its tree.

    ``labels[head]`` are cluster numbers 1..k (layer-major heads); ``members`` maps each
    cluster to its heads' 1-based ``layer-head`` labels. ``silhouette`` is the mean
    silhouette of the cut (-1..1; > 0.5 "reasonable", > 0.7 "strong" structure in
    Kaufman & Rousseeuw's reading) and ``cophenetic`` how faithfully the tree keeps the
    distances (Pearson correlation of cophenetic and original distances).
    """

    linkage: np.ndarray
    labels: np.ndarray
    n_clusters: int
    members: dict[int, list[str]]
    silhouette: float
    cophenetic: float
    method: str


def cluster_heads(
    distances: np.ndarray,
    n_layers: int,
    n_heads: int,
    *,
    n_clusters: int | None = None,
    threshold: float | None = None,
    method: str = "average",
) -> Clustering:
    """Cut scipy's hierarchical clustering of the heads into ``n_clusters`` or at distance ``threshold``.

    Exactly one of ``n_clusters`` / ``threshold`` must be given. Clusters are numbered in
    the order their first head appears in the dendrogram (left to right).
    """
    from scipy.cluster.hierarchy import cophenet, fcluster, leaves_list, linkage

    if (n_clusters is None) == (threshold is None):
        raise ParameterError("give exactly one of n_clusters or threshold")
    d = np.asarray(distances, dtype=np.float64)
    cond = _condensed(d)
    n = d.shape[0]
    if n != n_layers * n_heads:
        raise ValueError(f"{n} heads in the distance matrix but {n_layers} x {n_heads} = {n_layers * n_heads} expected")
    if n_clusters is not None and not 1 <= n_clusters <= n:
        raise ParameterError(f"n_clusters must be between 1 and {n}, got {n_clusters}")
    z = linkage(cond, method=method)
    raw = fcluster(z, n_clusters, "maxclust") if n_clusters is not None else fcluster(z, threshold, "distance")
    order: dict[int, int] = {}
    for leaf in leaves_list(z):
        order.setdefault(int(raw[leaf]), len(order) + 1)
    labels = np.array([order[int(c)] for c in raw])
    names = all_head_labels(n_layers, n_heads)
    members = {c: [names[i] for i in np.flatnonzero(labels == c)] for c in range(1, len(order) + 1)}
    return Clustering(
        linkage=z, labels=labels, n_clusters=len(order), members=members,
        silhouette=silhouette(d, labels), cophenetic=float(cophenet(z, cond)[0]), method=method,
    )


def silhouette(distances: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of a labelling on precomputed distances (NaN for 1 or n clusters)."""
    from sklearn.metrics import silhouette_score

    k = len(np.unique(labels))
    if k < 2 or k >= len(labels):
        return float("nan")
    return float(silhouette_score(np.asarray(distances, float), labels, metric="precomputed"))


def silhouette_by_k(distances: np.ndarray, n_layers: int, n_heads: int, ks: Sequence[int] = range(2, 13),
                    method: str = "average") -> dict[int, float]:
    """Silhouette of the average-linkage cut into ``k`` clusters, for each ``k`` (choose k where it peaks)."""
    out = {}
    for k in ks:
        c = cluster_heads(distances, n_layers, n_heads, n_clusters=int(k), method=method)
        out[int(k)] = c.silhouette
    return out


def best_k(scores: dict[int, float]) -> int:
    """The ``k`` with the highest silhouette (the smallest such ``k`` on ties)."""
    valid = {k: v for k, v in scores.items() if not math.isnan(v)}
    if not valid:
        raise ValueError("no valid silhouette scores")
    top = max(valid.values())
    return min(k for k, v in valid.items() if v >= top - 1e-12)


# ---------------------------------------------------------------------------------------------
# Behaviours from chapters 1-2
# ---------------------------------------------------------------------------------------------

#: behaviour name -> (chapter-1 statistic, threshold on its per-head mean). "More than half of the
#: head's attention" follows Clark §3.1 (prev/next) and Fig. 2 / §3.2 ([CLS], [SEP], ". or ,").
BEHAVIOUR_RULES: dict[str, tuple[str, float]] = {
    "attends to previous": ("prev", 0.5),
    "attends to next": ("next", 0.5),
    "attends to itself": ("self", 0.5),
    "attends to . or ,": ("punct", 0.5),
    "attends to [CLS]": ("cls", 0.5),
    "attends to [SEP]": ("sep", 0.5),
}
BROAD = "attends broadly"
NO_BEHAVIOUR = "no behaviour found"
#: a fixed colour per (primary) behaviour, in legend order
BEHAVIOUR_COLOURS = {
    "syntactic head": "#d62728", "attends to previous": "#ff7f0e", "attends to next": "#1f77b4",
    "attends to itself": "#8c564b", "attends to . or ,": "#e377c2", BROAD: "#9467bd",
    "attends to [CLS]": "#2ca02c", "attends to [SEP]": "#bcbd22", NO_BEHAVIOUR: "#c7c7c7",
}
#: which behaviour colours a head that has several (most specific first)
PRIORITY = (
    "syntax", "attends to previous", "attends to next", "attends to itself", "attends to . or ,",
    BROAD, "attends to [CLS]", "attends to [SEP]",
)


def head_behaviours(
    per_head_stats: dict[str, np.ndarray],
    syntax_best: dict[str, str] | None = None,
    *,
    rules: dict[str, tuple[str, float]] | None = None,
    threshold: float | None = None,
    broad_quantile: float = 0.75,
) -> list[list[str]]:
    """Every head's behaviours (layer-major list of lists of names), from chapters 1-2.

    * ``attends to previous`` / ``next`` / ``itself`` / ``. or ,`` / ``[CLS]`` / ``[SEP]``: the
      head's average attention to that token (chapter 1, Clark §3.1-3.2) exceeds the rule's
      threshold (:data:`BEHAVIOUR_RULES`: more than half of its attention);
    * ``attends broadly``: the head's mean attention entropy (``entropy``, Clark §3.3) is at or
      above the ``broad_quantile`` quantile of all heads (default: the top quartile);
    * ``syntax: <relation>``: the head is chapter 2's best head for that relation
      (``syntax_best`` maps relation -> 1-based ``layer-head`` label, Clark §4.2).

    ``threshold`` replaces every rule's threshold (e.g. ``0.3`` for "more than 30%").
    ``per_head_stats`` maps statistic names to ``values[layer, head]`` (nested lists from a
    results file work). A statistic a rule needs but that is missing raises
    :class:`ParameterError` naming chapter 1.
    """
    rules = BEHAVIOUR_RULES if rules is None else rules
    if threshold is not None:
        if not 0.0 <= threshold <= 1.0:
            raise ParameterError(f"threshold must be a share of attention in [0, 1], got {threshold}")
        rules = {name: (stat, float(threshold)) for name, (stat, _) in rules.items()}
    needed = {stat for stat, _ in rules.values()} | {"entropy"}
    missing = sorted(needed - set(per_head_stats))
    if missing:
        raise ParameterError(
            f"per-head statistics {missing} are missing (have: {sorted(per_head_stats)}); they come from "
            "chapter 1: attnbook run 01_clark_surface_patterns"
        )
    stats = {k: np.asarray(per_head_stats[k], dtype=np.float64) for k in needed}
    shape = stats["entropy"].shape
    if len(shape) != 2 or any(v.shape != shape for v in stats.values()):
        raise ValueError(f"per-head statistics must all be values[layer, head]; got shapes "
                         f"{ {k: v.shape for k, v in stats.items()} }")
    if not 0.0 <= broad_quantile <= 1.0:
        raise ParameterError(f"broad_quantile must be in [0, 1], got {broad_quantile}")
    n_layers, n_heads = shape
    out: list[list[str]] = [[] for _ in range(n_layers * n_heads)]
    cut = np.quantile(stats["entropy"], broad_quantile)
    for layer in range(n_layers):
        for head in range(n_heads):
            tags = out[layer * n_heads + head]
            for name, (stat, threshold) in rules.items():
                if stats[stat][layer, head] > threshold:
                    tags.append(name)
            if stats["entropy"][layer, head] >= cut:
                tags.append(BROAD)
    for relation, label in sorted((syntax_best or {}).items()):
        layer, head = parse_head_label(label)
        if layer >= n_layers or head >= n_heads:
            raise ParameterError(f"syntax head {label} for {relation!r} is outside a {n_layers}x{n_heads} model")
        out[layer * n_heads + head].append(f"syntax: {relation}")
    return out


def primary_behaviour(behaviours: list[list[str]]) -> list[str]:
    """One behaviour per head for colouring: the first in :data:`PRIORITY` order, else ``no behaviour found``."""
    out = []
    for tags in behaviours:
        pick = NO_BEHAVIOUR
        for name in PRIORITY:
            hit = [t for t in tags if t == name or (name == "syntax" and t.startswith("syntax: "))]
            if hit:
                pick = "syntactic head" if name == "syntax" else name
                break
        out.append(pick)
    return out


def per_head_stats_from_results(
    results: dict[str, dict],
    n_layers: int,
    n_heads: int,
    fingerprint: str | None = None,
    params: dict[str, Any] | None = None,
    chapter: str = "01_clark_surface_patterns",
) -> dict[str, np.ndarray] | None:
    """Chapter 1's ``numbers["per_head"]`` arrays from :func:`attnbook.chapters.results.load_results`, or ``None``.

    ``None`` when the chapter has not been run, was run on another model (``fingerprint``),
    on other segments (any of ``params``, e.g. ``n_segments``, ``max_tokens``, ``seed``,
    differs from the chapter's recorded parameters) or has another head layout; then
    measure the statistics in this chapter's own pass instead.
    """
    entry = results.get(chapter)
    if not entry:
        return None
    if fingerprint and entry.get("model", {}).get("fingerprint") != fingerprint:
        return None
    recorded = entry.get("params", {})
    if any(recorded.get(k) != v for k, v in (params or {}).items()):
        return None
    per_head = entry.get("numbers", {}).get("per_head")
    if not isinstance(per_head, dict):
        return None
    out = {}
    for k, v in per_head.items():
        try:
            arr = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if arr.shape == (n_layers, n_heads):
            out[k] = arr
    return out or None


def syntax_best_heads(accuracy, margin: float = 0.0, skip: Sequence[str] = ("All",)) -> dict[str, str]:
    """Chapter 2's best head per dependency relation (Clark §4.2, Table 1), as relation -> ``layer-head``.

    ``accuracy`` is an :class:`attnbook.studies.clark.syntax.HeadAccuracy`. A relation's best head counts as a
    syntactic head only when it beats the relation's best fixed-offset baseline by more than
    ``margin`` (a fraction: ``0.05`` = 5 points); ``skip`` leaves out pooled rows such as "All".
    """
    out = {}
    for rel in accuracy.relations:
        if rel in skip or accuracy.total[accuracy._rel(rel)] == 0:
            continue
        layer, head, _, acc = accuracy.best(rel)
        _, base = accuracy.baseline(rel)
        if acc - base > margin:
            out[rel] = head_label(layer, head)
    return out


def split_half_stability(js_mean_halves: np.ndarray, seed: int = 0) -> dict[str, float]:
    """How reproducible the distances are: two disjoint halves of the segments (even / odd index).

    ``correlation`` - Pearson correlation of the two halves' pairwise distances;
    ``max_relative_difference`` - the largest ``|d1 - d2| / mean(d1, d2)`` over pairs;
    ``procrustes`` - :func:`procrustes_disparity` of the two halves' MDS embeddings (0: same picture).
    """
    h = np.asarray(js_mean_halves, dtype=np.float64)
    a, b = _condensed(h[0]), _condensed(h[1])
    mean = (a + b) / 2
    emb = [mds_embedding(h[k], seed=seed).coords for k in (0, 1)]
    return {
        "correlation": float(np.corrcoef(a, b)[0, 1]),
        "max_relative_difference": float(np.max(np.abs(a - b) / np.where(mean > 0, mean, 1.0))),
        "procrustes": procrustes_disparity(emb[0], emb[1]),
    }


def behaviour_test(distances: np.ndarray, behaviours: list[list[str]], *, n_permutations: int = 10000,
                   seed: int = 0) -> GroupTest | None:
    """Permutation test of "heads with the same behaviour are close", on the heads that have one.

    Heads are labelled by :func:`primary_behaviour`; heads without a behaviour are left out.
    ``None`` when no behaviour is shared by two heads or only one behaviour occurs (nothing to test).
    """
    primary = np.array(primary_behaviour(behaviours))
    keep = np.flatnonzero(primary != NO_BEHAVIOUR)
    labels = primary[keep]
    _, counts = np.unique(labels, return_counts=True)
    if len(counts) < 2 or counts.max() < 2:
        return None
    d = np.asarray(distances, dtype=np.float64)[np.ix_(keep, keep)]
    return group_permutation_test(d, labels, n_permutations=n_permutations, seed=seed)


def paper_comparison(
    layer_test: GroupTest,
    clusters: Clustering,
    mds: MDSResult,
    behaviours: GroupTest | None,
    min_size: int = 3,
) -> list[dict]:
    """Clark §6's claims beside this run's numbers, with a verdict computed from the numbers.

    * "several clear clusters": the silhouette of the chosen cut (Kaufman & Rousseeuw: > 0.5
      reasonable structure, 0.25-0.5 weak, below none), counting only clusters of at least
      ``min_size`` heads as clusters (smaller ones are odd heads split off): agrees with a
      silhouette > 0.5 and >= 3 such clusters, partly with > 0.25 and >= 2;
    * clusters "often corresponding to behaviours": same-behaviour heads closer than random
      (permutation p < 0.01 agrees, < 0.05 partly);
    * "heads within the same layer are often fairly close": same-layer heads closer than
      random (p < 0.01 and ratio < 1), and the share of heads whose nearest head is in their own
      layer (at least half and twice chance: agrees; above chance: partly);
    * Fig. 6's 2-D distances "approximately match" the divergences: Kruskal stress-1 <= 0.1
      agrees, <= 0.2 partly (the paper gives no stress).
    """
    rows = []
    sizes = [len(m) for m in clusters.members.values()]
    n_real = sum(1 for n in sizes if n >= min_size)
    s = clusters.silhouette
    outcome = verdict.conditions(s > 0.5 and n_real >= 3, s > 0.25 and n_real >= 2)
    rows.append(dict(
        experiment="§6 clusters", quantity=f"silhouette of the average-linkage cut at k (clusters of >= {min_size} heads)",
        paper="several clear clusters (Fig. 6)", ours=f"{s:.2f} at k = {clusters.n_clusters} ({n_real})",
        verdict=outcome, note="silhouette > 0.5: reasonable structure, 0.25-0.5: weak (Kaufman & Rousseeuw)",
    ))
    if behaviours is None:
        rows.append(dict(
            experiment="§6 clusters", quantity="same-behaviour heads closer than others (permutation p)",
            paper="clusters often correspond to behaviours", ours="too few heads with a shared behaviour",
            verdict=verdict.NOT_COMPARABLE, note="behaviours from chapters 1-2",
        ))
    else:
        p = behaviours.p_value
        rows.append(dict(
            experiment="§6 clusters", quantity="same-behaviour / other-behaviour mean JS, permutation p",
            paper="clusters often correspond to behaviours",
            ours=f"{behaviours.ratio:.2f}, p = {p:.4f}",
            verdict=verdict.conditions(p < 0.01 and behaviours.ratio < 1, p < 0.05),
            note=f"{len(behaviours.group_within)} behaviours shared by >= 2 heads, {behaviours.n_permutations} shuffles",
        ))
    lt = layer_test
    rows.append(dict(
        experiment="§6 layers", quantity="same-layer / other-layer mean JS, permutation p",
        paper="heads in the same layer are often fairly close",
        ours=f"{lt.within_mean:.3f} / {lt.between_mean:.3f} = {lt.ratio:.2f}, p = {lt.p_value:.4f}",
        verdict=verdict.conditions(lt.p_value < 0.01 and lt.ratio < 1, lt.p_value < 0.05),
        note=f"{lt.n_permutations} shuffles of the layer labels",
    ))
    rows.append(dict(
        experiment="§6 layers", quantity="heads whose nearest head is in the same layer",
        paper="often", ours=f"{lt.nn_same:.0%} (chance {lt.nn_chance:.0%})",
        verdict=verdict.conditions(lt.nn_same >= max(0.5, 2 * lt.nn_chance), lt.nn_same > lt.nn_chance),
        note="nearest by JS distance",
    ))
    s1 = mds.stress.stress1
    rows.append(dict(
        experiment="§6 MDS", quantity="Kruskal stress-1 of the 2-D embedding (correlation of distances)",
        paper="distances approximately match (Fig. 6); no stress given",
        ours=f"{s1:.3f} (r = {mds.stress.correlation:.2f})",
        verdict=verdict.conditions(s1 <= 0.1, s1 <= 0.2),
        note="Kruskal: 0.05 good, 0.1 fair, 0.2 poor",
    ))
    return rows


# ---------------------------------------------------------------------------------------------
# Tables and charts
# ---------------------------------------------------------------------------------------------


def embedding_frame(
    coords: np.ndarray,
    n_layers: int,
    n_heads: int,
    behaviours: list[list[str]] | None = None,
    clusters: np.ndarray | None = None,
):
    """One row per head: label, layer, head (1-based), x, y, behaviours, primary behaviour (and cluster, if given)."""
    import pandas as pd

    coords = np.asarray(coords)
    n = n_layers * n_heads
    if coords.shape != (n, 2):
        raise ValueError(f"expected coords[{n}, 2], got {coords.shape}")
    behaviours = behaviours or [[] for _ in range(n)]
    primary = primary_behaviour(behaviours)
    rows = []
    for k in range(n):
        layer, head = divmod(k, n_heads)
        rows.append({
            "label": head_label(layer, head), "layer": layer + 1, "head": head + 1,
            "x": float(coords[k, 0]), "y": float(coords[k, 1]),
            "behaviours": ", ".join(behaviours[k]) if behaviours[k] else "-",
            "behaviour": primary[k],
        })
        if clusters is not None:
            rows[-1]["cluster"] = int(clusters[k])
    return pd.DataFrame(rows)


def _tooltip(frame):
    import altair as alt

    tips = [alt.Tooltip("label:N", title="head"), alt.Tooltip("layer:O"), alt.Tooltip("behaviours:N")]
    if "cluster" in frame.columns:
        tips.append(alt.Tooltip("cluster:O"))
    return tips


def mds_layer_chart(frame, title: str = "", size: int = 380):
    """Clark Fig. 6 style: heads in the MDS plane, coloured by layer, labelled on hover."""
    import altair as alt

    n_layers = int(frame["layer"].max())
    return (
        alt.Chart(frame)
        .mark_circle(size=70, opacity=0.85, stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("x:Q", title="MDS 1", axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("y:Q", title="MDS 2", axis=alt.Axis(labels=False, ticks=False)),
            color=alt.Color("layer:O", title="layer", scale=alt.Scale(scheme="viridis"),
                            sort=list(range(1, n_layers + 1))),
            tooltip=_tooltip(frame),
        )
        .properties(title=title, width=size, height=size)
    )


def mds_behaviour_chart(frame, title: str = "", size: int = 380):
    """Heads in the MDS plane coloured by their (primary) behaviour; grey heads have none; layer as text."""
    import altair as alt

    present = set(frame["behaviour"])
    domain = [n for n in BEHAVIOUR_COLOURS if n in present] + sorted(present - set(BEHAVIOUR_COLOURS))
    colours = [BEHAVIOUR_COLOURS.get(n, "#17becf") for n in domain]
    base = alt.Chart(frame).encode(
        x=alt.X("x:Q", title="MDS 1", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("y:Q", title="MDS 2", axis=alt.Axis(labels=False, ticks=False)),
    )
    points = base.mark_circle(size=90, opacity=0.85).encode(
        color=alt.Color("behaviour:N", title="behaviour", scale=alt.Scale(domain=domain, range=colours)),
        tooltip=_tooltip(frame),
    )
    text = base.mark_text(fontSize=7, color="black").encode(text="layer:O", tooltip=_tooltip(frame))
    return (points + text).properties(title=title, width=size, height=size)


def dendrogram_frames(clustering: Clustering, n_layers: int, n_heads: int):
    """Segments and leaves of the clustering's dendrogram (scipy's layout) as two DataFrames."""
    import pandas as pd
    from scipy.cluster.hierarchy import dendrogram

    names = all_head_labels(n_layers, n_heads)
    tree = dendrogram(clustering.linkage, no_plot=True, labels=names)
    segs = []
    for xs, ys in zip(tree["icoord"], tree["dcoord"]):
        for k in range(3):
            segs.append({"x": xs[k], "x2": xs[k + 1], "y": ys[k], "y2": ys[k + 1]})
    leaves = []
    for pos, leaf in enumerate(tree["leaves"]):
        layer, head = divmod(int(leaf), n_heads)
        leaves.append({"x": 5.0 + 10.0 * pos, "label": names[leaf], "layer": layer + 1,
                       "cluster": int(clustering.labels[leaf])})
    return pd.DataFrame(segs), pd.DataFrame(leaves)


def cut_height(clustering: Clustering) -> float | None:
    """A tree height that cuts the dendrogram into ``clustering.n_clusters`` clusters (midway between merges)."""
    heights = np.sort(clustering.linkage[:, 2])
    k = clustering.n_clusters
    if k <= 1 or k > len(heights):
        return None
    return float((heights[-k] + heights[-k + 1]) / 2)


def dendrogram_chart(clustering: Clustering, n_layers: int, n_heads: int, title: str = "",
                     width: int = 760, height: int = 240, cut: float | str | None = "auto"):
    """The average-linkage tree, leaves coloured by cluster and labelled ``layer-head`` (up to 100 heads).

    A dashed line marks the cut: ``"auto"`` places it between the merges that give the clusters.
    """
    import altair as alt
    import pandas as pd

    segs, leaves = dendrogram_frames(clustering, n_layers, n_heads)
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[0, 10 * len(leaves)]))
    tree = alt.Chart(segs).mark_rule(color="#555").encode(
        x=x, x2="x2:Q", y=alt.Y("y:Q", title="distance (mean JS, nats)"), y2="y2:Q")
    dots = alt.Chart(leaves).mark_circle(size=45).encode(
        x=x, y=alt.datum(0), color=alt.Color("cluster:N", title="cluster"),
        tooltip=[alt.Tooltip("label:N", title="head"), "layer:O", "cluster:N"])
    chart = tree + dots
    if len(leaves) <= 100:
        chart = chart + alt.Chart(leaves).mark_text(angle=270, align="right", dx=-6, fontSize=7).encode(
            x=x, y=alt.datum(0), text="label:N")
    if cut == "auto":
        cut = cut_height(clustering)
    if cut is not None:
        chart = chart + alt.Chart(pd.DataFrame({"y": [cut]})).mark_rule(strokeDash=[4, 4], color="red").encode(y="y:Q")
    return chart.properties(title=title, width=width, height=height)


def cluster_grid_chart(clustering: Clustering, n_layers: int, n_heads: int, behaviours: list[list[str]] | None = None,
                       title: str = "", cell: int = 24):
    """Layer x head grid, each head coloured (and numbered) by its cluster."""
    import altair as alt

    frame = embedding_frame(np.zeros((n_layers * n_heads, 2)), n_layers, n_heads, behaviours, clustering.labels)
    base = alt.Chart(frame).encode(x=alt.X("head:O", title="head"), y=alt.Y("layer:O", title="layer"))
    rect = base.mark_rect().encode(color=alt.Color("cluster:N", title="cluster"), tooltip=_tooltip(frame))
    text = base.mark_text(fontSize=9).encode(text="cluster:N", tooltip=_tooltip(frame))
    return (rect + text).properties(title=title, width=cell * n_heads, height=cell * n_layers)


def distance_heatmap(distances: np.ndarray, n_layers: int, n_heads: int, title: str = "", cell: int = 5):
    """The head-by-head distance matrix, heads in layer-major order (layer blocks show as squares)."""
    import altair as alt
    import pandas as pd

    names = all_head_labels(n_layers, n_heads)
    d = np.asarray(distances)
    i, j = np.meshgrid(np.arange(len(names)), np.arange(len(names)), indexing="ij")
    frame = pd.DataFrame({"a": np.array(names)[i.ravel()], "b": np.array(names)[j.ravel()], "js": d.ravel()})
    firsts = [head_label(layer, 0) for layer in range(n_layers)]  # one tick per layer
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("b:N", sort=names, title="head", axis=alt.Axis(values=firsts, labelAngle=0)),
            y=alt.Y("a:N", sort=names, title="head", axis=alt.Axis(values=firsts)),
            color=alt.Color("js:Q", title="mean JS", scale=alt.Scale(scheme="viridis", reverse=True)),
            tooltip=[alt.Tooltip("a:N", title="head"), alt.Tooltip("b:N", title="other"),
                     alt.Tooltip("js:Q", format=".3f")],
        )
        .properties(title=title, width=cell * len(names), height=cell * len(names))
    )


def silhouette_chart(scores: dict[int, float], chosen: int | None = None, title: str = "", width: int = 320,
                     height: int = 160):
    """Silhouette of the average-linkage cut against the number of clusters ``k`` (the chosen k marked)."""
    import altair as alt
    import pandas as pd

    frame = pd.DataFrame({"k": list(scores), "silhouette": list(scores.values())})
    frame["chosen"] = frame["k"] == chosen
    line = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("k:O", title="clusters k"), y=alt.Y("silhouette:Q", title="mean silhouette"),
        tooltip=["k:O", alt.Tooltip("silhouette:Q", format=".3f")])
    mark = alt.Chart(frame[frame["chosen"]]).mark_point(size=140, color="red", filled=False).encode(
        x="k:O", y="silhouette:Q")
    return (line + mark).properties(title=title, width=width, height=height)


def behaviour_cluster_table(clusters: Clustering, behaviours: list[list[str]]):
    """Cross-table: for every cluster, its size, layers, and how many of its heads show each behaviour."""
    import pandas as pd

    primary = primary_behaviour(behaviours)
    if len(primary) != len(clusters.labels):
        raise ValueError(f"{len(primary)} heads with behaviours but {len(clusters.labels)} clustered")
    rows = []
    for c, members in clusters.members.items():
        idx = [k for k in range(len(primary)) if clusters.labels[k] == c]
        layers = sorted({int(m.split("-")[0]) for m in members})
        row: dict[str, Any] = {"cluster": c, "heads": len(members), "layers": ", ".join(map(str, layers))}
        for name in sorted(set(primary)):
            row[name] = sum(1 for k in idx if primary[k] == name)
        row["members"] = " ".join(members)
        rows.append(row)
    return pd.DataFrame(rows).fillna(0)
