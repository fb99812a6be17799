"""The pairwise scorer of Niven & Kao (2019) §3 as a model: one logit per argument-warrant pair, trained over the two.

Every model of the paper scores each argument-warrant pair on its own, with parameters shared between the two
warrants, ``z_j = theta[c; r; w_j]``, ``p = softmax([z_0, z_1])``, and is trained with cross-entropy over the two
logits. :class:`PairwiseScorer` is the BERT version (the encoder's pooler output through dropout and a linear layer
gives ``z_j``), with partial fine-tuning (the frozen lower layers' states computed once, :func:`cache_lower_states`)
and the last layer computed for ``[CLS]`` only where the family's layers run one by one
(:class:`attnbook.engine.sweeps.EncoderStack`); :func:`train_pairwise` fine-tunes one seed with the book's one
training loop (:func:`attnbook.engine.train.fit`). What the model reads (the paper's inputs and probes), the seeds
and the experiments are the study's: :mod:`attnbook.studies.niven_kao.pairwise`.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core.errors import ModelError, ParameterError
from attnbook.engine.families import family_of, layer_modules
from attnbook.engine.finetune import training_batches
from attnbook.engine.inputs import pad_rows
from attnbook.engine.sweeps import EncoderStack
from attnbook.engine.train import Recipe, epochs_of, fit
from attnbook.stats import accuracy


@dataclass
class PairEncoding:
    """WordPiece inputs of ``n`` items × 2 warrants: sequence ``2*i + j`` is item i with warrant j."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: np.ndarray  # [n] int64
    inputs: str
    max_length: int
    n_truncated: int = 0

    def __len__(self) -> int:
        return len(self.labels)

    def lengths(self) -> np.ndarray:
        """Token count of every sequence ``[2n]``."""
        return np.array([len(x) for x in self.input_ids], dtype=np.int64)



# ---- the BERT scorer ---------------------------------------------------------------------------


@dataclass
class CachedStates:
    """Frozen lower-layer outputs of every sequence of a :class:`PairEncoding` (see module doc).

    ``states[2*i + j]`` is ``[len, hidden]`` (float16): the hidden states after layer
    ``start`` (0-based count of frozen layers), or only the ``[CLS]`` row when no layer is left to run.
    """

    states: list[torch.Tensor]
    labels: np.ndarray
    start: int

    def __len__(self) -> int:
        return len(self.labels)


class PairwiseScorer(nn.Module):
    """BERT scores each argument–warrant pair: ``z_j = Linear(dropout(pooler(BERT(pair_j))))`` (Niven & Kao §3).

    ``forward`` takes ``[batch, 2, seq]`` inputs and returns logits ``[batch, 2]``; the
    warrant probabilities are their softmax over the last axis (:meth:`probabilities`).
    ``trainable_layers`` (``None`` = all) sets how many top layers are fine-tuned.
    """

    def __init__(self, encoder: nn.Module, *, dropout: float = 0.1, trainable_layers: int | None = None,
                 freeze_embeddings: bool = False):
        super().__init__()
        self.encoder = encoder
        self.family = family_of(encoder)  # a model outside the family table is refused here, naming the families
        self.stacked = caches_states(encoder)  # else the family's own forward, whole (module doc)
        self._stack = EncoderStack(encoder) if self.stacked else None  # the engine's layer-by-layer access
        layers = self._stack.layers if self._stack is not None else layer_modules(encoder)
        n = len(layers)
        k = n if trainable_layers is None else int(trainable_layers)
        if not 0 <= k <= n:
            raise ParameterError(f"trainable_layers must be in 0..{n}, got {trainable_layers}")
        if self.family.shared_layers and 0 < k < n:
            raise ParameterError(f"{self.family.name} shares one layer across its {n} depths, so its top layers "
                                 "cannot train alone: pass -p trainable_layers=all (or 0)")
        self.start = n - k  # layers below this index are frozen
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(int(encoder.config.hidden_size), 1)
        frozen_embeddings = freeze_embeddings or self.start > 0
        for p in encoder.embeddings.parameters():
            p.requires_grad_(not frozen_embeddings)
        for i, layer in enumerate(layers):
            for p in layer.parameters():
                p.requires_grad_(i >= self.start)
        if not self.stacked and self.start > 0:  # what feeds the frozen layers (relative positions...) stays frozen
            top = {id(p) for layer in layers[self.start:] for p in layer.parameters()}
            for name, p in encoder.named_parameters():
                p.requires_grad_(id(p) in top or name.split(".")[0] in ("pooler", "final_norm"))
        self._n_layers = n

    @property
    def n_layers(self) -> int:
        return self._n_layers

    def _whole(self, input_ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        """Logits ``[n]`` from the encoder's own forward: its pooler, else the family's pooling (first or mean)."""
        extra = {"token_type_ids": types} if self.family.takes_token_type_ids(self.encoder.config) else {}
        out = self.encoder(input_ids=input_ids, attention_mask=mask, **extra)
        pooled = getattr(out, "pooler_output", None)
        if pooled is None:
            hidden = out.last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = ((hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)
                      if self.family.pooling_of(self.encoder.config) == "mean" else hidden[:, 0])
        return self.classifier(self.dropout(pooled)).squeeze(-1)

    def lower(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
              stop: int | None = None) -> torch.Tensor:
        """Hidden states ``[n, seq, hidden]`` after the first ``stop`` layers (default: the frozen ones)."""
        if not self.stacked:
            raise ModelError(f"{self.family.name} runs its own forward whole: its hidden states are not cached")
        stop = self.start if stop is None else stop
        hidden, mask = self._stack.embed(
            {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask})
        return self._stack.run_layers(0, stop, hidden, mask)

    def score_hidden(self, hidden: torch.Tensor, mask: torch.Tensor, start: int | None = None) -> torch.Tensor:
        """One logit per sequence ``[n]`` from hidden states after layer ``start`` (default: the frozen part).

        The last layer is computed for the ``[CLS]`` position only, the one position the
        pooler reads: the same numbers as the full layer, for a fraction of the cost.
        """
        start = self.start if start is None else start
        layer_mask = self._stack.mask(hidden, mask) if start < self.n_layers else None  # none: [CLS] rows alone
        return self.classifier(self.dropout(self._stack.run_from(start, hidden, layer_mask))).squeeze(-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``[batch, 2]`` for inputs ``[batch, 2, seq]`` (item b with warrant j at ``[b, j]``)."""
        if input_ids.dim() != 3 or input_ids.shape[1] != 2:
            raise ValueError(f"expected inputs [batch, 2, seq], got {tuple(input_ids.shape)}")
        b, _, length = input_ids.shape
        flat = lambda t: t.reshape(b * 2, length)  # noqa: E731
        types = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
        if not self.stacked:
            return self._whole(flat(input_ids), flat(attention_mask), flat(types)).reshape(b, 2)
        hidden = self.lower(flat(input_ids), flat(attention_mask), flat(types), stop=0)
        return self.score_hidden(hidden, flat(attention_mask), start=0).reshape(b, 2)

    def probabilities(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                      token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Warrant probabilities ``p = softmax([z_0, z_1])``, ``[batch, 2]``."""
        return torch.softmax(self.forward(input_ids, attention_mask, token_type_ids), dim=-1)

    # -- batches from either source -----------------------------------------------------------
    def logits_for(self, data: PairEncoding | CachedStates, items: Sequence[int], pad_id: int = 0) -> torch.Tensor:
        """Logits ``[len(items), 2]`` for the given item indices of an encoding or of cached states."""
        seq = [2 * i + j for i in items for j in (0, 1)]
        if isinstance(data, CachedStates):
            if data.start != self.start:
                raise ModelError(f"states cached after layer {data.start}, but the model starts at layer {self.start}")
            states = [data.states[s] for s in seq]
            width = max(s.shape[0] for s in states)
            hidden = torch.zeros(len(states), width, states[0].shape[1])
            mask = torch.zeros(len(states), width, dtype=torch.long)
            for r, s in enumerate(states):
                hidden[r, : s.shape[0]] = s.float()
                mask[r, : s.shape[0]] = 1
            return self.score_hidden(hidden, mask).reshape(len(items), 2)
        ids, mask = pad_rows([data.input_ids[s] for s in seq], pad_id)
        types, _ = pad_rows([data.token_type_ids[s] for s in seq], 0)
        shape = (len(items), 2, ids.shape[1])
        return self.forward(ids.reshape(shape), mask.reshape(shape), types.reshape(shape))


def caches_states(encoder: nn.Module) -> bool:
    """Whether the frozen lower layers of ``encoder`` can run once and be cached (BERT's layout: its layers run one
    by one); other families train on the encodings with the frozen part recomputed (the same model, slower)."""
    return EncoderStack.supports(encoder)


@torch.no_grad()
def cache_lower_states(
    scorer: PairwiseScorer, enc: PairEncoding, batch_size: int = 64, pad_id: int = 0, memo: dict | None = None
) -> CachedStates:
    """Run the frozen part of ``scorer`` once over every sequence of ``enc`` (eval mode, length-sorted batches).

    ``memo`` (a dict the caller keeps for one model) reuses the states of sequences seen before,
    e.g. the training sequences shared by ``train`` and ``train-swapped``.
    """
    was_training = scorer.training
    scorer.eval()
    memo = {} if memo is None else memo
    keys = [(scorer.start, tuple(i), tuple(t)) for i, t in zip(enc.input_ids, enc.token_type_ids)]
    todo = sorted({k for k in keys if k not in memo}, key=lambda k: (len(k[1]), k[1], k[2]))
    keep_cls_only = scorer.start == scorer.n_layers
    for lo in range(0, len(todo), batch_size):
        chunk = todo[lo : lo + batch_size]
        ids, mask = pad_rows([k[1] for k in chunk], pad_id)
        types, _ = pad_rows([k[2] for k in chunk], 0)
        hidden = scorer.lower(ids, mask, types)
        for r, key in enumerate(chunk):
            n = 1 if keep_cls_only else int(mask[r].sum())
            memo[key] = hidden[r, :n].to(torch.float16).clone()
    scorer.train(was_training)
    return CachedStates([memo[k] for k in keys], enc.labels, scorer.start)


# ---- training ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """How to fine-tune a :class:`PairwiseScorer` (defaults: the paper's BERT Large recipe, see module doc)."""

    epochs: int = 20
    lr: float = 2e-5
    batch_size: int = 8  # items per step; each item is two sequences
    warmup: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    trainable_layers: int | None = None  # None: fine-tune every layer (the paper)
    freeze_embeddings: bool = False
    attn_implementation: str = "sdpa"  # training needs no attention maps; "eager" also works
    train_threads: int = 0  # torch threads during the training steps (0: leave torch's setting)
    eval_batch_size: int = 64
    select_on_dev: bool = True
    bf16: bool = False  # training passes under bfloat16 autocast (evaluation stays float32)
    group_by_length: bool = False  # batches of items of similar length (less padding); False: random batches


@dataclass
class TrainedRun:
    """One seed's run: the model at its best dev epoch, and the per-epoch history."""

    seed: int
    model: PairwiseScorer
    best_epoch: int
    dev_accuracy: float
    train_accuracy: float  # running accuracy during the best epoch (dropout on)
    history: list[dict] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)  # the learning rate of every update
    seconds: float = 0.0  # wall-clock seconds of the training loop (evaluation on dev included)


def item_lengths(data: PairEncoding | CachedStates) -> np.ndarray:
    """The padded length of each item ``[n]``: the longer of its two sequences (tokens, or cached state rows)."""
    n = len(data)
    if isinstance(data, PairEncoding):
        return data.lengths().reshape(n, 2).max(1)
    return np.array([max(data.states[2 * i].shape[0], data.states[2 * i + 1].shape[0]) for i in range(n)])


@torch.no_grad()
def predict_proba(
    model: PairwiseScorer, data: PairEncoding | CachedStates, batch_size: int = 32, pad_id: int = 0
) -> np.ndarray:
    """Warrant probabilities ``[n, 2]`` of every item (eval mode)."""
    was_training = model.training
    model.eval()
    n = len(data)
    order = np.argsort(item_lengths(data), kind="stable")
    out = np.zeros((n, 2), dtype=np.float64)
    for lo in range(0, n, batch_size):
        idx = order[lo : lo + batch_size].tolist()
        out[idx] = torch.softmax(model.logits_for(data, idx, pad_id), dim=-1).double().numpy()
    model.train(was_training)
    return out


def accuracy_of(probs: np.ndarray, labels: np.ndarray) -> float:
    """Share of items whose more probable warrant is the labelled one (ties count as warrant 0)."""
    return accuracy(np.asarray(probs).argmax(1), np.asarray(labels))


def build_scorer(encoder: nn.Module, cfg: TrainConfig, seed: int) -> PairwiseScorer:
    """A fresh scorer for one seed: a copy of the pretrained encoder and a seeded classifier."""
    torch.manual_seed(seed)
    enc = copy.deepcopy(encoder)
    if cfg.attn_implementation and hasattr(enc, "set_attn_implementation"):
        try:
            enc.set_attn_implementation(cfg.attn_implementation)
        except (ValueError, ImportError) as exc:  # pragma: no cover - depends on the installed kernels
            raise ModelError(f"cannot switch the encoder to {cfg.attn_implementation!r} attention: {exc}") from exc
    return PairwiseScorer(enc, dropout=cfg.dropout, trainable_layers=cfg.trainable_layers,
                          freeze_embeddings=cfg.freeze_embeddings)


def train_pairwise(
    encoder: nn.Module,
    train: PairEncoding | CachedStates,
    dev: PairEncoding | CachedStates | None,
    cfg: TrainConfig,
    seed: int,
    *,
    pad_id: int = 0,
    progress: bool = False,
    desc: str = "",
) -> TrainedRun:
    """Fine-tune a fresh :class:`PairwiseScorer` on ``train`` with one seed; keep the best-dev epoch.

    ``train`` / ``dev`` are encodings (full fine-tuning) or states cached by
    :func:`cache_lower_states` for the same ``trainable_layers``. AdamW with the
    paper's warm-up and weight decay (module doc). Without ``dev`` (or with
    ``select_on_dev=False``) the last epoch is kept.
    """
    model = build_scorer(encoder, cfg, seed)
    if isinstance(train, CachedStates) and train.start != model.start:
        raise ModelError("cached states do not match trainable_layers")
    rng = np.random.default_rng(seed)
    items = np.arange(len(train))
    labels = torch.as_tensor(train.labels, dtype=torch.long)

    if cfg.group_by_length:  # the GLUE fine-tuning's length grouping, on the longer sequence of each item's pair

        per_epoch = math.ceil(len(items) / cfg.batch_size)
        grouped = training_batches(item_lengths(train), cfg.batch_size, per_epoch * cfg.epochs, seed, True)

    def epoch_order(epoch: int) -> list[list[int]]:
        if cfg.group_by_length:
            return [b.tolist() for b in grouped[epoch * per_epoch : (epoch + 1) * per_epoch]]
        order = items[rng.permutation(len(items))]
        return [order[lo : lo + cfg.batch_size].tolist() for lo in range(0, len(order), cfg.batch_size)]

    def loss_fn(m: PairwiseScorer, idx: list[int]):
        with torch.autocast(next(m.parameters()).device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
            logits = m.logits_for(train, idx, pad_id).float()
        return (nn.functional.cross_entropy(logits, labels[idx]),
                {"n": len(idx), "correct": float((logits.argmax(1) == labels[idx]).sum())})

    select = dev is not None and cfg.select_on_dev
    evaluate = None if dev is None else (
        lambda m: accuracy_of(predict_proba(m, dev, cfg.eval_batch_size, pad_id), dev.labels))
    recipe = Recipe(lr=cfg.lr, weight_decay=cfg.weight_decay, warmup=cfg.warmup, schedule="linear",
                    select="best" if select else "last")
    log = fit(model, epochs_of(epoch_order, cfg.epochs), loss_fn, recipe, evaluate=evaluate,
              threads=cfg.train_threads, progress=progress, desc=desc or f"seed {seed}")
    history = [{"epoch": h["epoch"], "loss": h["loss"], "train_accuracy": h["correct"] / h["n"],
                "dev_accuracy": h.get("metric", float("nan"))} for h in log.history]
    best = history[log.best_epoch - 1]
    return TrainedRun(seed, model, log.best_epoch, best["dev_accuracy"], best["train_accuracy"], history, log.lrs,
                      log.seconds)
