"""The bag-of-vectors (BoV) and BiLSTM baselines of Niven & Kao (2019) §3, Table 1 and Table 3.

Like the BERT scorer (:mod:`attnbook.studies.niven_kao.pairwise`), every baseline scores each
argument–warrant pair on its own with shared parameters, ``z_j = Linear([pool(argument); pool(w_j)])``,
``p = softmax([z_0, z_1])`` (:class:`WordPairScorer`), over GloVe word vectors that are fine-tuned.
The words are those of the cue statistics (:func:`attnbook.studies.niven_kao.cues.tokenize`, "n't" →
"not"); the vectors here are GloVe 6B 50d (the paper: 840B 300d). The probes of §5 drop the claim
and/or the reason (:data:`attnbook.studies.niven_kao.pairwise.INPUTS`).

**What this architecture cannot see.** The two warrants are compared through a softmax over ``z_0`` and ``z_1``, and
the argument enters both scores through the same term, ``W_a · pool(argument)``: it cancels in ``z_0 − z_1``, so
at prediction time (dropout off) these models choose a warrant whatever the claim and the reason say
(:data:`ARGUMENT_CANCELS`; ``tests/test_niven_kao_paper.py`` checks it on the model with random weights). The paper's
code builds them the same way, so its "C, R, W" baselines can do no better than "W", and on the adversarial test
set, whose two copies of an item differ only in the claim, any of them scores exactly 0.5.

Training is the paper's grid-searched recipe (:data:`PAPER_WORD_CONFIGS`): Adam, the learning
rate times 0.1 whenever dev accuracy drops, the best dev epoch kept, through the one training loop
(:func:`attnbook.engine.train.fit`). :func:`run_word_seeds` runs one input variant over seeds
and :func:`run_word_baselines` every variant of a chapter for both kinds.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core import cache
from attnbook.core.errors import ParameterError
from attnbook.data.arct import ArctItem, labels_of
from attnbook.engine.inputs import pad_rows
from attnbook.engine.train import Recipe, epochs_of, fit
from attnbook.engine.pairwise import accuracy_of
from attnbook.studies.niven_kao.pairwise import INPUTS
from attnbook.studies.niven_kao.cues import tokenize


#: What the BoV and BiLSTM architecture forces, in one sentence a page can show (see the module's docstring).
ARGUMENT_CANCELS = ("the BoV and BiLSTM baselines score each warrant as Linear([pool(argument); pool(warrant)]) and "
                    "compare the two scores by a softmax, so the argument's term is the same for both warrants and "
                    "cancels: these models cannot use the claim or the reason, their (C, R, W) runs can do no better "
                    "than (W), and on the adversarial test set, whose two copies of an item differ only in the claim, "
                    "they score exactly 0.5 by construction (the paper's code builds them the same way)")


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
    """The BoV and BiLSTM baselines: ``z_j = Linear([pool(argument); pool(w_j)])`` (Niven & Kao §3). The argument's
    part of the linear layer adds the same amount to ``z_0`` and ``z_1``, so in eval mode ``z_0 - z_1`` does not
    depend on the claim or the reason (:data:`ARGUMENT_CANCELS`).

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
        ids, mask = pad_rows(seqs, 0)
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
def predict_word_proba(model: WordPairScorer, data: WordData, batch_size: int = 256) -> np.ndarray:
    """Warrant probabilities ``[n, 2]`` of every item (eval mode)."""
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
              evaluate=lambda m: accuracy_of(predict_word_proba(m, dev), dev.labels), threads=cfg.threads)
    return model, log.history[log.best_epoch - 1]["metric"], log.best_epoch


@cache.memoized("arct_word_runs", version=f"torch {torch.__version__}")
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
            row[f"{name}_accuracy"] = accuracy_of(predict_word_proba(model, data[name]), data[name].labels)
        rows.append(row)
    columns = ["model", "inputs", "seed", "best_epoch", "dev_accuracy", "oov_share"] + [f"{k}_accuracy" for k in tests]
    return pd.DataFrame(rows)[columns]


def word_config(kind: str, P: Mapping[str, Any]) -> WordTrainConfig:
    """The paper's BoV/BiLSTM settings (:data:`PAPER_WORD_CONFIGS`) with the chapter's BiLSTM size and epochs."""
    cfg = replace(PAPER_WORD_CONFIGS[kind], threads=int(P.train_threads or 0))
    if kind == "bilstm":
        cfg = replace(cfg, epochs=int(P.bilstm_epochs), hidden=int(P.bilstm_hidden))
    return cfg


#: the two baselines of the paper, in the order of its tables
KINDS = ("bov", "bilstm")


def run_word_baselines(
    glove: Any,
    train: Sequence[ArctItem],
    dev: Sequence[ArctItem],
    tests: Mapping[str, Sequence[ArctItem]],
    P: Mapping[str, Any],
) -> dict[str, Any]:
    """BoV and BiLSTM on every input variant of the chapter (``P.probes``), ``P.word_seeds`` seeds each.

    Returns one frame per kind (:data:`KINDS`), the rows of :func:`run_word_seeds` for every
    input variant one after the other; the settings come from :func:`word_config`.
    """
    import pandas as pd

    seeds = range(P.seed, P.seed + P.word_seeds)
    return {
        kind: pd.concat([
            run_word_seeds(glove, train, dev, tests, cfg=word_config(kind, P), inputs=inputs, seeds=seeds)
            for inputs in P.probes
        ], ignore_index=True)
        for kind in KINDS
    }


def run_word_adversarial(
    glove: Any,
    train: Sequence[ArctItem],
    dev: Sequence[ArctItem],
    tests: Mapping[str, Sequence[ArctItem]],
    P: Mapping[str, Any],
) -> dict[str, Any]:
    """BoV and BiLSTM on the full input, trained and validated on the adversarial files (Niven & Kao §6, Table 4):
    ``train`` is ``train-swapped``, ``dev`` and ``tests`` the claim-negated files (and their halves); one frame per
    kind (:data:`KINDS`), ``P.word_seeds`` seeds, the settings of :func:`word_config`."""
    seeds = range(P.seed, P.seed + P.word_seeds)
    return {kind: run_word_seeds(glove, train, dev, tests, cfg=word_config(kind, P), inputs="full",
                                        seeds=seeds)
            for kind in KINDS}
