"""Clark et al. (2019), "What does BERT look at?": the paper's numbers, and "paper vs this run".

Every number of the paper the book compares with lives here, cited by section or table, and
every comparison row of chapters 1-3 is made here, its verdict computed from the numbers by
:mod:`attnbook.verdict` (the one rule; each function's docstring states which rule and why):

* §3 surface patterns: :data:`SURFACE`, :func:`surface_comparison`, :func:`surface_findings`;
* §4.1 word-level maps: :data:`SPLIT_WORD_SHARE`;
* §4.2 heads as parsers: :data:`TABLE1`, :func:`table1`, :func:`syntax_comparison`;
* §4.3 coreference: :data:`TABLE2`, :data:`COREF_HEAD`, :func:`table2`, :func:`coref_comparison`;
* §5 probing classifiers: :data:`TABLE3`, :data:`TABLE3_FINDINGS`, :func:`table3`, :func:`probe_comparison`;
* §6 clustering: :func:`clustering_comparison`, :func:`agreement_markdown`.

Tables set the paper's columns beside this run's (:class:`Report`: the table shown, the key
numbers the chapter records and a line of text). Nothing here measures.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from attnbook import verdict
from attnbook.core.errors import EmptyDataError
from attnbook.core.heads import head_label
from attnbook.stats import GroupTest
from attnbook.studies.clark import coref, probes, syntax
from attnbook.studies.clark.clusters import Clustering
from attnbook.studies.clark.embedding import MDSResult
from attnbook.studies.clark.surface import layer_means, positional_heads, sink_token


@dataclass
class Report:
    """What a chapter cell shows and records: ``table`` (to display), ``numbers`` (key -> value for the
    results file) and ``text`` (a line about the data)."""

    table: Any
    numbers: dict = field(default_factory=dict)
    text: str = ""


# =============================================================================================
# §3 surface patterns (chapter 1)
# =============================================================================================

#: Clark et al. §3 numbers for bert-base (12 layers x 12 heads), 1-based layers.
SURFACE = {
    "prev_heads_layers": [2, 4, 7, 8],  # §3.1: heads with > 50% attention to the previous token
    "next_heads_layers": [1, 2, 2, 3, 6],  # §3.1: ... to the next token
    "sep_majority_layers": [6, 7, 8, 9, 10],  # §3.2: layers where over half of the attention goes to [SEP]
    "sep_sep_share": 0.9,  # §3.2: from [SEP], over 90% of the attention stays on [SEP]
    "cls_entropy_last_layer": 3.89,  # §3.3: mean entropy from [CLS] in the last layer (nats)
    "grad_sep_small_from_layer": 5,  # §3.2, Fig. 3: gradients to [SEP] become small from layer 5 on
    "n_layers": 12,
}


def _count_verdict(ours: int, paper: int, n_heads_total: int) -> tuple[str, float]:
    expected = paper * n_heads_total / 144  # the paper's count scaled to this model's number of heads
    ratio = ours / expected
    return verdict.conditions(ours > 0 and 0.5 <= ratio <= 2, ours > 0), expected


def surface_comparison(stats: dict[str, np.ndarray], grads: dict[str, np.ndarray] | None = None) -> list[dict]:
    """Rows of "paper vs this run" for Clark §3, each with a verdict computed from the numbers.

    ``stats`` is :func:`attnbook.studies.clark.surface.surface_statistics`' result, ``grads``
    :func:`attnbook.studies.clark.gradients.cached_attention_gradients`'. Counts of heads are compared
    after scaling the paper's count to this model's number of heads (:func:`attnbook.verdict.conditions`:
    within a factor 2 agrees, any head partly); the special tokens by the order of the layers where
    attention to them peaks.
    """
    n_layers, n_heads = stats["sep"].shape
    rows: list[dict] = []
    pos = positional_heads(stats)
    for kind, heads in (("previous", pos.previous), ("next", pos.next)):
        paper_layers = SURFACE[f"{'prev' if kind == 'previous' else 'next'}_heads_layers"]
        ours_layers = sorted(l + 1 for l, _ in heads)
        outcome, expected = _count_verdict(len(ours_layers), len(paper_layers), n_layers * n_heads)
        rows.append(dict(
            experiment="§3.1 relative position", quantity=f"heads with >50% attention to the {kind} token (layers)",
            paper=f"{len(paper_layers)} of 144 (layers {', '.join(map(str, paper_layers))})",
            ours=f"{len(ours_layers)} of {n_layers * n_heads} (layers {', '.join(map(str, ours_layers)) or '-'})",
            verdict=outcome,
            note=f"{expected:.1f} expected at the paper's rate for {n_layers * n_heads} heads",
        ))
    means = {k: layer_means(stats[k]) for k in ("cls", "sep", "punct")}
    peak = {k: int(np.argmax(v)) + 1 for k, v in means.items()}
    order_ok = peak["cls"] <= peak["sep"] <= peak["punct"]
    rows.append(dict(
        experiment="§3.2 special tokens", quantity="layer where mean attention peaks: [CLS] / [SEP] / . or ,",
        paper="early / middle / deep",
        ours=f"{peak['cls']} / {peak['sep']} / {peak['punct']} of {n_layers}",
        verdict=verdict.conditions(order_ok and peak["cls"] < peak["punct"], order_ok),
        note="order of the peaks through the layers",
    ))
    sep_layers = [i + 1 for i, v in enumerate(means["sep"]) if v > 0.5]
    majority = SURFACE["sep_majority_layers"]
    rows.append(dict(
        experiment="§3.2 special tokens", quantity="layers where over half of the attention goes to [SEP]",
        paper=f"{min(majority)}-{max(majority)} of {SURFACE['n_layers']}",
        ours=(f"{', '.join(map(str, sep_layers))} of {n_layers}" if sep_layers
              else f"none (max {means['sep'].max():.2f} in layer {peak['sep']})"),
        verdict=verdict.conditions(bool(sep_layers), means["sep"].max() > 0.25),
        note="mean over the layer's heads",
    ))
    sink = sink_token(stats)
    if sink == "cls":
        cls_layers = [i + 1 for i, v in enumerate(means["cls"]) if v > 0.5]
        rows.append(dict(
            experiment="§3.2 special tokens", quantity="where the spare attention goes instead",
            paper="[SEP] (a no-op target)",
            ours=f"[CLS]: over half in layers {', '.join(map(str, cls_layers)) or '-'}, max {means['cls'].max():.2f}",
            verdict=verdict.DISAGREES, note="this model parks attention on [CLS], not [SEP]",
        ))
    sep_heads = stats["sep"] > 0.5
    if sep_heads.any():
        share = float(stats["sep_sep"][sep_heads].mean())
        rows.append(dict(
            experiment="§3.2 special tokens", quantity="[SEP]->[SEP] share in heads that attend mostly to [SEP]",
            paper=f"> {SURFACE['sep_sep_share']:.2f}", ours=round(share, 3),
            verdict=verdict.conditions(share > SURFACE["sep_sep_share"], share > 0.5),
            note="attention from [SEP] stays on the [SEP] tokens",
        ))
    if grads is not None:
        name = "[SEP]" if sink == "sep" else "[CLS]"
        ratio = layer_means(grads[f"grad_{sink}"]) / layer_means(grads["grad_other"])
        heavy = means[sink] >= np.median(means[sink])
        if (~heavy).any():
            low = float(ratio[heavy].mean()) < float(ratio[~heavy].mean())
            rows.append(dict(
                experiment="§3.2 gradients",
                quantity=f"|dL/d attn| to {name} / to other tokens: layers with much vs little {name} attention",
                paper=f"small where [SEP] attention is high (layer {SURFACE['grad_sep_small_from_layer']} on)",
                ours=f"{ratio[heavy].mean():.2f} vs {ratio[~heavy].mean():.2f}",
                verdict=verdict.conditions(low and sink == "sep", low),
                note=("no-op hypothesis tested on the model's own sink token " + name
                      + ("" if sink == "sep" else " (the paper tested [SEP])")),
            ))
    first = stats["entropy"][0]
    rows.append(dict(
        experiment="§3.3 entropy", quantity="highest head entropy in layer 1 / uniform entropy (nats)",
        paper="close to uniform (broad heads in lower layers)",
        ours=f"{first.max():.2f} / {float(stats['uniform_entropy']):.2f}",
        verdict=verdict.conditions(first.max() > 0.75 * float(stats["uniform_entropy"])),
        note="bag-of-vectors heads",
    ))
    last_cls = float(stats["entropy_cls"][-1].mean())
    rows.append(dict(
        experiment="§3.3 entropy", quantity="mean entropy from [CLS] in the last layer (nats)",
        paper=SURFACE["cls_entropy_last_layer"], ours=round(last_cls, 3),
        verdict=verdict.closeness(SURFACE["cls_entropy_last_layer"], last_cls, 0.1, 0.25, relative=True),
        note="broad attention from [CLS] in the last layer",
    ))
    return rows


def mlm_head_rows(mlm) -> list[dict]:
    """The row saying the §3.2 gradients used a fitted MLM head (none when the checkpoint has its own).

    ``mlm`` is an :class:`attnbook.engine.gradients.MLMHeadFit`; a fitted head is not the paper's
    (``not comparable``).
    """
    if mlm.source == "pretrained":
        return []
    return [dict(experiment="§3.2 gradients", quantity="MLM head", paper="BERT's own",
                 ours=f"fitted, top-1 {mlm.heldout_accuracy:.1%}", verdict=verdict.NOT_COMPARABLE,
                 note="the embedded model has no MLM head; gradients use a head fitted on it")]


def surface_findings(stats: dict[str, np.ndarray], grads: dict[str, np.ndarray] | None, model_name: str) -> str:
    """A paragraph, computed from the numbers, saying where this run agrees with Clark §3 and where not."""
    rows = surface_comparison(stats, grads)
    agree = [r for r in rows if r["verdict"] == verdict.AGREES]
    differ = [r for r in rows if r["verdict"] in (verdict.DISAGREES, verdict.PARTLY)]
    means = {k: layer_means(stats[k]) for k in ("cls", "sep")}
    parts = [f"**What this run shows.** On {model_name}, {len(agree)} of {len(rows)} findings agree with "
             "bert-base: " + "; ".join(r["quantity"] for r in agree) + "."]
    if sink_token(stats) == "cls":
        parts.append(
            f"The largest difference is the no-op target: this model sends up to {means['cls'].max():.0%} of a "
            f"layer's attention to [CLS] and at most {means['sep'].max():.0%} to [SEP], so the [SEP]-centred "
            "findings of §3.2 do not carry over, while the pattern behind them (a fixed special token absorbing "
            "attention a head does not need) does.")
    if differ:
        parts.append("Differences: " + "; ".join(f"{r['quantity']} (paper {r['paper']}, here {r['ours']})"
                                                for r in differ) + ".")
    return " ".join(parts)


# =============================================================================================
# §4-5 heads as parsers, coreference, probes (chapter 2)
# =============================================================================================

#: Clark §4.1: the share of words split into several word pieces in their data ("about 8%")
SPLIT_WORD_SHARE = 0.08


def split_words_text(split) -> str:
    """How many evaluated words are split into pieces, beside the paper's share (``split``:
    :func:`attnbook.studies.clark.wordmaps.split_words`)."""
    return (f"{split.share:.1%} of the {split.n_words} words of the evaluated sentences are split into several "
            f"pieces (Clark et al.: about {SPLIT_WORD_SHARE:.0%} in their data)")


@dataclass(frozen=True)
class PaperRow:
    """One row of Clark et al. Table 1 (BERT-base, WSJ/SD): best head, its accuracy, baseline and offset."""

    head: str
    accuracy: float
    baseline: float
    offset: int


#: Clark et al. (2019), Table 1: relation -> best head (1-based), accuracy %, baseline %, best offset
TABLE1: dict[str, PaperRow] = {
    "All": PaperRow("7-6", 34.5, 26.3, 1),
    "prep": PaperRow("7-4", 66.7, 61.8, -1),
    "pobj": PaperRow("9-6", 76.3, 34.6, -2),
    "det": PaperRow("8-11", 94.3, 51.7, 1),
    "nn": PaperRow("4-10", 70.4, 70.2, 1),
    "nsubj": PaperRow("8-2", 58.5, 45.5, 1),
    "amod": PaperRow("4-10", 75.6, 68.3, 1),
    "dobj": PaperRow("8-10", 86.8, 40.0, -2),
    "advmod": PaperRow("7-6", 48.8, 40.2, 1),
    "aux": PaperRow("4-10", 81.1, 71.5, 1),
    "poss": PaperRow("7-6", 80.5, 47.7, 1),
    "auxpass": PaperRow("4-10", 82.5, 40.5, 1),
    "ccomp": PaperRow("8-1", 48.8, 12.4, -2),
    "mark": PaperRow("8-2", 50.7, 14.5, 2),
    "prt": PaperRow("6-7", 99.1, 91.4, -1),
}

#: a head "specialises" in a relation when it beats the best fixed offset by at least this many points
#: (the book's reading of Clark §4.2: "substantially outperforming the fixed-offset baseline"); also the
#: size class of every margin compared in §4.3 and §5
SPECIALIST_MARGIN = 10.0

#: the relations of Clark's Figure 5, in its order
FIGURE5_RELATIONS = ("pobj", "det", "dobj", "poss", "auxpass")

#: column names of Table 1 as the chapter shows it
_TABLE1_SHOWN = {"n": "edges", "head": "best head", "accuracy": "acc. %", "baseline_offset": "offset",
                 "baseline_accuracy": "baseline %", "paper_head": "paper head", "paper_accuracy": "paper acc. %",
                 "paper_baseline": "paper baseline %", "paper_offset": "paper offset"}


def table1_frame(acc: syntax.HeadAccuracy):
    """:func:`attnbook.studies.clark.syntax.table1` with the paper's head, accuracy, baseline and offset
    (BERT-base on WSJ/SD, :data:`TABLE1`) as ``paper_*`` columns."""
    df = syntax.table1(acc)
    rows = [TABLE1.get(rel) for rel in df["relation"]]
    df["paper_head"] = [p.head if p else None for p in rows]
    df["paper_accuracy"] = [p.accuracy if p else float("nan") for p in rows]
    df["paper_baseline"] = [p.baseline if p else float("nan") for p in rows]
    df["paper_offset"] = [p.offset if p else None for p in rows]
    return df


def table1(acc: syntax.HeadAccuracy, right_branching: float) -> Report:
    """Clark Table 1 beside this run's; ``right_branching`` is
    :func:`~attnbook.studies.clark.syntax.right_branching_uas`.

    Numbers: ``n_sentences_syntax``, ``right_branching_uas`` (percent), ``table1`` (the rows).
    """
    t1 = table1_frame(acc).drop(columns=["ud"])
    return Report(
        table=t1.rename(columns=_TABLE1_SHOWN),
        numbers={"n_sentences_syntax": acc.n_sentences, "right_branching_uas": 100 * right_branching,
                 "table1": t1.to_dict(orient="records")},
        text=(f"{acc.n_sentences} sentences, {int(acc.total[0])} scored words; right-branching UAS "
              f"{100 * right_branching:.1f}% (paper: {TABLE1['All'].baseline:.1f}%)"),
    )


def syntax_comparison(acc: syntax.HeadAccuracy) -> list[dict]:
    """Rows of "paper vs this run" for Clark §4.2 (Table 1), each with a verdict computed from the numbers.

    * "All": the best single head against the right-branching offset (paper: 34.5 vs 26.3,
      "not much better"), :func:`attnbook.verdict.margin`;
    * the Figure 5 relations: best head against the best offset, :func:`attnbook.verdict.margin`;
    * the set of relations with a specialist head (margin >= :data:`SPECIALIST_MARGIN`):
      share of Table 1 relations classified the same way as in the paper (>= 80% agrees,
      >= 50% partly);
    * direction: share of relations whose best head reads the paper's direction
      (dependent -> head for every relation but ``pobj``), same thresholds.

    Relations without edges in ``acc`` are left out. Keys of each row are
    :meth:`attnbook.chapters.results.ChapterResults.compare`'s arguments.
    """
    rows: list[dict] = []
    have = [r for r in acc.relations if r in TABLE1 and acc.total[acc._rel(r)] > 0]

    def ours_of(rel: str) -> tuple[str, float, float, int, str]:
        layer, head, direction, a = acc.best(rel)
        off, b = acc.baseline(rel)
        return head_label(layer, head), 100 * a, 100 * b, off, direction

    if "All" in have:
        p = TABLE1["All"]
        label, a, b, _, _ = ours_of("All")
        rows.append(dict(
            experiment="§4.2 heads as parsers", quantity="best single head, every relation (UAS) vs right-branching",
            paper=f"{p.accuracy:.1f} ({p.head}) vs {p.baseline:.1f}", ours=f"{a:.1f} ({label}) vs {b:.1f}",
            verdict=verdict.margin(p.accuracy - p.baseline, a - b, SPECIALIST_MARGIN),
            note=f"margin {p.accuracy - p.baseline:+.1f} vs {a - b:+.1f} points",
        ))
    for rel in FIGURE5_RELATIONS:
        if rel not in have:
            continue
        p = TABLE1[rel]
        label, a, b, off, _ = ours_of(rel)
        rows.append(dict(
            experiment="§4.2 heads as parsers", quantity=f"{rel}: best head vs best fixed offset",
            paper=f"{p.accuracy:.1f} ({p.head}) vs {p.baseline:.1f} ({p.offset:+d})",
            ours=f"{a:.1f} ({label}) vs {b:.1f} ({off:+d})",
            verdict=verdict.margin(p.accuracy - p.baseline, a - b, SPECIALIST_MARGIN),
            note=f"margin {p.accuracy - p.baseline:+.1f} vs {a - b:+.1f} points; UD {syntax.TABLE1_UD[rel]}",
        ))
    rels = [r for r in have if r != "All"]
    if rels:
        paper_spec = {r for r in rels if TABLE1[r].accuracy - TABLE1[r].baseline >= SPECIALIST_MARGIN}
        ours_spec = set()
        for r in rels:
            _, a, b, _, _ = ours_of(r)
            if a - b >= SPECIALIST_MARGIN:
                ours_spec.add(r)
        same = sum((r in paper_spec) == (r in ours_spec) for r in rels)
        differ = [r for r in rels if (r in paper_spec) != (r in ours_spec)]
        rows.append(dict(
            experiment="§4.2 heads as parsers",
            quantity=f"relations with a specialist head (>= {SPECIALIST_MARGIN:.0f} points over the best offset)",
            paper=f"{len(paper_spec)} of {len(rels)}", ours=f"{len(ours_spec)} of {len(rels)}",
            verdict=verdict.share(same, len(rels), agree=0.8, partly=0.5),
            note=f"same call on {same} of {len(rels)} relations"
                 + (f"; differ: {', '.join(differ)}" if differ else ""),
        ))
        expected = {r: ("head->dep" if r == "pobj" else "dep->head") for r in rels}
        match = [r for r in rels if ours_of(r)[4] == expected[r]]
        other = [r for r in rels if r not in match]
        rows.append(dict(
            experiment="§4.2 heads as parsers", quantity="best head reads dependent -> head (pobj: head -> dependent)",
            paper=f"{len(rels)} of {len(rels)}", ours=f"{len(match)} of {len(rels)}",
            verdict=verdict.share(len(match), len(rels), agree=0.8, partly=0.5),
            note="other direction here: " + (", ".join(other) if other else "none"),
        ))
    return rows


#: Clark et al. (2019) Table 2: antecedent selection accuracy (%) on CoNLL-2012,
#: bert-base-uncased, documents truncated to 128 tokens. Neural coref (Wiseman et
#: al. 2015) is reported overall only, on full documents with its own mentions.
TABLE2: dict[str, dict[str, float | None]] = {
    "Nearest": {"all": 27, "pronoun": 29, "proper": 29, "nominal": 19},
    "Head-word match": {"all": 52, "pronoun": 47, "proper": 67, "nominal": 40},
    "Rule-based": {"all": 69, "pronoun": 70, "proper": 77, "nominal": 60},
    "Neural coref": {"all": 83, "pronoun": None, "proper": None, "nominal": None},
    "Head 5-4": {"all": 65, "pronoun": 64, "proper": 73, "nominal": 58},
}
#: the paper's best coreference head (1-based layer-head), Clark et al. §4.3 / Figure 5 (65.1%)
COREF_HEAD = "5-4"


def _table2_paper_value(system: str, column: str) -> float:
    row = f"Head {COREF_HEAD}" if system.startswith("Best head (") else system
    if row not in TABLE2:
        return float("nan")
    v = TABLE2[row][column]
    return float("nan") if v is None else float(v)


def table2_frame(heads: coref.CorefHeadAccuracy | None, base: dict[str, coref.SystemAccuracy]):
    """:func:`attnbook.studies.clark.coref.table2` with ``paper <column>`` columns from :data:`TABLE2`
    (the best-head row is compared with the paper's head :data:`COREF_HEAD`)."""
    df = coref.table2(heads, base)
    for c in coref.COLUMNS:
        df[f"paper {c}"] = [_table2_paper_value(r, c) for r in df.index]
    return df


def paper_table2():
    """:data:`TABLE2` as a DataFrame (rows = systems, columns = mention types, %)."""
    import pandas as pd

    df = pd.DataFrame.from_dict(TABLE2, orient="index", columns=list(coref.COLUMNS)).astype(float)
    df.index.name = "system"
    return df


def table2(docs: Sequence, wins: Sequence[coref.CorefWindow], heads: coref.CorefHeadAccuracy,
           base: dict[str, coref.SystemAccuracy]) -> Report:
    """Clark Table 2 beside this run's. Numbers: ``coref_counts`` (documents, windows, queries by type),
    ``table2`` (system -> column -> %)."""
    t2 = table2_frame(heads, base)
    return Report(
        table=t2,
        numbers={"coref_counts": {"documents": len(docs), "windows": len(wins), **coref.count_queries(wins)},
                 "table2": {k: {c: float(v) for c, v in row.items()} for k, row in t2.to_dict(orient="index").items()}},
        text=(f"{len(docs)} documents, {len(wins)} windows with a coreferent mention, "
              f"{heads.n['all']} mentions to resolve ({heads.n['pronoun']} pronouns)"),
    )


def coref_comparison(heads: coref.CorefHeadAccuracy, base: dict[str, coref.SystemAccuracy]) -> list[dict]:
    """Rows of "paper vs this run" for Clark §4.3 (Table 2), each with a verdict computed from the numbers.

    Accuracies on GUM and CoNLL-2012 are not comparable as such (other texts, another mix
    of mention types), so the findings are compared as margins within each corpus
    (:func:`attnbook.verdict.margin`, 10-point size classes): the best head over the
    head-word-match baseline (paper: "over 10 points"), the best head against the
    rule-based system (paper: close, -4), the order of the three baselines, and the
    mention type on which the head gains most over head-word match (paper: nominal).
    The best head is the one best on all mentions, scored in every column, as in Table 2.
    ``base`` is :func:`attnbook.studies.clark.coref.baselines`' result.
    """
    columns, kinds = coref.COLUMNS, coref.KINDS
    layer, head = heads.best("all")
    label = head_label(layer, head)
    ours = {c: 100 * float(heads.accuracy(c)[layer, head]) for c in columns}
    paper_head = TABLE2[f"Head {COREF_HEAD}"]
    paper_hm, paper_rb = TABLE2["Head-word match"], TABLE2["Rule-based"]
    hm = {c: 100 * base["head_match"].accuracy(c) for c in columns}
    rb = {c: 100 * base["rule_based"].accuracy(c) for c in columns}
    near = 100 * base["nearest"].accuracy("all")
    rows = [dict(
        experiment="§4.3 coreference", quantity="best head, antecedent selection accuracy (all mentions)",
        paper=f"{paper_head['all']:.0f} ({COREF_HEAD})", ours=f"{ours['all']:.1f} ({label})",
        verdict=verdict.NOT_COMPARABLE,
        note=f"CoNLL-2012 vs GUM/OntoGUM; {heads.n['pronoun']} of {heads.n['all']} queries here are pronouns",
    )]
    for name, paper_base, ours_base, finding in (
        ("head-word match", paper_hm, hm, "paper: over 10 points better"),
        ("rule-based", paper_rb, rb, "paper: close to the rule-based system"),
    ):
        pm, om = paper_head["all"] - paper_base["all"], ours["all"] - ours_base["all"]
        rows.append(dict(
            experiment="§4.3 coreference", quantity=f"best head minus {name} (points, all mentions)",
            paper=round(pm, 1), ours=round(om, 1), verdict=verdict.margin(pm, om, SPECIALIST_MARGIN), note=finding,
        ))
    order_ok = near < hm["all"] < rb["all"]
    rows.append(dict(
        experiment="§4.3 coreference", quantity="baselines: nearest < head-word match < rule-based",
        paper=f"{TABLE2['Nearest']['all']:.0f} < {paper_hm['all']:.0f} < {paper_rb['all']:.0f}",
        ours=f"{near:.1f}, {hm['all']:.1f}, {rb['all']:.1f}", verdict=verdict.conditions(order_ok),
        note="same order" if order_ok else "another order here",
    ))
    present = [k for k in kinds if heads.n[k] > 0]
    if present:
        paper_gain = {k: paper_head[k] - paper_hm[k] for k in kinds}
        ours_gain = {k: ours[k] - hm[k] for k in present}
        pk, ok = max(paper_gain, key=paper_gain.get), max(ours_gain, key=ours_gain.get)
        rows.append(dict(
            experiment="§4.3 coreference", quantity="mention type where the head gains most over head-word match",
            paper=f"{pk} ({paper_gain[pk]:+.0f})", ours=f"{ok} ({ours_gain[ok]:+.1f})",
            verdict=verdict.conditions(pk == ok),
            note="gains here: " + ", ".join(f"{k} {ours_gain[k]:+.1f}" for k in present),
        ))
    return rows


#: Clark et al. (2019) Table 3, UAS on the PTB/SD dev set (BERT-base), rows of
#: :data:`attnbook.studies.clark.probes.TABLE3_NAMES`
TABLE3: dict[str, float] = {
    "right_branching": 26.0,
    "distances_words": 58.0,
    "random_init_attn_words": 30.0,
    "attn": 61.0,
    "attn_words": 77.0,
}

#: Clark §5 findings read off Table 3 as margins (row A minus row B, UAS points), with the paper's wording
TABLE3_FINDINGS: tuple[tuple[str, str, str], ...] = (
    ("attn_words", "distances_words", "attention adds to words and distances"),
    ("attn_words", "random_init_attn_words", "pretraining, not the architecture, gives the maps their syntax"),
    ("attn_words", "attn", "word vectors help choose heads"),
    ("attn", "distances_words", "attention alone rivals words + distances"),
    ("random_init_attn_words", "right_branching", "random-init maps barely beat right-branching"),
)


def table3_frame(results: dict):
    """Clark Table 3 as a DataFrame: model, key, paper UAS, this run's UAS (percent)."""
    df = probes.table3(results)
    df.insert(2, "paper_uas", [TABLE3[k] for k in df["key"]])
    return df


def table3(results: dict) -> Report:
    """Clark Table 3 beside this run's (``results``: :func:`attnbook.studies.clark.probes.cached_run_probes`').

    Numbers: ``table3_uas`` (row -> UAS), ``probe_info`` (:func:`~attnbook.studies.clark.probes.probe_info`).
    """
    shown = table3_frame(results).drop(columns=["key"]).rename(columns={"paper_uas": "paper UAS", "uas": "UAS here"})
    return Report(table=shown, numbers={"table3_uas": results["uas"], "probe_info": probes.probe_info(results)},
                  text=probes.describe(results))


def probe_comparison(results: dict) -> list[dict]:
    """Rows of "paper vs this run" for Clark §5 (Table 3), verdicts computed from the numbers.

    Absolute UAS on UD EWT and on the PTB with Stanford Dependencies differ in corpus and
    annotation, so each finding is compared as a margin between two rows of Table 3
    (:data:`TABLE3_FINDINGS`) with :func:`attnbook.verdict.margin` (10-point size
    classes; a sign flip disagrees). Findings whose rows were not run are left out.
    ``results`` is :func:`~attnbook.studies.clark.probes.run_probes`' (or
    :func:`~attnbook.studies.clark.probes.cached_run_probes`') result.
    """
    names = probes.TABLE3_NAMES
    ours = results["uas"]
    rows = []
    for a, b, finding in TABLE3_FINDINGS:
        if a not in ours or b not in ours:
            continue
        pm, om = TABLE3[a] - TABLE3[b], ours[a] - ours[b]
        rows.append(dict(
            experiment="§5 probing classifiers", quantity=f"{names[a]} minus {names[b]} (UAS points)",
            paper=round(pm, 1), ours=round(om, 1), verdict=verdict.margin(pm, om, SPECIALIST_MARGIN),
            note=f"{finding}; UAS {TABLE3[a]:.0f} vs {TABLE3[b]:.0f} in the paper, "
                 f"{ours[a]:.1f} vs {ours[b]:.1f} here",
        ))
    return rows


def random_init_markdown(uas: dict[str, float]) -> str:
    """What the random-init row says here, against the paper's Table 3 (Markdown)."""
    rb_row, rnd_row = uas["right_branching"], uas.get("random_init_attn_words")
    if rnd_row is None:
        return "The random-init baseline was not run (`probe_random_init=False`)."
    above = TABLE3["random_init_attn_words"] - TABLE3["right_branching"]
    gain = TABLE3["attn_words"] - TABLE3["random_init_attn_words"]
    return (
        f"Here the random-init row reaches {rnd_row:.1f} UAS against {rb_row:.1f} for right-branching: "
        + (f"it falls **below** right-branching, while the paper's random-init row was {above:.0f} points above it. "
           "The rows of the random-init maps are much flatter than the trained model's (the peaks above), so they "
           "say little about which word is next to which, and the probe sees word order only through the maps "
           "(its word vectors carry none): it cannot even learn the right-branching rule from them." if rnd_row < rb_row
           else "a small gain over right-branching, as in the paper.")
        + f" Trained maps instead of random-init ones add {uas['attn_words'] - rnd_row:.1f} UAS points to the "
          f"attention-and-words probe (paper: {gain:.0f}): what the probe reads comes from pretraining, not from the "
          "architecture.")


def findings_markdown(rows: Sequence[dict], model_name: str) -> str:
    """A chapter's agreement paragraph, computed from its "paper vs this run" rows.

    Counts the verdicts per experiment (rows marked "not comparable" are named apart) and lists
    every row that does not agree with the paper.
    """
    if not rows:
        raise EmptyDataError("no comparison rows")
    by_exp: dict[str, list[dict]] = {}
    for r in rows:
        by_exp.setdefault(r["experiment"], []).append(r)
    parts = [f"**What this run shows.** On {model_name}:"]
    for exp, rs in by_exp.items():
        judged = [r for r in rs if r["verdict"] != verdict.NOT_COMPARABLE]
        agree = sum(r["verdict"] == verdict.AGREES for r in judged)
        partly = sum(r["verdict"] == verdict.PARTLY for r in judged)
        parts.append(f"{exp}: {agree} of {len(judged)} findings agree, {partly} partly"
                     + (f" ({len(rs) - len(judged)} not comparable)" if len(judged) < len(rs) else "") + ";")
    parts[-1] = parts[-1][:-1] + "."
    differ = [r for r in rows if r["verdict"] in (verdict.DISAGREES, verdict.PARTLY)]
    if differ:
        parts.append("Where the numbers differ: " + "; ".join(
            f"{r['quantity']} ({r['verdict']}: paper {r['paper']}, here {r['ours']})" for r in differ) + ".")
    return " ".join(parts)


# =============================================================================================
# §6 clustering (chapter 3)
# =============================================================================================

def clustering_comparison(
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
        experiment="§6 clusters",
        quantity=f"silhouette of the average-linkage cut at k (clusters of >= {min_size} heads)",
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
            note=(f"{len(behaviours.group_within)} behaviours shared by >= 2 heads, "
                  f"{behaviours.n_permutations} shuffles"),
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


def distance_setup_rows(n_tokens: int, query_fraction: float, smoothing: float) -> list[dict]:
    """The row saying how this run's distance differs from the paper's (a mean, not a sum: not comparable)."""
    return [dict(experiment="§6 setup", quantity="distance",
                 paper="sum over tokens of JS (released code: smoothed 0.001/n, summed)",
                 ours=(f"mean over {int(n_tokens):,} tokens ({query_fraction:.0%} of each segment), "
                       f"smoothing {smoothing}"),
                 verdict=verdict.NOT_COMPARABLE, note="a mean is the sum divided by a constant")]


def agreement_markdown(rows: Sequence[dict], model_name: str, n_layers: int, n_heads: int) -> str:
    """Chapter 3's agreement sentence: how many comparisons have each outcome, most frequent first."""
    import pandas as pd

    counts = pd.Series([r["verdict"] for r in rows], dtype=object).value_counts().to_dict()
    return (f"**Agreement.** Of {len(rows)} comparisons, " + ", ".join(f"{n} {v}" for v, n in counts.items())
            + f". The model here is {model_name} ({n_layers} layers x {n_heads} heads); the paper's is "
              "bert-base-uncased (12 x 12).")
