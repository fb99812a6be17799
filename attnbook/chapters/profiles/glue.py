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
  local (SST-2, MRPC, RTE, STS-B); QNLI's dev set is scored for the no-fine-tuning row
  only. Every classifier is scored on the task's full dev set. The recipe was chosen by
  measurement on this 2-core machine (pre-trained + fine-tuned, full dev sets, one thread,
  bf16 autocast; issue 18's experiments):

  | task | recipe chosen | measured dev score | train CPU s | rejected alternatives |
  |---|---|---|---|---|
  | SST-2 | 8,000 examples, 1 epoch, lr 1e-4, batch 32 | acc 85.8, 85.4 (seeds 0, 1) | 77 | lr 5e-5: 84.1; 16,000 examples: 87.7 at 2.2x the cost |
  | MRPC | full set (3,668), 2 epochs, lr 1e-4, batch 32 | acc 77.7, F1 85.2 | 227 | 1 epoch: F1 82.6-84.3, close to always-"paraphrase" (81.2) |
  | STS-B | full set (5,749), 1 epoch, lr 1e-4, batch 32, head bias at the mean score | Pearson 0.846, 0.828 | 90 | bias at 0: 0.73-0.82; batch 16: 0.53 |
  | RTE | full set (2,490), 1 epoch, lr 1e-4, batch 32 | not learned (see below) | ~100 | 2 epochs: 54.9, 54.5; 3 epochs at 5e-5: 57.8 (majority 52.7) at 320 s; on an AVX2 machine in float32 (2026-11-29, ``benchmarks/rte_recipes.py``, seed 0): 5 epochs at 5e-5, batch 16: 61.4 [55.4, 67.1], learned, 1,055 CPU s; 8 epochs at 3e-5, batch 16: 64.3 [58.3, 69.9], learned, 1,678 CPU s |

  RTE does not reach a classifier clearly better than its majority class within the
  budget: the recipes that do (5 or 8 epochs, above) train RTE's pre-trained and random-init classifiers
  for 5-8 times the epochs, which the quick book's time budget does not hold (chapter 4 shows the recorded
  trials, ``attnbook/assets/rte_recipe_trials.json``); it is trained with the cheapest recipe on **one seed**
  (``task_seeds``, :func:`attnbook.engine.finetune.seeds_for`) so Table 1 still reports it, and
  the analyses that need a learned classifier skip it with that reason
  (:func:`attnbook.studies.heads_off.learned.learned`). bf16 autocast: 0.057 vs 0.095 CPU s per training example in the recipe
  experiments (one thread, a shared machine with AVX-512 BF16; an observation that chose the
  recipe, not a ``make bench`` figure); weights, optimiser state and every evaluation stay float32.
  ``bf16="auto"`` (smoke, quick): bfloat16 only where the hardware runs it natively
  (:mod:`attnbook.engine.precision`); on a CPU without AVX-512 BF16 or AMX (e.g. an AVX2-only
  EPYC) PyTorch emulates it and training would run several times slower, so such a machine trains
  in float32 (the checkpoint keys hold the precision used; ``benchmarks/precision.py`` compares the
  two). On a machine with AVX-512 BF16 (2026-11-27) the study trained SST-2 and STS-B with this recipe in
  both precisions on seeds 0-2: mean dev scores differ by -0.04 and +0.05 points (seed standard deviations
  0.72 and 0.96), Table 1's verdicts are the same, so the book trains in bf16 where it is native.
  ``seeds`` (pre-trained + fine-tuned) are 0, 1, 2 so chapters 4-6 can say how much the
  findings depend on the seed (``task_seeds`` names a task trained on fewer: RTE); random-init +
  fine-tuning runs once (``random_seeds``). ``save_at``: the snapshots written while training,
  only those chapter 6 reads (its task, first seed, its ``checkpoints``;
  :func:`attnbook.engine.finetune.snapshots`).
* ``smoke``: a handful of updates on tiny caps (seconds), for tests and CI.

``workers``: classifiers fine-tuned side by side, each in its own process on one thread
(:func:`attnbook.engine.finetune.train_checkpoints`, called by chapter 4 before Table 1). On this
2-core machine two one-thread runs side by side finish sooner than one run on two threads; the
paper profile keeps one (a GPU is one device).
"""
from __future__ import annotations

from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.core.errors import ParameterError

FINETUNE_PROFILES: dict[str, dict] = {
    "smoke": dict(
        model="embedded", tasks=["SST-2", "STS-B"], inits=["pretrained", "random_ft", "pretrained_ft"],
        train_cap=32, dev_cap=32, max_length=64, epochs=1, batch_size=8, lr=5e-5, warmup=0.1,
        weight_decay=0.01, group_by_length=True, eval_batch_size=32, bf16="auto", regression_bias=True,
        seeds=[0], random_seeds=[0], task_seeds={}, save_at={"tasks": ["SST-2"], "seeds": [0], "at": [0.5]},
        workers=1,
    ),
    "quick": dict(
        model="embedded", tasks=["MRPC", "STS-B", "SST-2", "RTE", "QNLI"],
        inits=["pretrained", "random_ft", "pretrained_ft"],
        train_cap={"SST-2": 8000, "default": None}, dev_cap=None,
        max_length=128, epochs={"MRPC": 2, "default": 1}, batch_size=32, lr=1e-4, warmup=0.1,
        weight_decay=0.01, group_by_length=True, eval_batch_size=64, bf16="auto", regression_bias=True,
        seeds=[0, 1, 2], random_seeds=[0], task_seeds={"RTE": [0]},
        save_at={"tasks": ["SST-2"], "seeds": [0], "at": [0.1, 0.5]}, workers=2,
    ),
    "paper": dict(
        model=PAPER_MODEL, tasks=["MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m"],
        inits=["pretrained", "random_ft", "pretrained_ft"],
        train_cap=None, dev_cap=None, max_length=128, epochs=3, batch_size=32, lr=2e-5, warmup=0.1,
        weight_decay=0.01, group_by_length=False, eval_batch_size=64, bf16=False, regression_bias=False,
        seeds=[0, 1, 2], random_seeds=[0], task_seeds={},
        save_at={"tasks": ["MNLI-m"], "seeds": [0], "at": [0.1, 0.25, 0.5]}, workers=1,
    ),
}

if len({frozenset(v) for v in FINETUNE_PROFILES.values()}) != 1:  # same rule as register_chapter
    raise ValueError("FINETUNE_PROFILES: every profile must define the same keys")

#: the keys a chapter's ``recipe_overrides`` may change: sizes and schedule, never the model or the tasks a
#: chapter analyses (those are chapter parameters) - e.g. ``{"train_cap": 64, "epochs": 1, "seeds": [0]}``
OVERRIDABLE = frozenset(FINETUNE_PROFILES["paper"]) - {"model", "tasks", "inits"}


def recipe(params) -> dict:
    """The fine-tuning recipe a GLUE chapter uses: ``FINETUNE_PROFILES[name]`` (``name``: the chapter's
    ``finetune`` parameter when it has one, else its profile) with the chapter's ``model`` and its
    ``recipe_overrides`` (a papermill parameter, e.g. ``-p recipe_overrides '{"train_cap": 64}'``).

    Chapters 4-6 and the atlas call this with their resolved parameters, so one override changes every
    chapter's checkpoints alike (they share the cached classifiers). An unknown key raises
    :class:`~attnbook.core.errors.ParameterError` naming the keys that may be changed.
    """

    name = getattr(params, "finetune", None) or params.profile
    if name not in FINETUNE_PROFILES:
        raise ParameterError(f"unknown fine-tuning recipe {name!r}; choose one of {', '.join(FINETUNE_PROFILES)}")
    overrides = dict(getattr(params, "recipe_overrides", None) or {})
    unknown = set(overrides) - OVERRIDABLE
    if unknown:
        raise ParameterError(f"recipe_overrides: {sorted(unknown)} cannot be changed; give any of "
                             f"{', '.join(sorted(OVERRIDABLE))}")
    return {**FINETUNE_PROFILES[name], **overrides, "model": params.model}
