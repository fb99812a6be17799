"""Which classifiers and snapshots a fine-tuning recipe trains: the seeds of each task (``seeds``, ``task_seeds``) and
the intermediate checkpoints (``save_at``). Read by :mod:`attnbook.engine.finetune` and by the studies and the plan
that enumerate a recipe's classifiers, so they all count the same ones.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from attnbook.core.errors import ParameterError
from attnbook.data.glue import TaskSpec, task_spec


def seeds_for(recipe: Mapping[str, Any], task: str | TaskSpec, seeds: Sequence[int] | None = None) -> list[int]:
    """The pre-trained + fine-tuned seeds of ``task``: ``seeds`` (default: the recipe's ``seeds``), restricted to the
    recipe's ``task_seeds[task]`` when it names the task (a task the recipe trains on fewer seeds, e.g. the quick
    profile's RTE, which does not learn: one seed, enough for Table 1 to report it)."""
    chosen = [int(s) for s in (recipe.get("seeds", [0]) if seeds is None else seeds)]
    only = (recipe.get("task_seeds") or {}).get(task_spec(task).name)
    if only is None:
        return chosen
    kept = [s for s in chosen if s in set(int(x) for x in only)]
    return kept or [int(only[0])]


def snapshots(save_at: Any, task: str | TaskSpec, init: str, seed: int) -> tuple[float, ...]:
    """The shares of training after which the classifier ``(task, init, seed)`` is checkpointed besides its end.

    ``save_at`` is a recipe's value: a list of shares (every fine-tuned classifier), or a mapping
    ``{"tasks": [...], "seeds": [...], "at": [...]}`` that asks for the shares ``at`` of the pre-trained + fine-tuned
    classifiers of those tasks and seeds only (the ones chapter 6's training dynamics read; a snapshot nobody reads
    is not written)."""
    if not save_at:
        return ()
    if isinstance(save_at, Mapping):
        unknown = set(save_at) - {"tasks", "seeds", "at"}
        if unknown or "at" not in save_at:
            raise ParameterError(f"save_at: expected a list of shares or {{'tasks': [...], 'seeds': [...], 'at': [...]}}"
                                 f", got keys {sorted(save_at)}")
        tasks = {task_spec(t).name for t in save_at.get("tasks", ())}
        if init != "pretrained_ft" or task_spec(task).name not in tasks or int(seed) not in set(save_at.get("seeds", ())):
            return ()
        return tuple(float(f) for f in save_at["at"])
    return tuple(float(f) for f in save_at)
