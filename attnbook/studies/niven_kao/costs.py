"""What chapter 7 (Niven & Kao) costs: one function per stage of :mod:`attnbook.studies.niven_kao.pipeline`.

Every run trains BERT on (argument, warrant) pairs, two sequences per item, for every seed; the word baselines
(GloVe models) are not counted (:data:`attnbook.chapters.plan.LEFT_OUT`).
"""
from __future__ import annotations

import os

from attnbook.engine.cost import ARCT_SIZES, PAD_RANDOM, PIECES, Shape, StageParams, Work, cap
from attnbook.engine.precision import resolve_bf16



def _train_kind(p: StageParams) -> tuple[str, int]:
    """The kind of training work and the processes doing it side by side (the seeds' workers, one thread each)."""
    workers = min(int(p.seed_workers or 1), p.n_seeds, os.cpu_count() or 1)
    return ("train_bf16" if resolve_bf16(p.bf16) else "train") + ("_1" if workers > 1 else ""), workers


def _pad(p: StageParams) -> float:
    return 1.0 if p.group_by_length else PAD_RANDOM  # random batches are padded to their longest item


def runs_cost(p: StageParams, s: Shape) -> list[Work]:
    """BERT on the full inputs and on each probe's partial inputs: training, the dev set after every epoch,
    then the test sets."""
    train, workers = _train_kind(p)
    n_train = cap(p.train_cap, ARCT_SIZES["train"])
    n_eval = cap(p.eval_cap, ARCT_SIZES["dev"]) + cap(p.eval_cap, ARCT_SIZES["test"]) * 3
    out = []
    for variant in dict.fromkeys(["full", *p.probes]):
        t = min(PIECES[f"arct_{variant}"], p.max_length)  # evaluation: sorted by length
        t_train = min(PIECES[f"arct_{variant}"] * _pad(p), p.max_length)  # training batches
        out.append(Work(p.chapter, f"BERT on {variant} ({p.n_seeds} seeds x {p.epochs} epochs)", train,
                        3 * s.forward_flops(t_train, 2 * p.n_seeds * p.epochs * n_train), parallel=workers,
                        jobs=p.n_seeds))
        out.append(Work(p.chapter, f"evaluating {variant}", "forward",
                        s.forward_flops(t, 2 * p.n_seeds * (p.epochs * cap(p.eval_cap, ARCT_SIZES["dev"])
                                                               + n_eval))))
    return out


def adversarial_cost(p: StageParams, s: Shape) -> list[Work]:
    """The adversarial runs: training on the swapped training set (originals and their swapped copies), the
    adversarial dev set after every epoch, then its test set whole and in its two halves."""
    train, workers = _train_kind(p)
    out = []
    for variant in p.adversarial:
        t = min(PIECES[f"arct_{variant}"] * _pad(p), p.max_length)
        n_adv = 2 * cap(p.train_cap, ARCT_SIZES["train_adv"] // 2)  # originals and their swapped copies
        out.append(Work(p.chapter, f"adversarial {variant} ({p.n_seeds} seeds x {p.adversarial_epochs} epochs)",
                        train, 3 * s.forward_flops(t, 2 * p.n_seeds * p.adversarial_epochs * n_adv),
                        parallel=workers, jobs=p.n_seeds))
        n_dev_adv = 2 * cap(p.eval_cap, ARCT_SIZES["dev_adv"] // 2)
        n_test_adv = 2 * 2 * cap(p.eval_cap, ARCT_SIZES["test_adv"] // 2)
        out.append(Work(p.chapter, f"evaluating adversarial {variant}", "forward",
                        s.forward_flops(min(PIECES[f"arct_{variant}"], p.max_length),
                                        2 * p.n_seeds * (p.adversarial_epochs * n_dev_adv + n_test_adv))))
    return out
