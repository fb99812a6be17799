"""Chapter 6 (Michel et al.: head ablation, importance and pruning) in the three profiles.

``task`` is the main task (paper: MNLI-matched, with MNLI-mismatched as ``ood_task`` for §3.4;
quick: SST-2, with "across datasets" done across tasks fine-tuned from the same model and across
two disjoint halves of the dev data). ``dev_cap`` examples are scored after every intervention;
``importance_cap`` training examples give the importance scores (Michel §4.1 use the training
set). ``checkpoints``: the shares of fine-tuning whose intermediate checkpoints are analysed (§6);
they must be among ``FINETUNE_PROFILES[profile]["save_at"]``. The quick sizes keep the chapter
at about 3 minutes on 2 CPU cores once fine-tuning is cached.
"""
from __future__ import annotations

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL

register_chapter(
    "06_michel_pruning",
    {
        "smoke": dict(
            model="embedded", task="SST-2", ood_task=None, agreement_tasks=["SST-2", "STS-B"], dev_cap=16,
            importance_cap=16, batch_size=16, step=0.25, random_seeds=[0, 1], tolerance=1.0, alpha=0.01,
            checkpoints=[0.5], speed_batch_sizes=[1, 4], speed_examples=8, speed_repeats=1, seed=0, use_cache=True,
        ),
        "quick": dict(
            model="embedded", task="SST-2", ood_task=None, agreement_tasks=["SST-2", "MRPC", "RTE"], dev_cap=128,
            importance_cap=128, batch_size=32, step=0.1, random_seeds=[0, 1, 2], tolerance=1.0, alpha=0.01,
            checkpoints=[0.1, 0.25, 0.5], speed_batch_sizes=[1, 4, 16, 64], speed_examples=128, speed_repeats=3,
            seed=0, use_cache=True,
        ),
        "paper": dict(
            model=PAPER_MODEL, task="MNLI-m", ood_task="MNLI-mm", agreement_tasks=["MNLI-m", "SST-2", "MRPC"],
            dev_cap=None, importance_cap=None, batch_size=32, step=0.1, random_seeds=[0, 1, 2, 3, 4], tolerance=1.0,
            alpha=0.01, checkpoints=[0.1, 0.25, 0.5], speed_batch_sizes=[1, 4, 16, 64], speed_examples=512,
            speed_repeats=3, seed=0, use_cache=True,
        ),
    },
)
