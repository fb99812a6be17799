"""Chapter 8 (the head atlas: chapters 1-6 joined head by head) in the three profiles.

The atlas measures nothing of its own: it reads chapters 1-6 through the package, calling their functions with
their own parameters for the same profile (:func:`attnbook.atlas.sources.gather`), so with their caches in place
it costs reading them (the one uncached measurement, chapter 4's FrameNet link scores, is cached by the atlas
the first time). ``model``: must be the model chapters 1-6 ran with (their caches are keyed by it); ``None``
keeps the profile's. ``chapter_overrides``: ``{chapter id: {parameter: value}}``, the overrides chapters 1-6
ran with (e.g. smaller sizes, or chapter 4-6's ``recipe_overrides``), so the atlas reads the same measurements
(an override the chapters did not use makes the atlas compute them). ``nearest``: how many nearest heads (chapter 3's distances) a card lists.
``n_permutations`` / ``n_resamples``: shuffles of the permutation tests and bootstrap draws over heads in the
cross-paper questions; ``seed`` seeds both.

Cost of the quick profile given chapters 1-6's caches: reading them plus the tests (10,000 shuffles x 72 heads per
test, a few CPU seconds in all), well under the 3-minute budget.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import ACROSS, Chapter, count_text
from attnbook.core.parameters import Parameters


@dataclass(frozen=True, kw_only=True)
class AtlasParams(Parameters):
    """Chapter 8's parameters (what each means: the module docstring); one instance per profile below."""

    model: str
    nearest: int
    n_permutations: int
    n_resamples: int
    seed: int
    chapter_overrides: dict[str, Any]


register_chapter(Chapter(
    "08_head_atlas", "A head atlas (all papers)", ACROSS,
    datasets=("wiki", "ud_ewt", "coref", "glove", "glue", "framenet"),
    pipeline="attnbook.atlas.pipeline:AtlasPipeline",
    after=("01_clark_surface_patterns", "02_clark_probing", "03_clark_clustering", "04_kovaleva_taxonomy",
           "05_kovaleva_disabling", "06_michel_pruning"),
    sizes=lambda p: (
        f"the measurements of chapters 1-6 for this profile (read from their caches); {count_text(p.n_permutations)} "
        "permutations per cross-paper test"),
    differs=lambda p, r: ["no paper: it joins chapters 1-6 head by head and tests what none of them measured"],
    profiles={
        "smoke": AtlasParams(model="embedded", nearest=3, n_permutations=999, n_resamples=500, seed=0,
                      chapter_overrides={}),
        "quick": AtlasParams(model="embedded", nearest=3, n_permutations=10000, n_resamples=2000, seed=0,
                      chapter_overrides={}),
        "paper": AtlasParams(model=PAPER_MODEL, nearest=3, n_permutations=10000, n_resamples=2000, seed=0,
                      chapter_overrides={}),
    },
))
