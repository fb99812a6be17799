"""The base of the GLUE chapters' pipelines (chapters 4-6, Kovaleva et al. and Michel et al.): one recipe, one
place.

:class:`GluePipeline` holds the fine-tuning recipe the chapter's classifiers come from
(:func:`attnbook.chapters.profiles.glue.recipe`: the profile's recipe with the chapter's overrides; its checkpoints are
shared by chapters 4, 5 and 6), and the batching every dev and training sample of these chapters uses (the chapter's
``batch_size``, the recipe's ``max_length``). Kovaleva's :class:`~attnbook.studies.kovaleva.pipeline.TaxonomyPipeline`
and :class:`~attnbook.studies.kovaleva.pipeline.DisablingPipeline` and Michel's
:class:`~attnbook.studies.michel.pipeline.PruningPipeline` build on it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from attnbook.data.glue import available, task_path, task_spec
from attnbook.engine.models import LoadedModel
from attnbook.engine.pipeline import Pipeline


class GluePipeline(Pipeline):
    """A pipeline over classifiers fine-tuned from ``model`` with ``recipe`` (empty for a pipeline that runs only its
    pre-trained stages, as chapter 9 runs chapter 4's: no classifier, no batching length from a recipe)."""

    def __init__(self, model: LoadedModel, params: Mapping[str, Any], recipe: Mapping[str, Any]):
        super().__init__(model, params)
        self.recipe = dict(recipe)
        self.batching = dict(batch_size=params.batch_size, max_length=self.recipe.get("max_length"))

    def glue_files(self, tasks: Iterable[str], splits: Iterable[str] = ("train", "dev")) -> list[Path]:
        """The GLUE files of ``tasks`` in ``splits`` that the data directory holds (a task without its file is
        skipped by the chapters, with the reason on the page)."""
        out = []
        for task in dict.fromkeys(tasks):
            spec = task_spec(task)
            out += [task_path(spec, split) for split in splits if available(spec, split)]
        return out
