"""Sweeps: the dev-set score of a classifier with each head (or layer) switched off.

Kovaleva et al. §4.6 disable one head at a time (Fig. 8) and one whole layer at a time
(Fig. 9) and report the task score; Michel et al. §3.2 mask one head at a time and report
Δ = score(without h) − base score. Both are "evaluate a classifier on the dev set under
many head configurations", which is what this module does:

* :func:`sweep_single_heads` — every head in turn (``mode="disable"``: Kovaleva's uniform
  attention; ``mode="mask"``: Michel's ξ_h = 0), scores ``[layer, head]``;
* :func:`sweep_layers` — every layer in turn, scores ``[layer]``;
* :func:`sweep_configs` — any list of configurations ``[config, layer, head]``.

**Fast path.** Switching off a head of layer ``l`` cannot change anything below ``l``. So
per dev batch we run one baseline forward that keeps the hidden states entering every
layer, and for a configuration whose first touched layer is ``l`` we run only layers
``l .. L-1`` from the kept input, several configurations per forward pass (the batch is
tiled, one copy per configuration). The naive path (a full forward per configuration)
is kept for comparison; both give the same logits (tests check < 1e-5).

**Around it.** The score functions are :mod:`attnbook.engine.scores` (importable from here too) and the
paired statistics of a sweep (bootstrap of Δ, McNemar, gains surviving a correction)
:mod:`attnbook.engine.sweep_stats`. A :class:`SweepResult` is stored by :func:`attnbook.core.cache.memoized` through
:meth:`SweepResult.to_arrays`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from attnbook.core.errors import EmptyDataError, ModelError, ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.inputs import Batch
from attnbook.engine.interventions import (
    Intervention,
    Mode,
    intervene,
    model_shape,
    restore_attention,
    unwrap,
    use_attnbook_attention,
)
from attnbook.engine.layers import first_query_only, has_bert_layer_parts
from attnbook.engine.scores import ScoreFn, accuracy, accuracy_points, correct, f1_positive, task_score_fn  # noqa: F401

# ----------------------------------------------------------------------------- batches


def as_batches(batches: Iterable[Any]) -> list[Batch]:
    """Normalise batches to :class:`~attnbook.engine.inputs.Batch`: batches as they are, or mappings with
    ``input_ids``/``attention_mask``/(``token_type_ids``) and ``labels`` (or ``label``)."""
    out = [b if isinstance(b, Batch) else Batch.from_mapping(b) for b in batches]
    if not out:
        raise EmptyDataError("no batches to evaluate")
    return out


def classification_batches(
    tokenizer: Any,
    first: Sequence[str],
    second: Sequence[str] | None = None,
    labels: Sequence[int | float] | None = None,
    *,
    batch_size: int = 32,
    max_length: int = 128,
) -> list[Batch]:
    """Tokenise sentence (pairs) into padded :class:`Batch` es, in input order."""
    if second is not None and len(second) != len(first):
        raise ParameterError(f"{len(first)} first sentences but {len(second)} second sentences")
    if labels is not None and len(labels) != len(first):
        raise ParameterError(f"{len(first)} sentences but {len(labels)} labels")
    out = []
    for start in range(0, len(first), batch_size):
        sl = slice(start, start + batch_size)
        enc = tokenizer(
            list(first[sl]),
            list(second[sl]) if second is not None else None,
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        )
        lab = torch.as_tensor(np.asarray(labels[sl])) if labels is not None else None
        out.append(Batch(enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids"), lab))
    if not out:
        raise EmptyDataError("no sentences to batch")
    return out


def gold_labels(batches: Sequence[Batch]) -> np.ndarray:
    """The gold labels of all batches, concatenated."""
    if any(b.labels is None for b in batches):
        raise ParameterError("scoring needs gold labels: give every batch a 'labels' entry")
    return torch.cat([b.labels.reshape(-1) for b in batches]).cpu().numpy()


# ----------------------------------------------------------------------------- model pieces


def output_of(out: Any) -> torch.Tensor:
    """What the sweeps score: ``logits`` of a classifier, else the pooled output (else [CLS])."""
    logits = getattr(out, "logits", None)
    if logits is not None:
        return logits
    pooled = getattr(out, "pooler_output", None)
    if pooled is not None:
        return pooled
    return out.last_hidden_state[:, 0]


class EncoderStack:
    """Layer-by-layer access to a BERT-family classifier, for running layers ``l..L-1`` alone.

    Supports ``BertModel`` (output: pooled [CLS]) and ``BertForSequenceClassification``
    (output: logits). Other models work with ``fast=False``.

    The output reads only the first ([CLS]) position of the last layer, so :meth:`run_from` computes
    that layer for the [CLS] query alone (keys and values of every token, the query, feed-forward and
    output of one): the same numbers as the whole layer, at a fraction of its cost. ``cls_only=False``
    runs the whole last layer.
    """

    def __init__(self, model: torch.nn.Module, cls_only: bool = True):
        self.model = model
        base = getattr(model, "base_model", model)
        if not (hasattr(base, "embeddings") and hasattr(getattr(base, "encoder", None), "layer")):
            raise ModelError(
                f"the fast sweep needs a BERT-style encoder (embeddings + encoder.layer); "
                f"{type(model).__name__} has none: use fast=False"
            )
        if getattr(base.config, "is_decoder", False):
            raise ModelError("the fast sweep supports bidirectional encoders only: use fast=False")
        self.base = base
        self.layers = list(base.encoder.layer)
        name = type(model).__name__
        if model is base:
            self._head = lambda h: base.pooler(h) if base.pooler is not None else h[:, 0]
        elif name.endswith("ForSequenceClassification") and hasattr(model, "classifier") and hasattr(model, "dropout"):
            if base.pooler is None:
                raise ModelError(f"{name} has no pooler: use fast=False")
            self._head = lambda h: model.classifier(model.dropout(base.pooler(h)))
        else:
            raise ModelError(f"the fast sweep supports BertModel and BertForSequenceClassification, not {name}: use fast=False")
        self.cls_only = cls_only and has_bert_layer_parts(self.layers[-1])

    def embed(self, inputs: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Embedding output and the 4D attention mask the layers receive (as ``BertModel.forward`` builds them)."""
        from transformers.masking_utils import create_bidirectional_mask

        emb = self.base.embeddings(input_ids=inputs["input_ids"], token_type_ids=inputs.get("token_type_ids"))
        mask = create_bidirectional_mask(
            config=self.base.config, inputs_embeds=emb, attention_mask=inputs.get("attention_mask")
        )
        return emb, mask

    def layer_inputs(self, inputs: Mapping[str, torch.Tensor]) -> tuple[list[torch.Tensor], torch.Tensor | None]:
        """``hidden[l]`` entering each layer ``l`` (``hidden[L]`` is the encoder output) and the mask."""
        h, mask = self.embed(inputs)
        hidden = [h]
        for layer in self.layers:
            h = layer(h, mask)
            hidden.append(h)
        return hidden, mask

    def run_from(self, start: int, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Run layers ``start..L-1`` and the head on ``hidden`` (the input of layer ``start``)."""
        h = hidden
        last = len(self.layers) - 1
        for layer in self.layers[start:last] if self.cls_only else self.layers[start:]:
            h = layer(h, mask)
        if self.cls_only and start <= last:
            h = first_query_only(self.layers[last], h, mask)  # [batch, 1, hidden]: the [CLS] row
        return self._head(h)


# ----------------------------------------------------------------------------- the engine


def _identity_layers(configs: torch.Tensor, mode: Mode) -> torch.Tensor:
    """``bool[config, layer]``: whether a configuration leaves the layer untouched."""
    if mode == "mask":
        return (configs == 1).all(-1)
    return ~configs.any(-1)


def first_touched_layer(configs: torch.Tensor, mode: Mode) -> np.ndarray:
    """For each configuration ``[layer, head]``, the first layer it changes (``n_layers`` if none)."""
    touched = ~_identity_layers(configs, mode)
    n_layers = configs.shape[1]
    first = torch.where(touched.any(-1), touched.to(torch.int64).argmax(-1), torch.full_like(touched[:, 0], n_layers, dtype=torch.int64))
    return first.cpu().numpy()


def _as_configs(configs: Any, mode: Mode, model: Any) -> torch.Tensor:
    n_layers, n_heads = model_shape(model)
    t = torch.as_tensor(np.asarray(configs)) if not isinstance(configs, torch.Tensor) else configs
    if t.ndim == 2:
        t = t[None]
    if t.ndim != 3 or tuple(t.shape[1:]) != (n_layers, n_heads):
        raise ParameterError(f"configurations have shape [n, {n_layers}, {n_heads}], got {tuple(t.shape)}")
    if mode == "mask":
        return t.to(torch.float32)
    if mode == "disable":
        return t.to(torch.bool)
    raise ParameterError(f"mode is 'mask' or 'disable', got {mode!r}")


def evaluate_configs(
    model: Any,
    batches: Iterable[Any],
    configs: Any,
    mode: Mode,
    *,
    fast: bool = True,
    configs_per_forward: int | None = None,
    max_rows: int = 32,
    progress: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs of ``model`` on every batch under every configuration.

    ``configs[config, layer, head]``: masks ξ (``mode="mask"``) or disabled flags
    (``mode="disable"``). Returns ``(outputs[config, example, ...], baseline[example, ...])``,
    examples in batch order. ``fast`` reuses the baseline's hidden states below each
    configuration's first touched layer; ``configs_per_forward`` (default: as many as fit in
    ``max_rows`` rows) configurations share one forward pass. On CPU, stacking more than about 32
    rows was measured to be slower per row (the maps of a large stacked batch fall out of cache), hence
    the small default; on a GPU a larger ``max_rows`` helps.
    """
    module = unwrap(model)
    cfg = _as_configs(configs, mode, module)
    data = as_batches(batches)
    stack = EncoderStack(module) if fast else None
    was_training = module.training
    module.eval()
    previous = use_attnbook_attention(module)
    device = next(module.parameters()).device
    cfg = cfg.to(device)
    outputs: list[torch.Tensor] = []
    baselines: list[torch.Tensor] = []
    try:
        with torch.inference_mode():
            iterator = data
            if progress:
                from tqdm.auto import tqdm

                iterator = tqdm(data, desc=f"sweep ({'fast' if fast else 'naive'})")
            for batch in iterator:
                inputs = {k: v.to(device) for k, v in batch.inputs.items()}
                if fast:
                    out, base = _fast_batch(stack, inputs, cfg, mode, configs_per_forward, max_rows)
                else:
                    out, base = _naive_batch(module, inputs, cfg, mode)
                outputs.append(out.float().cpu())
                baselines.append(base.float().cpu())
    finally:
        restore_attention(module, previous)
        module.train(was_training)
    return torch.cat(outputs, dim=1), torch.cat(baselines, dim=0)


def _naive_batch(module, inputs, cfg, mode) -> tuple[torch.Tensor, torch.Tensor]:
    base = output_of(module(**inputs))
    outs = []
    for k in range(cfg.shape[0]):
        with intervene(module, Intervention(mode, cfg[k])):
            outs.append(output_of(module(**inputs)))
    return torch.stack(outs), base


def _fast_batch(stack: EncoderStack, inputs, cfg, mode, configs_per_forward, max_rows):
    hidden, mask = stack.layer_inputs(inputs)
    base = stack.run_from(len(stack.layers), hidden[-1], mask)
    n_rows = hidden[0].shape[0]
    per_forward = configs_per_forward or max(1, max_rows // n_rows)
    starts = first_touched_layer(cfg, mode)
    out = torch.empty((cfg.shape[0], *base.shape), dtype=base.dtype, device=base.device)
    for start in np.unique(starts):
        idx = np.flatnonzero(starts == start)
        if start >= len(stack.layers):  # touches nothing
            out[idx] = base
            continue
        for lo in range(0, len(idx), per_forward):
            chunk = idx[lo : lo + per_forward]
            g = len(chunk)
            h = hidden[start].repeat(g, 1, 1)
            m = mask.repeat(g, 1, 1, 1) if mask is not None else None
            with intervene(stack.model, Intervention(mode, cfg[torch.as_tensor(chunk, device=cfg.device)])):
                res = stack.run_from(int(start), h, m)
            out[torch.as_tensor(chunk)] = res.reshape(g, n_rows, *res.shape[1:])
    return out, base


# ----------------------------------------------------------------------------- sweeps


@dataclass
class SweepResult:
    """Scores of a model under a set of head interventions, with the outputs behind them.

    ``scores`` is ``[layer, head]`` (single heads), ``[layer]`` (layers) or ``[config]``;
    ``outputs`` is ``[*scores.shape, example, class]``; ``names`` are the 1-based labels shown
    to readers, in ``scores.reshape(-1)`` order.
    """

    kind: str
    mode: str
    scores: np.ndarray
    baseline_score: float
    outputs: np.ndarray
    baseline_outputs: np.ndarray
    gold: np.ndarray
    names: list[str]
    meta: dict = field(default_factory=dict)

    @property
    def delta(self) -> np.ndarray:
        """Score change, intervened − baseline (Michel's Δ, Kovaleva's gain)."""
        return self.scores - self.baseline_score

    def predictions(self) -> np.ndarray:
        """Arg-max classes ``[*scores.shape, example]`` under each intervention."""
        return np.argmax(self.outputs, axis=-1)

    def flat_outputs(self) -> np.ndarray:
        """Outputs as ``[config, example, class]`` in ``names`` order."""
        return self.outputs.reshape(-1, *self.outputs.shape[self.scores.ndim :])

    def table(self):
        """Long table: name, 1-based layer (and head), score, delta."""
        import pandas as pd

        rows = []
        for i, (name, score) in enumerate(zip(self.names, self.scores.reshape(-1))):
            row = {"name": name, "score": float(score), "delta": float(score - self.baseline_score)}
            if self.kind == "single_heads" or self.kind == "all_but_one":
                layer, head = np.unravel_index(i, self.scores.shape)
                row.update(layer=int(layer) + 1, head=int(head) + 1)
            elif self.kind == "layers":
                row.update(layer=i + 1)
            rows.append(row)
        return pd.DataFrame(rows)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The result as plain arrays (for :func:`attnbook.core.cache.cached_arrays`); :meth:`from_arrays` inverts it."""
        return {"scores": self.scores, "baseline_score": np.asarray(self.baseline_score), "outputs": self.outputs,
                "baseline_outputs": self.baseline_outputs, "gold": self.gold, "names": np.asarray(self.names),
                "kind": np.asarray(self.kind), "mode": np.asarray(self.mode)}

    @classmethod
    def from_arrays(cls, got: Mapping[str, np.ndarray]) -> "SweepResult":
        return cls(kind=str(got["kind"]), mode=str(got["mode"]), scores=got["scores"],
                   baseline_score=float(got["baseline_score"]), outputs=got["outputs"],
                   baseline_outputs=got["baseline_outputs"], gold=got["gold"], names=[str(n) for n in got["names"]],
                   meta={"cached": True})


def sweep_configs(
    model: Any,
    batches: Iterable[Any],
    configs: Any,
    mode: Mode = "disable",
    score_fn: ScoreFn = accuracy,
    *,
    names: Sequence[str] | None = None,
    kind: str = "configs",
    shape: tuple[int, ...] | None = None,
    fast: bool = True,
    configs_per_forward: int | None = None,
    progress: bool = False,
) -> SweepResult:
    """Score ``model`` on ``batches`` under each configuration ``configs[config, layer, head]``."""
    data = as_batches(batches)
    gold = gold_labels(data)
    outs, base = evaluate_configs(
        model, data, configs, mode, fast=fast, configs_per_forward=configs_per_forward, progress=progress
    )
    outs_np, base_np = outs.numpy(), base.numpy()
    scores = np.array([score_fn(o, gold) for o in outs_np], dtype=np.float64)
    shape = shape or (len(scores),)
    return SweepResult(
        kind=kind,
        mode=mode,
        scores=scores.reshape(shape),
        baseline_score=float(score_fn(base_np, gold)),
        outputs=outs_np.reshape(*shape, *outs_np.shape[1:]),
        baseline_outputs=base_np,
        gold=gold,
        names=list(names) if names is not None else [str(i) for i in range(len(scores))],
        meta={"fast": fast, "n_examples": int(len(gold))},
    )


def single_head_configs(n_layers: int, n_heads: int, mode: Mode, *, keep_only: bool = False) -> np.ndarray:
    """One configuration per head, layer-major: that head switched off (or, with ``keep_only``,
    every *other* head of its layer switched off — Michel §3.3)."""
    k = n_layers * n_heads
    off = np.zeros((k, n_layers, n_heads), dtype=bool)
    for i in range(k):
        layer, head = divmod(i, n_heads)
        if keep_only:
            off[i, layer, :] = True
            off[i, layer, head] = False
        else:
            off[i, layer, head] = True
    return (~off).astype(np.float32) if mode == "mask" else off


def sweep_single_heads(
    model: Any,
    batches: Iterable[Any],
    mode: Mode = "disable",
    score_fn: ScoreFn = accuracy,
    **kwargs: Any,
) -> SweepResult:
    """Each head switched off on its own; ``.scores[layer, head]``.

    ``mode="disable"``: Kovaleva et al. §4.6, Fig. 8 (uniform attention);
    ``mode="mask"``: Michel et al. §3.2 (ξ_h = 0, Δ = score without h − base).
    """
    n_layers, n_heads = model_shape(unwrap(model))
    configs = single_head_configs(n_layers, n_heads, mode)
    names = [head_label(l, h) for l in range(n_layers) for h in range(n_heads)]
    return sweep_configs(
        model, batches, configs, mode, score_fn, names=names, kind="single_heads", shape=(n_layers, n_heads), **kwargs
    )


def sweep_all_but_one(
    model: Any, batches: Iterable[Any], mode: Mode = "mask", score_fn: ScoreFn = accuracy, **kwargs: Any
) -> SweepResult:
    """Michel §3.3: in one layer keep only head ``h`` (mask the others), every other layer intact.

    ``.scores[layer, head]`` is the score with only ``head`` left in ``layer``.
    """
    n_layers, n_heads = model_shape(unwrap(model))
    configs = single_head_configs(n_layers, n_heads, mode, keep_only=True)
    names = [f"only {head_label(l, h)}" for l in range(n_layers) for h in range(n_heads)]
    return sweep_configs(
        model, batches, configs, mode, score_fn, names=names, kind="all_but_one", shape=(n_layers, n_heads), **kwargs
    )


def fast_path_check(model: Any, batches: Iterable[Any], mode: Mode = "disable", score_fn: ScoreFn = accuracy) -> dict:
    """The fast single-head sweep against a full forward pass per head on the same data: the largest absolute
    difference of their outputs (it should be float rounding, < 1e-5), with the sizes compared.
    How much faster the fast path is, is measured by ``make bench``, not here."""
    data = as_batches(batches)
    fast = sweep_single_heads(model, data, mode, score_fn, fast=True)
    naive = sweep_single_heads(model, data, mode, score_fn, fast=False)
    return {"mode": mode, "n_examples": int(len(fast.gold)), "n_configs": int(fast.scores.size),
            "max_abs_output_diff": float(np.max(np.abs(fast.outputs - naive.outputs)))}


def sweep_layers(
    model: Any,
    batches: Iterable[Any],
    mode: Mode = "disable",
    score_fn: ScoreFn = accuracy,
    **kwargs: Any,
) -> SweepResult:
    """Every head of one layer switched off, each layer in turn; ``.scores[layer]`` (Kovaleva §4.6, Fig. 9)."""
    n_layers, n_heads = model_shape(unwrap(model))
    off = np.zeros((n_layers, n_layers, n_heads), dtype=bool)
    for layer in range(n_layers):
        off[layer, layer] = True
    configs = (~off).astype(np.float32) if mode == "mask" else off
    names = [f"layer {l + 1}" for l in range(n_layers)]
    return sweep_configs(model, batches, configs, mode, score_fn, names=names, kind="layers", shape=(n_layers,), **kwargs)
