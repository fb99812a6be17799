"""Chapter 5 (Kovaleva et al. §4.6 and §5: disabling heads and layers) in the three profiles.

Fine-tuned classifiers come from :func:`attnbook.engine.finetune.get_finetuned` with
``FINETUNE_PROFILES[profile]`` (:mod:`attnbook.chapters.profiles.glue`), so chapters 4-6 share the cached
checkpoints. ``dev_caps``: dev examples scored per task. A single-head sweep of the 6x12 embedded
model costs about 48 forward passes' worth of compute per task (the fast sweep reuses the hidden
states below the disabled head), so the quick profile scores 64-160 dev examples per task to stay
within about 3 minutes on 2 CPU cores; the paper profile scores the full dev sets.
"""
from __future__ import annotations

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL

register_chapter(
    "05_kovaleva_disabling",
    {
        "smoke": dict(
            model="embedded", tasks=["SST-2", "STS-B"], dev_caps={"default": 8}, batch_size=8,
            n_resamples=500, alpha=0.05, match_tasks=["STS-B"], top_k=3, bench_examples=2, seed=0, use_cache=True,
        ),
        "quick": dict(
            model="embedded", tasks=["SST-2", "MRPC", "RTE", "STS-B"],
            dev_caps={"SST-2": 160, "MRPC": 96, "RTE": 64, "STS-B": 128, "default": 96}, batch_size=32,
            n_resamples=2000, alpha=0.05, match_tasks=["STS-B", "RTE"], top_k=3, bench_examples=4, seed=0,
            use_cache=True,
        ),
        "paper": dict(
            model=PAPER_MODEL, tasks=["MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m"],
            dev_caps={"default": None}, batch_size=32,
            n_resamples=2000, alpha=0.05, match_tasks=["STS-B", "RTE"], top_k=3, bench_examples=16, seed=0,
            use_cache=True,
        ),
    },
)
