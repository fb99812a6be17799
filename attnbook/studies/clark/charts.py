"""Charts and computed text for chapter 2 (Clark et al. §4-5: probing heads and head combinations).

Pure helpers over the results of :mod:`attnbook.studies.clark.syntax`, :mod:`attnbook.studies.clark.coref` and
:mod:`attnbook.studies.clark.probes`: Altair charts (1-based ``layer-head`` labels, as everywhere in the
book), the choice of an example sentence, and the chapter's agreement paragraph.
"""
from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from attnbook.data.conllu import Sentence
from attnbook.core.errors import EmptyDataError
from attnbook.charts import head_heatmap


def relation_heatmaps(acc, relations: Sequence[str], cell: int = 18) -> alt.HConcatChart:
    """Layer x head heatmaps of each head's accuracy (%) at ``relations``, one panel per relation.

    ``acc`` is a :class:`attnbook.studies.clark.syntax.HeadAccuracy`; each panel shows the direction of that
    relation's best head (Clark §4.2 evaluates both and reports the better one).
    """
    panels = []
    for rel in relations:
        _, _, direction, _ = acc.best(rel)
        values = 100 * acc.for_relation(rel, direction)
        panels.append(head_heatmap(values, title=f"{rel} ({direction})", value_title="accuracy %",
                                   fmt=".1f", cell=cell))
    if not panels:
        raise EmptyDataError("no relations to draw")
    return alt.hconcat(*panels).resolve_scale(color="independent")


def find_example_sentence(
    sentences: Sequence[Sentence], deprels: Sequence[str], min_words: int = 8, max_words: int = 22
) -> int:
    """Index of the first sentence with ``min_words..max_words`` words containing every UD relation in ``deprels``.

    Falls back to the sentence (within the length range when possible) containing the most of them.
    """
    if not sentences:
        raise EmptyDataError("no sentences to choose from")
    want = set(deprels)
    best, best_key = 0, (-1, False)
    for i, s in enumerate(sentences):
        fits = min_words <= len(s) <= max_words
        have = len(want & set(s.deprel))
        if fits and have == len(want):
            return i
        key = (have, fits)
        if key > best_key:
            best, best_key = i, key
    return best


def probe_weight_heatmap(weights: pd.DataFrame, column: str = "weight", title: str = "") -> alt.Chart:
    """Layer x head heatmap of an :func:`attnbook.studies.clark.probes.attention_weights_table` column."""
    n_layers, n_heads = int(weights["layer"].max()), int(weights["head"].max())
    values = np.zeros((n_layers, n_heads))
    values[weights["layer"].to_numpy() - 1, weights["head"].to_numpy() - 1] = weights[column].to_numpy()
    return head_heatmap(values, title=title, value_title=column, scheme="redblue", domain_mid=0.0, fmt=".3f")


def loss_curves(losses: dict[str, Sequence[float]], names: dict[str, str] | None = None,
                width: int = 360, height: int = 200) -> alt.Chart:
    """Per-epoch mean training loss (nats) of each probe; ``names`` maps keys to legend labels."""
    rows = [{"probe": (names or {}).get(k, k), "epoch": e + 1, "loss": float(v)}
            for k, vals in losses.items() for e, v in enumerate(vals)]
    if not rows:
        raise EmptyDataError("no training losses to draw")
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_line(point=True)
        .encode(x=alt.X("epoch:O"), y=alt.Y("loss:Q", title="training loss (nats)"), color="probe:N",
                tooltip=["probe:N", "epoch:O", alt.Tooltip("loss:Q", format=".3f")])
        .properties(width=width, height=height, title="Probe training loss per epoch")
    )


def findings_markdown(rows: Sequence[dict], model_name: str) -> str:
    """The chapter's agreement paragraph, computed from its "paper vs this run" rows.

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
        judged = [r for r in rs if r["verdict"] != "not comparable"]
        agree = sum(r["verdict"] == "agrees" for r in judged)
        partly = sum(r["verdict"] == "partly agrees" for r in judged)
        parts.append(f"{exp}: {agree} of {len(judged)} findings agree, {partly} partly"
                     + (f" ({len(rs) - len(judged)} not comparable)" if len(judged) < len(rs) else "") + ";")
    parts[-1] = parts[-1][:-1] + "."
    differ = [r for r in rows if r["verdict"] in ("disagrees", "partly agrees")]
    if differ:
        parts.append("Where the numbers differ: " + "; ".join(
            f"{r['quantity']} ({r['verdict']}: paper {r['paper']}, here {r['ours']})" for r in differ) + ".")
    return " ".join(parts)
