"""What chapters 4-5 (Kovaleva et al.) cost: one function per stage of :mod:`attnbook.studies.kovaleva.pipeline`.

Chapter 4 trains every classifier of Table 1 (chapters 5 and 6 load them); chapter 5 trains only the seeds chapter 4
did not. A GLUE task whose files are not in the data directory is skipped, as the chapters skip it, unless the plan
counts fetched data (:class:`attnbook.engine.cost.StageParams`).
"""
from __future__ import annotations

from attnbook.engine.cost import (Shape, StageParams, Work, cap,
                                  dev_length, finetune_work, framenet_work, glue_size, sweep_forwards)
from attnbook.engine.jobs import seeds_for


# ---------------------------------------------------------------------------------------------- chapter 4 (§4)


def _seeds(p: StageParams) -> tuple[list, list]:
    """The recipe's pre-trained + fine-tuned seeds and its random-init seeds (the same when it names none)."""
    return p.recipe["seeds"], p.recipe.get("random_seeds") or p.recipe["seeds"]


def finetune_cost(p: StageParams, s: Shape) -> list[Work]:
    """Table 1's classifiers (every task, pre-trained and random-init, every seed), each trained once."""
    seeds, rseeds = _seeds(p)
    todo = p.to_train([(t, i, sd) for t in p.table1_tasks for i, ss in (("pretrained_ft", seeds_for(p.recipe, t)),
                                                                          ("random_ft", rseeds))
                       for sd in ss if p.trainable(t)])
    out: list[Work] = []
    for task in sorted({t for t, _, _ in todo}):
        mine = [x for x in todo if x[0] == task]
        out += finetune_work(p.chapter, s, p.recipe, [task], [x for x in mine if x[1] == "pretrained_ft"],
                             [x for x in mine if x[1] == "random_ft"])
    return out


def table1_cost(p: StageParams, s: Shape) -> list[Work]:
    """Every classifier of Table 1 (and the pre-trained model without fine-tuning) scored on its task's dev set."""
    seeds, rseeds = _seeds(p)
    out = []
    for task in [t for t in p.table1_tasks if p.scored(t)]:
        n_dev = cap(p.dev_caps, glue_size(task, "dev"), task)
        runs = 1 + (len(seeds_for(p.recipe, task, seeds)) + len(rseeds) if p.trainable(task) else 0)
        out.append(Work(p.chapter, f"scoring {task} dev ({runs} classifiers x {n_dev:,})", "forward",
                        s.forward_flops(dev_length(task, p.recipe["max_length"]), runs * n_dev)))
    return out


def patterns_cost(p: StageParams, s: Shape) -> list[Work]:
    """The analysed tasks' dev inputs through the pre-trained and the fine-tuned model three times each: pattern
    shares (§4.1), map cosines (§4.4) and attention-received features (§4.5)."""
    n = p.n_examples
    return [Work(p.chapter, f"{task}: patterns, cosines, features (6 passes x {n})", "forward",
                 s.forward_flops(dev_length(task, p.max_tokens), 6 * n))
            for task in p.tasks if p.trainable(task)]


def framenet_cost(p: StageParams, s: Shape) -> list[Work]:
    """FrameNet's full-text annotations parsed (§4.2)."""
    return framenet_work(p.chapter)


# ---------------------------------------------------------------------------------------------- chapter 5 (§4.6, §5)


def classifiers_cost(p: StageParams, s: Shape) -> list[Work]:
    """Each task's seeds' classifiers: trained when chapter 4 did not, then loaded."""
    out: list[Work] = []
    for task in [t for t in p.tasks if p.trainable(t)]:
        mine = seeds_for(p.recipe, task, p.seeds)
        todo = p.to_train([(task, "pretrained_ft", sd) for sd in mine])
        if todo:
            out += finetune_work(p.chapter, s, p.recipe, [task], todo, [])
        out.append(Work(p.chapter, f"{task}: loading {len(mine)} classifiers", "load", len(mine)))
    return out


def sweeps_cost(p: StageParams, s: Shape) -> list[Work]:
    """Every head, then every layer, switched off on the dev sample. Every seed counts: a classifier that learns
    nothing is not swept (unknown before the run), so this is an upper bound (the quick book: 4 of 12 classifiers,
    chapter 5 ran at 0.78-0.84 of its plan in the plan runs timed at the machine's usual speed)."""
    out = []
    for task in [t for t in p.tasks if p.trainable(t)]:
        n = cap(p.dev_caps, glue_size(task, "dev"), task)
        k = len(seeds_for(p.recipe, task, p.seeds))
        out.append(Work(p.chapter, f"{task}: single-head and layer sweeps (up to {k} seeds x {n})",
                        "forward", s.forward_flops(dev_length(task, p.recipe["max_length"]), k * n * sweep_forwards(s))))
    return out


def match_cost(p: StageParams, s: Shape) -> list[Work]:
    """§5's word-matching shares: one pass of each matched task's dev sample through its primary classifier (the
    first seed that learned; unknown before the run, so every matched task with local files counts)."""
    out = []
    for task in [t for t in p.match_tasks if t in p.tasks and p.trainable(t)]:
        n = cap(p.dev_caps, glue_size(task, "dev"), task)
        out.append(Work(p.chapter, f"{task}: word-matching shares (one pass x {n})", "forward",
                        s.forward_flops(dev_length(task, p.recipe["max_length"]), n)))
    return out


def held_out_cost(p: StageParams, s: Shape) -> list[Work]:
    """Each swept run's chosen head and layer disabled on the dev examples outside the sweep's sample (at most
    ``held_out_caps``): a baseline pass and two configurations, at most three forward passes per example."""
    out = []
    for task in [t for t in p.tasks if p.trainable(t)]:
        total = glue_size(task, "dev")
        swept = cap(p.dev_caps, total, task)
        n = min(total - swept, cap(p.held_out_caps, total, task))
        if n <= 0:
            continue
        k = len(seeds_for(p.recipe, task, p.seeds))
        out.append(Work(p.chapter, f"{task}: chosen head and layer, held out (up to {k} seeds x {n})", "forward",
                        s.forward_flops(dev_length(task, p.recipe["max_length"]), 3 * k * n)))
    return out
