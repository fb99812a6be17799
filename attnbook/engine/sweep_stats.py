"""Paired statistics of a sweep: is a change from switching heads off real?

The same dev examples are scored with and without each intervention of a
:class:`~attnbook.engine.sweeps.SweepResult`, so differences are tested paired over examples:

* :func:`bootstrap_delta` — a seeded paired bootstrap of the score difference (Koehn 2004; Michel et al.
  §3.2 use 1000 resamples for BLEU): observed Δ, percentile interval and two-sided p-value;
* :func:`compare_to_baseline` — every intervention of a sweep against the baseline on the same draws,
  with McNemar's exact test when the score is accuracy;
* :func:`surviving_gains` — the gains that stay significant after correcting for the number of
  interventions tried (a sweep of 144 heads is 144 tests).

The building blocks (bootstrap counts, McNemar, Holm) are :mod:`attnbook.stats`; all three functions are
also importable from :mod:`attnbook.engine.sweeps`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.scores import ScoreFn, accuracy, correct
from attnbook.engine.sweep_result import SweepResult
from attnbook.stats import adjust_pvalues, bootstrap_counts, bootstrap_indices, bootstrap_summary, mcnemar_exact


def bootstrap_delta(
    base_outputs: np.ndarray,
    new_outputs: np.ndarray,
    gold: np.ndarray,
    score_fn: ScoreFn = accuracy,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Paired bootstrap of ``score(new) − score(base)`` over dev examples.

    Each resample draws examples with replacement and scores *both* systems on the same
    draw (Koehn 2004; Michel §3.2 use 1000 resamples for BLEU). Returns the observed
    ``delta``, the percentile interval ``ci_low``/``ci_high`` and a two-sided ``p_value``
    ((count + 1) / (resamples + 1) of resampled deltas on the other side of zero, doubled).
    Seeded: the same seed gives the same resamples for every head, so heads are compared
    on identical draws.
    """
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence}")
    gold = np.asarray(gold)
    n = len(gold)
    if n == 0:
        raise EmptyDataError("no examples to bootstrap")
    delta = float(score_fn(new_outputs, gold) - score_fn(base_outputs, gold))
    if score_fn is accuracy:
        diff = correct(new_outputs, gold).astype(np.float64) - correct(base_outputs, gold)
        resampled = bootstrap_counts(n, n_resamples, seed) @ diff / n
    else:
        resampled = np.concatenate(
            [
                [score_fn(new_outputs[i], gold[i]) - score_fn(base_outputs[i], gold[i]) for i in idx]
                for idx in bootstrap_indices(n, n_resamples, seed)
            ]
        )
    return bootstrap_summary(delta, resampled, confidence)


def compare_to_baseline(
    sweep: Any,
    score_fn: ScoreFn = accuracy,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    mcnemar: bool | None = None,
):
    """Per intervention of ``sweep`` (a :class:`~attnbook.engine.sweeps.SweepResult`): score, Δ, bootstrap CI
    and p-value, and (for accuracy) McNemar's exact test.

    Every intervention is bootstrapped on the same seeded draws. Returns a DataFrame in
    ``sweep.names`` order with columns ``name, score, delta, ci_low, ci_high, p_bootstrap``
    and, when ``mcnemar`` (default: ``score_fn is accuracy``), ``b, c, p_mcnemar``.
    """
    import pandas as pd

    mcnemar = (score_fn is accuracy) if mcnemar is None else mcnemar
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence}")
    outputs = sweep.flat_outputs()
    gold = sweep.gold
    base_ok = correct(sweep.baseline_outputs, gold)
    counts = bootstrap_counts(len(gold), n_resamples, seed) if score_fn is accuracy else None
    rows = []
    for name, outs in zip(sweep.names, outputs):
        if counts is not None:  # accuracy: all resamples as one matrix product
            diff = correct(outs, gold).astype(np.float64) - base_ok
            bs = bootstrap_summary(diff.mean(), counts @ diff / len(gold), confidence)
        else:
            bs = bootstrap_delta(
                sweep.baseline_outputs, outs, gold, score_fn, n_resamples=n_resamples, seed=seed, confidence=confidence
            )
        row = {
            "name": name,
            "score": float(score_fn(outs, gold)),
            "delta": bs["delta"],
            "ci_low": bs["ci_low"],
            "ci_high": bs["ci_high"],
            "p_bootstrap": bs["p_value"],
        }
        if mcnemar:
            mc = mcnemar_exact(base_ok, correct(outs, gold))
            row.update(b=mc["b"], c=mc["c"], p_mcnemar=mc["p_value"])
        rows.append(row)
    return pd.DataFrame(rows)


def surviving_gains(
    comparison: Any,
    *,
    alpha: float = 0.05,
    test: str = "mcnemar",
    correction: str = "holm",
    **kwargs: Any,
):
    """Which gains (Δ > 0) are significant after correcting for every intervention tried.

    ``comparison`` is a :func:`compare_to_baseline` table or a :class:`~attnbook.engine.sweeps.SweepResult`
    (then ``kwargs`` go to :func:`compare_to_baseline`). The correction runs over *all*
    interventions (a sweep of 144 heads is 144 tests), not only the gains. Returns the
    gains sorted by Δ with ``p_adjusted`` and ``survives``.
    """

    if isinstance(comparison, SweepResult):
        comparison = compare_to_baseline(comparison, **kwargs)
    column = {"mcnemar": "p_mcnemar", "bootstrap": "p_bootstrap"}.get(test)
    if column is None or column not in comparison:
        raise ParameterError(f"test is 'mcnemar' (accuracy only) or 'bootstrap', got {test!r}")
    table = comparison.copy()
    table["p_adjusted"] = adjust_pvalues(table[column].to_numpy(), correction)
    table["survives"] = (table["delta"] > 0) & (table["p_adjusted"] < alpha)
    gains = table[table["delta"] > 0].sort_values("delta", ascending=False, kind="stable")
    return gains.reset_index(drop=True)
