"""Chapter 4 (Kovaleva et al. §4.1-4.5 and Table 1: patterns, frame heads, fine-tuning, features).

``finetune`` names the entry of :data:`attnbook.chapters.profiles.glue.FINETUNE_PROFILES` whose
training recipe the chapter uses, so chapters 4, 5 and 6 load the same cached
checkpoints (:func:`attnbook.engine.finetune.get_finetuned`). ``tasks``: the fine-tuned
tasks analysed in §4.1, §4.3 and §4.4-4.5 (their training files must be local);
``table1_tasks``: the rows of Table 1 (a task without local files gets a "not run"
row). ``n_examples``: dev inputs per task for the pattern shares, the cosine
comparison and the feature attention (the paper: up to 1000). ``cv_folds`` /
``cnn_epochs`` / ``cnn_size``: the pattern CNN's cross-validation.

Time (quick, after the fine-tuning is cached): about 3 CPU minutes on one core; the
fine-tuning itself (random-init and pre-trained runs of four tasks) is the GLUE layer's
budget, about 4-6 CPU minutes.
"""
from __future__ import annotations

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL

_ALL_TASKS = ["MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m"]

register_chapter(
    "04_kovaleva_taxonomy",
    {
        "smoke": dict(
            model="embedded", finetune="smoke", tasks=["SST-2", "STS-B"], table1_tasks=["SST-2", "STS-B", "QQP"],
            n_examples=8, max_tokens=64, batch_size=8, cv_folds=3, cnn_epochs=2, cnn_size=32, percentile=99.0,
            direction="both", seed=0, use_cache=True,
        ),
        "quick": dict(
            model="embedded", finetune="quick", tasks=["MRPC", "STS-B", "SST-2", "RTE"], table1_tasks=_ALL_TASKS,
            n_examples=200, max_tokens=128, batch_size=16, cv_folds=5, cnn_epochs=40, cnn_size=32, percentile=99.0,
            direction="both", seed=0, use_cache=True,
        ),
        "paper": dict(
            model=PAPER_MODEL, finetune="paper", tasks=_ALL_TASKS, table1_tasks=_ALL_TASKS,
            n_examples=1000, max_tokens=128, batch_size=16, cv_folds=5, cnn_epochs=40, cnn_size=32, percentile=99.0,
            direction="both", seed=0, use_cache=True,
        ),
    },
)
