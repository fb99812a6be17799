"""Chapter 6 (Michel et al.: head ablation, importance and pruning) in the three profiles.

``task`` is the main task (paper: MNLI-matched, with MNLI-mismatched as ``ood_task`` for §3.4;
quick: SST-2, with "across datasets" done across tasks fine-tuned from the same model and across
two disjoint halves of the dev data). ``seeds``: the fine-tuning seeds whose classifiers are analysed
(issue 18: the head findings are computed for each, seeds whose classifier has not learned the task are
skipped, and the verdicts hold only when they hold for every analysed seed); the single-seed analyses
(§3.3, §6, disabling vs masking, speed) use the first analysed seed. ``dev_cap`` examples are scored after
every intervention; ``importance_cap`` training examples give the importance scores (Michel §4.1 use the
training set). ``checkpoints``: the shares of fine-tuning whose intermediate checkpoints are analysed (§6);
the recipe's ``save_at`` writes them while chapter 4 trains (``FINETUNE_PROFILES[profile]["save_at"]``: this
chapter's task and first seed); another task, seed or share trains its classifier once more to write them. ``n_resamples``: bootstrap draws of the
dev examples for every interval. ``random_seeds``: random pruning orders per fine-tuning seed.

Cost of the quick profile (measured on this machine: a 72-head masking sweep over 128 SST-2 dev examples
takes 45 CPU s, i.e. ~0.35 CPU s per example; one pruning curve of 11 steps ~0.08 CPU s per example; an
importance pass over 128 training examples 2.3 CPU s). Per seed: one 72-head sweep + 4 curves (I_h, the
oracle, 2 random orders) ~0.67 s per dev example; first seed only: the all-but-one sweep (0.35), the
disabling sweep (0.35, shared with chapter 5 when its SST-2 dev cap is the same 160 examples, as in
quick) and 2 checkpoint curves (0.16). With 3 seeds and ``dev_cap=160``: 160 x (3 x 0.67 + 0.86) ~ 460 CPU s
(~ 400 s when chapter 5's disabling sweep is cached), plus fine-tuning of the seeds (shared with chapters
4-5). The full SST-2 dev set (872) would cost ~2,500 CPU s: too much for the quick budget, so single-head
"no effect" verdicts, which need about 500 examples to resolve ±1 point, come out inconclusive in quick.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import MICHEL, Chapter, count_text, seeds_text
from attnbook.core.parameters import Parameters


@dataclass(frozen=True, kw_only=True)
class PruningParams(Parameters):
    """Chapter 6's parameters (what each means: the module docstring); one instance per profile below."""

    model: str
    recipe_overrides: dict[str, Any]
    task: str
    ood_task: str | None
    agreement_tasks: list[str]
    seeds: list[int]
    dev_cap: int | None
    importance_cap: int | None
    batch_size: int
    step: float
    random_seeds: list[int]
    tolerance: float
    alpha: float
    n_resamples: int
    checkpoints: list[float]
    speed_batch_sizes: list[int]
    speed_examples: int
    speed_repeats: int
    seed: int


register_chapter(Chapter(
    "06_michel_pruning", "Pruning heads (Michel et al.)", MICHEL,
    datasets=("glue",),
    pipeline="attnbook.studies.michel.pipeline:PruningPipeline",
    after=("04_kovaleva_taxonomy",),
    sizes=lambda p: (
        f"{p.task} (seeds {seeds_text(p)}): {count_text(p.dev_cap, 'dev examples')} scored after "
        f"each intervention, importance on {count_text(p.importance_cap, 'training examples')}; pruning in steps of "
        f"{p.step:.0%}; {len(p.random_seeds)} random pruning orders per seed"),
    differs=lambda p, r: [
        *([f"{p.task} instead of MNLI (MNLI is not in the local data)"] if p.task != "MNLI-m" else []),
        "the machine-translation experiments are not reproduced",
        "§6's training dynamics asked of fine-tuning checkpoints"],
    profiles={
        "smoke": PruningParams(
            model="embedded", recipe_overrides={},
            task="SST-2", ood_task=None, agreement_tasks=["SST-2", "STS-B"], seeds=[0],
            dev_cap=16, importance_cap=16, batch_size=16, step=0.25, random_seeds=[0], tolerance=1.0, alpha=0.01,
            n_resamples=200, checkpoints=[0.5], speed_batch_sizes=[1, 4], speed_examples=8, speed_repeats=3, seed=0,
        ),
        "quick": PruningParams(
            model="embedded", recipe_overrides={},
            task="SST-2", ood_task=None, agreement_tasks=["SST-2", "MRPC", "RTE"], seeds=[0, 1, 2],
            dev_cap=160, importance_cap=128, batch_size=32, step=0.1, random_seeds=[0, 1], tolerance=1.0, alpha=0.01,
            n_resamples=1000, checkpoints=[0.1, 0.5], speed_batch_sizes=[1, 4, 16, 64], speed_examples=128,
            speed_repeats=6, seed=0,
        ),
        "paper": PruningParams(
            model=PAPER_MODEL, recipe_overrides={},
            task="MNLI-m", ood_task="MNLI-mm", agreement_tasks=["MNLI-m", "SST-2", "MRPC"],
            seeds=[0, 1, 2], dev_cap=None, importance_cap=None, batch_size=32, step=0.1, random_seeds=[0, 1, 2, 3, 4],
            tolerance=1.0, alpha=0.01, n_resamples=1000, checkpoints=[0.1, 0.25, 0.5], speed_batch_sizes=[1, 4, 16, 64],
            speed_examples=512, speed_repeats=3, seed=0,
        ),
    },
))
