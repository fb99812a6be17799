"""Calibration of chapter 2's rows that report the best of many heads (Clark §4.2, §4.3): how often they agree when
the truth says they should not, and how often they agree when the truth is the paper's.

Each simulation draws per-unit counts in chapter 2's shapes (6 layers x 12 heads, both directions: 144 candidate
heads; a relation with 600 edges over 300 sentences; coreference with 900 mentions over 30 documents) and runs the
rows' own code (:func:`attnbook.studies.clark.paper.syntax_comparison`,
:func:`~attnbook.studies.clark.paper.coref_comparison`), which chooses the best head inside the estimate by
cross-fitting. The procedure the rows used before (the head chosen on all units and kept fixed in every resample) is
run beside it as regression evidence. A rate measured on ``N_SIM``
simulations is within ``2 * sqrt(p (1 - p) / N_SIM)`` of its truth 95% of the time; a calibrated rule agrees falsely in
at most 5% plus that.

Measured when these tests were written (N_SIM = 200, 200 resamples each, 20 halvings for the point):

* §4.2, no head better than the best fixed offset ("All", 600 words): the old procedure put the best head surely
  above the offset in 40% of simulations, the cross-fitted row in none (and surely below it in none);
* §4.2, every head's true margin on the edge of the paper's band for auxpass (42.0 - 10.17 points): the old
  procedure "agreed" in 65%, the cross-fitted row in none; with one head at the paper's +42.0 (the other 143 at the
  offset's accuracy) the cross-fitted row agrees in 89% and partly agrees in the rest;
* §4.3, every head exactly 10 points over head-word match (not "over 10" in truth): the old procedure "agreed" in
  39%, the cross-fitted row in none; with no head better than head-word match the old interval lay above 0 in 38%,
  the cross-fitted one in none; with one head at the paper's +13 the row agrees in 8% and is undecided in the rest
  (30 documents cannot show "over 10" for a true 13; the row's detectable statement sizes the sample that can).

The cross-fitted intervals are wide (they count the choice's own variability) and err on the side of "undecided".
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from test_clark_paper import choose_on_all_margin, model_accuracy
from threadpoolctl import threadpool_limits

from attnbook import verdict
from attnbook.stats import Estimate, percentile_interval, resampled_ratio
from attnbook.studies.clark import coref, paper

N_SIM = 200
N_RESAMPLES = 200
N_SPLITS = 20
#: how far a rate measured on N_SIM simulations may sit above 5% by chance (two standard errors)
SLACK = 2 * math.sqrt(0.05 * 0.95 / N_SIM)

AUXPASS = paper.table1_rule("auxpass")


@pytest.fixture(autouse=True)
def one_thread():
    """Small matrices: one BLAS thread is faster than several contending ones."""
    with threadpool_limits(1):
        yield


def _syntax_row(acc, quantity: str):
    (row,) = [r for r in paper.syntax_comparison(acc, n_resamples=N_RESAMPLES, n_splits=N_SPLITS)
              if r.quantity.startswith(quantity)]
    return row


def test_no_head_better_than_the_offset_is_not_found_better():
    """The brief's null: every head right as often as the best fixed offset. The old procedure's interval lies above
    0 (the best head "beats the baseline", the sign of every margin of Table 1) in a large share of simulations; the
    cross-fitted row's in at most 5% (plus simulation error), and it never agrees with the paper's +8.2."""
    old_above = new_above = new_agrees = 0
    for seed in range(N_SIM):
        acc = model_accuracy(("All",), n_sentences=300, edges=2, seed=seed)
        old_above += choose_on_all_margin(acc, "All", n_resamples=N_RESAMPLES, seed=seed).low > 0
        row = _syntax_row(acc, "best single head")
        new_above += row.low > 0
        new_agrees += row.verdict == verdict.AGREES
    assert old_above / N_SIM > 0.25
    assert new_above / N_SIM <= 0.05 + SLACK and new_agrees == 0


def test_heads_on_the_edge_of_the_papers_band_do_not_agree():
    """Every head's true margin is the paper's auxpass margin minus the agree tolerance: "agrees" is false. Chosen and
    scored on the same sentences, the best of 144 heads is pushed into the band; cross-fitted it is not."""
    old = new = 0
    for seed in range(N_SIM):
        acc = model_accuracy(("auxpass",), p_head=0.10 + (42.0 - AUXPASS.agree) / 100, p_offset=0.10, seed=seed)
        old += verdict.judge(AUXPASS, 42.0, choose_on_all_margin(acc, "auxpass", n_resamples=N_RESAMPLES,
                                                                  seed=seed)) == verdict.AGREES
        new += _syntax_row(acc, "auxpass").verdict == verdict.AGREES
    assert old / N_SIM > 0.4
    assert new / N_SIM <= 0.05 + SLACK


def test_a_head_at_the_papers_margin_is_found_and_agrees():
    """Power at the paper's margin: one head at +42.0 over the offset for auxpass, the other 143 at the offset's
    accuracy; the cross-fitted row agrees in most simulations (600 edges against the paper's 286) and never
    disagrees."""
    outcomes = [_syntax_row(model_accuracy(("auxpass",), p_head=0.10, p_offset=0.10,
                                           strong={"auxpass": (3, 4, "dep->head", 0.52)}, seed=seed), "auxpass").verdict
                for seed in range(N_SIM // 2)]
    assert outcomes.count(verdict.AGREES) / len(outcomes) >= 0.8
    assert outcomes.count(verdict.DISAGREES) / len(outcomes) <= 0.05 + SLACK


# --------------------------------------------------------------------------------------------- §4.3 coreference


def coref_model(gain: float = 0.0, strong: float | None = None, n_docs: int = 30, per_kind: int = 10,
                n_layers: int = 6, n_heads: int = 12, p_hm: float = 0.5, seed: int = 0):
    """Per-document counts of a model in chapter 2's shape and the three baselines (``per_kind`` queries of each
    mention type in each of ``n_docs`` documents): every head right with probability ``p_hm + gain / 100`` (head-word
    match's accuracy plus ``gain`` points), one head (3-5) at ``p_hm + strong / 100`` when ``strong`` is given."""
    rng = np.random.default_rng(seed)
    kinds, columns = coref.KINDS, coref.COLUMNS
    doc_n = np.zeros((n_docs, len(columns)), dtype=np.int32)
    doc_n[:, 1:] = per_kind
    doc_n[:, 0] = per_kind * len(kinds)

    def counts(p: float, shape=()) -> np.ndarray:
        by_kind = rng.binomial(per_kind, p, size=(n_docs, len(kinds)) + shape)
        return np.concatenate([by_kind.sum(1, keepdims=True), by_kind], 1)

    head = counts(p_hm + gain / 100, (n_layers, n_heads)).astype(np.int32)
    if strong is not None:
        head[:, :, 2, 4] = counts(p_hm + strong / 100)
    docs = [f"doc{k}" for k in range(n_docs)]
    heads = coref.CorefHeadAccuracy({c: head[:, j].sum(0) for j, c in enumerate(columns)},
                                    {c: int(doc_n[:, j].sum()) for j, c in enumerate(columns)}, docs, head, doc_n)
    base = {}
    for key, p in (("nearest", 0.25), ("head_match", p_hm), ("rule_based", p_hm + 0.15)):
        v = counts(p)
        base[key] = coref.SystemAccuracy(coref.BASELINE_NAMES[key],
                                         {c: int(v[:, j].sum()) for j, c in enumerate(columns)},
                                         {c: int(doc_n[:, j].sum()) for j, c in enumerate(columns)}, docs, v, doc_n)
    return heads, base


def choose_on_all_gain(heads: coref.CorefHeadAccuracy, base, seed: int = 0) -> Estimate:
    """The best head's gain over head-word match as the rows computed it before: the head chosen on all documents
    and kept fixed in every resample of the documents (points)."""
    layer, head = heads.best("all")
    num = heads.doc_correct[:, 0, layer, head].astype(float) - base["head_match"].doc_correct[:, 0]
    boot = 100 * resampled_ratio(num[:, None], heads.doc_n[:, :1].astype(float), n_resamples=N_RESAMPLES,
                                 seed=seed)[:, 0]
    lo, hi = percentile_interval(boot)
    return Estimate(100 * num.sum() / heads.doc_n[:, 0].sum(), float(lo), float(hi), len(heads.docs), "documents")


def _gain_row(heads, base):
    (row,) = [r for r in paper.coref_comparison(heads, base, n_resamples=N_RESAMPLES, n_splits=N_SPLITS)
              if r.quantity == "best head minus head-word match (points, all mentions)"]
    return row


def test_no_head_over_10_points_is_not_found_over_10():
    """Every head exactly 10 points over head-word match: the paper's "over 10 accuracy points" is false. The old
    procedure (the best of 72 heads on all documents) "agreed" in a large share of simulations; the cross-fitted row
    in at most 5% (plus simulation error)."""
    old = new = 0
    for seed in range(N_SIM):
        heads, base = coref_model(gain=10.0, seed=seed)
        old += verdict.judge(paper.COREF_GAIN_RULE, 13, choose_on_all_gain(heads, base, seed)) == verdict.AGREES
        new += _gain_row(heads, base).verdict == verdict.AGREES
    assert old / N_SIM > 0.25
    assert new / N_SIM <= 0.05 + SLACK


def test_a_coreference_head_at_the_papers_gain():
    """Power at the paper's +13: one head 13 points over head-word match, the other 71 at its accuracy. On 900
    mentions in 30 documents the cross-fitted row rarely shows "over 10" (its interval is about ±6 points), and it
    never disagrees; its detectable statement names the documents that would decide it."""
    rows = [_gain_row(*coref_model(strong=13.0, seed=seed)) for seed in range(N_SIM // 2)]
    outcomes = [r.verdict for r in rows]
    assert outcomes.count(verdict.DISAGREES) / len(rows) <= 0.05 + SLACK
    assert 0.0 < outcomes.count(verdict.AGREES) / len(rows) < 0.5
    undecided = next(r for r in rows if r.verdict == verdict.INCONCLUSIVE)
    assert "documents would decide it with 80% power" in undecided.detectable
