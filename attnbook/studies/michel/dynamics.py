"""When do heads become important? Pruning checkpoints taken during training (Michel, Levy & Neubig 2019, §6, Fig. 5).

Michel et al. prune the checkpoints of a model in training and report each curve relative to that
checkpoint's own unpruned score. Here the checkpoints are the fine-tuning snapshots the GLUE layer saves
after shares of the updates (:func:`attnbook.studies.heads_off.effects.classifier`, ``recipe["save_at"]``);
each is pruned by its own importance scores.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from attnbook.engine.inputs import Batch
from attnbook.engine.models import LoadedModel
from attnbook.engine.scores import ScoreFn
from attnbook.stats import rank_agreement
from attnbook.studies.heads_off import effects as heads_off
from attnbook.studies.michel.importance import importance_of
from attnbook.studies.michel.pruning import (
    curve_frame,
    curve_statistics,
    largest_safe_share,
    pruning_sweep,
)


def checkpoint_name(fraction: float) -> str:
    """How a checkpoint is named in the chapter: ``"25% of training"``."""
    return f"{fraction:.0%} of training"


def training_dynamics(
    base: LoadedModel,
    task: str,
    recipe: Mapping[str, Any],
    seed: int,
    fractions: Sequence[float],
    importance_batches: Sequence[Batch],
    eval_batches: Sequence[Batch],
    score_fn: ScoreFn,
    *,
    final: Any,
    final_importance: np.ndarray,
    step: float = 0.1,
    tolerance: float = 1.0,
    with_sweeps: bool = False,
):
    """Michel §6: the pruning curve of the classifier after each share ``fractions`` of its fine-tuning, and of
    the ``final`` classifier (whose importance ``final_importance`` is known), each ordered by that checkpoint's
    own :func:`~attnbook.studies.michel.importance.importance_of` on ``importance_batches`` and scored on
    ``eval_batches``.

    Returns ``(curves, summary)``: the curves with ``checkpoint`` (:func:`checkpoint_name`), ``relative`` (score in
    % of the checkpoint's unpruned score), ``unpruned``, ``safe`` (:func:`largest_safe_share` against the unpruned
    score, ``tolerance`` points) and ``rho_final`` (Spearman ρ of its importance with the final one); ``summary``
    has one row per checkpoint (index ``checkpoint``, columns ``unpruned, safe, rho_final``), in training order.
    With ``with_sweeps``, also the curves as :func:`~attnbook.studies.michel.pruning.pruning_sweep` s by checkpoint
    name (every example's output, for intervals).
    """
    import pandas as pd

    out, sweeps = [], {}
    for f in [*fractions, 1.0]:
        # every share of this run asked for at once: one training writes them all if the recipe did not
        clf = final if f == 1.0 else heads_off.classifier(base, task, {**recipe, "save_at": list(fractions)}, seed,
                                                          fraction=f)
        values = final_importance if f == 1.0 else importance_of(clf, importance_batches)
        sweep = pruning_sweep(clf, eval_batches, values, score_fn, step=step)
        sweeps[checkpoint_name(f)] = sweep
        cur = curve_frame(sweep, "importance", step=step)
        unpruned = float(cur.loc[cur["share_pruned"] == 0, "score"].iloc[0])
        cur = cur.assign(checkpoint=checkpoint_name(f), relative=100 * cur["score"] / max(unpruned, 1e-9))
        out.append(cur.assign(unpruned=unpruned, safe=largest_safe_share(cur, unpruned, tolerance),
                              rho_final=rank_agreement(values, final_importance)["spearman"]))
    curves = pd.concat(out, ignore_index=True)
    summary = curves.groupby("checkpoint", sort=False)[["unpruned", "safe", "rho_final"]].first()
    return (curves, summary, sweeps) if with_sweeps else (curves, summary)


def checkpoint_statistics(sweeps: Mapping[str, Any], task: str, tolerance: float, *, n_resamples: int = 1000,
                          seed: int = 0) -> dict:
    """:func:`attnbook.studies.michel.pruning.curve_statistics` of every checkpoint's curve (``sweeps`` from
    :func:`training_dynamics` with ``with_sweeps``), with one set of bootstrap draws, so checkpoints compare paired."""

    return curve_statistics({name: [s] for name, s in sweeps.items()}, task, tolerance, n_resamples=n_resamples,
                            seed=seed)
