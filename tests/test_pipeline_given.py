"""A pipeline's stage results come from its stages or from the caller, through one door (``given=``), never from a
write into the pipeline's private state (chapter 3's pipeline took chapter 1's segments that way)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from attnbook.core.errors import ParameterError
from attnbook.core.parameters import Parameters
from attnbook.engine.pipeline import Pipeline, no_model_work, stage


@dataclass(frozen=True, kw_only=True)
class _N(Parameters):
    n: int = 0


class Counting(Pipeline):
    calls = 0

    @stage("numbers", no_model_work)
    def numbers(self) -> list[int]:
        type(self).calls += 1
        return list(range(self.p.n))

    @stage("their sum", no_model_work)
    def total(self) -> int:
        return sum(self.numbers())


def test_a_given_stage_result_is_used_instead_of_running_the_stage():
    Counting.calls = 0
    run = Counting(None, _N(n=4), given={"numbers": [10, 20]})
    assert run.total() == 30 and Counting.calls == 0 and run.done() == ["numbers", "total"]
    assert Counting(None, _N(n=4)).total() == 6 and Counting.calls == 1


def test_a_given_result_for_no_stage_names_the_stages():
    with pytest.raises(ParameterError, match="has no stage.*segmentz.*numbers, total"):
        Counting(None, _N(n=1), given={"segmentz": []})


def test_chapter_three_takes_chapter_ones_segments_through_the_door():
    import inspect

    from attnbook.studies.clark import pipeline

    assert "_done" not in inspect.getsource(pipeline.ClusteringPipeline)


def test_every_chapters_pipeline_names_its_data_files_and_builds_its_rows_and_the_glue_chapters_share_a_base():
    """The base declares ``data_files()``; every study's pipeline implements it (chapters 4-6 did not); the GLUE
    chapters' pipelines share one base holding the recipe and the batching."""
    from attnbook.atlas.encoders import AcrossPipeline
    from attnbook.studies.clark.pipeline import ClusteringPipeline, ProbingPipeline, SurfacePipeline
    from attnbook.studies.heads_off.pipeline import GluePipeline
    from attnbook.studies.kovaleva.pipeline import DisablingPipeline, TaxonomyPipeline
    from attnbook.studies.michel.pipeline import PruningPipeline
    from attnbook.studies.niven_kao.pipeline import CuesPipeline

    every = (SurfacePipeline, ProbingPipeline, ClusteringPipeline, TaxonomyPipeline, DisablingPipeline,
             PruningPipeline, CuesPipeline, AcrossPipeline)
    assert [c.__name__ for c in every if c.data_files is Pipeline.data_files] == []
    # the comparison rows are every pipeline's last stage, never notebook code
    assert [c.__name__ for c in every if c.stage_methods()[-1][0] != "comparisons"] == []
    assert all(c.comparisons.stage.name == "paper vs this run" for c in every)
    assert all(issubclass(c, GluePipeline) for c in (TaxonomyPipeline, DisablingPipeline, PruningPipeline))
    with pytest.raises(NotImplementedError, match="define data_files"):
        Counting(None, _N(n=1)).data_files()
    with pytest.raises(NotImplementedError, match="define comparisons"):
        Counting(None, _N(n=1)).comparisons()


def test_the_glue_pipelines_name_files_that_exist(monkeypatch):
    import os

    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import glue
    from attnbook.studies.kovaleva.pipeline import DisablingPipeline
    from attnbook.studies.michel.pipeline import PruningPipeline

    if not os.environ.get("ATTNBOOK_DATA"):
        pytest.fail("set ATTNBOOK_DATA to the data directory (CI: ../shared/data)")
    for cls, chapter in ((DisablingPipeline, "05_kovaleva_disabling"), (PruningPipeline, "06_michel_pruning")):
        p = chapter_params(chapter, "quick")
        files = cls(None, p, glue.recipe(p)).data_files()
        assert files and all(f.exists() for f in files), (chapter, files)
        assert any("dev" in f.name for f in files)


def test_a_glue_pipeline_runs_without_a_recipe_for_its_pre_trained_stages():
    """Chapter 9 runs chapter 4's pre-trained stages with no fine-tuning recipe: the shared base must not need one
    (it raised KeyError 'max_length' in chapter 9's smoke run)."""
    from attnbook.chapters.params import chapter_params
    from attnbook.studies.kovaleva.pipeline import TaxonomyPipeline

    run = TaxonomyPipeline(None, chapter_params("04_kovaleva_taxonomy", "smoke"), {})
    assert run.recipe == {} and run.batching["max_length"] is None
