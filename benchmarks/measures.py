"""Measurements that exist only for `make bench` (speed, not results): they never run in a chapter.

* :func:`benchmark_sweep` - the fast single-head sweep against a full forward per head, same data;
* :func:`training_throughput` / :func:`benchmark_throughput` - fine-tuning examples per second of the
  embedded model and of a randomly initialised bert-base-sized model;
* :func:`interleaved_pairs` / :func:`paired_overhead` - two commands timed in alternating pairs, and the overhead of
  one over the other as the median of the pairs' ratios (the extraction rows).
"""
from __future__ import annotations

import copy
import time
from typing import Any, Iterable

import numpy as np
import torch

from attnbook.engine import finetune, sweeps
from attnbook.engine.models import LoadedModel
from attnbook.engine.train import make_optimizer
from attnbook.stats import median_interval


def benchmark_sweep(
    model: Any,
    batches: Iterable[Any],
    mode: str = "disable",
    score_fn=None,
    *,
    configs_per_forward: int | None = None,
) -> dict:
    """Time the fast and the naive single-head sweep on the same data (for ``make bench``).

    Returns seconds of each, the speed-up and the largest absolute output difference.
    No assertions: speed lives in the benchmark report.
    """
    data = sweeps.as_batches(batches)
    score_fn = score_fn or sweeps.accuracy
    t0 = time.perf_counter()
    fast = sweeps.sweep_single_heads(model, data, mode, score_fn, fast=True, configs_per_forward=configs_per_forward)
    t1 = time.perf_counter()
    naive = sweeps.sweep_single_heads(model, data, mode, score_fn, fast=False)
    t2 = time.perf_counter()
    return {
        "mode": mode,
        "n_examples": int(len(fast.gold)),
        "n_configs": int(fast.scores.size),
        "fast_seconds": t1 - t0,
        "naive_seconds": t2 - t1,
        "speedup": (t2 - t1) / max(t1 - t0, 1e-12),
        "max_abs_output_diff": float(np.max(np.abs(fast.outputs - naive.outputs))),
        "max_abs_output": float(np.max(np.abs(naive.outputs))),
    }


def bert_base_config(vocab_size: int = 30522):
    """A ``BertConfig`` of bert-base's size (12 layers x 12 heads, hidden 768, FFN 3072), eager attention."""
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, max_position_embeddings=512, attn_implementation="eager")


def training_throughput(
    model: str | LoadedModel | Any = "embedded",
    *,
    n_steps: int = 5,
    warmup_steps: int = 1,
    batch_size: int = 32,
    seq_len: int = 128,
    num_labels: int = 2,
    threads: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Fine-tuning speed: training examples per second over ``n_steps`` full updates (after ``warmup_steps``).

    ``model`` is a model name, a :class:`LoadedModel`, or a transformers config
    (e.g. :func:`bert_base_config` for a randomly initialised bert-base-sized
    model). Each update is forward, backward, clipping and an AdamW step on a
    batch of random token ids of length ``seq_len``. Returns the numbers
    (wall and process CPU seconds); nothing is asserted about them.
    """
    from transformers import AutoModelForSequenceClassification, PretrainedConfig

    if threads:
        torch.set_num_threads(int(threads))
    torch.manual_seed(seed)
    if isinstance(model, PretrainedConfig):
        config = copy.deepcopy(model)
        config.num_labels = num_labels
        net = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
        label = f"random {config.num_hidden_layers}x{config.num_attention_heads} hidden {config.hidden_size}"
    else:
        base = finetune.base_encoder(model)
        config = base.model.config
        net = finetune.build_classifier(base, "SST-2" if num_labels == 2 else "MNLI-m", "pretrained_ft", seed)
        label = base.name
    vocab = int(config.vocab_size)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(min(1000, vocab // 2), vocab, (batch_size, seq_len), generator=gen)
    mask = torch.ones_like(ids)
    labels = torch.randint(0, num_labels, (batch_size,), generator=gen)
    p = finetune.FinetuneParams(batch_size=batch_size)
    opt = make_optimizer(net, finetune.recipe_of(p))
    net.train()

    def step() -> None:
        loss = finetune.loss_of(net(input_ids=ids, attention_mask=mask).logits, labels, regression=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup_steps):
        step()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(n_steps):
        step()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "model": label,
        "parameters_m": round(sum(x.numel() for x in net.parameters()) / 1e6, 2),
        "batch_size": batch_size,
        "seq_len": seq_len,
        "steps": n_steps,
        "threads": torch.get_num_threads(),
        "seconds": wall,
        "cpu_seconds": cpu,
        "seconds_per_step": wall / n_steps,
        "examples_per_s": n_steps * batch_size / wall,
    }


def benchmark_throughput(
    n_steps: int = 3, batch_size: int = 32, seq_len: int = 128, threads: int | None = None
) -> dict[str, Any]:
    """``make bench``: fine-tuning examples/s of the embedded model and of a random bert-base-sized model.

    The ratio says how much slower the paper profile's model trains per example
    on this machine (bert-base is about 5x the embedded model's parameters
    outside the embeddings and twice its depth).
    """
    embedded = training_throughput("embedded", n_steps=n_steps, batch_size=batch_size, seq_len=seq_len,
                                   threads=threads)
    bert_base = training_throughput(bert_base_config(), n_steps=n_steps, batch_size=batch_size, seq_len=seq_len,
                                    threads=threads)
    return {
        "embedded": embedded,
        "bert_base_random": bert_base,
        "bert_base_slowdown": embedded["examples_per_s"] / bert_base["examples_per_s"],
    }


# ---- this round's speed-ups, each against the code it replaced -----------------------------------
def ranks_loop(x: np.ndarray) -> np.ndarray:
    """The tie-averaged ranks as :func:`attnbook.stats.average_ranks` computed them before (a Python loop over
    the tie groups): the reference the vectorised version is timed against."""
    x = np.asarray(x, dtype=np.float64).ravel()
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(x.size, dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], x.size]
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + 1 + e) / 2.0
    return ranks


def benchmark_ranks(n: int = 1500, calls: int = 200, seed: int = 0) -> dict:
    """Vectorised vs looped tie ranks on bootstrap resamples of ``n`` continuous scores (a regression model's
    STS-B predictions): a resample repeats about a third of its draws, so it has hundreds of tie groups; same
    ranks."""
    from attnbook.stats import average_ranks

    rng = np.random.default_rng(seed)
    scores = rng.normal(2.5, 1.2, n)
    samples = [scores[rng.integers(0, n, n)] for _ in range(calls)]
    assert all(np.array_equal(average_ranks(s), ranks_loop(s)) for s in samples[:5])

    def run(fn):
        return lambda: [fn(s) for s in samples]

    return {"n": n, "calls": calls, "fn_new": run(average_ranks), "fn_old": run(ranks_loop)}


def benchmark_checkpoint_load(folder, key: str) -> dict:
    """Loading a stored classifier without the throw-away initialisation vs with it (the stored weights replace
    every parameter either way); the two models' logits are compared."""
    import contextlib

    from attnbook.engine import checkpoints

    def with_init():
        original = checkpoints._no_init
        checkpoints._no_init = contextlib.nullcontext
        try:
            return checkpoints.load_checkpoint(key, folder)[0]
        finally:
            checkpoints._no_init = original

    a, b = checkpoints.load_checkpoint(key, folder)[0], with_init()
    ids = torch.randint(1000, 3000, (2, 12))
    with torch.no_grad():
        same = bool(torch.equal(a(input_ids=ids).logits, b(input_ids=ids).logits))
    return {"same_logits": same, "fn_new": lambda: checkpoints.load_checkpoint(key, folder), "fn_old": with_init}


def benchmark_arct_grouping(loaded: LoadedModel, n_items: int = 200) -> dict:
    """One epoch of chapter 7's whole-encoder training (quick recipe: batch 8, bf16, one thread) on ``n_items``
    ARCT training items, batches grouped by length vs random; and the share of padding in each."""
    from attnbook.data.arct import load_arct
    from attnbook.engine import pairwise as scorer
    from attnbook.studies.niven_kao import pairwise

    items = load_arct("train")[:n_items]
    enc = pairwise.encode_pairs(loaded.tokenizer, items, "full", 64)
    lengths = scorer.item_lengths(enc)

    def run(group: bool):
        cfg = scorer.TrainConfig(epochs=1, lr=5e-5, batch_size=8, train_threads=1, bf16=True, group_by_length=group,
                               select_on_dev=False)
        return lambda: scorer.train_pairwise(copy.deepcopy(loaded.model), enc, None, cfg, 0, pad_id=0)

    def padded(group: bool) -> float:
        if group:
            batches = finetune.training_batches(lengths, 8, -(-len(lengths) // 8), 0, True)
        else:
            order = np.random.default_rng(0).permutation(len(lengths))
            batches = [order[i : i + 8] for i in range(0, len(order), 8)]
        return 1 - lengths.sum() / sum(len(b) * lengths[b].max() for b in batches)

    return {"items": n_items, "padding_random": round(float(padded(False)), 3),
            "padding_grouped": round(float(padded(True)), 3), "fn_new": run(True), "fn_old": run(False)}


def interleaved_pairs(a, b, repeats: int = 5) -> tuple[list[float], list[float]]:
    """Times of ``a`` and ``b`` in ``repeats`` pairs, each pair run back to back and the order alternating from
    pair to pair (a b, b a, ...), so a load that comes and goes hits both sides of a pair alike."""
    ta, tb = [], []
    for rep in range(repeats):
        order = ((a, ta), (b, tb)) if rep % 2 == 0 else ((b, tb), (a, ta))
        for fn, out in order:
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return ta, tb


def paired_overhead(t_base: list[float], t_new: list[float]) -> dict:
    """The overhead of ``new`` over ``base`` as the median of the pairs' ratios minus one, with its distribution-free
    95% interval (:func:`attnbook.stats.median_interval`, as chapter 6 times pruning): a load spike on one side of a
    pair, or on a few pairs, cannot move it, where a ratio of the two best times takes each side's luckiest run."""
    est = median_interval([n / b - 1.0 for b, n in zip(t_base, t_new)], unit="timing pairs (median)")
    out = {"overhead": round(est.value, 4), "pairs": est.n,
           "overhead_of_best_times": round(min(t_new) / min(t_base) - 1.0, 4)}
    if est.low is not None:
        out["overhead_interval"] = [round(est.low, 4), round(est.high, 4)]
    return out


def overhead_text(extraction: dict) -> str:
    """An extraction row's overhead as the table shows it: the median of the paired ratios with its interval (a
    report from before the pairs were kept has the ratio of the best times only)."""
    text = f"{extraction.get('overhead')}"
    if "overhead_interval" in extraction:
        low, high = extraction["overhead_interval"]
        text += f" [{low}, {high}] ({extraction['pairs']} pairs)"
    return text
