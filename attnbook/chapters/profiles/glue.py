"""Fine-tuning parameters shared by the GLUE chapters (Kovaleva et al. 4-6, Michel et al.): not a chapter.

``FINETUNE_PROFILES[profile]`` is read by :func:`attnbook.engine.finetune.get_finetuned`
(through :meth:`attnbook.engine.finetune.FinetuneParams.from_mapping`) and by
:func:`attnbook.studies.kovaleva.table1.table1`; a chapter copies the values it needs into its
own registered parameters.

* ``paper``: Devlin et al.'s recipe as both papers used it (Kovaleva §3: batch 32,
  3 epochs; Michel's BERT script: lr 2e-5, warm-up 10 %, max length 128), full
  training and dev sets of the seven Table 1 tasks. ``get_finetuned(..., "MNLI-mm", ...)``
  gives the same MNLI model scored on the mismatched dev set (Michel §3.4).
* ``quick``: the embedded 6-layer model on the four tasks whose training files are
  local (SST-2, MRPC, RTE, STS-B); QNLI's dev set is scored for the
  no-fine-tuning row only. One epoch on capped training sets (SST-2 2,000, MRPC and
  STS-B 1,000, RTE 500 examples; 16-63 updates), batches grouped by length, at most
  500 dev examples, and lr 1e-4: twice the top of Devlin et al.'s grid, because a
  small model gets only a few dozen updates (5e-5 left SST-2 at chance level).
  Measured: all of it (8 fine-tuning runs with dev evaluation, 5 untrained rows,
  model loading) costs 294 CPU seconds on one thread, so it fits the 6-minute
  budget on 2 cores even without any gain from the second core.
* ``smoke``: a handful of updates on tiny caps (seconds), for tests and CI.
"""
from __future__ import annotations

from attnbook.chapters.profiles import PAPER_MODEL

FINETUNE_PROFILES: dict[str, dict] = {
    "smoke": dict(
        model="embedded", tasks=["SST-2", "STS-B"], inits=["pretrained", "random_ft", "pretrained_ft"],
        train_cap=32, dev_cap=32, max_length=64, epochs=1, batch_size=8, lr=5e-5, warmup=0.1,
        weight_decay=0.01, group_by_length=True, eval_batch_size=32, seeds=[0], save_at=[0.5, 1.0],
    ),
    "quick": dict(
        model="embedded", tasks=["MRPC", "STS-B", "SST-2", "RTE", "QNLI"],
        inits=["pretrained", "random_ft", "pretrained_ft"],
        train_cap={"SST-2": 2000, "MRPC": 1000, "STS-B": 1000, "RTE": 500, "default": 1000}, dev_cap=500,
        max_length=128, epochs=1, batch_size=32, lr=1e-4, warmup=0.1,
        weight_decay=0.01, group_by_length=True, eval_batch_size=64, seeds=[0], save_at=[0.1, 0.25, 0.5, 1.0],
    ),
    "paper": dict(
        model=PAPER_MODEL, tasks=["MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m"],
        inits=["pretrained", "random_ft", "pretrained_ft"],
        train_cap=None, dev_cap=None, max_length=128, epochs=3, batch_size=32, lr=2e-5, warmup=0.1,
        weight_decay=0.01, group_by_length=False, eval_batch_size=64, seeds=[0], save_at=[0.1, 0.25, 0.5, 1.0],
    ),
}

if len({frozenset(v) for v in FINETUNE_PROFILES.values()}) != 1:  # same rule as register_chapter
    raise ValueError("FINETUNE_PROFILES: every profile must define the same keys")
