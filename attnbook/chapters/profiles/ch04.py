"""Chapter 4 (Kovaleva et al. §4.1-4.5 and Table 1: patterns, frame heads, fine-tuning, features).

``finetune`` names the entry of :data:`attnbook.chapters.profiles.glue.FINETUNE_PROFILES` whose
training recipe the chapter uses, so chapters 4, 5 and 6 load the same cached
checkpoints (:func:`attnbook.engine.finetune.get_finetuned`). ``tasks``: the fine-tuned
tasks analysed in §4.1, §4.3 and §4.4-4.5 (their training files must be local);
``table1_tasks``: the rows of Table 1 (a task without local files gets a "not run"
row). ``n_examples``: dev inputs per task for the pattern shares, the cosine
comparison and the feature attention (the paper: up to 1000). ``cv_folds`` /
``cnn_epochs`` / ``cnn_size``: the pattern CNN's cross-validation. ``dev_caps``: dev examples
scored per task in Table 1 (None: the whole dev set; the quick profile caps only QNLI, whose one
row is the untrained classifier). ``n_resamples``: bootstrap resamples of every interval.

Seeds (issue 18) come from the recipe: Table 1's pre-trained + fine-tuning cells are the mean over
``seeds`` (Student's t interval over them), random init + fine-tuning is trained over ``random_seeds``
(one seed in the quick recipe: interval over dev examples), and the untrained classifier is scored
once. §4.1 and §4.3-4.5 analyse the classifier of seed ``seed``; a task whose classifier of that seed
is no better than its constant predictor keeps its figures but its rows are not comparable, with the
reason.

Time (quick, after the fine-tuning is cached): about 3 CPU minutes on one core, plus scoring the
whole dev sets once per checkpoint (SST-2 872, MRPC 408, STS-B 1,500, RTE 277 examples; the logits
are cached and chapter 5 reuses them); the fine-tuning itself is the GLUE layer's budget.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import KOVALEVA, Chapter, Page, caps_text, count_text, tasks_text
from attnbook.core.parameters import Parameters

_ALL_TASKS = ["MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m"]


@dataclass(frozen=True, kw_only=True)
class TaxonomyParams(Parameters):
    """Chapter 4's parameters (what each means: the module docstring); one instance per profile below."""

    model: str
    recipe_overrides: dict[str, Any]
    finetune: str
    tasks: list[str]
    table1_tasks: list[str]
    n_examples: int
    max_tokens: int
    batch_size: int
    cv_folds: int
    cnn_epochs: int
    cnn_size: int
    percentile: float
    direction: str
    seed: int
    dev_caps: dict[str, int | None]
    n_resamples: int


register_chapter(Chapter(
    "04_kovaleva_taxonomy", "Patterns and fine-tuning (Kovaleva §4)", KOVALEVA,
    datasets=("glue", "framenet"),
    pipeline="attnbook.studies.kovaleva.pipeline:TaxonomyPipeline",
    sizes=lambda p: (
        f"GLUE tasks {tasks_text(p)}: {count_text(p.n_examples)} dev inputs per task for patterns, cosines and features; "
        f"Table 1 on {caps_text(p.dev_caps, 'dev examples')}; the book's labelled maps for the pattern classifier"),
    differs=lambda p, r: [
        "the book's own labelled maps (the paper's ~400 were not released)",
        "FrameNet 1.7 full-text annotations instead of its lexical-unit examples",
        *(["QQP and MNLI are not in the local data"] if "QQP" not in p.tasks else [])],
    pages=(Page("04_kovaleva_taxonomy", ("Table 1", "§4.3")), Page("04_kovaleva_patterns")),
    profiles={
        "smoke": TaxonomyParams(
            model="embedded", recipe_overrides={},
            finetune="smoke", tasks=["SST-2", "STS-B"], table1_tasks=["SST-2", "STS-B", "QQP"],
            n_examples=8, max_tokens=64, batch_size=8, cv_folds=3, cnn_epochs=2, cnn_size=32, percentile=99.0,
            direction="both", seed=0, dev_caps={"default": 32}, n_resamples=200,
        ),
        "quick": TaxonomyParams(
            model="embedded", recipe_overrides={},
            finetune="quick", tasks=["MRPC", "STS-B", "SST-2", "RTE"], table1_tasks=_ALL_TASKS,
            n_examples=200, max_tokens=128, batch_size=16, cv_folds=5, cnn_epochs=40, cnn_size=32, percentile=99.0,
            direction="both", seed=0, dev_caps={"default": None, "QNLI": 1000}, n_resamples=2000,
        ),
        "paper": TaxonomyParams(
            model=PAPER_MODEL, recipe_overrides={},
            finetune="paper", tasks=_ALL_TASKS, table1_tasks=_ALL_TASKS,
            n_examples=1000, max_tokens=128, batch_size=16, cv_folds=5, cnn_epochs=40, cnn_size=32, percentile=99.0,
            direction="both", seed=0, dev_caps={"default": None}, n_resamples=2000,
        ),
    },
))
