"""The questions between the papers, each answered with a number, an honest test and a generated sentence.

* :func:`syntax_vs_importance` - are the heads that track syntax (Clark §4.2: a head's best margin over the
  relation's fixed-offset baseline) the ones a fine-tuned task needs (Michel §4.1 importance)? Per task.
* :func:`pattern_vs_effects` - does a head's pattern class (Kovaleva §4.1) go with its importance and with the
  effect of disabling it (Kovaleva §4.6)?
* :func:`framenet_switched_off` - the frame-semantic heads (Kovaleva §4.2) switched off on each task, which
  Kovaleva et al. §5 ask about and do not measure; read from chapter 5's disabling sweep.
* :func:`pruned_first` - are the heads a pruning order by importance removes first (Michel §4.2) the broad,
  [CLS]-sink or positional ones (Clark §3)?

The tests: :func:`rank_test` (Spearman ρ with a two-sided permutation p-value and a percentile bootstrap
interval over heads) and :func:`class_test` (Kruskal-Wallis H across classes with a permutation p-value). Heads
are the units; heads of one layer are not independent, so the intervals and p-values are, if anything,
optimistic, and a test that does not reject says the data cannot tell, not that there is no relation.

No paper measured these questions: every row of the chapter (:func:`comparison_rows`) is one of the book's own
questions (:data:`attnbook.verdict.OWN`), counted in none of the papers' tallies, stated as the book's expectation
and judged by its own rule (:data:`RANK_RULE`, :data:`CLASS_RULE`, :data:`FRAME_RULE`): *supported*, *not
supported* or *undecided*, an undecided row saying what its heads or examples could detect.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.stats import rankdata

from attnbook import verdict
from attnbook.atlas.cards import majority_class
from attnbook.core.heads import head_label
from attnbook.stats import Estimate, percentile_interval

ALPHA = 0.05

#: a rank question (syntax vs importance, heads pruned first): the relation is positive when the bootstrap interval
#: of ρ over heads lies above 0 (below 0: not supported), the rule :func:`rank_test`'s ``tells`` follows
RANK_RULE = verdict.Beyond(0.0, above=True, what="Spearman ρ over heads")
#: a class question (pattern class vs importance or disabling): the classes differ when the permutation test rejects
CLASS_RULE = verdict.Rejects("Kruskal-Wallis H, permutation test over heads", ALPHA)
#: the frame heads switched off (Kovaleva §5's open question): the book expects no effect, a mean change of the
#: task's score within ±1 point (chapter 6's tolerance for "little loss"); a change beyond it: the task needs them
FRAME_POINTS = 1.0
FRAME_RULE = verdict.NoEffect(FRAME_POINTS, source="the size of change Michel et al. found with all but one head of a "
                                                  "BERT layer removed, at most 0.96 points (their Table 3)")


# --------------------------------------------------------------------------------------------- the tests


def _corr_rows(rx: np.ndarray, ry: np.ndarray) -> np.ndarray:
    """Pearson correlation of ``rx`` with every row of ``ry`` (ranks in, Spearman out)."""
    x = rx - rx.mean()
    y = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((x**2).sum() * (y**2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (y @ x) / den


def _within_ranks(v: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Ranks of ``v[..., unit]`` within each stratum, centred on the stratum's mean rank (a stratum's level removed)."""
    out = np.zeros(v.shape, dtype=np.float64)
    for g in np.unique(strata):
        sel = strata == g
        r = rankdata(v[..., sel], axis=-1)
        out[..., sel] = r - r.mean(axis=-1, keepdims=True)
    return out


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(-1) / np.sqrt((a**2).sum(-1) * (b**2).sum(-1))


def rank_test(x: Sequence[float], y: Sequence[float], *, n_permutations: int = 10000, n_resamples: int = 2000,
              seed: int = 0, alpha: float = ALPHA, strata: Sequence[int] | None = None) -> dict:
    """Spearman ρ of ``x`` and ``y`` over the heads where both are measured, its two-sided permutation p-value
    (``(1 + #{|ρ_perm| >= |ρ|}) / (1 + n_permutations)``) and its 95% percentile bootstrap interval over heads.

    Returns ``estimate`` (an :class:`~attnbook.stats.Estimate`, unit "heads"), ``rho``, ``p``, ``n`` and ``tells``:
    ``"positive"`` / ``"negative"`` when the interval excludes 0 (:data:`RANK_RULE`, which judges the chapter's row;
    the permutation p-value is reported beside it), else ``"cannot tell"`` (also when fewer than 4 heads or a
    constant measure leave nothing to test)."""
    x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"estimate": Estimate(float("nan"), None, None, n, "heads"), "rho": float("nan"), "p": float("nan"),
                "n": n, "tells": "cannot tell", "why": "fewer than 4 heads or a constant measure"}
    if strata is not None:
        return _stratified_rank_test(x, y, np.asarray(strata).ravel()[ok], n_permutations=n_permutations,
                                     n_resamples=n_resamples, seed=seed)
    rx, ry = rankdata(x), rankdata(y)
    rho = float(_corr_rows(rx, ry[None])[0])
    rng = np.random.default_rng(seed)
    null = _corr_rows(rx, rng.permuted(np.broadcast_to(ry, (n_permutations, n)), axis=1))
    p = (1 + int(np.sum(np.abs(null) >= abs(rho) - 1e-12))) / (1 + n_permutations)
    idx = rng.integers(0, n, size=(n_resamples, n))
    bx, by = rankdata(x[idx], axis=1), rankdata(y[idx], axis=1)
    bx -= bx.mean(1, keepdims=True)
    by -= by.mean(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (bx * by).sum(1) / np.sqrt((bx**2).sum(1) * (by**2).sum(1))
    boot = boot[np.isfinite(boot)]
    lo, hi = None, None
    if len(boot):
        low, high = percentile_interval(boot[:, None])
        lo, hi = float(np.ravel(low)[0]), float(np.ravel(high)[0])
    judged = verdict.judge(RANK_RULE, None, Estimate(rho, lo, hi, n)) if lo is not None else verdict.INCONCLUSIVE
    tells = {verdict.AGREES: "positive", verdict.DISAGREES: "negative"}.get(judged, "cannot tell")
    return {"estimate": Estimate(rho, lo, hi, n, "heads"), "rho": rho, "p": float(p), "n": n, "tells": tells}


def _stratified_rank_test(x: np.ndarray, y: np.ndarray, strata: np.ndarray, *, n_permutations: int,
                          n_resamples: int, seed: int) -> dict:
    """:func:`rank_test` within strata (layers): the statistic is the correlation of the two measures' ranks taken
    within each stratum and centred there, so a measure that only differs between layers (importance normalised per
    layer, syntax that lives in the middle layers) cannot make it; the permutation shuffles ``y`` within each
    stratum and the bootstrap resamples heads within each stratum. ``pooled_rho``: the plain Spearman ρ, for
    comparison."""
    wx, wy = _within_ranks(x, strata), _within_ranks(y, strata)
    rho = float(_pearson_rows(wx, wy))
    pooled = float(_corr_rows(rankdata(x), rankdata(y)[None])[0])
    rng = np.random.default_rng(seed)
    perm = np.broadcast_to(y, (n_permutations, len(y))).copy()
    for g in np.unique(strata):
        sel = np.flatnonzero(strata == g)
        perm[:, sel] = rng.permuted(perm[:, sel], axis=1)
    null = _pearson_rows(wx[None], _within_ranks(perm, strata))
    p = (1 + int(np.sum(np.abs(null) >= abs(rho) - 1e-12))) / (1 + n_permutations)
    idx = np.empty((n_resamples, len(x)), dtype=np.int64)
    for g in np.unique(strata):
        sel = np.flatnonzero(strata == g)
        idx[:, sel] = sel[rng.integers(0, len(sel), size=(n_resamples, len(sel)))]
    boot = _pearson_rows(_within_ranks(x[idx], strata), _within_ranks(y[idx], strata))
    boot = boot[np.isfinite(boot)]
    lo = hi = None
    if len(boot):
        low, high = percentile_interval(boot[:, None])
        lo, hi = float(np.ravel(low)[0]), float(np.ravel(high)[0])
    n = len(x)
    judged = verdict.judge(RANK_RULE, None, Estimate(rho, lo, hi, n)) if lo is not None else verdict.INCONCLUSIVE
    tells = {verdict.AGREES: "positive", verdict.DISAGREES: "negative"}.get(judged, "cannot tell")
    return {"estimate": Estimate(rho, lo, hi, n, "heads (within layers)"), "rho": rho, "pooled_rho": pooled,
            "p": float(p), "n": n, "tells": tells, "within": "layers"}


def kruskal_h(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Kruskal-Wallis H of ``values`` grouped by every row of ``codes[perm, unit]`` (no tie correction)."""
    r = rankdata(values)
    n = len(r)
    codes = np.atleast_2d(codes)
    k = int(codes.max()) + 1
    onehot = np.zeros((codes.shape[0], n, k))
    np.put_along_axis(onehot, codes[..., None], 1.0, axis=2)
    sums = np.einsum("pnk,n->pk", onehot, r)
    sizes = onehot.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(sizes > 0, sums**2 / np.maximum(sizes, 1), 0.0)
    return 12.0 / (n * (n + 1)) * terms.sum(1) - 3.0 * (n + 1)


def class_test(classes: Sequence[str], values: Sequence[float], *, n_permutations: int = 10000, seed: int = 0,
               alpha: float = ALPHA) -> dict:
    """Do ``values`` differ across ``classes``? Kruskal-Wallis H over the heads where the value is measured, with a
    one-sided permutation p-value (class labels shuffled), and the effect size ε² = H / (n − 1) (0: the classes'
    ranks do not differ; 1: they separate completely). ``by_class``: each class's heads and median value.
    ``tells``: ``"differ"`` when p < ``alpha``, else ``"cannot tell"`` (also with fewer than two classes of at least
    two heads). ``critical``: the ε² the test needs to reject (the ``1 - alpha`` quantile of the shuffled labels'), the
    smallest effect these heads could show."""
    v = np.asarray(values, dtype=np.float64).ravel()
    c = np.asarray(list(classes), dtype=object).ravel()
    ok = np.isfinite(v)
    v, c = v[ok], c[ok]
    names, codes = np.unique(c.astype(str), return_inverse=True)
    sizes = np.bincount(codes, minlength=len(names))
    by_class = {str(nm): {"n": int(s), "median": float(np.median(v[codes == k]))} for k, (nm, s) in
                enumerate(zip(names, sizes))}
    n = len(v)
    if (sizes >= 2).sum() < 2 or np.ptp(v) == 0:
        return {"estimate": Estimate(float("nan"), None, None, n, "heads"), "h": float("nan"), "p": float("nan"),
                "epsilon2": float("nan"), "n": n, "by_class": by_class, "tells": "cannot tell",
                "why": "fewer than two classes with two heads each, or a constant measure"}
    h = float(kruskal_h(v, codes[None])[0])
    rng = np.random.default_rng(seed)
    null = kruskal_h(v, rng.permuted(np.broadcast_to(codes, (n_permutations, n)), axis=1))
    p = (1 + int(np.sum(null >= h - 1e-12))) / (1 + n_permutations)
    eps = h / (n - 1)
    return {"estimate": Estimate(eps, None, None, n, "heads"), "h": h, "p": float(p), "epsilon2": float(eps), "n": n,
            "by_class": by_class, "tells": "differ" if p < alpha else "cannot tell",
            "critical": float(np.quantile(null, 1 - alpha) / (n - 1))}


# --------------------------------------------------------------------------------------------- sentences


def _rank_sentence(what_x: str, what_y: str, t: dict) -> str:
    e = t["estimate"]
    if not np.isfinite(t["rho"]):
        return f"{what_x} and {what_y}: the data cannot tell ({t.get('why', 'nothing to test')})."
    interval = f"95% bootstrap interval over heads {e.low:.2f} to {e.high:.2f}" if e.has_interval else "no interval"
    if t.get("within"):
        interval = interval.replace("over heads", "over heads within layers")
        head = (f"Within layers, over the {t['n']} heads, {what_x} and {what_y} have a rank correlation of "
                f"{t['rho']:.2f} ({interval}; permutation p = {t['p']:.3g}, labels shuffled within layers; pooled over "
                f"layers, Spearman ρ = {t['pooled_rho']:.2f}, which also compares the layers themselves)")
    else:
        head = (f"Over the {t['n']} heads, {what_x} and {what_y} have Spearman ρ = {t['rho']:.2f} ({interval}; "
                f"permutation p = {t['p']:.3g})")
    if t["tells"] == "cannot tell":
        return head + ": the data cannot tell a relation from none."
    return head + f": a {t['tells']} relation, the bootstrap interval over heads excluding zero."


def _class_sentence(what: str, t: dict) -> str:
    if not np.isfinite(t["h"]):
        return f"Pattern class and {what}: the data cannot tell ({t['why']})."
    medians = "; ".join(f"{k} {v['median']:.3g} (n = {v['n']})" for k, v in t["by_class"].items())
    head = (f"Across pattern classes, {what} has Kruskal-Wallis H = {t['h']:.2f}, ε² = {t['epsilon2']:.2f}, "
            f"permutation p = {t['p']:.3g} over {t['n']} heads (medians: {medians})")
    if t["tells"] == "cannot tell":
        return head + ": the data cannot tell the classes apart."
    return head + ": the classes differ more than shuffled labels do."


# --------------------------------------------------------------------------------------------- the questions


def syntax_margin(m) -> np.ndarray | None:
    """Each head's best margin over the fixed-offset baseline, over the relations (Clark §4.2): ``[layer, head]``."""
    if m.syntax is None or not len(m.syntax["relations"]):
        return None
    return np.nanmax(m.syntax["accuracy"] - m.syntax["baseline"][:, None, None], axis=0)


def not_measured(question: str, why: str, **extra: Any) -> dict:
    return {"question": question, "measured": False, "sentence": f"{question}: not measured ({why}).", **extra}


def syntax_vs_importance(m, *, n_permutations: int = 10000, n_resamples: int = 2000, seed: int = 0) -> list[dict]:
    """Per fine-tuned task with importance scores: :func:`rank_test` of the syntax margin and the importance."""
    q = "syntax-tracking heads vs importance"
    margin = syntax_margin(m)
    if margin is None:
        return [not_measured(q, "chapter 2's dependency accuracies were not run")]
    if m.importance is None:
        return [not_measured(q, "chapter 6's importance scores were not run")]
    out = []
    layers = np.repeat(np.arange(margin.shape[0]), margin.shape[1])
    for task, imp in m.importance.items():
        # within layers: importance is normalised per layer (Michel §4.1) and the syntax margin rises and falls with
        # depth, so a correlation pooled over layers would mostly compare layers
        t = rank_test(margin, imp, n_permutations=n_permutations, n_resamples=n_resamples, seed=seed, strata=layers)
        out.append({"question": q, "task": task, "measured": True, **t,
                    "sentence": _rank_sentence("the syntax margin (best relation accuracy minus its offset baseline)",
                                               f"importance on {task}", t)})
    return out


def across_tasks_sentence(answers: Sequence[dict]) -> str:
    """One paragraph on the syntax-importance answers of several tasks read together: whether their within-layer
    correlations point the same way, differ in sign, or cannot be told apart from none, and how the pooled
    correlations (layers included) differ from them. ``""`` with fewer than two measured tasks."""
    got = [a for a in answers if a.get("measured") and np.isfinite(a.get("rho", float("nan")))]
    if len(got) < 2:
        return ""
    shown = ", ".join(f"{a['task']} {a['rho']:+.2f} ({a['tells']})" for a in got)
    signs = {a["tells"] for a in got} - {"cannot tell"}
    pooled = ", ".join(f"{a['task']} {a['pooled_rho']:+.2f}" for a in got if "pooled_rho" in a)
    if signs == {"positive", "negative"}:
        head = (f"Read together, the tasks disagree: the within-layer correlations are {shown}. A head's syntax margin "
                "is one number per head while its importance is measured per task, so the same syntactic heads matter "
                "for one task and not for another; no single answer holds for all tasks.")
    elif len(signs) == 1:
        head = f"Read together, the tasks point the same way: the within-layer correlations are {shown}."
    else:
        head = (f"Read together, the within-layer correlations are {shown}: where a sign appears on one task and not "
                "on another, the data tell only that the two differ in strength, not in direction.")
    return head + (f" Pooled over layers they are {pooled}; the difference is what the layers alone contribute "
                   "(importance is normalised within each layer, and the syntax margin rises and falls with depth)."
                   if pooled else "")


def head_classes(m, task: str | None) -> tuple[list[str], str] | None:
    """Each head's majority pattern class (layer-major) in ``task``'s fine-tuned classifier when chapter 4 analysed
    it, else in the pre-trained encoder; and which one was used."""

    if m.patterns is None:
        return None
    which = task if task in m.patterns else "pre-trained"
    cls, _ = majority_class(m.patterns[which], m.pattern_classes)
    return [c for row in cls for c in row], which


def pattern_vs_effects(m, *, n_permutations: int = 10000, seed: int = 0) -> list[dict]:
    """:func:`class_test` of the pattern class against importance (main task) and the disabling effect (each
    task chapter 5 swept)."""
    q = "pattern class vs importance and disabling effect"
    if m.patterns is None:
        return [not_measured(q, "chapter 4's pattern classes were not run")]
    out = []
    targets = []
    if m.importance is not None:
        targets.append(("importance", m.main_task, m.importance[m.main_task]))
    for task, d in (m.disabling or {}).items():
        targets.append(("disabling effect", task, d["delta"]))
    if not targets:
        return [not_measured(q, "neither chapter 5's disabling nor chapter 6's importance was run")]
    for what, task, values in targets:
        classes, which = head_classes(m, task)
        t = class_test(classes, np.asarray(values).ravel(), n_permutations=n_permutations, seed=seed)
        out.append({"question": q, "measure": what, "task": task, "classes_from": which, "measured": True, **t,
                    "sentence": _class_sentence(f"{what} on {task} (classes of the {which} model)", t)})
    return out


def framenet_switched_off(m, *, n_permutations: int = 10000, seed: int = 0) -> list[dict]:
    """Kovaleva §5's open question: the frame-semantic heads (chapter 4) switched off on each task, read from
    chapter 5's single-head disabling sweep. Per task: each frame head's change with its 95% interval over the dev
    examples, their mean, and where that mean falls among the means of random sets of as many heads (two-sided
    permutation p). The mean's interval is the mean of the heads' own intervals (conservative)."""
    q = "FrameNet heads switched off"
    if m.framenet is None:
        return [not_measured(q, "chapter 4's FrameNet heads were not run")]
    heads = m.framenet["heads"]
    if not heads:
        return [not_measured(q, "no head exceeds chapter 4's percentile")]
    if not m.disabling:
        return [not_measured(q, "chapter 5's disabling sweep was not run")]
    out = []
    rng = np.random.default_rng(seed)
    for task, d in m.disabling.items():
        H = d["delta"].shape[1]
        idx = np.array([l * H + h for l, h in heads])
        flat = d["delta"].ravel()
        mean = float(flat[idx].mean())
        low, high = float(d["low"].ravel()[idx].mean()), float(d["high"].ravel()[idx].mean())
        k = len(idx)
        null = np.array([flat[rng.choice(flat.size, k, replace=False)].mean() for _ in range(n_permutations)])
        below = (1 + np.sum(null <= mean + 1e-12)) / (1 + n_permutations)
        above = (1 + np.sum(null >= mean - 1e-12)) / (1 + n_permutations)
        p = float(min(1.0, 2 * min(below, above)))
        per_head = [{"head": head_label(l, h), "delta": float(d["delta"][l, h]), "low": float(d["low"][l, h]),
                     "high": float(d["high"][l, h])} for l, h in heads]
        hurt = [x["head"] for x in per_head if x["high"] < 0]
        helped = [x["head"] for x in per_head if x["low"] > 0]
        sentence = (f"Switching off each of the {k} frame-semantic head(s) on {task} changes the score by "
                    f"{mean:+.2f} points on average (mean of their 95% intervals {low:+.2f} to {high:+.2f}, "
                    f"{d['n']} dev examples); random sets of {k} heads give a mean this far from theirs with "
                    f"p = {p:.3g}. ")
        if hurt or helped:
            sentence += (f"Heads whose interval excludes no change: {', '.join(hurt) or 'none'} hurt, "
                         f"{', '.join(helped) or 'none'} help.")
        else:
            sentence += "No frame head's interval excludes no change: the data cannot tell their effect from none."
        out.append({"question": q, "task": task, "measured": True, "estimate": Estimate(mean, low, high, d["n"],
                    "dev examples (mean of per-head intervals)"), "p": p, "heads": per_head, "sentence": sentence})
    for key, why in m.notes.items():
        if key.startswith("disabling/"):
            out.append(not_measured(q, why, task=key.split("/", 1)[1]))
    return out


def pruned_first(m, *, n_permutations: int = 10000, n_resamples: int = 2000, seed: int = 0) -> list[dict]:
    """Are the heads pruned first by importance (Michel §4.2) broad (entropy), [CLS] sinks (attention to [CLS]) or
    positional (the larger of the attention to the previous and the next token)? :func:`rank_test` of how early a
    head is pruned against each statistic, and how many of the first pruned heads carry each of chapter 3's
    behaviours."""
    q = "heads pruned first"
    if m.pruning is None:
        return [not_measured(q, "chapter 6's pruning was not run")]
    if m.surface is None:
        return [not_measured(q, "chapter 1's surface statistics were not run")]
    L, H = m.n_layers, m.n_heads
    early = np.empty((L, H))
    for k, (l, h) in enumerate(m.pruning["order"]):
        early[l, h] = L * H - k  # high = pruned early
    n_first = max(m.pruning["n_safe"], m.pruning["first_step"])
    first = {l * H + h for l, h in m.pruning["order"][:n_first]}
    kinds = {"broad (entropy)": (m.surface["entropy"], "attends broadly"),
             "[CLS] sink (attention to [CLS])": (m.surface["cls"], "attends to [CLS]"),
             "positional (max of previous and next)": (np.maximum(m.surface["prev"], m.surface["next"]),
                                                        ("attends to previous", "attends to next"))}
    out = []
    for name, (values, tags) in kinds.items():
        t = rank_test(early, values, n_permutations=n_permutations, n_resamples=n_resamples, seed=seed)
        tags = (tags,) if isinstance(tags, str) else tags
        counts = None
        if m.behaviours is not None:
            with_tag = {i for i, b in enumerate(m.behaviours) if any(x in b for x in tags)}
            counts = {"first_pruned_with": len(first & with_tag), "first_pruned": len(first),
                      "all_with": len(with_tag), "all": L * H}
        sentence = _rank_sentence("how early a head is pruned", name, t)
        if counts:
            sentence += (f" Of the {counts['first_pruned']} heads pruned first, {counts['first_pruned_with']} carry "
                         f"chapter 3's behaviour, against {counts['all_with']} of all {counts['all']} heads.")
        out.append({"question": q, "kind": name, "measured": True, **t, "counts": counts, "sentence": sentence})
    return out


# --------------------------------------------------------------------------------------------- results and rows


def answers_record(answers: Sequence[dict]) -> list[dict]:
    """The answers as plain JSON (estimates as dicts) for the results file."""
    out = []
    for a in answers:
        r = {}
        for k, v in a.items():
            r[k] = v.as_dict() if isinstance(v, Estimate) else v
        out.append(r)
    return out


def _heads_detectable(text: str, n: int) -> str:
    """A detectable-effect sentence over heads, with the caveat that a model has no more heads to sample."""
    return text + (f" (this model has {n} heads, so only a larger model has more to test)" if text else "")


def _own_row(a: dict) -> tuple[str, Any, str, verdict.Rule, str]:
    """(quantity, estimate, shown, rule, detectable) of a measured answer: the book's expectation and its test."""
    est, n = a["estimate"], a.get("n") or a["estimate"].n
    if a["question"].startswith("FrameNet"):
        return (f"FrameNet heads switched off ({a['task']}): the task does not need them, no change beyond "
                f"±{FRAME_POINTS:g} point", est, est, FRAME_RULE, verdict.detectable_effect(est, FRAME_RULE))
    if "h" in a:
        crit = a.get("critical", float("nan"))
        detect = (f"with {n} heads the permutation test needs ε² above about {crit:.2f} (the {1 - ALPHA:.0%} point of "
                  f"shuffled labels); here ε² = {a['epsilon2']:.2f}; with bert-base's 144 heads it would need about "
                  f"{crit * (n - 1) / 143:.2f}" if np.isfinite(crit) and a["p"] >= ALPHA else "")
        return (f"{a['question']} ({a['measure']}, {a['task']}): the pattern classes differ", Estimate(a["p"], None,
                None, n, "heads (permutation p-value)"), f"ε² {a['epsilon2']:.2f}, p {a['p']:.3g}", CLASS_RULE,
                _heads_detectable(detect, n))
    what = a.get("task") or a.get("kind") or ""
    claim = "the heads that track syntax matter more" if a["question"].startswith("syntax") else \
        "the heads pruned first are of this kind"
    return (f"{a['question']} ({what}): {claim} (ρ > 0)", est, est, RANK_RULE,
            _heads_detectable(verdict.detectable_effect(est, RANK_RULE), n))


def comparison_rows(answers: Sequence[dict]) -> list[verdict.Comparison]:
    """One row per answer, each the book's own question (kind :data:`~attnbook.verdict.OWN`: no paper measured
    these; Kovaleva §5 ask the FrameNet one and leave it open): the book's expectation in the quantity, judged by
    :data:`RANK_RULE` (ρ over heads), :data:`CLASS_RULE` (the permutation p-value) or :data:`FRAME_RULE` (the mean
    change from switching the frame heads off), the sentence in the note. An answer that was not measured is not
    testable here, with the reason."""
    rows = []
    for a in answers:
        paper = "asked, not measured (Kovaleva §5)" if a["question"].startswith("FrameNet") else "not measured"
        if not a.get("measured"):
            what = a.get("task") or a.get("kind") or ""
            rows.append(verdict.row("Head atlas", a["question"] + (f" ({what})" if what else ""), paper=paper,
                                    ours="not measured", estimate=Estimate(float("nan")), kind=verdict.OWN,
                                    rule=verdict.NotComparable(a["sentence"])))
            continue
        quantity, est, shown, rule, detect = _own_row(a)
        if not np.isfinite(est.value):
            rule = verdict.NotComparable(a.get("why", "nothing to test"))
        rows.append(verdict.row("Head atlas", quantity, paper=paper, ours=shown, estimate=est, fmt=".3g", rule=rule,
                                kind=verdict.OWN, detectable=detect, note=a["sentence"]))
    return rows
