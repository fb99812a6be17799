"""Chapter 3 (Clark et al. §6, clustering attention heads): parameters in the three profiles.

* ``n_segments`` / ``max_tokens`` / ``seed`` - the Clark segments of chapter 1 (same draw, same seed);
* ``query_fraction`` - share of each segment's query tokens on which heads are compared
  (``1.0`` = every token, the paper). The quick profile compares on a random quarter: the
  pairwise divergences cost ``n_pairs x n_query x n_key`` logarithms, and the half-sample
  estimates the chapter reports show the distances are stable far below that;
* ``smoothing`` - mix maps with uniform attention before comparing (released code: 0.001;
  the paper's formula: none, the default);
* ``n_permutations`` - label shuffles of the same-layer permutation test;
* ``n_clusters`` - cut of the average-linkage tree; ``"auto"`` takes the silhouette maximum
  over ``k_range`` (from 3: "several" clusters; at k = 2 average linkage tends to split off
  a single outlying head);
* ``behaviour_threshold`` / ``broad_quantile`` - when a head "attends to" a token class
  (more than this share of its attention, Clark §3.1) and which entropies count as broad;
* ``syntax_margin`` - a relation's best head (chapter 2, Clark §4.2) is tagged as syntactic when
  it beats the best fixed-offset baseline by more than this (0.05 = 5 points);
* ``syntax_split`` / ``syntax_sentences`` / ``syntax_max_tokens`` / ``syntax_batch_size`` /
  ``exclude_punct`` - the UD sentences the heads are evaluated on as parsers, with chapter 2's
  values in every profile (chapter 2's ``syntax_split``, ``syntax_sentences``, ``max_tokens``,
  ``batch_size``, ``exclude_punct``; a test checks they agree), so chapter 3 calls the same
  :func:`attnbook.studies.clark.syntax.evaluate_heads` and gets chapter 2's counts from the cache.
  Likewise ``n_segments`` / ``max_tokens`` / ``seed`` / ``batch_size`` are chapter 1's, so chapter
  1's surface statistics come from the cache;
* ``mds_n_init`` - random SMACOF starts (classical MDS is tried as well).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import CLARK, Chapter, count_text
from attnbook.core.parameters import Parameters


@dataclass(frozen=True, kw_only=True)
class ClusteringParams(Parameters):
    """Chapter 3's parameters (what each means: the module docstring); one instance per profile below;
    a default is the value all three share."""

    max_tokens: int = 128
    batch_size: int = 16
    seed: int = 0
    smoothing: float = 0.0
    n_clusters: int | str = "auto"
    k_range: list[int] = field(default_factory=lambda: [3, 12])
    behaviour_threshold: float = 0.5
    broad_quantile: float = 0.75
    syntax_margin: float = 0.05
    exclude_punct: bool = False
    mds_n_init: int = 4
    model: str
    n_segments: int
    query_fraction: float
    n_permutations: int
    syntax_split: str
    syntax_sentences: int
    syntax_max_tokens: int
    syntax_batch_size: int


register_chapter(Chapter(
    "03_clark_clustering", "Clustering heads (Clark §6)", CLARK,
    datasets=("wiki", "ud_ewt"),
    pipeline="attnbook.studies.clark.pipeline:ClusteringPipeline",
    sizes=lambda p: (
        f"{count_text(p.n_segments)} WikiText-2 segments; {count_text(p.n_permutations)} permutations per test; "
        f"{count_text(p.syntax_sentences)} UD EWT sentences for the behaviours"),
    differs=lambda p, r: ["WikiText-2 paragraphs instead of the paper's Wikipedia segments",
                                      "the paper's visual claims turned into tests with intervals"],
    profiles={
        "smoke": ClusteringParams(model="embedded", n_segments=12, max_tokens=64, batch_size=4,
                      query_fraction=1.0, n_permutations=199,
                      syntax_split="dev", syntax_sentences=40, syntax_max_tokens=64, syntax_batch_size=8),
        "quick": ClusteringParams(model="embedded", n_segments=1000, query_fraction=0.25, n_permutations=10000,
                      syntax_split="dev", syntax_sentences=2001, syntax_max_tokens=128, syntax_batch_size=32),
        "paper": ClusteringParams(model=PAPER_MODEL, n_segments=1000, query_fraction=1.0, n_permutations=10000,
                      syntax_split="dev", syntax_sentences=2001, syntax_max_tokens=128, syntax_batch_size=32),
    },
))
