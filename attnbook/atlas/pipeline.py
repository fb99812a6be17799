"""Chapter 8 (the head atlas) as a pipeline: gather chapters 1-6's measurements, one card per head, four questions.

The atlas runs no model of its own: :meth:`AtlasPipeline.gather` reads the source chapters' measurements back from
their caches with their own parameters (:func:`attnbook.atlas.sources.gather`); every later stage computes on those
arrays. Its costs are in :mod:`attnbook.atlas.costs`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from attnbook.atlas import cards, costs, questions, sources
from attnbook.core.parameters import Parameters
from attnbook.engine.models import LoadedModel
from attnbook.engine.pipeline import Pipeline, no_model_work, stage
from attnbook.verdict import Comparison


class AtlasPipeline(Pipeline):
    """Chapter 8: the source chapters' per-head measurements joined head by head, and the questions none of the papers
    asked of them (each a test with a permutation p-value or a bootstrap interval, :mod:`attnbook.atlas.questions`).

    ``sources`` are the source chapters' resolved parameters (:func:`attnbook.atlas.sources.source_parameters`);
    ``recipe_for`` the book's GLUE recipe of a chapter's parameters (:func:`attnbook.chapters.profiles.glue.recipe`:
    the atlas sits below the book machinery)."""

    def __init__(self, model: LoadedModel, params: Parameters, sources: Mapping[str, Parameters],
                 recipe_for: Callable[[Parameters], dict]):
        super().__init__(model, params)
        self.sources = dict(sources)
        self.recipe_for = recipe_for

    def data_files(self) -> list[Path]:
        """The data files the source chapters read (known once :meth:`gather` ran: it runs it)."""
        return list(self.gather().data_files)

    @stage("gathering chapters 1-6's measurements", costs.gather_cost)
    def gather(self) -> sources.Measurements:
        """Every source chapter's per-head measurements, read back from its caches (:func:`sources.gather`)."""
        return sources.gather(self.sources, self.recipe_for)

    @stage("one card per head", no_model_work)
    def cards(self) -> list[dict[str, Any]]:
        """Each head's card: its measurements side by side and its ``nearest`` heads (:func:`cards.head_cards`)."""
        return cards.head_cards(self.gather(), nearest=self.p.nearest)

    @stage("Q1: syntax and importance", no_model_work)
    def syntax_vs_importance(self) -> list[dict[str, Any]]:
        """Are the heads that track syntax the ones a task needs (:func:`questions.syntax_vs_importance`)?"""
        p = self.p
        return questions.syntax_vs_importance(self.gather(), n_permutations=p.n_permutations,
                                              n_resamples=p.n_resamples, seed=p.seed)

    @stage("Q2: patterns and the effect of switching heads off", no_model_work)
    def pattern_vs_effects(self) -> list[dict[str, Any]]:
        """Does a head's pattern class tell how much switching it off costs (:func:`questions.pattern_vs_effects`)?"""
        return questions.pattern_vs_effects(self.gather(), n_permutations=self.p.n_permutations, seed=self.p.seed)

    @stage("Q3: the frame-semantic heads switched off", no_model_work)
    def framenet_switched_off(self) -> list[dict[str, Any]]:
        """Does a task need the FrameNet heads more than random heads (:func:`questions.framenet_switched_off`)?"""
        return questions.framenet_switched_off(self.gather(), n_permutations=self.p.n_permutations,
                                               seed=self.p.seed)

    @stage("Q4: which heads are pruned first", no_model_work)
    def pruned_first(self) -> list[dict[str, Any]]:
        """How early a head is pruned against its surface statistics (:func:`questions.pruned_first`)."""
        p = self.p
        return questions.pruned_first(self.gather(), n_permutations=p.n_permutations, n_resamples=p.n_resamples,
                                      seed=p.seed)

    def _answers(self) -> list[dict[str, Any]]:
        """The four questions' answers, in order."""
        return self.syntax_vs_importance() + self.pattern_vs_effects() + self.framenet_switched_off() \
            + self.pruned_first()

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """One row per answer (:func:`questions.comparison_rows`): the book's own findings, no paper's."""
        return questions.comparison_rows(self._answers())
