"""Clark et al.'s Tables 1-3 beside this run's: the table a chapter shows, the numbers it records, a line of text.

Each table is this run's measurement (:func:`attnbook.studies.clark.syntax.table1`,
:func:`attnbook.studies.clark.coref.table2`, :func:`attnbook.studies.clark.probes.table3`) with the paper's columns
from :mod:`~attnbook.studies.clark.paper.claims` added; nothing here judges (the rows that do are in
:mod:`~attnbook.studies.clark.paper.rows`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from attnbook.studies.clark import coref, probes, syntax
from attnbook.studies.clark.paper.claims import COREF_HEAD, TABLE1, TABLE2, TABLE3


@dataclass
class Report:
    """What a chapter cell shows and records: ``table`` (to display), ``numbers`` (key -> value for the
    results file) and ``text`` (a line about the data)."""

    table: Any
    numbers: dict = field(default_factory=dict)
    text: str = ""


# =============================================================================================
# Table 1: heads as parsers (§4.2)
# =============================================================================================

#: column names of Table 1 as the chapter shows it
_TABLE1_SHOWN = {"n": "edges", "head": "best head", "accuracy": "acc. %", "baseline_offset": "offset",
                 "baseline_accuracy": "baseline %", "paper_head": "paper head", "paper_accuracy": "paper acc. %",
                 "paper_baseline": "paper baseline %", "paper_offset": "paper offset"}


def table1_frame(acc: syntax.HeadAccuracy) -> pd.DataFrame:
    """:func:`attnbook.studies.clark.syntax.table1` with the paper's head, accuracy, baseline and offset
    (BERT-base on WSJ/SD, :data:`~attnbook.studies.clark.paper.claims.TABLE1`) as ``paper_*`` columns."""
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


# =============================================================================================
# Table 2: coreference (§4.3)
# =============================================================================================


def _table2_paper_value(system: str, column: str) -> float:
    row = f"Head {COREF_HEAD}" if system.startswith("Best head (") else system
    if row not in TABLE2:
        return float("nan")
    v = TABLE2[row][column]
    return float("nan") if v is None else float(v)


def table2_frame(heads: coref.CorefHeadAccuracy | None, base: dict[str, coref.SystemAccuracy]) -> pd.DataFrame:
    """:func:`attnbook.studies.clark.coref.table2` with ``paper <column>`` columns from
    :data:`~attnbook.studies.clark.paper.claims.TABLE2` (the best-head row is compared with the paper's head
    :data:`~attnbook.studies.clark.paper.claims.COREF_HEAD`)."""
    df = coref.table2(heads, base)
    for c in coref.COLUMNS:
        df[f"paper {c}"] = [_table2_paper_value(r, c) for r in df.index]
    return df


def paper_table2() -> pd.DataFrame:
    """:data:`~attnbook.studies.clark.paper.claims.TABLE2` as a DataFrame (rows = systems, columns = mention
    types, %)."""
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


# =============================================================================================
# Table 3: probing classifiers (§5)
# =============================================================================================


def table3_frame(results: dict) -> pd.DataFrame:
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
