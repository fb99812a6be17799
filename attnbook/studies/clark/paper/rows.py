"""Clark et al.'s claims beside this run's numbers, §4-5 (chapter 2): every "paper vs this run" row.

Each function turns one measurement's results into rows made by :func:`attnbook.verdict.row`
(:class:`~attnbook.verdict.Comparison`), this run's number an :class:`~attnbook.stats.Estimate` with its 95%
bootstrap interval over the units it averages (sentences, documents) and the paper's number from
:mod:`~attnbook.studies.clark.paper.claims`; each docstring states the rule and why, and every tolerance states its
source (the paper's own sampling spread on its test set, its printed precision, or its own words). Where a row reports
the best of many heads (§4.2, §4.3), the choice is inside the estimate: cross-fitted over the units and redone in every
resample (:mod:`~attnbook.studies.clark.paper.crossfit`). §3 (chapter 1) is in
:mod:`~attnbook.studies.clark.paper.surface_rows`, which uses the resample count and the interval helpers here; §6
(chapter 3) is in :mod:`~attnbook.studies.clark.paper.cluster_rows`. Nothing here measures.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from attnbook import verdict
from attnbook.core.errors import ParameterError
from attnbook.core.heads import head_label
from attnbook.stats import Estimate, percentile_interval, resampled_ratio
from attnbook.studies.clark import coref, probes, syntax
from attnbook.studies.clark.paper.crossfit import N_SPLITS, Draws, draws, half_sums, scored_elsewhere
from attnbook.studies.clark.paper.crossfit import crossfit as cross_fit
from attnbook.studies.clark.paper.claims import (
    COREF_GAIN_OVER_HEAD_MATCH,
    COREF_HEAD,
    FIGURE5_RELATIONS,
    TABLE1,
    TABLE1_EDGES,
    TABLE1_PRECISION,
    TABLE2,
    TABLE2_PRECISION,
    TABLE3,
    TABLE3_FINDINGS,
    TABLE3_PRECISION,
    TABLE3_WORDS,
)
from attnbook.studies.clark.paper.detect import holds_row, interval_row
from attnbook.verdict import Comparison

#: bootstrap resamples behind every interval of chapters 1-2 (percentile intervals, seeded with the chapter's seed)
N_RESAMPLES = 2000

#: a head "specialises" in a relation when it beats the best fixed offset by at least this many points
#: (the book's reading of Clark §4.2: "substantially outperforming the fixed-offset baseline")
SPECIALIST_MARGIN = 10.0


def paper_spread(a: float, b: float, n: int) -> float:
    """How far apart two measurements of the margin ``a - b`` (points, two accuracies on the same ``n`` items) land
    95% of the time when each is made on ``n`` items: ``1.96 * sqrt(2)`` binomial standard errors of the margin,
    the two accuracies treated as independent (an upper bound when they are positively correlated, as two predictors
    scored on the same items are)."""
    p, q = a / 100, b / 100
    return 100 * verdict.Z975 * math.sqrt(2 * (p * (1 - p) + q * (1 - q)) / n)


def margin_rule(a: float, b: float, n: int, items: str, precision: float) -> verdict.Within:
    """The rule for a margin the paper reports as two accuracies ``a`` and ``b`` (points) on ``n`` ``items``, printed
    to ``precision`` points: this run's whole 95% interval within the paper's own spread (:func:`paper_spread`, or
    the paper's printed precision when that is larger: a margin of two rounded numbers is known only to
    ``precision``) of the paper's margin agrees, within twice that partly; an interval entirely on the other side of
    0 from the paper's margin disagrees (``signed``). The tolerance states its source."""
    spread = paper_spread(a, b, n)
    agree = round(max(spread, precision), 2)
    if spread >= precision:
        why = (f"the paper's own sampling spread: two measurements of this margin on {n:,} {items} (the paper's test "
               f"set) differ by up to ±{agree:.3g} points at 95% (1.96 x sqrt 2 binomial standard errors)")
    else:
        why = (f"the paper's precision: it prints these accuracies to {precision:g} point, so their margin is known "
               f"only to ±{agree:.3g} (more than its sampling spread on {n:,} {items}, ±{spread:.2g})")
    return verdict.Within(agree, round(2 * agree, 2), unit="points", signed=True, source=why + "; twice that partly")


def table1_rule(relation: str) -> verdict.Within:
    """:func:`margin_rule` of a Table 1 row: the best head's accuracy minus the best offset's, on the relation's edges
    in the paper's test set (:data:`~attnbook.studies.clark.paper.claims.TABLE1_EDGES`)."""
    p = TABLE1[relation]
    return margin_rule(p.accuracy, p.baseline, TABLE1_EDGES[relation],
                       "words" if relation == "All" else f"{relation} edges", TABLE1_PRECISION)


def table3_rule(a: str, b: str) -> verdict.Within:
    """:func:`margin_rule` of a Table 3 finding (probe ``a`` minus probe ``b``, UAS on the PTB dev words)."""
    return margin_rule(TABLE3[a], TABLE3[b], TABLE3_WORDS, "words", TABLE3_PRECISION)


def share_rule(n_relations: int) -> verdict.Within:
    """The rule for a claim the paper makes of every relation of Table 1 (this run's share of relations called as
    in the paper, the paper's share being 1): within one relation agrees, within two partly. One relation in
    ``n_relations`` is the measurement floor: the share moves in steps of that size."""
    step = 1.0 / n_relations
    return verdict.Within(step * (1 + 1e-9), 2 * step * (1 + 1e-9), unit="(share of relations)",
                          source=f"one relation in {n_relations}, the share's step (its measurement floor); two partly")


#: the claim "the best head improves by over 10 accuracy points on head-word match" (Clark §4.3), in its own words
COREF_GAIN_RULE = verdict.Beyond(
    COREF_GAIN_OVER_HEAD_MATCH, what="best head minus head-word match (points)",
    source="the paper's words: 'improving by over 10 accuracy points on the string-matching baseline' (§4.3)")

#: the claim "the best head performs close to the rule-based system" (Clark §4.3): a gap smaller than the 10 points
#: the paper calls an improvement
COREF_CLOSE_RULE = verdict.NoEffect(
    COREF_GAIN_OVER_HEAD_MATCH,
    source=("the paper's words: it calls its -4 'close to the rule-based system' and a gain of 'over 10 accuracy "
            "points' an improvement (§4.3)"))


def _interval(value: float, resampled: np.ndarray, n: int, unit: str) -> Estimate:
    """:class:`~attnbook.stats.Estimate` of ``value`` with the percentile interval of its bootstrap ``resampled``.

    Resamples in which the statistic is undefined (e.g. a relation without edges in a small sample) are left out;
    without any defined resample, or with ``value`` undefined, there is no interval."""
    r = np.asarray(resampled, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if not r.size or not math.isfinite(float(value)):
        return Estimate(float(value), None, None, int(n), unit)
    lo, hi = percentile_interval(r)
    return Estimate(float(value), float(lo), float(hi), int(n), unit)


def _bounds(resampled: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The 95% percentile bounds of each of ``n`` statistics ``resampled[resample, statistic]`` (NaN without any
    resample)."""
    if not len(resampled):
        return np.full(n, np.nan), np.full(n, np.nan)
    return percentile_interval(resampled)


def _split_mean(values: np.ndarray) -> np.ndarray:
    """The mean over random halvings (axis 0) of each column, leaving out halvings where it is undefined (NaN for a
    column undefined in all of them)."""
    ok = np.isfinite(values)
    n = ok.sum(0)
    total = np.where(ok, values, 0.0).sum(0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _needs(what: str, ok: bool) -> None:
    if not ok:
        raise ParameterError(f"the comparison bootstraps over {what}: give results that keep the per-unit counts "
                             "(rerun the measurement; a cache written by an older version lacks them)")


# =============================================================================================
# §4.2 heads as parsers (chapter 2)
# =============================================================================================


def _syntax_crossfit(acc: syntax.HeadAccuracy, have: list[str], d: Draws) -> dict[str, np.ndarray]:
    """For every draw (:class:`~attnbook.studies.clark.paper.Draws` of the sentences) and relation in
    ``have``: the cross-fitted margin of the best head over the best offset (``margin[draw, relation]``, points),
    the cross-fitted best head in the paper's direction minus the best head in the other (``direction``, points;
    NaN for "All") and the head each half chose (``choice_a``, ``choice_b``: flat indices over layer, head,
    direction)."""
    n_draws = d.weights.shape[0]
    out = {k: np.full((n_draws, len(have)), np.nan) for k in ("margin", "direction")}
    out.update({k: np.zeros((n_draws, len(have)), dtype=np.int64) for k in ("choice_a", "choice_b")})
    with np.errstate(invalid="ignore", divide="ignore"):
        for k, rel in enumerate(have):
            r = acc._rel(rel)
            ta, tb = half_sums(acc.sentence_total[:, r], d)
            edges = ta + tb
            ha, hb = half_sums(acc.sentence_correct[:, r], d)  # [draw, layer, head, direction]
            head, out["choice_a"][:, k], out["choice_b"][:, k] = cross_fit(ha.reshape(n_draws, -1),
                                                                                  hb.reshape(n_draws, -1))
            oa, ob = half_sums(acc.sentence_baseline[:, r], d)
            offset = cross_fit(oa, ob)[0]
            out["margin"][:, k] = 100 * (head - offset) / edges
            if rel != "All":
                e = syntax.DIRECTIONS.index(_EXPECTED_DIRECTION.get(rel, "dep->head"))
                fit = [cross_fit(ha[..., j].reshape(n_draws, -1), hb[..., j].reshape(n_draws, -1))[0]
                       for j in (e, 1 - e)]
                out["direction"][:, k] = 100 * (fit[0] - fit[1]) / edges
    return out


#: the direction in which the paper's best head reads a relation (Clark §4.2: "for all relations in Table 1 except
#: pobj, the dependent attends to the head word"), where it is not dependent -> head
_EXPECTED_DIRECTION = {"pobj": "head->dep"}


def syntax_comparison(acc: syntax.HeadAccuracy, *, n_resamples: int = N_RESAMPLES, seed: int = 0,
                      n_splits: int = N_SPLITS) -> list[Comparison]:
    """Rows of "paper vs this run" for Clark §4.2 (Table 1), each judged by a rule of :mod:`attnbook.verdict`
    on a bootstrap over sentences (one set of draws for every row: the intervals are paired).

    The best head of many is chosen inside the estimate, by cross-fitting
    (:mod:`~attnbook.studies.clark.paper.crossfit`): the head (and the fixed offset) is chosen on a random half of
    the sentences and scored on the other half, both ways, the two halves pooled; the number is the mean over
    ``n_splits`` random halvings, and the interval redoes the halving, the choice and the scoring in each of
    ``n_resamples`` bootstrap resamples of the sentences. The head chosen on all sentences, its accuracy and its
    margin on the sentences it was chosen on are shown beside it as description (Table 1's columns), not judged.
    Every accuracy is a ratio of sums over sentences (right edges / edges).

    * "All" and the Figure 5 relations: the cross-fitted margin of the best head over the best offset (points),
      against the paper's margin by :func:`table1_rule` (the paper's own sampling spread on its test set agrees,
      twice that partly, the wrong sign disagrees);
    * the relations with a specialist head (cross-fitted margin >= :data:`SPECIALIST_MARGIN`): the share of Table 1
      relations called the same way as in the paper, recomputed in every resample, :func:`share_rule` (the paper's
      share is 1 by definition);
    * direction: the share of relations whose best head in the paper's direction (dependent -> head for every
      relation but ``pobj``) beats the best head in the other direction, both cross-fitted, :func:`share_rule`.

    Relations without edges in ``acc`` are left out; ``acc`` must keep its per-sentence counts
    (:class:`~attnbook.studies.clark.syntax.HeadAccuracy.has_sentences`).
    """
    _needs("sentences", acc.has_sentences)
    rows: list[Comparison] = []
    have = [r for r in acc.relations if r in TABLE1 and acc.total[acc._rel(r)] > 0]
    rels = [r for r in have if r != "All"]
    if not have:
        return rows
    n_sent, unit = int(acc.sentence_total.shape[0]), "sentences"
    point_draws, boot_draws = draws(n_sent, n_resamples=n_resamples, seed=seed, n_splits=n_splits)
    point, boot = _syntax_crossfit(acc, have, point_draws), _syntax_crossfit(acc, have, boot_draws)
    p_margin, p_direction = _split_mean(point["margin"]), _split_mean(point["direction"])
    col = {rel: k for k, rel in enumerate(have)}
    best = {}
    n_heads = acc.n_heads
    for rel in have:
        layer, head, direction, a = acc.best(rel)
        off, b = acc.baseline(rel)
        flat = (layer * n_heads + head) * 2 + syntax.DIRECTIONS.index(direction)
        k = col[rel]
        same = np.r_[point["choice_a"][:, k], point["choice_b"][:, k]] == flat
        best[rel] = (head_label(layer, head), 100 * a, 100 * b, off, float(same.mean()))
    how = (f"head and offset chosen on one half of the sentences and scored on the other, both ways (cross-fitting; "
           f"the mean over {n_splits} random halvings); the interval redoes the halving, the choice and the scoring in "
           f"each of {n_resamples} resamples of the {n_sent} sentences")

    def margin_row(rel: str, quantity: str, note: str) -> Comparison:
        p = TABLE1[rel]
        label, a, b, off, same = best[rel]
        est = _interval(p_margin[col[rel]], boot["margin"][:, col[rel]], n_sent, unit)
        return interval_row(
            "§4.2 heads as parsers", quantity,
            paper=f"{p.accuracy:.1f} ({p.head}) vs {p.baseline:.1f}" + ("" if rel == "All" else f" ({p.offset:+d})"),
            ours=f"{a:.1f} ({label}) vs {b:.1f}" + ("" if rel == "All" else f" ({off:+d})")
                 + f" on all sentences; cross-fitted margin {est.text('+.1f')}",
            estimate=est, paper_value=round(p.accuracy - p.baseline, 1), rule=table1_rule(rel), units=" points",
            note=(f"margin {p.accuracy - p.baseline:+.1f} in the paper; {how}; chosen and scored on all sentences "
                  f"(description, not judged): {a - b:+.1f}, head {label}, the choice of {same:.0%} of the halves"
                  + note))

    if "All" in have:
        rows.append(margin_row("All", "best single head, every relation (UAS) minus right-branching (points)", ""))
    for rel in FIGURE5_RELATIONS:
        if rel in have:
            rows.append(margin_row(rel, f"{rel}: best head minus best fixed offset (points)",
                                   f"; UD {syntax.TABLE1_UD[rel]}"))
    if rels:
        rule = share_rule(len(rels))
        k = [col[r] for r in rels]
        paper_spec = np.array([TABLE1[r].accuracy - TABLE1[r].baseline >= SPECIALIST_MARGIN for r in rels])
        ours_m = p_margin[k]
        boot_m = boot["margin"][:, k]  # [resample, relation]
        undefined = np.isnan(boot_m).any(1)
        same = (ours_m >= SPECIALIST_MARGIN) == paper_spec
        share = np.where(undefined, np.nan, ((boot_m >= SPECIALIST_MARGIN) == paper_spec).mean(1))
        est = _interval(float(same.mean()), share, n_sent, unit)
        lo, hi = _bounds(boot_m[~undefined], len(rels))
        undecided = [r for j, r in enumerate(rels) if lo[j] < SPECIALIST_MARGIN <= hi[j]]
        differ = [r for j, r in enumerate(rels) if not same[j]]
        rows.append(interval_row(
            "§4.2 heads as parsers",
            f"relations with a specialist head (>= {SPECIALIST_MARGIN:.0f} points over the best offset)",
            paper=f"{int(paper_spec.sum())} of {len(rels)}",
            ours=f"{int((ours_m >= SPECIALIST_MARGIN).sum())} of {len(rels)}; same call on {int(same.sum())} "
                 f"(share {est.text('.2f')})",
            estimate=est, paper_value=1.0, rule=rule,
            note=("cross-fitted margins (head and offset chosen on the other half of the sentences); differ: "
                  + (", ".join(differ) or "none") + "; interval of the margin straddles "
                  f"{SPECIALIST_MARGIN:.0f}: " + (", ".join(undecided) or "none")),
        ))
        d_point = p_direction[k]
        d_boot = boot["direction"][:, k]
        undefined = np.isnan(d_boot).any(1)
        match = d_point > 0
        est = _interval(float(match.mean()), np.where(undefined, np.nan, (d_boot > 0).mean(1)), n_sent, unit)
        dlo, dhi = _bounds(d_boot[~undefined], len(rels))
        rows.append(interval_row(
            "§4.2 heads as parsers", "best head reads dependent -> head (pobj: head -> dependent)",
            paper=f"{len(rels)} of {len(rels)}", ours=f"{int(match.sum())} of {len(rels)} (share {est.text('.2f')})",
            estimate=est, paper_value=1.0, rule=rule,
            note="the best head of each direction cross-fitted over the sentences; other direction here: "
                 + (", ".join(r for j, r in enumerate(rels) if not match[j]) or "none")
                 + "; the data cannot tell: "
                 + (", ".join(r for j, r in enumerate(rels) if dlo[j] <= 0 <= dhi[j]) or "none"),
        ))
    return rows


# =============================================================================================
# §4.3 coreference (chapter 2)
# =============================================================================================


def _coref_crossfit(heads: coref.CorefHeadAccuracy, d: Draws) -> tuple[np.ndarray, np.ndarray]:
    """For every draw (:class:`~attnbook.studies.clark.paper.Draws` of the documents): the right antecedents
    of the best head, chosen on all mentions of one half of the documents and scored on the other half, both ways,
    in every column of :data:`~attnbook.studies.clark.coref.COLUMNS` (``correct[draw, column]``), and how often the
    halves chose the all-document best head (the share of the draw's two choices)."""
    n_docs = heads.doc_correct.shape[0]
    x = heads.doc_correct.reshape(n_docs, len(coref.COLUMNS), -1).astype(np.float64)  # [doc, column, head]
    a = coref.COLUMNS.index("all")
    sums_a, sums_b = half_sums(x[:, a], d)
    _, ka, kb = cross_fit(sums_a, sums_b)
    correct = np.stack([scored_elsewhere(x[:, c], d, ka, kb) for c in range(len(coref.COLUMNS))], 1)
    layer, head = heads.best("all")
    flat = layer * heads.doc_correct.shape[-1] + head
    return correct, ((ka == flat).astype(float) + (kb == flat)) / 2


def coref_comparison(heads: coref.CorefHeadAccuracy, base: dict[str, coref.SystemAccuracy], *,
                     n_resamples: int = N_RESAMPLES, seed: int = 0,
                     n_splits: int = N_SPLITS) -> list[Comparison]:
    """Rows of "paper vs this run" for Clark §4.3 (Table 2), judged on a bootstrap over documents.

    The paper's accuracies on CoNLL-2012 are not reproduced (the corpus is licensed; its row says so, kind
    :data:`~attnbook.verdict.NOT_REPRODUCED`), and GUM's are not comparable with them as such (other texts, another
    mix of mention types), so the findings are compared as margins within each corpus, in the paper's own words
    (the paper gives no count of mentions, so no sampling spread of its own): the best head improves "by over 10
    accuracy points" on head-word match (:data:`COREF_GAIN_RULE`) and performs "close to the rule-based system"
    (:data:`COREF_CLOSE_RULE`: within the 10 points the paper calls an improvement); the order of the three baselines
    and the mention type on which the head gains most over head-word match (paper: nominal, +18, with pronouns at +17
    tied within the table's whole-point rounding) are checked in every resample (:class:`~attnbook.verdict.Holds`).

    The best head is chosen inside the estimate by cross-fitting over documents
    (:mod:`~attnbook.studies.clark.paper.crossfit`): chosen on all mentions of a random half of the documents, scored
    in every column on the other half, both ways; the number is the mean over ``n_splits`` random halvings and the
    interval redoes the halving, the choice and the scoring in each of ``n_resamples`` resamples of the documents
    (mentions of one document are not independent; ``heads`` and every baseline must keep their per-document counts;
    one set of draws for all rows, paired). The head best on all documents and its accuracy are shown as
    description, as in Table 2.
    """
    columns, kinds = coref.COLUMNS, coref.KINDS
    systems = ("nearest", "head_match", "rule_based")
    _needs("documents", heads.doc_correct is not None and all(base[k].doc_correct is not None for k in systems))
    if any(base[k].docs != heads.docs for k in systems):
        raise ParameterError("the heads and the baselines were scored on different documents")
    layer, head = heads.best("all")
    label = head_label(layer, head)
    ours = {c: 100 * float(heads.accuracy(c)[layer, head]) for c in columns}
    paper_head = TABLE2[f"Head {COREF_HEAD}"]
    paper_hm, paper_rb = TABLE2["Head-word match"], TABLE2["Rule-based"]
    hm = {c: 100 * base["head_match"].accuracy(c) for c in columns}
    rb = {c: 100 * base["rule_based"].accuracy(c) for c in columns}
    near = 100 * base["nearest"].accuracy("all")
    n_docs, unit = len(heads.docs), "documents"
    a = columns.index("all")
    point_draws, boot_draws = draws(n_docs, n_resamples=n_resamples, seed=seed, n_splits=n_splits)
    with np.errstate(invalid="ignore", divide="ignore"):
        def measure(d: Draws) -> dict[str, np.ndarray]:
            correct, same = _coref_crossfit(heads, d)
            w = d.weights.astype(np.float64)
            mentions = w @ heads.doc_n.astype(np.float64)  # [draw, column]
            sys = {k: w @ base[k].doc_correct.astype(np.float64) for k in systems}
            return {"head": 100 * correct / mentions, "same": same,
                    **{k: 100 * v / mentions for k, v in sys.items()}}

        point, boot = measure(point_draws), measure(boot_draws)
    p_head = _split_mean(point["head"])
    how = (f"head chosen on all mentions of one half of the documents and scored on the other, both ways "
           f"(cross-fitting; the mean over {n_splits} random halvings); the interval redoes the halving, the choice "
           f"and the scoring in each of {n_resamples} resamples of the {n_docs} documents, paired; the head chosen on "
           f"all documents is {label}, the choice of {point['same'].mean():.0%} of the halves")
    rows = [verdict.row(
        "§4.3 coreference", "best head, antecedent selection accuracy (all mentions)",
        paper=f"{paper_head['all']:.0f} ({COREF_HEAD})", ours=f"{ours['all']:.1f} ({label}, on GUM)",
        estimate=Estimate(ours["all"]), kind=verdict.NOT_REPRODUCED, rule=verdict.NotComparable(
            "Clark et al. §4.3, Table 2 score CoNLL-2012, which is licensed (LDC) and not obtainable here; GUM/OntoGUM "
            "is another text with another mix of mentions, so only the margins below are compared"),
        note=f"{heads.n['pronoun']} of {heads.n['all']} queries here are pronouns",
    )]
    for name, key, paper_base, ours_base, finding, rule in (
        ("head-word match", "head_match", paper_hm, hm, "paper: 'improving by over 10 accuracy points'",
         COREF_GAIN_RULE),
        ("rule-based", "rule_based", paper_rb, rb, "paper: 'performing close to the rule-based system'",
         COREF_CLOSE_RULE),
    ):
        margin = boot["head"][:, a] - boot[key][:, a]
        est = _interval(float(p_head[a] - point[key][0, a]), margin, n_docs, unit)
        rows.append(interval_row(
            "§4.3 coreference", f"best head minus {name} (points, all mentions)",
            paper=round(paper_head["all"] - paper_base["all"], 1), ours=est, fmt="+.1f", rule=rule, units=" points",
            note=(f"{finding} (Table 2: {paper_head['all']:.0f} vs {paper_base['all']:.0f}); cross-fitted here, "
                  f"{ours['all'] - ours_base['all']:+.1f} for {label} chosen and scored on all documents "
                  f"(description, not judged); {how}"),
        ))
    order = (boot["nearest"][:, a] < boot["head_match"][:, a]) & (boot["head_match"][:, a] < boot["rule_based"][:, a])
    rows.append(holds_row(
        "§4.3 coreference", "baselines: nearest < head-word match < rule-based",
        paper=f"{TABLE2['Nearest']['all']:.0f} < {paper_hm['all']:.0f} < {paper_rb['all']:.0f}",
        ours=f"{near:.1f}, {hm['all']:.1f}, {rb['all']:.1f}", claim="the baselines come in the paper's order",
        holds=order, n=n_docs, unit=unit,
        note=f"share of {n_resamples} resamples of {n_docs} documents in the paper's order: {order.mean():.1%}",
    ))
    present = [k for k in kinds if heads.n[k] > 0]
    if present:
        paper_gain = {k: paper_head[k] - paper_hm[k] for k in kinds}
        top_gain = max(paper_gain.values())
        # a difference of two whole-point gains is known only to twice the table's precision: those types tie
        tied = [k for k in kinds if paper_gain[k] >= top_gain - 2 * TABLE2_PRECISION]
        ks = [columns.index(k) for k in kinds]
        gain_point = {k: float(p_head[columns.index(k)] - point["head_match"][0, columns.index(k)]) for k in present}
        ok = max(gain_point, key=gain_point.get)
        gains = boot["head"][:, ks] - boot["head_match"][:, ks]  # [resample, kind]
        gains = np.where(np.isnan(gains), -np.inf, gains)
        top = np.asarray(kinds)[gains.argmax(1)]
        holds = np.isin(top, tied)
        names = " or ".join(tied)
        rows.append(holds_row(
            "§4.3 coreference", "mention type where the head gains most over head-word match",
            paper=", ".join(f"{k} ({paper_gain[k]:+.0f})" for k in tied), ours=f"{ok} ({gain_point[ok]:+.1f})",
            claim=f"the head gains most on {names} mentions", holds=holds, n=n_docs, unit=unit,
            note=("in the paper " + ", ".join(f"{k} {paper_gain[k]:+.0f}" for k in kinds)
                  + (f": {names} tie within the table's whole-point rounding" if len(tied) > 1 else "")
                  + "; cross-fitted gains here: " + ", ".join(f"{k} {gain_point[k]:+.1f}" for k in present)
                  + f"; share of {n_resamples} resamples of {n_docs} documents with the most on {names}: "
                  f"{holds.mean():.1%}"),
        ))
    return rows


# =============================================================================================
# §5 probing classifiers (chapter 2)
# =============================================================================================


def last_epoch_fall(losses: Sequence[float]) -> float | None:
    """How much a probe's training loss fell over its last epoch, as a share of the epoch before's (NaN-free losses
    per epoch; ``None`` with fewer than two epochs). Positive: the loss was still falling when training stopped."""
    loss = [float(x) for x in losses if math.isfinite(float(x))]
    if len(loss) < 2 or loss[-2] == 0:
        return None
    return (loss[-2] - loss[-1]) / loss[-2]


def convergence_text(losses: dict[str, Sequence[float]], keys: Sequence[str]) -> str:
    """The training-length confound of a margin between probes ``keys``, from their recorded per-epoch losses:
    how much each probe's training loss still fell over its last epoch, and, when any still fell, that the margin
    may move with more training. ``""`` without recorded losses."""
    names = probes.TABLE3_NAMES
    parts, falling = [], False
    for k in keys:
        fall = last_epoch_fall(losses.get(k, ()))
        if fall is None:
            continue
        falling |= fall > 0
        parts.append(f"{names[k]} {fall:+.1%} over epoch {len(losses[k])}" if fall <= 0 else
                     f"{names[k]} still fell by {fall:.1%} over its last epoch ({len(losses[k])})")
    if not parts:
        return ""
    return ("training loss: " + ", ".join(parts)
            + ("; a probe not yet converged is a confound: the margin may move with more training" if falling else
               "; neither loss was still falling"))


def probe_comparison(results: dict, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> list[Comparison]:
    """Rows of "paper vs this run" for Clark §5 (Table 3), judged on a bootstrap over dev sentences.

    Absolute UAS on UD EWT and on the PTB with Stanford Dependencies differ in corpus and annotation, so each
    finding is compared as a margin between two rows of Table 3 (:data:`TABLE3_FINDINGS`) by
    :func:`table3_rule` (the paper's UAS on the PTB dev words, printed to the whole point: a margin within that
    precision of the paper's agrees, within twice it partly, the wrong sign disagrees). Every probe is scored on the
    same dev sentences, so a margin's interval is a paired per-sentence bootstrap (one set of draws for all rows);
    the probes are trained once (one seed), so the interval leaves out the training's own randomness. Each note
    names the training-length confound from the probes' recorded losses (:func:`convergence_text`: how much each
    loss still fell over the last epoch). Findings whose rows were not run are left out.
    ``results`` is :func:`~attnbook.studies.clark.probes.run_probes`' (or
    :func:`~attnbook.studies.clark.probes.cached_run_probes`') result, with ``per_sentence`` counts.
    """
    names = probes.TABLE3_NAMES
    ours = results["uas"]
    _needs("dev sentences", "per_sentence" in results)
    per = results["per_sentence"]
    found = [(a, b, f) for a, b, f in TABLE3_FINDINGS if a in ours and b in ours]
    if not found:
        return []
    scored = np.asarray(per["scored"], dtype=np.float64)
    num = np.stack([np.asarray(per[a], np.float64) - np.asarray(per[b], np.float64) for a, b, _ in found], 1)
    boot = 100 * resampled_ratio(num, np.repeat(scored[:, None], len(found), 1), n_resamples=n_resamples, seed=seed)
    rows = []
    losses = results.get("losses") or {}
    for k, (a, b, finding) in enumerate(found):
        est = _interval(ours[a] - ours[b], boot[:, k], len(scored), "sentences")
        trend = convergence_text(losses, (a, b))
        rows.append(interval_row(
            "§5 probing classifiers", f"{names[a]} minus {names[b]} (UAS points)",
            paper=round(TABLE3[a] - TABLE3[b], 1), ours=est, fmt="+.1f", rule=table3_rule(a, b), units=" points",
            note=f"{finding}; UAS {TABLE3[a]:.0f} vs {TABLE3[b]:.0f} in the paper, {ours[a]:.1f} vs {ours[b]:.1f} "
                 "here; interval over dev sentences (paired), one training run" + (f"; {trend}" if trend else ""),
        ))
    return rows
