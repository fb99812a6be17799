"""The pairwise BERT classifier of Niven & Kao (2019) §3, its probes (§5) and adversarial runs (§6).

Every model of the paper (§2–§3) scores each argument–warrant pair on its own,
with parameters θ shared between the two warrants,

    z_j = θ[c; r; w_j],   p = softmax([z_0, z_1]),   ŷ = argmax_j p_j,

and is trained with cross-entropy over the two logits. The model, :class:`attnbook.engine.pairwise.PairwiseScorer`,
is the BERT version (the engine runs it; this module decides what it reads and which runs are made): warrant j is read as ``[CLS] claim reason [SEP] w_j [SEP]``
(claim first, a full stop added to each sentence when missing, segment ids 0/1,
as in the authors' code), BERT's pooler output (dense + tanh on ``[CLS]``) goes
through dropout and a linear layer to give z_j. The bag-of-vectors (BoV) and
BiLSTM baselines are in :mod:`attnbook.studies.niven_kao.word_baselines`.

The **probes** of §5 change only what the model sees (:data:`INPUTS`): the
warrant alone (``W``: ``[CLS] w_j [SEP]``), reason and warrant (``RW``) or claim
and warrant (``CW``); ``full`` is the whole argument. The **adversarial** runs of
§6 train on ``train-swapped`` and test on ``test-adv-negated``
(:func:`run_seeds` with those item lists).

**Partial fine-tuning** (a compute knob, not in the paper). ``trainable_layers=None``
fine-tunes the whole encoder as the paper does (the quick and paper profiles). ``trainable_layers=k`` freezes
the embeddings and the lower ``n_layers - k`` layers: their output for every
distinct input is computed once (no dropout) and shared by all seeds and
epochs, and only the top ``k`` layers, the pooler and the classifier are
trained. ``k=0`` trains the pooler and classifier on a frozen encoder. In every
setting the last layer is computed for the ``[CLS]`` position only
(:func:`attnbook.engine.layers.first_query_only`): the pooler reads nothing else, so this is exact and
saves most of that layer's cost. The smoke profile uses it to stay within seconds. That holds for BERT's layout
(BERT, RoBERTa, XLM-R, ELECTRA); every other family of :mod:`attnbook.engine.families` runs its own forward whole
(pooler where it has one, else its own pooling), with the frozen parameters simply not trained.

**Lower precision** (``bf16``): the training forward and backward passes run under bfloat16 autocast on
the CPU (the parameters, the optimiser and every evaluation stay in float32); on GLUE it trained 1.7x faster
with the same dev results. Every run records its training seconds (``train_seconds``).

A remark on the adversarial training file: the scorer treats the two warrants
symmetrically, so an item with its warrants swapped and its label flipped has
exactly the same loss as the original. Training on ``train-swapped`` is training
on the original items twice per epoch (up to dropout and batching).

Training follows the paper's BERT recipe (code: AdamW, weight decay 0.01 except
on biases and LayerNorm, linear warm-up over the first 10% of steps then linear
decay, effective batch of 8 items, the epoch with the best dev accuracy kept)
through the one training loop (:func:`attnbook.engine.train.fit`); the plateau
learning-rate schedule of the code (patience 10) is left out. Seeds are reported
as the paper does: mean ± std, median and max over seeds (Table 1, :func:`summarize`).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core import cache, executor
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.arct import ArctItem, labels_of
from attnbook.engine.job_models import job_encoder
from attnbook.engine.models import LoadedModel
from attnbook.engine.pairwise import (
    CachedStates,
    PairEncoding,
    TrainConfig,
    accuracy_of,
    build_scorer,
    cache_lower_states,
    caches_states,
    predict_proba,
    train_pairwise,
)
from attnbook.engine.precision import resolve_bf16

#: Input variants of the probing experiments (Niven & Kao §5) and their labels in the paper's tables.
INPUTS: dict[str, str] = {"full": "C, R, W", "W": "W", "RW": "R, W", "CW": "C, W"}

#: max_seq_length of the authors' code per input variant (WordPiece tokens, specials included).
PAPER_MAX_LENGTH: dict[str, int] = {"full": 80, "W": 36, "RW": 60, "CW": 60}


# ---- inputs ------------------------------------------------------------------------------------


def _sentence(text: str) -> str:
    """``text`` stripped, with a full stop added unless it already ends in . ! or ?"""
    text = text.strip()
    return text if not text or text[-1] in ".!?" else text + "."


def first_segment(item: ArctItem, inputs: str = "full") -> str | None:
    """The first segment the model reads for ``item`` under an input variant (§5), or ``None`` for ``W``.

    ``full``: claim then reason (the authors' code puts the claim first); ``RW``: the
    reason; ``CW``: the claim; ``W``: nothing (the input is ``[CLS] w_j [SEP]``).
    """
    if inputs not in INPUTS:
        raise ParameterError(f"unknown input variant {inputs!r}; choose one of: {', '.join(INPUTS)}")
    if inputs == "full":
        return f"{_sentence(item.claim)} {_sentence(item.reason)}"
    if inputs == "RW":
        return _sentence(item.reason)
    if inputs == "CW":
        return _sentence(item.claim)
    return None


def encode_pairs(tokenizer: Any, items: Sequence[ArctItem], inputs: str = "full", max_length: int = 80) -> PairEncoding:
    """Encode every (argument, warrant_j) pair as ``[CLS] first [SEP] w_j [SEP]`` (or ``[CLS] w_j [SEP]`` for ``W``).

    Over-long pairs lose tokens from the end of the longer segment first (the
    authors' truncation); ``n_truncated`` counts the sequences that lost any.
    """
    if not items:
        raise EmptyDataError("no ARCT items to encode")
    if max_length < 8:
        raise ParameterError(f"max_length={max_length} is too short for a pair input")
    ids: list[list[int]] = []
    types: list[list[int]] = []
    truncated = 0
    for item in items:
        a = first_segment(item, inputs)
        for w in item.warrants:
            w = _sentence(w)
            if a is None:
                enc = tokenizer(w, truncation=True, max_length=max_length)
                full = len(tokenizer(w)["input_ids"])
            else:
                enc = tokenizer(a, w, truncation="longest_first", max_length=max_length)
                full = len(tokenizer(a, w)["input_ids"])
            truncated += full > len(enc["input_ids"])
            ids.append(list(enc["input_ids"]))
            types.append(list(enc.get("token_type_ids", [0] * len(enc["input_ids"]))))
    return PairEncoding(ids, types, labels_of(items), inputs, max_length, truncated)


def summarize(values: Iterable[float]) -> dict:
    """Mean, standard deviation (population, as numpy), median and max over seeds (the paper's columns)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        raise EmptyDataError("no runs to summarise")
    return {"mean": float(v.mean()), "std": float(v.std()), "median": float(np.median(v)), "max": float(v.max()),
            "n": int(v.size)}


@cache.memoized("arct_bert_runs", ignore=("progress", "memo", "workers", "model"), version=f"torch {torch.__version__}")
def run_seeds(
    loaded: LoadedModel,
    train: Sequence[ArctItem],
    dev: Sequence[ArctItem],
    tests: Mapping[str, Sequence[ArctItem]],
    *,
    inputs: str = "full",
    seeds: Sequence[int] = (0,),
    cfg: TrainConfig = TrainConfig(),
    max_length: int = 80,
    progress: bool = False,
    memo: dict | None = None,
    workers: int = 1,
    model: str | None = None,
) -> "Any":
    """Train one :class:`~attnbook.engine.pairwise.PairwiseScorer` per seed and test it; returns one row per seed (pandas DataFrame).

    ``loaded`` is an :class:`attnbook.engine.models.LoadedModel` (its encoder is copied per
    seed). ``tests`` maps a name to items (e.g. ``{"test": ..., "test_adv": ...}``);
    each gets a column ``<name>_accuracy``. Other columns: ``seed``, ``inputs``,
    ``dev_accuracy``, ``best_epoch``, ``train_accuracy``, ``train_seconds``. With partial fine-tuning the
    frozen part runs once for all seeds (see module doc); pass the same ``memo`` dict to
    several calls with the same ``loaded`` model to share it between them too. With ``model``, the name or folder
    ``loaded`` was loaded from, each seed is a job (:func:`attnbook.core.executor.run_jobs`): ``workers > 1`` trains
    that many seeds at a time on one-thread worker processes, and a cluster given by ``ATTNBOOK_SCHEDULER`` trains
    them on its workers; a job ships the model's name and the encoded items, loads the weights where it runs (checked
    against ``loaded``'s) and returns its row, so the same models are trained as one after the other here.
    """
    import pandas as pd

    tok = loaded.tokenizer
    pad_id = int(tok.pad_token_id or 0)
    length = min(max_length, PAPER_MAX_LENGTH[inputs])
    enc = {"train": encode_pairs(tok, train, inputs, length), "dev": encode_pairs(tok, dev, inputs, length)}
    for name, items in tests.items():
        enc[name] = encode_pairs(tok, items, inputs, length)
    labels = {k: enc[k].labels for k in tests}
    partial = cfg.trainable_layers is not None and cfg.trainable_layers < loaded.n_layers and caches_states(loaded.model)
    if model is not None and len(seeds) > 1 and (workers > 1 or executor.scheduler().kind != "default"):
        jobs = [dict(model=model, key=loaded.key, enc=enc, labels=labels, cfg=cfg, seed=int(seed), pad_id=pad_id,
                     inputs=inputs, partial=partial) for seed in seeds]
        rows = executor.run_jobs(_seed_job, jobs, names=[f"ARCT, {INPUTS[inputs]}, seed {s}" for s in seeds],
                                 workers=workers)
    else:
        data: Mapping[str, PairEncoding | CachedStates] = enc
        if partial:
            frozen = build_scorer(loaded.model, cfg, seed=0)  # a copy: the shared encoder stays untouched
            memo = {} if memo is None else memo.setdefault((loaded.key, frozen.start), {})
            data = {k: cache_lower_states(frozen, v, cfg.eval_batch_size, pad_id, memo) for k, v in enc.items()}
            del frozen
        rows = [_seed_row(encoder=loaded.model, data=data, labels=labels, cfg=cfg, seed=int(seed), pad_id=pad_id,
                          inputs=inputs, progress=progress) for seed in seeds]
    columns = (["inputs", "seed", "best_epoch", "train_accuracy", "dev_accuracy", "train_seconds"]
               + [f"{k}_accuracy" for k in tests])
    return pd.DataFrame(rows)[columns]


def _seed_row(encoder: nn.Module, data: Mapping[str, PairEncoding | CachedStates], labels: Mapping[str, np.ndarray],
              cfg: TrainConfig, seed: int, pad_id: int, inputs: str, progress: bool = False) -> dict:
    """Train one seed (:func:`train_pairwise`) and test it on every test set of ``labels``: one row of
    :func:`run_seeds`."""
    run = train_pairwise(encoder, data["train"], data["dev"], cfg, seed, pad_id=pad_id, progress=progress,
                         desc=f"{INPUTS[inputs]} seed {seed}")
    row = {"inputs": inputs, "seed": int(seed), "best_epoch": run.best_epoch, "train_accuracy": run.train_accuracy,
           "dev_accuracy": run.dev_accuracy, "train_seconds": round(float(run.seconds), 1)}
    for name, y in labels.items():
        row[f"{name}_accuracy"] = accuracy_of(predict_proba(run.model, data[name], cfg.eval_batch_size, pad_id), y)
    return row


def _seed_job(job: dict) -> dict:
    """One seed of :func:`run_seeds` as a job: the encoder loaded by name where the job runs (its weights checked
    against the run's), the frozen lower layers' states computed here when only the top layers train, one row."""
    loaded = job_encoder(job["model"], job["key"])
    cfg, enc, pad_id = job["cfg"], job["enc"], job["pad_id"]
    data: Mapping[str, PairEncoding | CachedStates] = enc
    if job["partial"]:
        frozen = build_scorer(loaded.model, cfg, seed=0)
        data = {k: cache_lower_states(frozen, v, cfg.eval_batch_size, pad_id, {}) for k, v in enc.items()}
        del frozen
    return _seed_row(encoder=loaded.model, data=data, labels=job["labels"], cfg=cfg, seed=job["seed"], pad_id=pad_id,
                     inputs=job["inputs"])


# ---- cached runs ---------------------------------------------------------------------------------


def config_from_params(P: Mapping[str, Any], **overrides: Any) -> TrainConfig:
    """The :class:`TrainConfig` of a chapter's parameters (``trainable_layers="all"`` → full fine-tuning).

    ``overrides`` replace single fields, e.g. ``epochs=P.adversarial_epochs``.
    """
    k = P.trainable_layers
    fields = dict(
        epochs=int(P.epochs), lr=float(P.lr), batch_size=int(P.batch_size), warmup=float(P.warmup),
        weight_decay=float(P.weight_decay), dropout=float(P.dropout),
        trainable_layers=None if k in (None, "all") else int(k), freeze_embeddings=bool(P.freeze_embeddings),
        train_threads=int(P.train_threads or 0), bf16=resolve_bf16(P.bf16),
        group_by_length=bool(P.group_by_length))
    fields.update(overrides)
    return TrainConfig(**fields)


def runs_numbers(runs: Mapping[str, Any], suffix: str = "_runs") -> dict:
    """Chapter 7's results-file entries of seeded runs, one frame per model (one row per seed, e.g. the BoV and
    BiLSTM baselines of Niven & Kao Table 1 or §6): ``<model><suffix>``, every column to 4 decimals."""
    return {f"{kind}{suffix}": frame.round(4).to_dict("list") for kind, frame in runs.items()}
