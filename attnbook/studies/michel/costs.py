"""What chapter 6 (Michel et al.) costs: one function per stage of :mod:`attnbook.studies.michel.pipeline`.

The chapter's classifiers are chapter 4's (Table 1 trains every seed); only those chapter 4 did not train are
counted as trained here (:class:`attnbook.engine.cost.StageParams`).
"""
from __future__ import annotations

from attnbook.engine.cost import Shape, StageParams, Work, cap, dev_length, finetune_work, glue_size, sweep_forwards



def _others(p: StageParams) -> list[str]:
    """The agreement tasks besides the chapter's own that the chapter can fine-tune on."""
    return [t for t in dict.fromkeys(p.agreement_tasks) if t != p.task and p.trainable(t)]


def _length(p: StageParams) -> float:
    return dev_length(p.task, p.recipe["max_length"])


def _n_dev(p: StageParams) -> int:
    return cap(p.dev_cap, glue_size(p.task, "dev"))


def classifiers_cost(p: StageParams, s: Shape) -> list[Work]:
    """The chapter's seeds and one seed per agreement task: trained when chapter 4 did not, loaded, and checked for
    having learned their task on the recipe's dev sample (:func:`attnbook.studies.michel.runs.classifiers` ->
    :func:`attnbook.studies.heads_off.effects.learned_status`)."""
    task, chosen = p.task, p.seeds
    out: list[Work] = []
    for t in dict.fromkeys([task, *p.agreement_tasks]):
        if p.trainable(t):
            todo = p.to_train([(t, "pretrained_ft", sd) for sd in (chosen if t == task else chosen[:1])])
            if todo:
                out += finetune_work(p.chapter, s, p.recipe, [t], todo, [])
    others = _others(p)
    out.append(Work(p.chapter, f"loading {len(chosen) + len(others)} classifiers", "load", len(chosen) + len(others)))
    checked = [(task, len(chosen))] + [(t, 1) for t in others]
    out.append(Work(p.chapter, f"checking that {sum(k for _, k in checked)} classifiers learned (dev sets)", "forward",
                    sum(s.forward_flops(dev_length(t, p.recipe["max_length"]),
                                        k * cap(p.recipe.get("dev_cap"), glue_size(t, "dev"), t)) for t, k in checked)))
    return out


def analyse_cost(p: StageParams, s: Shape) -> list[Work]:
    """Every seed: each head masked on the dev sample, and the pruning curves by importance, by the ablation's
    order and at random (one forward pass of the dev sample per pruning step)."""
    curves = 2 + len(p.random_seeds)
    per_seed = sweep_forwards(s) + curves * (1 / p.step + 1)
    n_dev = _n_dev(p)
    return [Work(p.chapter, f"{p.task}: masking sweeps and {curves} pruning curves ({len(p.seeds)} seeds x "
                            f"{n_dev:,})", "forward", s.forward_flops(_length(p), len(p.seeds) * n_dev * per_seed))]


def first_seed_cost(p: StageParams, s: Shape) -> list[Work]:
    """The first seed only: every head but one masked, every head disabled, and the pruning curves of the
    intermediate checkpoints (training dynamics)."""
    first = 2 * sweep_forwards(s) + len(p.checkpoints) * (1 / p.step + 1)
    return [Work(p.chapter, "first seed: all-but-one, disabling, checkpoint curves", "forward",
                 s.forward_flops(_length(p), _n_dev(p) * first))]


def out_of_domain_cost(p: StageParams, s: Shape) -> list[Work]:
    """Each head masked on another task's dev set (MNLI-mismatched for the paper's MNLI), when there is one."""
    if not p.ood_task:
        return []
    n_ood = cap(p.dev_cap, glue_size(p.ood_task, "dev"))
    return [Work(p.chapter, f"{p.ood_task}: masking sweeps ({len(p.seeds)} seeds)", "forward",
                 s.forward_flops(_length(p), len(p.seeds) * n_ood * sweep_forwards(s)))]


def importance_cost(p: StageParams, s: Shape) -> list[Work]:
    """Head importance I_h (gradients of the head mask) on the training sample: every seed, every intermediate
    checkpoint, the sample's two halves (one pass) and every agreement task."""
    n_imp = cap(p.importance_cap, glue_size(p.task, "train"))
    passes = len(p.seeds) + len(p.checkpoints) + 1 + len(p.agreement_tasks)
    return [Work(p.chapter, f"importance scores ({passes} passes x {n_imp:,} examples)", "backprop",
                 2 * s.forward_flops(_length(p), passes * n_imp))]


def speed_cost(p: StageParams, s: Shape) -> list[Work]:
    """Throughput of the full and the pruned model at every batch size, repeated."""
    speed = p.speed_repeats * 2 * sum(p.speed_examples + b for b in p.speed_batch_sizes)
    return [Work(p.chapter, "speed runs", "forward", s.forward_flops(_length(p), speed))]
