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
  it beats the best fixed-offset baseline by more than this (0.05 = 5 points); the UD data and
  parameters are chapter 2's (``syntax_split``, ``syntax_sentences``) in the same profile;
* ``mds_n_init`` - random SMACOF starts (classical MDS is tried as well).
"""
from __future__ import annotations

from attnbook.chapters.params import register_chapter

from attnbook.chapters.profiles import PAPER_MODEL

_COMMON = dict(
    max_tokens=128, batch_size=16, seed=0, smoothing=0.0, n_clusters="auto", k_range=[3, 12],
    behaviour_threshold=0.5, broad_quantile=0.75, syntax_margin=0.05, mds_n_init=4, use_cache=True,
)

register_chapter(
    "03_clark_clustering",
    {
        "smoke": dict(_COMMON, model="embedded", n_segments=12, max_tokens=64, batch_size=4,
                      query_fraction=1.0, n_permutations=199),
        "quick": dict(_COMMON, model="embedded", n_segments=1000, query_fraction=0.25, n_permutations=10000),
        "paper": dict(_COMMON, model=PAPER_MODEL, n_segments=1000, query_fraction=1.0, n_permutations=10000),
    },
)
