"""`make bench`, the field's libraries against the book's own code (issue 33).

For each piece of data or statistics code the book still writes by hand, the library that could replace it is timed
beside it in one run (alternately, best of a few repeats) and their numbers are compared. A library replaces ours
only where it is as fast (ratio library/ours <= 1.05) and gives the same numbers for the same input and seed; the
reason for each piece kept stands in one line beside it (``attnbook/data/conllu.py``, ``attnbook/stats.py``) and in
CONTRIBUTING.md's dependency table.

* CoNLL-U: ``conllu.parse_incr`` against :func:`attnbook.data.conllu.read_conllu` on the largest local files, both
  as the book would use it (every field a raw string, our checks, our :class:`Sentence`) and with the package's own
  field parsers;
* metrics: scikit-learn's ``accuracy_score`` / ``f1_score`` and SciPy's ``pearsonr`` / ``spearmanr`` / ``rankdata``
  against :mod:`attnbook.stats` on inputs of the GLUE dev sets' sizes;
* the bootstrap: ``scipy.stats.bootstrap`` (paired, percentile, the same seed and batches of 200, so the same draws)
  against :func:`attnbook.stats.resampled_ratio`, for one statistic and for one per head; time and peak memory;
* multiple comparisons: ``statsmodels``' ``multipletests`` against :func:`attnbook.stats.adjust_pvalues` (statsmodels
  is not a dependency: the row says so when it is not installed).

    python benchmarks/libraries.py [--quick]    # prints the table; `benchmarks/run.py --only libraries` records it
"""
from __future__ import annotations

import gc
import re
import sys
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from attnbook.core.errors import MalformedInputError  # noqa: E402
from attnbook.data.conllu import COLUMNS, Sentence, read_conllu  # noqa: E402

#: a library replaces ours only at or under this time ratio (library / ours)
AS_FAST = 1.05


def interleaved_best(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` seconds of each function, run in turn so all see the same machine state."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return {k: min(v) for k, v in times.items()}


def peak_mib(fn: Callable[[], Any]) -> float:
    """Peak memory NumPy and Python allocate while ``fn`` runs (tracemalloc), MiB."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def _max_diff(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    d = np.where(both_nan, 0.0, np.abs(a - b))
    return float(np.nanmax(np.where(np.isnan(d), np.inf, d))) if d.size else 0.0


# ----------------------------------------------------------------------------- CoNLL-U with the `conllu` package

_RAW = {name: (lambda cols, i: cols[i]) for name in COLUMNS}  # every field as the file's string (ours keeps strings)
_META = {"__fallback__": lambda key, value: (key, value)}  # every comment as (key, value), none dropped
_NOT_A_WORD = re.compile(r"^\d+(-\d+|\.\d+)$")  # multiword-token ranges and empty nodes


def conllu_package_sentences(path: Path | str) -> list[Sentence]:
    """The sentences of a CoNLL-U file read by ``conllu.parse_incr``, with the book's checks and :class:`Sentence`.

    What the package cannot give is left out: the raw comment lines (it keeps ``key = value`` pairs, rebuilt here as
    ``# key = value``) and line numbers (its errors and ours below name the sentence, not the line).
    """
    import conllu

    path = Path(path)
    out = []
    with open(path, encoding="utf-8") as fh:
        for k, tokens in enumerate(conllu.parse_incr(fh, fields=COLUMNS, field_parsers=_RAW, metadata_parsers=_META)):
            cols, extra = [], []
            for t in tokens:
                row = [t[c] for c in COLUMNS if c in t]
                if len(row) != 10:  # the package accepts lines with fewer columns
                    raise MalformedInputError(path, None, f"sentence {k + 1}: expected 10 columns, got {len(row)}")
                if _NOT_A_WORD.match(row[0]):
                    extra.append((len(cols), "\t".join(row)))
                    continue
                if row[0] != str(len(cols) + 1):
                    raise MalformedInputError(path, None, f"sentence {k + 1}: word ids must be consecutive from 1")
                cols.append(row)
            n = len(cols)
            heads = [int(c[6]) for c in cols]
            if any(not 0 <= h <= n or h == i for i, h in enumerate(heads, start=1)):
                raise MalformedInputError(path, None, f"sentence {k + 1}: a HEAD outside 0..{n} or a word its own head")
            comments = [f"# {key}" if value is None else f"# {key} = {value}" for key, value in tokens.metadata.items()]
            c = list(zip(*cols))
            out.append(Sentence(
                ids=[int(x) for x in c[0]], words=list(c[1]), lemmas=list(c[2]), upos=list(c[3]), xpos=list(c[4]),
                feats=list(c[5]), head=heads, deprel=list(c[7]), deps=list(c[8]), misc=list(c[9]),
                comments=comments, extra=extra, source=None,
            ))
    return out


def conllu_package_default(path: Path | str) -> int:
    """Words of a file read by ``conllu.parse_incr`` with the package's own field parsers (feats and misc as dicts,
    deps as pairs, ids and heads as integers), no checks: the package as its documentation shows it."""
    import conllu

    with open(path, encoding="utf-8") as fh:
        return sum(len(s) for s in conllu.parse_incr(fh))


def biggest_conllu_files(data: Path | str, k: int = 3) -> list[Path]:
    return sorted(Path(data).rglob("*.conllu"), key=lambda p: p.stat().st_size, reverse=True)[:k]


def bench_conllu(data: Path | str, k: int = 3, repeats: int = 3) -> list[dict]:
    out = []
    for path in biggest_conllu_files(data, k):
        t = interleaved_best({"ours": lambda: read_conllu(path), "library": lambda: conllu_package_sentences(path),
                              "library_default": lambda: conllu_package_default(path)}, repeats)
        ours, lib = read_conllu(path), conllu_package_sentences(path)
        same = len(ours) == len(lib) and all(
            (a.ids, a.words, a.lemmas, a.upos, a.xpos, a.feats, a.head, a.deprel, a.deps, a.misc, a.extra)
            == (b.ids, b.words, b.lemmas, b.upos, b.xpos, b.feats, b.head, b.deprel, b.deps, b.misc, b.extra)
            for a, b in zip(ours, lib))
        out.append({"file": path.name, "mib": round(path.stat().st_size / 2**20, 1), "sentences": len(ours),
                    "ours_s": round(t["ours"], 3), "library_s": round(t["library"], 3),
                    "library_default_s": round(t["library_default"], 3),
                    "ratio": round(t["library"] / t["ours"], 2),
                    "ratio_default": round(t["library_default"] / t["ours"], 2), "same_trees": same})
    return out


# ----------------------------------------------------------------------------- metrics with scikit-learn / SciPy


def sk_accuracy(pred, gold) -> float:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(gold, pred))


def sk_f1(pred, gold, positive: int = 1) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(gold, pred, pos_label=positive, zero_division=0))


def sp_pearson(x, y) -> float:
    from scipy.stats import pearsonr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: NaN with a ConstantInputWarning
        return float(pearsonr(np.asarray(x, float), np.asarray(y, float)).statistic)


def sp_spearman(x, y) -> float:
    from scipy.stats import spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(x, y).statistic)


def sp_ranks(x) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(np.asarray(x, dtype=np.float64).ravel())


def bench_metrics(calls: int = 200, repeats: int = 5, seed: int = 0) -> dict:
    """Each metric ``calls`` times on inputs of a GLUE dev set's size: MRPC (408) and QQP (40,430) for accuracy and
    F1; STS-B (1,500) scores for the correlations, and a bootstrap resample of them (ties) for the ranks."""
    from attnbook import stats

    rng = np.random.default_rng(seed)
    out = {}
    for n in (408, 40430):
        gold, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
        out[f"accuracy_{n}"] = (lambda p=pred, g=gold: stats.accuracy(p, g), lambda p=pred, g=gold: sk_accuracy(p, g))
        out[f"f1_{n}"] = (lambda p=pred, g=gold: stats.f1_binary(p, g), lambda p=pred, g=gold: sk_f1(p, g))
    gold = rng.uniform(0, 5, 1500)
    pred = gold + rng.normal(0, 1.2, 1500)
    tied = pred[rng.integers(0, 1500, 1500)]
    out["pearson_1500"] = (lambda: stats.pearson(pred, gold), lambda: sp_pearson(pred, gold))
    out["spearman_1500"] = (lambda: stats.spearman(tied, gold), lambda: sp_spearman(tied, gold))
    out["ranks_1500"] = (lambda: stats.average_ranks(tied), lambda: sp_ranks(tied))
    report = {}
    for name, (ours, lib) in out.items():
        t = interleaved_best({"ours": lambda f=ours: [f() for _ in range(calls)],
                              "library": lambda f=lib: [f() for _ in range(calls)]}, repeats)
        report[name] = {"calls": calls, "ours_us": round(t["ours"] / calls * 1e6, 1),
                        "library_us": round(t["library"] / calls * 1e6, 1),
                        "ratio": round(t["library"] / t["ours"], 2), "max_diff": _max_diff(ours(), lib()),
                        "identical": bool(np.array_equal(ours(), lib(), equal_nan=True))}
    return report


# ----------------------------------------------------------------------------- the bootstrap with scipy.stats.bootstrap


def scipy_resampled_ratio(numerators, denominators=None, *, n_resamples: int = 2000, seed: int = 0,
                          confidence: float = 0.95) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """:func:`attnbook.stats.resampled_ratio` by ``scipy.stats.bootstrap``: units resampled as pairs (numerator,
    denominator) from ``default_rng(seed)`` in batches of 200 (the book's draws), the percentile interval.
    Returns ``(resampled[resample, ...], (low, high))``."""
    from scipy.stats import bootstrap

    num = np.asarray(numerators, dtype=np.float64)
    den = np.ones(num.shape[0]) if denominators is None else np.asarray(denominators, dtype=np.float64)
    den = np.broadcast_to(den.reshape(den.shape + (1,) * (num.ndim - den.ndim)), num.shape)

    def ratio(a, b, axis):
        return a.sum(axis=axis) / b.sum(axis=axis)

    with np.errstate(invalid="ignore", divide="ignore"):
        res = bootstrap((np.moveaxis(num, 0, -1), np.moveaxis(den, 0, -1)), ratio, paired=True, vectorized=True,
                        axis=-1, n_resamples=n_resamples, batch=200, method="percentile",
                        confidence_level=confidence, rng=np.random.default_rng(seed))
    return np.moveaxis(res.bootstrap_distribution, -1, 0), (res.confidence_interval.low, res.confidence_interval.high)


def bench_bootstrap(repeats: int = 3, seed: int = 0, quick: bool = False, units: int = 1000) -> dict:
    """One ratio over 1,000 units (a chapter's per-segment mean) and one per head (144 of them, 1,000 units: chapter
    1's per-head attention shares), 2,000 resamples: time, peak memory and the largest difference."""
    from attnbook import stats

    rng = np.random.default_rng(seed)
    cases = {"one_statistic": (rng.uniform(0, 1, units), rng.uniform(1, 2, units)),
             "per_head_144": (rng.uniform(0, 1, (units, 144)), rng.uniform(1, 2, units))}
    r = 500 if quick else 2000
    report = {}
    for name, (num, den) in cases.items():
        ours = lambda: stats.resampled_ratio(num, den, n_resamples=r, seed=1)  # noqa: E731
        lib = lambda: scipy_resampled_ratio(num, den, n_resamples=r, seed=1)  # noqa: E731
        t = interleaved_best({"ours": ours, "library": lib}, repeats)
        a, (b, (lo, hi)) = ours(), lib()
        lo_a, hi_a = stats.percentile_interval(a)
        report[name] = {"units": num.shape[0], "statistics": int(np.prod(num.shape[1:])), "resamples": r,
                        "ours_s": round(t["ours"], 4), "library_s": round(t["library"], 4),
                        "ratio": round(t["library"] / t["ours"], 2),
                        "ours_peak_mib": round(peak_mib(ours), 1), "library_peak_mib": round(peak_mib(lib), 1),
                        "max_diff_draws": _max_diff(a, b), "max_diff_interval": max(_max_diff(lo_a, lo), _max_diff(hi_a, hi)),
                        "identical": bool(np.array_equal(a, b))}
    return report


def same_draws_as_scipy(n: int = 40, n_resamples: int = 450, seed: int = 3) -> bool:
    """Whether ``scipy.stats.bootstrap`` (batches of 200, ``default_rng(seed)``) draws the units that
    :func:`attnbook.stats.bootstrap_counts` draws: on integer data every resampled sum is exact in any order, so equal
    sums mean equal draws."""
    from scipy.stats import bootstrap

    from attnbook import stats

    x = np.random.default_rng(0).integers(0, 1000, n).astype(np.float64)
    ours = stats.bootstrap_counts(n, n_resamples, seed) @ x
    theirs = bootstrap((x,), lambda a, axis: a.sum(axis=axis), vectorized=True, n_resamples=n_resamples, batch=200,
                       method="percentile", rng=np.random.default_rng(seed)).bootstrap_distribution
    return bool(np.array_equal(ours, theirs))


# ----------------------------------------------------------------------------- Holm with statsmodels


def statsmodels_adjust(p, method: str = "holm") -> np.ndarray:
    from statsmodels.stats.multitest import multipletests

    return multipletests(np.asarray(p, dtype=np.float64), method=method)[1]


def bench_multitest(m: int = 144, calls: int = 20, repeats: int = 3, seed: int = 0) -> dict:
    """``m`` p-values (one per head of a 12 x 12 model) adjusted ``calls`` times by each method."""
    from attnbook import stats

    try:
        import statsmodels
    except ImportError:
        return {"error": "statsmodels is not installed (not a dependency: its wheel is 12 MB, 65 MB installed)"}
    p = np.random.default_rng(seed).uniform(size=m) ** 2
    report = {"statsmodels": statsmodels.__version__}
    for method in ("holm", "bonferroni", "fdr_bh"):
        t = interleaved_best({"ours": lambda: [stats.adjust_pvalues(p, method) for _ in range(calls)],
                              "library": lambda: [statsmodels_adjust(p, method) for _ in range(calls)]}, repeats)
        a, b = stats.adjust_pvalues(p, method), statsmodels_adjust(p, method)
        report[method] = {"ours_us": round(t["ours"] / calls * 1e6, 1), "library_us": round(t["library"] / calls * 1e6, 1),
                          "ratio": round(t["library"] / t["ours"], 2), "max_diff": _max_diff(a, b),
                          "identical": bool(np.array_equal(a, b))}
    return report


# ----------------------------------------------------------------------------- report


def bench_libraries(quick: bool = False) -> dict:
    from attnbook.core.paths import data_dir

    return {"conllu": _catching(lambda: bench_conllu(data_dir(), k=1 if quick else 3, repeats=2 if quick else 3)),
            "metrics": _catching(lambda: bench_metrics(calls=50 if quick else 200, repeats=3 if quick else 5)),
            "bootstrap": _catching(lambda: {**bench_bootstrap(quick=quick), "same_draws": same_draws_as_scipy()}),
            "multitest": _catching(bench_multitest)}


def _catching(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a part that cannot run is reported, not hidden
        return {"error": f"{type(exc).__name__}: {exc}"}


def _verdict(ratio: float, same: bool) -> str:
    return "library as fast and equal" if ratio <= AS_FAST and same else "ours kept"


def _same(identical: bool, diff: float) -> str:
    return "identical" if identical else f"max diff {diff:.1e}"


def rows(report: dict | None) -> list[tuple[str, str, str]]:
    """The README table's rows for :func:`bench_libraries`' report (library time / ours; above 1 the library is slower)."""
    if not isinstance(report, dict):
        return []
    target = f"library adopted if <= {AS_FAST}x and same numbers"
    out = []
    conllu = report.get("conllu")
    if isinstance(conllu, list):
        for c in conllu:
            out.append((f"library vs ours, CoNLL-U {c['file']} ({c['mib']} MiB): `conllu.parse_incr` + our checks "
                        "vs `data.conllu.read_conllu`",
                        f"{c['ratio']:.2f}x ({c['ours_s']} -> {c['library_s']} s; package defaults "
                        f"{c['ratio_default']:.2f}x), {'same' if c['same_trees'] else 'different'} trees; "
                        f"{_verdict(c['ratio'], c['same_trees'])}", target))
    elif isinstance(conllu, dict):
        out.append(("library vs ours, CoNLL-U", conllu.get("error", "not run"), target))
    labels = {"accuracy": "`sklearn.metrics.accuracy_score` vs `stats.accuracy`",
              "f1": "`sklearn.metrics.f1_score` vs `stats.f1_binary`",
              "pearson": "`scipy.stats.pearsonr` vs `stats.pearson`",
              "spearman": "`scipy.stats.spearmanr` vs `stats.spearman` (ties)",
              "ranks": "`scipy.stats.rankdata` vs `stats.average_ranks` (ties)"}
    metrics = report.get("metrics") or {}
    for key, m in metrics.items():
        if not isinstance(m, dict):
            continue
        name, n = key.rsplit("_", 1)
        out.append((f"library vs ours, {labels[name]}, n = {int(n):,}",
                    f"{m['ratio']:.2f}x ({m['ours_us']} -> {m['library_us']} us a call), "
                    f"{_same(m['identical'], m['max_diff'])}; "
                    f"{_verdict(m['ratio'], m['identical'])}", target))
    if "error" in metrics:
        out.append(("library vs ours, metrics", metrics["error"], target))
    boot = report.get("bootstrap") or {}
    for key, label in (("one_statistic", "one ratio"), ("per_head_144", "a ratio per head (144)")):
        b = boot.get(key)
        if isinstance(b, dict):
            out.append((f"library vs ours, `scipy.stats.bootstrap` (paired, percentile, same draws) vs "
                        f"`stats.resampled_ratio`: {label}, {b['units']:,} units x {b['resamples']:,} resamples",
                        f"{b['ratio']:.2f}x ({b['ours_s']} -> {b['library_s']} s), peak {b['ours_peak_mib']} -> "
                        f"{b['library_peak_mib']} MiB, {_same(b['identical'], b['max_diff_draws'])}"
                        f"{'' if boot.get('same_draws') else ', other draws'}; {_verdict(b['ratio'], b['identical'])}",
                        target))
    if "error" in boot:
        out.append(("library vs ours, bootstrap", boot["error"], target))
    mt = report.get("multitest") or {}
    if "error" in mt:
        out.append(("library vs ours, `statsmodels` `multipletests` vs `stats.adjust_pvalues`", mt["error"], target))
    for method in ("holm", "bonferroni", "fdr_bh"):
        m = mt.get(method)
        if isinstance(m, dict):
            out.append((f"library vs ours, `statsmodels` `multipletests(method=\"{method}\")` vs "
                        f"`stats.adjust_pvalues`, 144 p-values",
                        f"{m['ratio']:.2f}x ({m['ours_us']} -> {m['library_us']} us a call), "
                        f"{_same(m['identical'], m['max_diff'])}; "
                        f"{_verdict(m['ratio'], m['identical'])}", target))
    return out


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    for a, b, _ in rows(bench_libraries(quick=quick)):
        print(f"{a}\n    {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
