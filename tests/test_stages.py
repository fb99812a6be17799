"""Every chapter is a list of stages declared beside its study, each naming what runs and what it costs; the plan
adds them up, and that changed no estimate (tests/plan_work_before.json: the plan's work before the stages)."""
from __future__ import annotations

from dataclasses import dataclass

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from attnbook.chapters import plan as P
from attnbook.chapters.params import chapter_params, chapter_stages, pipelines
from attnbook.chapters.profiles import glue
from attnbook.chapters.toc import CHAPTER_IDS
from attnbook.core.errors import ParameterError
from attnbook.core.parameters import Parameters
from attnbook.data.glue import TASKS
from attnbook.engine import cost, pipeline
from attnbook.studies.clark import surface

@dataclass(frozen=True, kw_only=True)
class _N(Parameters):
    n: int = 0


BEFORE = Path(__file__).with_name("plan_work_before.json")


def _recipe(p):
    return glue.recipe(p) if hasattr(p, "recipe_overrides") else None


def test_every_chapter_of_the_toc_has_stages_and_every_stage_a_chapter():
    assert list(pipelines()) == list(CHAPTER_IDS)  # in book order, none missing, none extra
    for chapter in CHAPTER_IDS:
        stages = chapter_stages(chapter)
        assert stages and all(isinstance(s, cost.Stage) and s.chapter == chapter for s in stages)
        assert len({s.name for s in stages}) == len(stages), f"{chapter}: two stages with one name"
    with pytest.raises(ParameterError):
        chapter_stages("09_not_a_chapter")


def test_every_stage_names_the_package_function_it_runs():
    for chapter in CHAPTER_IDS:
        for stage in chapter_stages(chapter):
            assert callable(stage.run) and stage.run.__module__.startswith("attnbook."), stage
            assert callable(stage.cost) and stage.cost.__module__.startswith("attnbook."), stage


def test_a_stage_cannot_be_declared_without_a_cost_and_its_cost_is_checked():
    with pytest.raises(TypeError):
        cost.Stage("01_clark_surface_patterns", "surface statistics", surface.surface_statistics)  # no cost
    params = cost.StageParams("01_clark_surface_patterns", chapter_params("01_clark_surface_patterns", "smoke"))
    shape = cost.Shape(2, 2, 32, 64)
    for wrong in (lambda p, s: None, lambda p, s: [1.0],
                  lambda p, s: [cost.Work("02_clark_probing", "another chapter's work", "forward", 1.0)]):
        with pytest.raises(TypeError):
            cost.Stage("01_clark_surface_patterns", "wrong", surface.surface_statistics, wrong).work(params, shape)


@pytest.mark.parametrize("profile", ["smoke", "quick"])
def test_every_stage_costs_a_list_of_work_for_the_profiles_params(profile):
    shape = P.planned_shape("embedded")
    trained: set = set()
    for chapter in CHAPTER_IDS:
        p = chapter_params(chapter, profile)
        params = cost.StageParams(chapter, p, recipe=_recipe(p), trained=trained, resolve=chapter_params,
                                   recipe_for=glue.recipe)
        total = []
        for stage in chapter_stages(chapter):
            out = stage.cost(params, shape)
            assert isinstance(out, list) and all(isinstance(w, cost.Work) and w.chapter == chapter for w in out), \
                f"{chapter} / {stage.name}: {out!r}"
            assert all(w.amount >= 0 and w.kind in cost.KINDS for w in out)
            total += out
        if cost.trainable("SST-2"):  # the data directory is here: every chapter has work
            assert total, f"{chapter}: no work in the {profile} profile"


def test_the_plan_has_no_branch_per_chapter():
    source = inspect.getsource(P.chapter_work)
    assert "chapter_stages" in source
    assert not any(c in source or f'"{c[:2]}"' in source for c in CHAPTER_IDS)


def _data_facts() -> dict:
    """What the recorded amounts read from the data directory (GLUE rows, FrameNet bytes, UD sentence lengths)."""
    return {"framenet_bytes": cost.framenet_bytes(),
            "glue_rows": {f"{t}/{s}": cost.glue_size(t, s) for t in TASKS for s in ("train", "dev")},
            "glue_local": {f"{t}/{s}": cost.trainable(t) if s == "train" else cost.scored(t)
                           for t in TASKS for s in ("train", "dev")},
            "ud_probe_batches": {str(n): list(cost.probe_batches(n, 32)) for n in (64, 1000, 12544)}}


#: chapters added after the recording of the plan before the stages refactor (tests/plan_work_before.json)
AFTER_THE_REFACTOR = {"09_across_encoders"}


#: work of stages the recording does not hold (chapter 5's held-out test and its word-matching pass), each tested
#: beside its stage
ADDED_SINCE = {"05_kovaleva_disabling": ("chosen head and layer, held out", "word-matching shares")}


def test_chapter_5s_held_out_test_costs_three_passes_per_held_out_example():
    """Issue 32's stage: each swept seed's chosen head and layer on the dev examples outside the sweep (at most
    ``held_out_caps``); nothing when the sweep scores the whole dev set (the paper profile)."""
    from attnbook.studies.kovaleva import costs

    shape = cost.Shape(**json.loads(BEFORE.read_text())["profiles"]["quick"]["shape"])
    for profile, expected in (("quick", {"SST-2": 500, "MRPC": 312, "STS-B": 500}), ("paper", {})):
        p = chapter_params("05_kovaleva_disabling", profile)
        params = cost.StageParams("05_kovaleva_disabling", p, recipe=_recipe(p), trained=set(),
                                  resolve=chapter_params, recipe_for=glue.recipe)
        work = costs.held_out_cost(params, shape)
        got = {w.what.split(":")[0]: int(w.what.split(" x ")[1].rstrip(")")) for w in work}
        assert {t: n for t, n in got.items() if t in expected} == expected and set(expected) <= set(got), profile
        assert all(w.kind == "forward" and w.amount > 0 for w in work)


def test_chapter_5s_word_matching_counts_one_pass_of_each_matched_tasks_dev_sample():
    """The word-matching shares (§5) run each matched task's dev sample through its classifier once; the plan
    counts that pass."""
    from attnbook.studies.kovaleva import costs
    from attnbook.studies.kovaleva.pipeline import DisablingPipeline

    assert DisablingPipeline.word_matching.stage.cost is costs.match_cost
    shape = cost.Shape(**json.loads(BEFORE.read_text())["profiles"]["quick"]["shape"])
    p = chapter_params("05_kovaleva_disabling", "quick")
    params = cost.StageParams("05_kovaleva_disabling", p, recipe=_recipe(p), trained=set())
    work = costs.match_cost(params, shape)
    matched = [t for t in p.match_tasks if t in p.tasks and cost.trainable(t)]
    assert matched and [w.what.split(":")[0] for w in work] == matched
    assert all(w.kind == "forward" and w.amount > 0 for w in work)
    none = cost.StageParams("05_kovaleva_disabling", p.replace(match_tasks=[]), recipe=_recipe(p), trained=set())
    assert costs.match_cost(none, shape) == []


@pytest.mark.parametrize("profile", ["quick", "smoke", "paper"])
def test_the_stages_cost_what_the_plan_counted_before_them(profile, monkeypatch):
    """The same Work items (what, kind, amount, parallel) per chapter as the plan's per-chapter branches gave, for
    the same parameters and shapes (the embedded model's; bert-base-uncased's known shape for the paper profile);
    within a chapter only the order may differ (chapters 1 and 5 list their items stage by stage now). The
    recording's recipes: RTE on every seed and bfloat16 training on a machine that runs it natively (issue 30 since
    gave RTE one seed, ``task_seeds``, and made ``bf16`` "auto"; tests/test_plan.py counts those)."""
    from attnbook.engine import precision

    monkeypatch.setattr(precision, "native_bf16", lambda device="cpu": True)
    for name in ("smoke", "quick"):
        monkeypatch.setitem(glue.FINETUNE_PROFILES[name], "task_seeds", {})
    before = json.loads(BEFORE.read_text())
    facts = json.loads(json.dumps(_data_facts()))
    if facts != before["data"]:
        changed = sorted(k for k in facts if facts[k] != before["data"][k])
        pytest.skip(f"the data directory is not the one the estimates were recorded on ({', '.join(changed)})")
    recorded = before["profiles"][profile]
    shape = cost.Shape(**recorded["shape"])
    trained: set = set()
    # chapters written after the refactor have no "before" to match (their costs are tested beside them)
    assert set(CHAPTER_IDS) - set(recorded["work"]) == AFTER_THE_REFACTOR
    for chapter in CHAPTER_IDS:
        p = chapter_params(chapter, profile)
        now = [{k: v for k, v in dataclasses.asdict(w).items() if k not in ("jobs", "group")}  # the recording holds no job counts or groups
               for w in P.chapter_work(chapter, p, shape, _recipe(p), trained, fetched=profile == "paper")]
        if chapter in AFTER_THE_REFACTOR:
            assert now, chapter
            continue
        was = recorded["work"][chapter]
        now = [w for w in now if not any(added in w["what"] for added in ADDED_SINCE.get(chapter, ()))]

        def key(w):
            return (w["what"], w["kind"])

        assert [{**w, "amount": pytest.approx(w["amount"], rel=1e-12)} for w in sorted(was, key=key)] \
            == sorted(now, key=key), chapter


def test_every_public_method_of_a_pipeline_is_a_stage_with_a_cost():
    """A step added to a study's pipeline without @stage(name, cost) fails here; so does a stage whose cost is not
    a function."""
    for chapter, cls in pipelines().items():
        declared = dict(cls.stage_methods())
        public = [n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")
                  and n not in ("data_files", "sentences", "stage_methods", "stages")]
        assert public and all(n in declared for n in public), (cls.__name__, set(public) - set(declared))
        assert [s.name for s in chapter_stages(chapter)] == [i.name for i in declared.values()]
    with pytest.raises(TypeError):
        pipeline.stage("no cost", None)


def test_a_pipeline_runs_each_stage_once_and_checks_its_parameters():
    calls = []

    class Counting(pipeline.Pipeline):
        @pipeline.stage("first", pipeline.no_model_work)
        def first(self):
            calls.append("first")
            return list(range(self.p.n))

        @pipeline.stage("second", pipeline.no_model_work)
        def second(self):
            calls.append("second")
            return sum(self.first())

    run = Counting(None, _N(n=4))
    assert run.second() == 6 and run.first() is run.first()
    assert calls == ["second", "first"] and run.done() == ["first", "second"]
    assert Counting(None, _N(n=3)).run() == {"first": [0, 1, 2], "second": 3}
    assert [(s.chapter, s.name) for s in Counting.stages("00_test")] == [("00_test", "first"), ("00_test", "second")]
    with pytest.raises(ParameterError, match=r"takes a chapter's typed parameters, got dict.*chapter_params"):
        Counting(None, {"n": 4})
