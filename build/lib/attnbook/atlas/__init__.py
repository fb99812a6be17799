"""Chapter 8's head atlas: every chapter's per-head measurements joined into one card per head.

The four papers look at the same heads through one lens each (Clark et al.: where a head looks and what syntax or
coreference it tracks; Kovaleva et al.: which pattern it draws and what switching it off does; Michel et al.: how
important it is and when it can be pruned). This package puts their measurements side by side, head by head, and
asks the questions the papers left between them.

* :mod:`attnbook.atlas.sources` - gathers each chapter's per-head measurements by calling the functions the
  chapters call, with the chapters' own parameters (so every one is a cache hit once the chapters ran), into a
  :class:`~attnbook.atlas.sources.Measurements` of plain arrays; a measurement a profile does not run is ``None``.
* :mod:`attnbook.atlas.cards` - the joins: one card per head (``"not run"`` where a measurement is missing) and
  the flat table the charts and the printed table use.
* :mod:`attnbook.atlas.questions` - the cross-paper questions, each an honest test (Spearman ρ with a permutation
  p-value and a bootstrap interval over heads, a permutation test across pattern classes, a random-set null for
  the frame-semantic heads) ending in a generated sentence.
* :mod:`attnbook.atlas.charts` - the interactive layer-by-head grid with the card of the chosen head and linked
  charts (rendered offline by :mod:`attnbook.charts`), and the static table for print.

Layering: the atlas sits between the studies and the chapters; it imports studies, engine, data, stats, verdict,
charts and core, and only chapters import it.
"""
from __future__ import annotations

from attnbook.atlas.cards import NOT_RUN, card_table, flat_frame, head_cards
from attnbook.atlas.questions import (
    class_test,
    framenet_switched_off,
    pattern_vs_effects,
    pruned_first,
    rank_test,
    syntax_vs_importance,
)
from attnbook.atlas.sources import SOURCE_CHAPTERS, Measurements, gather

__all__ = [
    "NOT_RUN", "SOURCE_CHAPTERS", "Measurements", "card_table", "class_test", "flat_frame", "framenet_switched_off",
    "gather", "head_cards", "pattern_vs_effects", "pruned_first", "rank_test", "syntax_vs_importance",
]
