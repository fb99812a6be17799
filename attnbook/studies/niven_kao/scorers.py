"""Pairwise argument–warrant classifiers of Niven & Kao (2019): BERT, BoV and BiLSTM.

Every model of the paper (§2–§3) scores each argument–warrant pair on its own,
with parameters θ shared between the two warrants,

    z_j = θ[c; r; w_j],   p = softmax([z_0, z_1]),   ŷ = argmax_j p_j,

and is trained with cross-entropy over the two logits. :class:`PairwiseScorer` is
the BERT version: warrant j is read as ``[CLS] claim reason [SEP] w_j [SEP]``
(claim first, a full stop added to each sentence when missing, segment ids 0/1,
as in the authors' code), BERT's pooler output (dense + tanh on ``[CLS]``) goes
through dropout and a linear layer to give z_j. :class:`WordPairScorer` is the
bag-of-vectors (BoV) and BiLSTM baselines over GloVe vectors.

The **probes** of §5 change only what the model sees (:data:`INPUTS`): the
warrant alone (``W``: ``[CLS] w_j [SEP]``), reason and warrant (``RW``) or claim
and warrant (``CW``); ``full`` is the whole argument. The **adversarial** runs of
§6 train on ``train-swapped`` and test on ``test-adv-negated``
(:func:`run_seeds` with those item lists).

**Partial fine-tuning** (a compute knob, not in the paper). ``trainable_layers=None``
fine-tunes the whole encoder as the paper does. ``trainable_layers=k`` freezes
the embeddings and the lower ``n_layers - k`` layers: their output for every
distinct input is computed once (no dropout) and shared by all seeds and
epochs, and only the top ``k`` layers, the pooler and the classifier are
trained. ``k=0`` trains the pooler and classifier on a frozen encoder. In every
setting the last layer is computed for the ``[CLS]`` position only
(:func:`cls_only_layer`): the pooler reads nothing else, so this is exact and
saves most of that layer's cost. On two CPU cores this is what lets the quick
profile train all the paper's configurations with several seeds.

A remark on the adversarial training file: the scorer treats the two warrants
symmetrically, so an item with its warrants swapped and its label flipped has
exactly the same loss as the original. Training on ``train-swapped`` is training
on the original items twice per epoch (up to dropout and batching).

Training follows the paper's BERT recipe (code: AdamW, weight decay 0.01 except
on biases and LayerNorm, linear warm-up over the first 10% of steps then linear
decay, effective batch of 8 items, the epoch with the best dev accuracy kept);
the plateau learning-rate schedule of the code (patience 10) is left out. Seeds
are reported as the paper does: mean ± std, median and max over seeds (Table 1).
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.studies.niven_kao.cues import PAPER, ArctItem, labels_of, tokenize  # noqa: F401  (PAPER re-exported)
from attnbook.core import cache
from attnbook.engine.train import Recipe, epochs_of, fit
from attnbook.core.errors import EmptyDataError, ModelError, ParameterError
from attnbook import verdict

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


def pad_sequences(seqs: Sequence[Sequence[int]], pad: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad integer sequences: ``(values[n, L], mask[n, L])`` with ``L`` the longest length."""
    width = max(len(s) for s in seqs)
    values = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        values[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        mask[i, : len(s)] = 1
    return values, mask


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


def cls_only_layer(layer: nn.Module, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A BERT layer's output at position 0 only, ``[n, 1, hidden]``, from its input ``hidden[n, seq, hidden]``.

    Keys and values come from every unmasked position (``mask[n, seq]``, 1 = real token), the
    query only from ``[CLS]``; then the layer's attention output, feed-forward block and
    LayerNorms as usual (dropout as the module's training flag says).
    """
    sa = layer.attention.self
    n, length, _ = hidden.shape
    d = sa.attention_head_size
    q = sa.query(hidden[:, :1]).view(n, 1, -1, d).transpose(1, 2)  # [n, head, 1, d]
    k = sa.key(hidden).view(n, length, -1, d).transpose(1, 2)  # [n, head, seq, d]
    v = sa.value(hidden).view(n, length, -1, d).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(-1, -2)) * sa.scaling
    scores = scores.masked_fill(mask[:, None, None, :] == 0, torch.finfo(scores.dtype).min)
    probs = nn.functional.dropout(torch.softmax(scores, dim=-1), p=sa.dropout.p, training=sa.training)
    context = torch.matmul(probs, v).transpose(1, 2).reshape(n, 1, -1)
    attended = layer.attention.output(context, hidden[:, :1])
    return layer.output(layer.intermediate(attended), attended)


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
        n = int(encoder.config.num_hidden_layers)
        k = n if trainable_layers is None else int(trainable_layers)
        if not 0 <= k <= n:
            raise ParameterError(f"trainable_layers must be in 0..{n}, got {trainable_layers}")
        self.start = n - k  # layers below this index are frozen
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(int(encoder.config.hidden_size), 1)
        frozen_embeddings = freeze_embeddings or self.start > 0
        for p in encoder.embeddings.parameters():
            p.requires_grad_(not frozen_embeddings)
        for i, layer in enumerate(encoder.encoder.layer):
            for p in layer.parameters():
                p.requires_grad_(i >= self.start)

    @property
    def n_layers(self) -> int:
        return len(self.encoder.encoder.layer)

    def _layers(self, hidden: torch.Tensor, mask: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        from transformers.masking_utils import create_bidirectional_mask

        if start >= stop:
            return hidden
        attn_mask = create_bidirectional_mask(config=self.encoder.config, inputs_embeds=hidden, attention_mask=mask)
        for layer in self.encoder.encoder.layer[start:stop]:
            hidden = layer(hidden, attn_mask)
        return hidden

    def _pool(self, hidden: torch.Tensor) -> torch.Tensor:
        pooler = getattr(self.encoder, "pooler", None)
        return pooler(hidden) if pooler is not None else hidden[:, 0]

    def lower(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
              stop: int | None = None) -> torch.Tensor:
        """Hidden states ``[n, seq, hidden]`` after the first ``stop`` layers (default: the frozen ones)."""
        stop = self.start if stop is None else stop
        hidden = self.encoder.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        return self._layers(hidden, attention_mask, 0, stop)

    def score_hidden(self, hidden: torch.Tensor, mask: torch.Tensor, start: int | None = None) -> torch.Tensor:
        """One logit per sequence ``[n]`` from hidden states after layer ``start`` (default: the frozen part).

        The last layer is computed for the ``[CLS]`` position only, the one position the
        pooler reads: the same numbers as the full layer, for a fraction of the cost.
        """
        start = self.start if start is None else start
        if start < self.n_layers:
            hidden = self._layers(hidden, mask, start, self.n_layers - 1)
            hidden = cls_only_layer(self.encoder.encoder.layer[-1], hidden, mask)
        return self.classifier(self.dropout(self._pool(hidden))).squeeze(-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``[batch, 2]`` for inputs ``[batch, 2, seq]`` (item b with warrant j at ``[b, j]``)."""
        if input_ids.dim() != 3 or input_ids.shape[1] != 2:
            raise ValueError(f"expected inputs [batch, 2, seq], got {tuple(input_ids.shape)}")
        b, _, length = input_ids.shape
        flat = lambda t: t.reshape(b * 2, length)  # noqa: E731
        types = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
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
        ids, mask = pad_sequences([data.input_ids[s] for s in seq], pad_id)
        types, _ = pad_sequences([data.token_type_ids[s] for s in seq], 0)
        shape = (len(items), 2, ids.shape[1])
        return self.forward(ids.reshape(shape), mask.reshape(shape), types.reshape(shape))


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
        ids, mask = pad_sequences([k[1] for k in chunk], pad_id)
        types, _ = pad_sequences([k[2] for k in chunk], 0)
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


@torch.no_grad()
def predict_proba(
    model: PairwiseScorer, data: PairEncoding | CachedStates, batch_size: int = 32, pad_id: int = 0
) -> np.ndarray:
    """Warrant probabilities ``[n, 2]`` of every item (eval mode)."""
    was_training = model.training
    model.eval()
    n = len(data)
    if isinstance(data, PairEncoding):
        lengths = data.lengths().reshape(n, 2).max(1)
    else:
        lengths = np.array([max(data.states[2 * i].shape[0], data.states[2 * i + 1].shape[0]) for i in range(n)])
    order = np.argsort(lengths, kind="stable")
    out = np.zeros((n, 2), dtype=np.float64)
    for lo in range(0, n, batch_size):
        idx = order[lo : lo + batch_size].tolist()
        out[idx] = torch.softmax(model.logits_for(data, idx, pad_id), dim=-1).double().numpy()
    model.train(was_training)
    return out


def accuracy_of(probs: np.ndarray, labels: np.ndarray) -> float:
    """Share of items whose more probable warrant is the labelled one (ties count as warrant 0)."""
    return float((probs.argmax(1) == np.asarray(labels)).mean())


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

    def epoch_order(_: int) -> list[list[int]]:
        order = items[rng.permutation(len(items))]
        return [order[lo : lo + cfg.batch_size].tolist() for lo in range(0, len(order), cfg.batch_size)]

    def loss_fn(m: PairwiseScorer, idx: list[int]):
        logits = m.logits_for(train, idx, pad_id)
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
    return TrainedRun(seed, model, log.best_epoch, best["dev_accuracy"], best["train_accuracy"], history, log.lrs)


def summarize(values: Iterable[float]) -> dict:
    """Mean, standard deviation (population, as numpy), median and max over seeds (the paper's columns)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        raise EmptyDataError("no runs to summarise")
    return {"mean": float(v.mean()), "std": float(v.std()), "median": float(np.median(v)), "max": float(v.max()),
            "n": int(v.size)}


def run_seeds(
    loaded: Any,
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
) -> "Any":
    """Train one :class:`PairwiseScorer` per seed and test it; returns one row per seed (pandas DataFrame).

    ``loaded`` is an :class:`attnbook.engine.models.LoadedModel` (its encoder is copied per
    seed). ``tests`` maps a name to items (e.g. ``{"test": ..., "test_adv": ...}``);
    each gets a column ``<name>_accuracy``. Other columns: ``seed``, ``inputs``,
    ``dev_accuracy``, ``best_epoch``, ``train_accuracy``. With partial fine-tuning the
    frozen part runs once for all seeds (see module doc); pass the same ``memo`` dict to
    several calls with the same ``loaded`` model to share it between them too.
    """
    import pandas as pd

    tok = loaded.tokenizer
    pad_id = int(tok.pad_token_id or 0)
    length = min(max_length, PAPER_MAX_LENGTH[inputs])
    enc = {"train": encode_pairs(tok, train, inputs, length), "dev": encode_pairs(tok, dev, inputs, length)}
    for name, items in tests.items():
        enc[name] = encode_pairs(tok, items, inputs, length)
    data: dict[str, PairEncoding | CachedStates] = dict(enc)
    if cfg.trainable_layers is not None and cfg.trainable_layers < loaded.n_layers:
        frozen = build_scorer(loaded.model, cfg, seed=0)  # a copy: the shared encoder stays untouched
        memo = {} if memo is None else memo.setdefault((loaded.key, frozen.start), {})
        data = {k: cache_lower_states(frozen, v, cfg.eval_batch_size, pad_id, memo) for k, v in enc.items()}
        del frozen
    rows = []
    for seed in seeds:
        run = train_pairwise(loaded.model, data["train"], data["dev"], cfg, seed, pad_id=pad_id,
                             progress=progress, desc=f"{INPUTS[inputs]} seed {seed}")
        row = {"inputs": inputs, "seed": int(seed), "best_epoch": run.best_epoch,
               "train_accuracy": run.train_accuracy, "dev_accuracy": run.dev_accuracy}
        for name in tests:
            row[f"{name}_accuracy"] = accuracy_of(predict_proba(run.model, data[name], cfg.eval_batch_size, pad_id),
                                                  enc[name].labels)
        rows.append(row)
        del run
    return pd.DataFrame(rows)


def config_dict(cfg: TrainConfig) -> dict:
    """A :class:`TrainConfig` as a plain dict (for cache keys and provenance)."""
    return asdict(cfg)


# ---- BoV and BiLSTM baselines (Niven & Kao §3, Table 1) -----------------------------------------


@dataclass
class WordData:
    """Word-id inputs of ``n`` items for :class:`WordPairScorer`: one id list per segment and item."""

    segments: dict[str, list[list[int]]]  # name -> n lists of word ids (claim, reason, warrant0, warrant1)
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


def build_vocabulary(item_lists: Iterable[Sequence[ArctItem]]) -> list[str]:
    """Every word (``arct.tokenize``, "n't" → "not") of claims, reasons and warrants, sorted; index 0 is padding."""
    words: set[str] = set()
    for items in item_lists:
        for it in items:
            for text in (it.claim, it.reason, it.warrant0, it.warrant1):
                words.update(tokenize(text))
    return ["<pad>"] + sorted(words)


def encode_words(items: Sequence[ArctItem], vocab: Sequence[str]) -> WordData:
    """Word ids of every segment of ``items`` (words missing from ``vocab`` are dropped)."""
    index = {w: i for i, w in enumerate(vocab)}
    segs: dict[str, list[list[int]]] = {"claim": [], "reason": [], "warrant0": [], "warrant1": []}
    for it in items:
        for name in segs:
            segs[name].append([index[w] for w in tokenize(getattr(it, name)) if w in index])
    return WordData(segs, labels_of(items))


def embedding_matrix(vocab: Sequence[str], glove: Any, seed: int = 0) -> tuple[np.ndarray, float]:
    """GloVe vectors for ``vocab``, ``[V, d]``, and the share of words not in GloVe.

    Row 0 (padding) is zeros; words not in GloVe get small seeded random vectors (they are tuned in training).
    """
    rng = np.random.default_rng(seed)
    vectors, oov = glove.lookup(list(vocab))
    vectors = vectors.astype(np.float32)
    vectors[oov] = rng.normal(0.0, 0.1, size=(int(oov.sum()), glove.dim)).astype(np.float32)
    vectors[0] = 0.0
    return vectors, float(oov[1:].mean()) if len(vocab) > 1 else 0.0


class WordPairScorer(nn.Module):
    """The BoV and BiLSTM baselines: ``z_j = Linear([pool(argument); pool(w_j)])`` (Niven & Kao §3).

    * ``bov``: max-pool of word vectors over claim+reason (one pool) and over the warrant.
    * ``bilstm``: one shared one-layer BiLSTM; max-pool of its states over the reason,
      the claim and the warrant separately, concatenated, dropout, linear.

    ``inputs`` (:data:`INPUTS`) drops the claim and/or reason for the probes of §5.
    The word vectors are fine-tuned (as in the paper).
    """

    def __init__(
        self, vectors: np.ndarray, kind: str = "bov", inputs: str = "full", hidden: int = 64, dropout: float = 0.0
    ):
        super().__init__()
        if kind not in ("bov", "bilstm"):
            raise ParameterError(f"kind must be 'bov' or 'bilstm', got {kind!r}")
        if inputs not in INPUTS:
            raise ParameterError(f"unknown input variant {inputs!r}")
        self.kind, self.inputs = kind, inputs
        self.embed = nn.Embedding.from_pretrained(torch.as_tensor(vectors), freeze=False, padding_idx=0)
        d = vectors.shape[1]
        self.argument = {"full": ["claim", "reason"], "W": [], "RW": ["reason"], "CW": ["claim"]}[inputs]
        if kind == "bilstm":
            self.lstm = nn.LSTM(d, hidden, batch_first=True, bidirectional=True)
            width = 2 * hidden * (len(self.argument) + 1)
        else:
            width = d * (2 if self.argument else 1)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(width, 1)

    def _pool(self, seqs: list[list[int]]) -> torch.Tensor:
        seqs = [s if s else [0] for s in seqs]
        ids, mask = pad_sequences(seqs, 0)
        x = self.embed(ids)
        if self.kind == "bilstm":
            lengths = mask.sum(1)
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            x, _ = self.lstm(packed)
            x, _ = nn.utils.rnn.pad_packed_sequence(x, batch_first=True, total_length=ids.shape[1])
        x = x.masked_fill(mask.unsqueeze(-1) == 0, float("-inf"))
        return x.max(1).values

    def logits_for(self, data: WordData, items: Sequence[int]) -> torch.Tensor:
        seg = data.segments
        if self.kind == "bov" and self.argument:
            arg = [self._pool([sum((seg[s][i] for s in self.argument), []) for i in items])]
        else:
            arg = [self._pool([seg[s][i] for i in items]) for s in self.argument]
        z = []
        for w in ("warrant0", "warrant1"):
            feats = torch.cat(arg + [self._pool([seg[w][i] for i in items])], dim=-1)
            z.append(self.out(self.dropout(feats)).squeeze(-1))
        return torch.stack(z, dim=-1)


@dataclass(frozen=True)
class WordTrainConfig:
    """Training of the BoV/BiLSTM baselines (paper: Adam, lr × 0.1 when dev accuracy drops, best dev epoch)."""

    kind: str = "bov"
    epochs: int = 3
    lr: float = 0.09
    batch_size: int = 32
    hidden: int = 512
    dropout: float = 0.0
    threads: int = 0  # torch threads during training (0: leave torch's setting); see torch_threads


#: The settings the paper's grid search chose (reference note §2).
PAPER_WORD_CONFIGS = {
    "bov": WordTrainConfig("bov", epochs=3, lr=0.09, batch_size=32, dropout=0.0),
    "bilstm": WordTrainConfig("bilstm", epochs=20, lr=0.06, batch_size=32, hidden=512, dropout=0.1),
}


@torch.no_grad()
def _word_proba(model: WordPairScorer, data: WordData, batch_size: int = 256) -> np.ndarray:
    model.eval()
    out = [torch.softmax(model.logits_for(data, list(range(lo, min(lo + batch_size, len(data))))), -1)
           for lo in range(0, len(data), batch_size)]
    return torch.cat(out).double().numpy()


def train_word_model(
    vectors: np.ndarray, train: WordData, dev: WordData, cfg: WordTrainConfig, inputs: str, seed: int
) -> tuple[WordPairScorer, float, int]:
    """Train one BoV/BiLSTM baseline; returns the model at its best dev epoch, that accuracy and the epoch."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = WordPairScorer(vectors, cfg.kind, inputs, cfg.hidden, cfg.dropout)
    labels = torch.as_tensor(train.labels)

    def epoch_order(_: int) -> list[list[int]]:
        order = rng.permutation(len(train))
        return [order[lo : lo + cfg.batch_size].tolist() for lo in range(0, len(order), cfg.batch_size)]

    # the paper's schedule: lr x 0.1 whenever dev accuracy drops; the best dev epoch is kept
    recipe = Recipe(lr=cfg.lr, schedule="constant", plateau_factor=0.1, select="best", fused=False)
    log = fit(model, epochs_of(epoch_order, cfg.epochs),
              lambda m, idx: nn.functional.cross_entropy(m.logits_for(train, idx), labels[idx]), recipe,
              evaluate=lambda m: accuracy_of(_word_proba(m, dev), dev.labels), threads=cfg.threads)
    return model, log.history[log.best_epoch - 1]["metric"], log.best_epoch


def run_word_seeds(
    glove: Any,
    train: Sequence[ArctItem],
    dev: Sequence[ArctItem],
    tests: Mapping[str, Sequence[ArctItem]],
    *,
    cfg: WordTrainConfig,
    inputs: str = "full",
    seeds: Sequence[int] = (0,),
) -> "Any":
    """BoV/BiLSTM runs over seeds; columns as :func:`run_seeds` plus ``oov_share`` (words not in GloVe)."""
    import pandas as pd

    vocab = build_vocabulary([train, dev, *tests.values()])
    vectors, oov = embedding_matrix(vocab, glove, seed=0)
    data = {"train": encode_words(train, vocab), "dev": encode_words(dev, vocab)}
    data.update({k: encode_words(v, vocab) for k, v in tests.items()})
    rows = []
    for seed in seeds:
        model, dev_acc, epoch = train_word_model(vectors, data["train"], data["dev"], cfg, inputs, seed)
        row = {"model": cfg.kind, "inputs": inputs, "seed": int(seed), "best_epoch": epoch, "dev_accuracy": dev_acc,
               "oov_share": oov}
        for name in tests:
            row[f"{name}_accuracy"] = accuracy_of(_word_proba(model, data[name]), data[name].labels)
        rows.append(row)
    return pd.DataFrame(rows)


# ---- cached runs ---------------------------------------------------------------------------------

#: bump when a change to this module changes what a run computes (invalidates cached runs)
CODE_VERSION = "arct_model-1"


def run_seeds_cached(
    loaded: Any,
    train: Sequence[ArctItem],
    dev: Sequence[ArctItem],
    tests: Mapping[str, Sequence[ArctItem]],
    *,
    inputs: str = "full",
    seeds: Sequence[int] = (0,),
    cfg: TrainConfig = TrainConfig(),
    max_length: int = 80,
    use_cache: bool = True,
    progress: bool = False,
    memo: dict | None = None,
):
    """:func:`run_seeds`, cached on disk (key: model fingerprint, data, settings, :data:`CODE_VERSION`)."""
    columns = ["inputs", "seed", "best_epoch", "train_accuracy", "dev_accuracy"] + [f"{k}_accuracy" for k in tests]
    parts = {
        "code": CODE_VERSION, "model": loaded.key, "inputs": inputs, "seeds": [int(s) for s in seeds],
        "cfg": config_dict(cfg), "max_length": int(max_length), "columns": columns,
        "data": cache.digest(train, dev, tests),
        "torch": torch.__version__,
    }
    return cache.cached_frame(
        "arct_bert_runs", parts,
        lambda: run_seeds(loaded, train, dev, tests, inputs=inputs, seeds=seeds, cfg=cfg, max_length=max_length,
                          progress=progress, memo=memo)[columns],
        enabled=use_cache,
    )


def run_word_seeds_cached(
    glove: Any,
    train: Sequence[ArctItem],
    dev: Sequence[ArctItem],
    tests: Mapping[str, Sequence[ArctItem]],
    *,
    cfg: WordTrainConfig,
    inputs: str = "full",
    seeds: Sequence[int] = (0,),
    use_cache: bool = True,
):
    """:func:`run_word_seeds`, cached like :func:`run_seeds_cached` (keyed by the GloVe file too)."""
    columns = ["model", "inputs", "seed", "best_epoch", "dev_accuracy", "oov_share"] + [f"{k}_accuracy" for k in tests]
    parts = {
        "code": CODE_VERSION, "glove": cache.digest(glove),
        "inputs": inputs, "seeds": [int(s) for s in seeds], "cfg": asdict(cfg), "columns": columns,
        "data": cache.digest(train, dev, tests),
        "torch": torch.__version__,
    }
    return cache.cached_frame(
        "arct_word_runs", parts,
        lambda: run_word_seeds(glove, train, dev, tests, cfg=cfg, inputs=inputs, seeds=seeds)[columns],
        enabled=use_cache,
    )


# ---- tables and the comparison with the paper -------------------------------------------------


def seed_table(frames: Mapping[str, Any], column: str = "test_accuracy", paper: Mapping[str, Mapping] | None = None):
    """One row per experiment: mean ± std, median and max over seeds of ``column`` (the paper's columns).

    ``frames`` maps a row label to a per-seed frame; ``paper`` (same labels) adds the paper's values.
    """
    import pandas as pd

    rows = []
    for label, frame in frames.items():
        s = summarize(frame[column])
        row = {"experiment": label, "seeds": s["n"], "mean": round(s["mean"], 3), "std": round(s["std"], 3),
               "median": round(s["median"], 3), "max": round(s["max"], 3)}
        if paper is not None and label in paper:
            p = paper[label]
            row.update({"paper mean": p.get("mean"), "paper median": p.get("median"), "paper max": p.get("max")})
        rows.append(row)
    return pd.DataFrame(rows)


def probe_bars_frame(bert: Mapping[str, Any], column: str = "test_accuracy", stat: str = "max"):
    """Long frame for :func:`attnbook.studies.niven_kao.cues.accuracy_bars`: the paper's Table 3 BERT ``stat`` and ours, by input."""
    import pandas as pd

    rows = []
    for inputs in INPUTS:
        if inputs not in bert:
            continue
        paper, ours = PAPER["table3"]["BERT"][inputs][stat], summarize(bert[inputs][column])[stat]
        rows.append({"input": INPUTS[inputs], "accuracy": paper, "source": f"paper ({stat})"})
        rows.append({"input": INPUTS[inputs], "accuracy": ours, "source": f"this run ({stat})"})
    return pd.DataFrame(rows)


def config_from_params(P: Mapping[str, Any], **overrides: Any) -> TrainConfig:
    """The :class:`TrainConfig` of a chapter's parameters (``trainable_layers="all"`` → full fine-tuning).

    ``overrides`` replace single fields, e.g. ``epochs=P.adversarial_epochs``.
    """
    k = P["trainable_layers"]
    fields = dict(
        epochs=int(P["epochs"]), lr=float(P["lr"]), batch_size=int(P["batch_size"]), warmup=float(P["warmup"]),
        weight_decay=float(P["weight_decay"]), dropout=float(P["dropout"]),
        trainable_layers=None if k in (None, "all") else int(k), freeze_embeddings=bool(P["freeze_embeddings"]),
        train_threads=int(P.get("train_threads") or 0),
    )
    fields.update(overrides)
    return TrainConfig(**fields)


def word_config(kind: str, P: Mapping[str, Any]) -> WordTrainConfig:
    """The paper's BoV/BiLSTM settings (:data:`PAPER_WORD_CONFIGS`) with the chapter's BiLSTM size and epochs."""
    from dataclasses import replace

    cfg = replace(PAPER_WORD_CONFIGS[kind], threads=int(P.get("train_threads") or 0))
    if kind == "bilstm":
        cfg = replace(cfg, epochs=int(P["bilstm_epochs"]), hidden=int(P["bilstm_hidden"]))
    return cfg


def _close(paper: float, ours: float, agree: float = 0.03, partly: float = 0.08) -> str:
    """Accuracies (fractions) within 3 points agree, within 8 partly (:func:`attnbook.verdict.closeness`)."""
    return verdict.closeness(paper, ours, agree, partly)


def paper_comparison(
    *,
    not_rows: Any,
    bert: Mapping[str, Any],
    adversarial: Mapping[str, Any] | None = None,
    words: Mapping[str, Any] | None = None,
    agreement: Mapping[str, Mapping] | None = None,
    adversarial_cue_gap: float | None = None,
    model_name: str = "",
) -> list[dict]:
    """The "paper vs this run" rows of the chapter, each with a verdict computed from the numbers.

    ``not_rows``: :func:`attnbook.studies.niven_kao.cues.not_cue_table` (with an ``all`` row); ``bert``: per-seed
    frames by input variant (with ``test_accuracy`` and, for ``full``, ``test_adv_accuracy``);
    ``adversarial``: per-seed frames of the §6 runs by input variant; ``words``: BoV/BiLSTM
    frames by kind; ``agreement``: :func:`attnbook.studies.niven_kao.cues.agreement_with_shipped` by file;
    ``adversarial_cue_gap``: max |π − ½| over warrant cues of the adversarial test set.
    Accuracy rows use :func:`attnbook.verdict.closeness` (±3 points agrees, ±8 partly).
    """
    rows: list[dict] = []
    seeds_note = lambda f: f"{len(f)} seeds (paper: {PAPER['n_seeds']})"  # noqa: E731
    allrow = not_rows.set_index("split").loc["all"]
    for q in ("productivity", "coverage"):
        paper = PAPER["not_cue"]["all"][q]
        rows.append(dict(experiment='§4 cue "not" (train+dev+test)', quantity=q, paper=paper, ours=float(allrow[q]),
                         verdict=_close(paper, allrow[q], 0.02, 0.05),
                         note=f"n't counted as not; whole word only: {float(allrow[q + ' (whole word)']):.3f}"))
    per_split = not_rows.set_index("split")
    splits = [s for s in ("train", "dev", "test") if s in per_split.index]
    ours_prod = [float(per_split.loc[s, "productivity"]) for s in splits]
    paper_prod = [PAPER["not_cue"][s]["productivity"] for s in splits]
    close = all(abs(a - b) <= 0.03 for a, b in zip(ours_prod, paper_prod))
    same_side = all((a > 0.5) == (b > 0.5) for a, b in zip(ours_prod, paper_prod))
    rows.append(dict(experiment='§4 cue "not" by split', quantity="productivity " + "/".join(splits),
                     paper="/".join(f"{v:.2f}" for v in paper_prod), ours="/".join(f"{v:.2f}" for v in ours_prod),
                     verdict=verdict.conditions(close, same_side),
                     note="partly: same side of 0.5 in every split, but not within 3 points"))
    paper_bert = PAPER["table3"]["BERT"]
    if "full" in bert:
        s = summarize(bert["full"]["test_accuracy"])
        for stat in ("max", "median", "mean"):
            rows.append(dict(experiment="§3 BERT, full input (C, R, W)", quantity=f"test accuracy, {stat}",
                             paper=paper_bert["full"][stat], ours=s[stat],
                             verdict=_close(paper_bert["full"][stat], s[stat]),
                             note=f"paper: BERT Large; {model_name}; {seeds_note(bert['full'])}"))
        base = PAPER["table1"]["BERT (Base)"]["mean"]
        rows.append(dict(experiment="§3 BERT, full input (C, R, W)", quantity="test accuracy, mean (vs BERT Base)",
                         paper=base, ours=s["mean"], verdict=_close(base, s["mean"]), note="Table 1, BERT Base"))
        if "test_adv_accuracy" in bert["full"]:
            m = summarize(bert["full"]["test_adv_accuracy"])["mean"]
            rows.append(dict(experiment="§6 trained on original data, tested adversarially",
                             quantity="test accuracy, mean",
                             paper="below 0.5 (no number)", ours=m,
                             verdict=verdict.conditions(m < 0.5, m <= 0.53),
                             note="the paper reports all models below random here"))
    for inputs in ("W", "RW", "CW"):
        if inputs in bert:
            s = summarize(bert[inputs]["test_accuracy"])
            for stat in ("max", "median"):
                rows.append(dict(experiment=f"§5 probe, BERT ({INPUTS[inputs]})", quantity=f"test accuracy, {stat}",
                                 paper=paper_bert[inputs][stat], ours=s[stat],
                                 verdict=_close(paper_bert[inputs][stat], s[stat]), note=seeds_note(bert[inputs])))
    if "full" in bert and "W" in bert:
        gap_paper = paper_bert["full"]["max"] - paper_bert["W"]["max"]
        gap = summarize(bert["full"]["test_accuracy"])["max"] - summarize(bert["W"]["test_accuracy"])["max"]
        rows.append(dict(experiment="§5 finding: warrants alone", quantity="max(full) − max(W), points",
                         paper=gap_paper, ours=gap, verdict=_close(gap_paper, gap, 0.03, 0.06),
                         note="small = the warrants carry most of what the model uses"))
    for inputs, frame in (adversarial or {}).items():
        s = summarize(frame["test_accuracy"])
        p = PAPER["table4"]["BERT"][inputs]
        for stat in ("max", "mean"):
            rows.append(dict(experiment=f"§6 adversarial test, BERT ({INPUTS[inputs]})",
                             quantity=f"test accuracy, {stat}",
                             paper=p[stat], ours=s[stat], verdict=_close(p[stat], s[stat]),
                             note="trained on train-swapped (README erratum); " + seeds_note(frame)))
        if {"original_half_accuracy", "negated_half_accuracy"} <= set(frame.columns):
            total = float((frame["original_half_accuracy"] + frame["negated_half_accuracy"]).mean())
            rows.append(dict(experiment=f"§6 adversarial test, BERT ({INPUTS[inputs]})",
                             quantity="original half + negated half", paper=1.0, ours=total,
                             verdict=_close(1.0, total, 0.03, 0.08),
                             note="≈ 1: the same answer whatever the claim (as in the authors' per-seed results)"))
    for kind, frame in (words or {}).items():
        label = {"bov": "BoV", "bilstm": "BiLSTM"}[kind]
        for inputs, sub in frame.groupby("inputs", sort=False):
            s = summarize(sub["test_accuracy"])
            p = PAPER["table3"][label][inputs]
            rows.append(dict(experiment=f"§3/§5 {label} ({INPUTS[inputs]})", quantity="test accuracy, mean",
                             paper=p["mean"], ours=s["mean"], verdict=_close(p["mean"], s["mean"]),
                             note=f"GloVe 6B 50d (paper: 840B 300d); {seeds_note(sub)}"))
    if agreement:
        identical = sum(a["identical"] for a in agreement.values())
        total = sum(a["n_shipped"] for a in agreement.values())
        rows.append(dict(experiment="§6 adversarial files", quantity="items our transform reproduces exactly",
                         paper=total, ours=identical, verdict=verdict.conditions(identical == total, True),
                         note=", ".join(agreement)))
    if adversarial_cue_gap is not None:
        rows.append(dict(experiment="§6 adversarial test set", quantity="max |productivity − 0.5| over warrant cues",
                         paper=0.0, ours=adversarial_cue_gap,
                         verdict=verdict.conditions(adversarial_cue_gap < 1e-12),
                         note="every warrant appears once with each label"))
    return rows
