"""A chapter's work as one object: named stages, each run once, each costed, run step by step or whole.

A study writes each chapter it backs as a subclass of :class:`Pipeline` beside its code
(``studies/<paper>/pipeline.py``); every step of the chapter that computes something is a method decorated with
:func:`stage`, which names the step and the function counting its work for ``attnbook plan``
(``cost(params, shape) -> list[Work]``, :mod:`attnbook.engine.cost`)::

    class SurfacePipeline(Pipeline):
        @stage("segments", costs.segments_cost)
        def segments(self) -> list[Segment]:
            return clark_segments(self.model.tokenizer, self.p.n_segments, self.p.max_tokens, seed=self.p.seed)

        @stage("surface statistics (§3)", costs.surface_cost)
        def statistics(self) -> dict[str, np.ndarray]:
            return surface.surface_statistics(self.model, self.segments(), batch_size=self.p.batch_size)

The chapter's notebook makes one pipeline from its model and parameters and calls the stages in the order it
tells the story (``run.segments()``, then ``run.statistics()``, each followed by its figures); the head atlas
and any chapter that compares models call the same stages, or :meth:`Pipeline.run` for all of them. A stage
runs once per pipeline: a later stage that needs an earlier one calls it and gets the same object back. What
a stage computes that is expensive is cached on disk by the functions it calls (:func:`attnbook.core.cache.memoized`),
so a second pipeline with the same model and parameters reads it back.

:meth:`Pipeline.stages` lists the stages as :class:`~attnbook.engine.cost.Stage` records in declaration order;
the plan adds up their costs, and ``tests/test_stages.py`` checks that every public method of every pipeline is
a stage with a cost.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from attnbook.core.errors import ParameterError
from attnbook.core.parameters import Parameters
from attnbook.engine.cost import Shape, Stage, StageParams, Work
from attnbook.engine.models import LoadedModel

R = TypeVar("R")
Cost = Callable[[StageParams, Shape], list[Work]]


@dataclass(frozen=True)
class StageInfo:
    """What :func:`stage` records on a method: the stage's name as the plan prints it and its cost function."""

    name: str
    cost: Cost


def stage(name: str, cost: Cost) -> Callable[[Callable[[Any], R]], Callable[[Any], R]]:
    """Declare a method of a :class:`Pipeline` as a stage named ``name`` whose work ``cost(params, shape)`` counts.

    The method takes no argument besides the pipeline; it reads the model (``self.model``), the chapter's
    parameters (``self.p``) and earlier stages (by calling them). Its result is kept: a second call returns the
    same object without running it again."""
    if not callable(cost):
        raise TypeError(f"stage {name!r}: its cost must be a function cost(params, shape) -> list[Work], got {cost!r}")

    def declare(method: Callable[[Any], R]) -> Callable[[Any], R]:
        attr = method.__name__

        @functools.wraps(method)
        def run_once(self: Pipeline) -> R:
            if attr not in self._done:
                self._done[attr] = method(self)
            return self._done[attr]

        run_once.stage = StageInfo(name, cost)  # type: ignore[attr-defined]
        return run_once

    return declare


class Pipeline:
    """One chapter's stages over one model and the chapter's resolved parameters.

    ``model`` is the loaded encoder (:class:`attnbook.engine.models.LoadedModel`); ``params`` the chapter's typed
    parameters (:func:`attnbook.chapters.params.chapter_params`, or the notebook's ``P``), read as ``self.p.name``.
    A subclass declares its stages with :func:`stage`; which chapter it is, the chapter's declaration says
    (:class:`attnbook.chapters.spec.Chapter`'s ``pipeline``), so a study's pipeline can serve any chapter that names
    it."""

    def __init__(self, model: LoadedModel, params: Parameters, given: Mapping[str, Any] | None = None):
        """``given``: results of stages that the caller already has (by the stage's method name), used instead of
        running those stages (e.g. the head atlas hands chapter 1's segments to chapter 3's pipeline)."""
        if not isinstance(params, Parameters):
            raise ParameterError(f"{type(self).__name__} takes a chapter's typed parameters, got "
                                 f"{type(params).__name__}: pass attnbook.chapters.params.chapter_params(chapter, "
                                 f"profile, overrides)")
        unknown = sorted(set(given or {}) - {attr for attr, _ in self.stage_methods()})
        if unknown:
            raise ParameterError(f"{type(self).__name__} has no stage(s) {unknown} to be given; its stages: "
                                 f"{', '.join(attr for attr, _ in self.stage_methods())}")
        self.model = model
        self.p = params
        self._done: dict[str, Any] = dict(given or {})

    def data_files(self) -> list[Path]:
        """The data files the chapter reads, for its results' provenance (``res.use_data(*run.data_files())``):
        every pipeline names its own, from its parameters, before any stage runs."""
        raise NotImplementedError(f"{type(self).__name__} does not name the data files it reads: define data_files()")

    def comparisons(self) -> list:
        """The chapter's "paper vs this run" rows (:class:`attnbook.verdict.Comparison`), computed from the other
        stages: every pipeline declares it as its last stage (``@stage("paper vs this run", no_model_work)``)."""
        raise NotImplementedError(f"{type(self).__name__} does not build its comparison rows: define comparisons() "
                                  f"as a stage")

    @classmethod
    def stage_methods(cls) -> list[tuple[str, StageInfo]]:
        """``(attribute, StageInfo)`` of every stage, base classes' first, each in declaration order."""
        seen: dict[str, StageInfo] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                info = getattr(value, "stage", None)
                if isinstance(info, StageInfo):
                    seen[attr] = info
        return list(seen.items())

    @classmethod
    def stages(cls, chapter: str) -> list[Stage]:
        """The stages as the plan reads them for chapter ``chapter``: chapter, name, the method, its cost."""
        return [Stage(chapter, info.name, getattr(cls, attr), info.cost) for attr, info in cls.stage_methods()]

    def run(self) -> dict[str, Any]:
        """Every stage, in order: ``{attribute: result}``."""
        return {attr: getattr(self, attr)() for attr, _ in self.stage_methods()}

    def done(self) -> list[str]:
        """The stages that have run on this pipeline."""
        return list(self._done)


def no_model_work(params: StageParams, shape: Shape) -> list[Work]:
    """The cost of a stage that only computes on earlier stages' results (seconds or less): nothing to plan."""
    return []
