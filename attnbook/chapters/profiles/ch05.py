"""Chapter 5 (Kovaleva et al. §4.6 and §5: disabling heads and layers) in the three profiles.

Fine-tuned classifiers come from :func:`attnbook.engine.finetune.get_finetuned` with
``FINETUNE_PROFILES[profile]`` (:mod:`attnbook.chapters.profiles.glue`), so chapters 4-6 share the cached
checkpoints. ``seeds``: the fine-tuning seeds whose classifiers are swept (issue 18: head findings over at least
3 seeds in the quick profile, compared across seeds); every classifier is first scored on its whole dev set,
and a (task, seed) whose classifier is no better than its constant predictor is not swept
(``analyse_unlearned=True`` sweeps it anyway, for the smoke profile whose classifiers learn nothing; its rows
stay not comparable). ``dev_caps``: dev examples the sweeps score per task. ``eval_caps``: dev examples the
classifiers are scored on to decide whether they learned (None: the whole dev set, as in the quick and paper
profiles; the smoke profile scores chapter 4's smoke sample, so the logits are cached once for both).
``held_out_caps``: dev examples outside the swept sample on which each run's best head and best layer to disable,
chosen on the sample, are tested again (issue 32: a pick scored on the examples it was chosen on is biased upwards);
about three forward passes per example, a sixteenth of a swept example's cost. The paper profile sweeps the whole
dev sets, so nothing is held out: its best head and best layer are cross-fitted (chosen on one half of the dev
examples, scored on the other, both ways; :func:`attnbook.studies.kovaleva.crossfit.cross_fitted`).

Cost: a single-head sweep of the 6x12 embedded model costs about 48 forward passes' worth of compute per
example (the fast sweep reuses the hidden states below the disabled head). The one-seed quick profile used to
sweep 160 + 96 + 64 + 128 = 448 dev examples (about 3 minutes on 2 cores). With 3 seeds the caps are cut to
96 + 96 + 64 + 96 = 352 per seed, 3 x 352 = 1,056 example-sweeps at most, about 2.4 x the old cost (about
7 minutes); a task/seed that did not learn is not swept (RTE, per the measured recipe, saves 3 x 64), which
leaves 3 x 288 = 864, about 1.9 x (about 6 minutes). The paper profile sweeps the full dev sets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import KOVALEVA, Chapter, caps_text, seeds_text, tasks_text
from attnbook.core.parameters import Parameters


@dataclass(frozen=True, kw_only=True)
class DisablingParams(Parameters):
    """Chapter 5's parameters (what each means: the module docstring); one instance per profile below."""

    model: str
    recipe_overrides: dict[str, Any]
    tasks: list[str]
    seeds: list[int]
    analyse_unlearned: bool
    eval_caps: dict[str, int | None] | None
    dev_caps: dict[str, int | None]
    batch_size: int
    held_out_caps: dict[str, int | None]
    n_resamples: int
    alpha: float
    match_tasks: list[str]
    top_k: int
    bench_examples: int
    seed: int


register_chapter(Chapter(
    "05_kovaleva_disabling", "Disabling heads (Kovaleva §4.6, §5)", KOVALEVA,
    datasets=("glue",),
    pipeline="attnbook.studies.kovaleva.pipeline:DisablingPipeline",
    after=("04_kovaleva_taxonomy",),
    sizes=lambda p: (
        f"GLUE tasks {tasks_text(p)}, fine-tuning seeds {seeds_text(p)}; sweeps over "
        f"{caps_text(p.dev_caps, 'dev examples')} per task; classifiers scored on "
        f"{caps_text(p.eval_caps, 'dev examples')}"),
    differs=lambda p, r: [
        *([f"sweeps on a sample of each dev set ({caps_text(p.dev_caps, 'examples')})"] if p.dev_caps
          and any(v for v in p.dev_caps.values()) else []),
        "paired significance tests with Holm's correction, which the paper does not report"],
    profiles={
        "smoke": DisablingParams(
            model="embedded", recipe_overrides={},
            tasks=["SST-2", "STS-B"], seeds=[0], analyse_unlearned=True, dev_caps={"default": 8},
            eval_caps={"default": 32}, held_out_caps={"default": 16},
            batch_size=8, n_resamples=500, alpha=0.05, match_tasks=["STS-B"], top_k=3, bench_examples=2, seed=0,
        ),
        "quick": DisablingParams(
            model="embedded", recipe_overrides={},
            tasks=["SST-2", "MRPC", "RTE", "STS-B"], seeds=[0, 1, 2], analyse_unlearned=False,
            eval_caps=None, dev_caps={"SST-2": 96, "MRPC": 96, "RTE": 64, "STS-B": 96, "default": 96}, batch_size=32,
            held_out_caps={"default": 500},
            n_resamples=2000, alpha=0.05, match_tasks=["STS-B", "RTE"], top_k=3, bench_examples=4, seed=0,
        ),
        "paper": DisablingParams(
            model=PAPER_MODEL, recipe_overrides={},
            tasks=["MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m"], seeds=[0, 1, 2],
            analyse_unlearned=False, dev_caps={"default": None}, eval_caps=None, held_out_caps={"default": None},
            batch_size=32,
            n_resamples=2000, alpha=0.05, match_tasks=["STS-B", "RTE"], top_k=3, bench_examples=16, seed=0,
        ),
    },
))
