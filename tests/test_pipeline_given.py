"""A pipeline's stage results come from its stages or from the caller, through one door (``given=``), never from a
write into the pipeline's private state (chapter 3's pipeline took chapter 1's segments that way)."""
from __future__ import annotations

import pytest

from attnbook.core.errors import ParameterError
from attnbook.engine.pipeline import Pipeline, no_model_work, stage


class Counting(Pipeline):
    chapter = "00_test"
    needs = ("n",)
    calls = 0

    @stage("numbers", no_model_work)
    def numbers(self) -> list[int]:
        type(self).calls += 1
        return list(range(self.p["n"]))

    @stage("their sum", no_model_work)
    def total(self) -> int:
        return sum(self.numbers())


def test_a_given_stage_result_is_used_instead_of_running_the_stage():
    Counting.calls = 0
    run = Counting(None, {"n": 4}, given={"numbers": [10, 20]})
    assert run.total() == 30 and Counting.calls == 0 and run.done() == ["numbers", "total"]
    assert Counting(None, {"n": 4}).total() == 6 and Counting.calls == 1


def test_a_given_result_for_no_stage_names_the_stages():
    with pytest.raises(ParameterError, match="has no stage.*segmentz.*numbers, total"):
        Counting(None, {"n": 1}, given={"segmentz": []})


def test_chapter_three_takes_chapter_ones_segments_through_the_door():
    import inspect

    from attnbook.studies.clark import pipeline

    assert "_done" not in inspect.getsource(pipeline.ClusteringPipeline)
