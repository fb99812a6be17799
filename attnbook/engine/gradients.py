"""Gradients of the masked-language-modelling loss with respect to the attention weights.

The engine side of Clark et al. §3.2 (Fig. 3): the statistics over those gradients are the
study's (:mod:`attnbook.studies.clark.gradients`); here the model runs.

* :func:`stream_attention_gradients` masks the inputs, runs the forward and backward pass
  batch by batch and hands every batch's ``grads[batch, layer, head, query, key]``
  (``dL / d attn``) to reducers, as :func:`attnbook.engine.extract.stream_attention` hands
  maps: memory stays flat in the number of inputs.
* The MLM loss needs an MLM head. ``bert-base-uncased`` ships one; the book's embedded model
  (all-MiniLM-L6-v2, trained as a sentence encoder) does not, so :func:`get_mlm_head` fits
  one on the **frozen** encoder: BERT's head architecture (dense + GELU + LayerNorm, then a
  decoder tied to the frozen input word embeddings, with a trainable bias) trained with the
  book's one training loop (:func:`attnbook.engine.train.fit`) on segments *disjoint* from
  the analysed ones, until the loss on validation segments stops improving (early stopping,
  the best weights kept). Its held-out loss and accuracy (on other segments again) and the
  validation curve are reported so a reader can judge it.
  Gradients then flow through the unchanged encoder.

Masking follows BERT's pre-training: 15% of the non-special pieces, of which 80% become
``[MASK]``, 10% a random piece and 10% stay; the loss is the mean cross-entropy over the
chosen pieces of each segment (so a segment's gradients do not depend on what else is in
its batch).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core import cache
from attnbook.engine.families import mlm_logits
from attnbook.engine.inputs import Batch, Encoded, make_batches
from attnbook.engine.models import LoadedModel, has_mlm_head
from attnbook.engine.train import Recipe, fit

MASK_RATE = 0.15


class MLMHead(nn.Module):
    """BERT's MLM head: transform (dense, GELU, LayerNorm) and a decoder tied to the word embeddings."""

    def __init__(self, word_embeddings: nn.Embedding, hidden_size: int, layer_norm_eps: float = 1e-12):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.layer_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.word_embeddings = word_embeddings  # shared with the encoder, frozen
        self.bias = nn.Parameter(torch.zeros(word_embeddings.num_embeddings))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.layer_norm(nn.functional.gelu(self.dense(hidden)))
        return h @ self.word_embeddings.weight.T + self.bias

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.state_dict().items() if not k.startswith("word_embeddings")}

    def __digest__(self) -> dict[str, torch.Tensor]:
        """A head is named in cache keys by its own weights (the tied word embeddings are the encoder's)."""
        return self.trainable_state()


def _first_ordinary_id(tokenizer) -> int:
    """Where random replacement pieces are drawn from: BERT's WordPiece vocabularies keep special and ``[unused]``
    slots below 1000 (drawn from 1000 on, as ever); other vocabularies keep their special tokens first."""
    if tokenizer.convert_tokens_to_ids("[unused0]") not in (None, tokenizer.unk_token_id) and tokenizer.vocab_size > 2000:
        return 1000
    return max(tokenizer.all_special_ids) + 1


def mask_tokens(example: Encoded, tokenizer, rng: np.random.Generator, rate: float = MASK_RATE):
    """BERT-style masking of one example: returns ``(input_ids, targets)`` (targets -100 where not chosen)."""
    ids = np.array(example.input_ids)
    special = np.isin(ids, tokenizer.all_special_ids)
    candidates = np.flatnonzero(~special)
    n_pick = max(1, int(round(rate * len(candidates))))
    chosen = rng.choice(candidates, size=min(n_pick, len(candidates)), replace=False)
    targets = np.full_like(ids, -100)
    targets[chosen] = ids[chosen]
    roll = rng.random(len(chosen))
    ids = ids.copy()
    ids[chosen[roll < 0.8]] = tokenizer.mask_token_id
    random_pos = chosen[(roll >= 0.8) & (roll < 0.9)]
    ids[random_pos] = rng.integers(_first_ordinary_id(tokenizer), tokenizer.vocab_size, size=len(random_pos))
    return ids.tolist(), targets.tolist()


def masked_copies(examples: Sequence[Encoded], tokenizer, seed: int) -> tuple[list[Encoded], list[list[int]]]:
    """Masked versions of ``examples`` and their MLM targets, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    out, targets = [], []
    for ex in examples:
        ids, tgt = mask_tokens(ex, tokenizer, rng)
        tokens = tokenizer.convert_ids_to_tokens(ids)
        out.append(Encoded(ids, ex.token_type_ids, tokens, ex.words, dict(ex.meta)))
        targets.append(tgt)
    return out, targets


def _pad_targets(targets: list[list[int]], index: list[int], width: int) -> torch.Tensor:
    out = torch.full((len(index), width), -100, dtype=torch.long)
    for b, i in enumerate(index):
        out[b, : len(targets[i])] = torch.tensor(targets[i])
    return out


def per_segment_mlm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Sum over segments of each segment's mean cross-entropy over its masked pieces."""
    ce = nn.functional.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100, reduction="none")
    counts = (targets != -100).sum(1).clamp(min=1)
    return (ce.sum(1) / counts).sum()


@dataclass
class MLMHeadFit:
    """An MLM head and how it was obtained, with its held-out quality.

    For a fitted head, ``curve`` lists every evaluation on the validation segments during the fit
    (``{"step", "loss", "top1"}``), ``best_step`` is the update whose weights were kept (lowest validation loss)
    and ``steps`` how many updates ran before the fit stopped (at most the ``steps`` asked for).
    """

    head: MLMHead
    source: str  # "pretrained" (the checkpoint's own head) or "fitted on the frozen encoder"
    heldout_loss: float
    heldout_accuracy: float
    steps: int
    curve: list[dict] = field(default_factory=list)
    best_step: int = 0
    seconds: float = 0.0


#: updates between two evaluations of a fitted MLM head on its validation segments
MLM_EVAL_EVERY = 50
#: evaluations without a lower validation loss after which the fit stops (the best weights are kept)
MLM_PATIENCE = 3


class PretrainedMLMHead(nn.Module):
    """A checkpoint's own MLM head, whatever its family (:func:`attnbook.engine.families.mlm_logits`): the
    ``...ForMaskedLM`` model is kept whole, but only its head runs, on the analysed encoder's hidden states."""

    def __init__(self, mlm_model: nn.Module, key: str):
        super().__init__()
        self.mlm = mlm_model.eval()
        self.key = key

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return mlm_logits(self.mlm, hidden)

    def __digest__(self) -> tuple:
        return ("pretrained MLM head", self.key)


def _load_pretrained_head(loaded: LoadedModel) -> nn.Module:
    from transformers import AutoModelForMaskedLM

    mlm = AutoModelForMaskedLM.from_pretrained(str(loaded.path), attn_implementation="eager")
    if loaded.family.name != "bert":
        return PretrainedMLMHead(mlm.to(loaded.device), loaded.key)
    pred = mlm.cls.predictions
    head = _new_head(loaded)
    head.dense.load_state_dict(pred.transform.dense.state_dict())
    head.layer_norm.load_state_dict(pred.transform.LayerNorm.state_dict())
    head.bias.data.copy_(pred.bias.data if getattr(pred, "bias", None) is not None else pred.decoder.bias.data)
    return head


def _new_head(loaded: LoadedModel) -> MLMHead:
    """BERT's head architecture on ``loaded``'s hidden states, its decoder tied to the input word embeddings."""
    config = loaded.model.config
    return MLMHead(loaded.model.get_input_embeddings(), int(config.hidden_size),
                   float(getattr(config, "layer_norm_eps", None) or getattr(config, "norm_eps", None) or 1e-12))


def _encode_hidden(loaded: LoadedModel, examples: Sequence[Encoded], targets: list[list[int]], batch_size: int):
    """Final hidden states and targets at the masked positions (encoder frozen, no gradients)."""
    feats, labels = [], []
    pad = loaded.tokenizer.pad_token_id or 0
    with torch.inference_mode():
        for batch in make_batches(examples, batch_size, pad):
            out = loaded.model(input_ids=batch.input_ids, token_type_ids=batch.token_type_ids,
                               attention_mask=batch.attention_mask)
            tgt = _pad_targets(targets, batch.index, batch.input_ids.shape[1])
            sel = tgt != -100
            feats.append(out.last_hidden_state[sel].clone())
            labels.append(tgt[sel])
    return torch.cat(feats), torch.cat(labels)


def _score(head: MLMHead, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """Mean cross-entropy and top-1 accuracy of ``head`` on hidden states ``x`` with targets ``y``."""
    with torch.no_grad():
        logits = head(x)
        return float(nn.functional.cross_entropy(logits, y)), float((logits.argmax(-1) == y).float().mean())


def fit_mlm_head(
    loaded: LoadedModel,
    train: Sequence[Encoded],
    heldout: Sequence[Encoded],
    *,
    steps: int,
    batch_size: int,
    validation: Sequence[Encoded] | None = None,
    seed: int = 0,
    lr: float = 1e-3,
    eval_every: int = MLM_EVAL_EVERY,
    patience: int = MLM_PATIENCE,
    progress: bool = True,
) -> MLMHeadFit:
    """Fit BERT's MLM head architecture on the frozen encoder's final hidden states, with early stopping.

    Hidden states at the masked positions are computed once; then Adam steps of ``batch_size`` segments' worth of
    masked positions train the head, through the book's one loop (:func:`attnbook.engine.train.fit`): each of its
    "epochs" is ``eval_every`` updates, after which the evaluation callback scores the head on the ``validation``
    segments (default: ``heldout``). The fit stops after ``patience`` evaluations without a lower validation loss,
    or after ``steps`` updates, and keeps the weights of the best evaluation (``select="best"``). The returned
    held-out loss and accuracy are measured on ``heldout``, which should be disjoint from ``validation`` so that
    choosing the step does not flatter them.
    """
    torch.manual_seed(seed)
    tok = loaded.tokenizer
    train_masked, train_tgt = masked_copies(train, tok, seed)
    held_masked, held_tgt = masked_copies(heldout, tok, seed + 1)
    x, y = _encode_hidden(loaded, train_masked, train_tgt, batch_size)
    hx, hy = _encode_hidden(loaded, held_masked, held_tgt, batch_size)
    if validation is None:
        vx, vy = hx, hy
    else:
        val_masked, val_tgt = masked_copies(validation, tok, seed + 2)
        vx, vy = _encode_hidden(loaded, val_masked, val_tgt, batch_size)
    head = _new_head(loaded)
    emb = head.word_embeddings
    per_step = max(1, int(len(x) * batch_size / max(len(train), 1)))
    gen = torch.Generator().manual_seed(seed)
    eval_every = max(1, int(eval_every))
    curve: list[dict] = []
    state = {"done": 0, "best": float("inf"), "since": 0}

    def evaluate(model: MLMHead) -> float:
        loss, top1 = _score(model, vx, vy)
        curve.append({"step": state["done"], "loss": loss, "top1": top1})
        if loss < state["best"]:
            state["best"], state["since"] = loss, 0
        else:
            state["since"] += 1
        return -loss  # fit keeps the highest

    def chunks():
        while state["done"] < steps and (not curve or state["since"] < patience):
            k = min(eval_every, steps - state["done"])
            state["done"] += k
            yield [torch.randint(0, len(x), (per_step,), generator=gen) for _ in range(k)]

    emb.weight.requires_grad_(False)
    try:
        log = fit(head, chunks(), lambda model, idx: nn.functional.cross_entropy(model(x[idx]), y[idx]),
                  Recipe(lr=lr, schedule="constant", fused=False, select="best" if steps > 0 else "last"),
                  evaluate=evaluate if steps > 0 else None, progress=progress, desc="fitting MLM head")
    finally:
        emb.weight.requires_grad_(True)
    best_step = curve[log.best_epoch - 1]["step"] if curve and log.best_epoch else 0
    held_loss, held_acc = _score(head, hx, hy)
    return MLMHeadFit(head, "fitted on the frozen encoder", held_loss, held_acc, int(state["done"]), curve,
                      int(best_step), float(log.seconds))


@cache.memoized("mlm_head", ignore=("progress",))
def fitted_head_arrays(
    loaded: LoadedModel,
    train: Sequence[Encoded],
    heldout: Sequence[Encoded],
    *,
    steps: int,
    batch_size: int,
    validation: Sequence[Encoded] | None,
    seed: int,
    lr: float,
    eval_every: int,
    patience: int = MLM_PATIENCE,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """:func:`fit_mlm_head` as arrays (the head's trained weights, its held-out scores, its fit and its curve),
    cached by model, segments and settings. ``patience`` is :data:`MLM_PATIENCE`, named so that a change of it
    names new entries."""
    fit = fit_mlm_head(loaded, train, heldout, steps=steps, batch_size=batch_size, validation=validation,
                       seed=seed, lr=lr, eval_every=eval_every, progress=progress)
    arrays = {k: v.detach().numpy() for k, v in fit.head.trainable_state().items()}
    arrays["_heldout"] = np.array([fit.heldout_loss, fit.heldout_accuracy])
    arrays["_fit"] = np.array([fit.steps, fit.best_step, fit.seconds])
    arrays["_curve"] = np.array([[c["step"], c["loss"], c["top1"]] for c in fit.curve]).reshape(-1, 3)
    return arrays


def get_mlm_head(
    loaded: LoadedModel,
    train: Sequence[Encoded],
    heldout: Sequence[Encoded],
    *,
    steps: int,
    batch_size: int,
    validation: Sequence[Encoded] | None = None,
    seed: int = 0,
    lr: float = 1e-3,
    eval_every: int = MLM_EVAL_EVERY,
    progress: bool = True,
) -> MLMHeadFit:
    """The checkpoint's own MLM head when it has one, else a head fitted on the frozen encoder
    (:func:`fit_mlm_head`, at most ``steps`` updates, early stopping on ``validation``; cached)."""
    if has_mlm_head(loaded.path):
        head = _load_pretrained_head(loaded)
        masked, tgt = masked_copies(heldout, loaded.tokenizer, seed + 1)
        hx, hy = _encode_hidden(loaded, masked, tgt, batch_size)
        loss, acc = _score(head, hx, hy)
        return MLMHeadFit(head, "pretrained", loss, acc, 0)
    if steps < 1:
        raise ValueError(
            f"model {loaded.name} has no MLM head and mlm_fit_steps={steps}; set mlm_fit_steps > 0 to fit one"
        )
    arrays = fitted_head_arrays(loaded, train, heldout, steps=steps, batch_size=batch_size, validation=validation,
                                seed=seed, lr=lr, eval_every=eval_every, progress=progress)
    head = _new_head(loaded)
    head.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items() if not k.startswith("_")}, strict=False)
    loss, acc = arrays["_heldout"].tolist()
    done, best, seconds = arrays["_fit"].tolist()
    curve = [{"step": int(s), "loss": float(lo), "top1": float(t)} for s, lo, t in arrays["_curve"].tolist()]
    return MLMHeadFit(head, "fitted on the frozen encoder", loss, acc, int(done), curve, int(best), float(seconds))


class GradientReducer(Protocol):
    """Folds each batch's attention gradients into running totals (the gradient twin of ``Reducer``)."""

    def update(self, grads: torch.Tensor, batch: Batch, targets: torch.Tensor) -> None:
        """``grads[batch, layer, head, query, key]`` = ``dL / d attn``; ``targets[batch, seq]`` is -100 except
        at the masked pieces (which hold the original ids)."""

    def result(self) -> Any:
        ...


def stream_attention_gradients(
    loaded: LoadedModel,
    head: MLMHead,
    examples: Sequence[Encoded],
    reducers: Sequence[GradientReducer] | dict[str, GradientReducer],
    *,
    batch_size: int = 8,
    seed: int = 0,
    progress: bool = True,
    desc: str = "attention gradients",
) -> Any:
    """Mask ``examples`` BERT-style (seeded), and feed each batch's ``dL / d attn`` to every reducer.

    ``L`` is the per-segment mean MLM loss over the masked pieces (:func:`per_segment_mlm_loss`)
    of ``head`` on the final hidden states. The attention weights the model returns are the very
    tensors it multiplies with the values (eager attention, eval mode), so ``torch.autograd.grad``
    with respect to them is the gradient Clark et al. describe. Returns the reducers' results (a
    list, or a dict when reducers were given as a dict).
    """
    from tqdm.auto import tqdm

    tok = loaded.tokenizer
    named = dict(reducers) if isinstance(reducers, dict) else {str(i): r for i, r in enumerate(reducers)}
    masked, targets = masked_copies(examples, tok, seed)
    model = loaded.model
    model.eval()
    n_batches = math.ceil(len(masked) / batch_size)
    for batch in tqdm(make_batches(masked, batch_size, tok.pad_token_id or 0), total=n_batches,
                      desc=desc, disable=not progress):
        tgt = _pad_targets(targets, batch.index, batch.input_ids.shape[1])
        with torch.enable_grad():
            out = model(input_ids=batch.input_ids, token_type_ids=batch.token_type_ids,
                        attention_mask=batch.attention_mask, output_attentions=True)
            loss = per_segment_mlm_loss(head(out.last_hidden_state), tgt)
            grads = torch.autograd.grad(loss, out.attentions)
        stacked = torch.stack(grads, 1)
        for reducer in named.values():
            reducer.update(stacked, batch, tgt)
    results = {k: r.result() for k, r in named.items()}
    return results if isinstance(reducers, dict) else [results[str(i)] for i in range(len(named))]
