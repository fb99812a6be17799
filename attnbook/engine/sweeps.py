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

BERT's layout (BERT, RoBERTa, XLM-R, ELECTRA) runs its layers one by one (:class:`EncoderStack`). Every other
encoder family of :mod:`attnbook.engine.families` runs its own forward on the tiled batch while the layers below
``l`` hand back the outputs kept from the baseline instead of computing them (:class:`LayerReplay`): masks,
position biases, rotary embeddings, DeBERTa's relative positions and every family's pooling and classifier head
come from the model's own code. Where the output reads the first token only, both compute the last layer for
that query alone (:mod:`attnbook.engine.layers`).

**Around it.** The score functions are :mod:`attnbook.engine.scores` (importable from here too) and the
paired statistics of a sweep (bootstrap of Δ, McNemar, gains surviving a correction)
:mod:`attnbook.engine.sweep_stats`. A :class:`SweepResult` is stored by :func:`attnbook.core.cache.memoized` through
:meth:`SweepResult.to_arrays`.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from attnbook.core.errors import EmptyDataError, ModelError, ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.families import UnsupportedModelError, base_model, family_of, layer_modules, model_shape
from attnbook.engine.inputs import Batch
from attnbook.engine.interventions import (
    Intervention,
    Mode,
    intervene,
    restore_attention,
    tile_batch,
    unwrap,
    use_attnbook_attention,
)
from attnbook.engine.layers import first_query_layer, first_query_only, has_bert_layer_parts
from attnbook.engine.sweep_result import SweepResult
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


#: families built like BERT (``embeddings``, ``encoder.layer`` of ``BertLayer``-like layers): :class:`EncoderStack`
BERT_LAYOUT = ("bert", "roberta", "xlm-roberta", "electra")


class EncoderStack:
    """Layer-by-layer access to a classifier of BERT's layout, for running layers ``l..L-1`` alone.

    Supports ``BertModel`` (output: pooled [CLS]) and ``BertForSequenceClassification``
    (output: logits), and the classifiers and bare encoders of RoBERTa, XLM-R and ELECTRA
    (:data:`BERT_LAYOUT`: the same layers; their classifier heads read the first token). Every other
    model gets :class:`LayerReplay` (:func:`fast_runner`).

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
        try:
            family = family_of(model)
        except UnsupportedModelError:
            family = None
        self._token_types = family is None or family.takes_token_type_ids(base.config)
        name = type(model).__name__
        if model is base:
            self._head = lambda h: base.pooler(h) if getattr(base, "pooler", None) is not None else h[:, 0]
        elif name.endswith("ForSequenceClassification") and hasattr(model, "classifier") and hasattr(model, "dropout"):
            if base.pooler is None:
                raise ModelError(f"{name} has no pooler: use fast=False")
            self._head = lambda h: model.classifier(model.dropout(base.pooler(h)))
        elif (family is not None and family.name in BERT_LAYOUT and family.name != "bert"
              and name == family.classifier_class):  # the head reads features[:, 0] itself
            self._head = lambda h: model.classifier(h)
        else:
            raise ModelError(f"the fast sweep supports BertModel and BertForSequenceClassification, not {name}: use fast=False")
        self.cls_only = cls_only and has_bert_layer_parts(self.layers[-1])

    @staticmethod
    def supports(model: torch.nn.Module) -> bool:
        """Whether ``model`` has BERT's layout (a family of :data:`BERT_LAYOUT` with ``embeddings`` and
        ``encoder.layer``), so its layers can run one by one here; a model outside the family table is refused by
        :func:`~attnbook.engine.families.family_of`, naming the families."""
        base = getattr(model, "base_model", model)
        return (family_of(model).name in BERT_LAYOUT and hasattr(base, "embeddings")
                and hasattr(getattr(base, "encoder", None), "layer"))

    def embed(self, inputs: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Embedding output and the 4D attention mask the layers receive (as ``BertModel.forward`` builds them)."""
        types = inputs.get("token_type_ids") if self._token_types else None  # RoBERTa's are dropped by its model
        emb = self.base.embeddings(input_ids=inputs["input_ids"], token_type_ids=types)
        project = getattr(self.base, "embeddings_project", None)  # ELECTRA: embedding size -> hidden size
        if project is not None:
            emb = project(emb)
        return emb, self.mask(emb, inputs.get("attention_mask"))

    def mask(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor | None:
        """The 4D attention mask the layers receive for ``hidden[n, seq, d]`` and ``attention_mask[n, seq]`` (1 = a
        real token), built as ``BertModel.forward`` builds it."""
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.base.config, inputs_embeds=hidden, attention_mask=attention_mask)

    def run_layers(self, start: int, stop: int, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """``hidden`` (the input of layer ``start``) through layers ``start..stop-1``: the input of layer ``stop``."""
        for layer in self.layers[start:stop]:
            hidden = layer(hidden, mask)
        return hidden

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
        last = len(self.layers) - 1
        h = self.run_layers(start, last if self.cls_only else len(self.layers), hidden, mask)
        if self.cls_only and start <= last:
            h = first_query_only(self.layers[last], h, mask)  # [batch, 1, hidden]: the [CLS] row
        return self._head(h)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    def start(self, inputs: Mapping[str, torch.Tensor]) -> tuple[Any, torch.Tensor, int]:
        """The baseline of a batch: ``(kept state, baseline output, rows)`` (:func:`_fast_batch`)."""
        hidden, mask = self.layer_inputs(inputs)
        return (hidden, mask), self.run_from(len(self.layers), hidden[-1], mask), hidden[0].shape[0]

    def resume(self, start: int, state: Any, copies: int) -> torch.Tensor:
        """The output of ``copies`` tiled copies of the batch from layer ``start`` on (interventions active)."""
        hidden, mask = state
        h = hidden[start].repeat(copies, 1, 1)
        m = mask.repeat(copies, 1, 1, 1) if mask is not None else None
        return self.run_from(start, h, m)


def _tiled(value: Any, copies: int) -> Any:
    """``value`` (a layer's output: a tensor or a tuple of them) repeated ``copies`` times along dim 0."""
    if isinstance(value, torch.Tensor):
        return value.repeat(copies, *([1] * (value.ndim - 1))) if value.ndim else value
    if isinstance(value, tuple):
        return tuple(_tiled(v, copies) for v in value)
    if isinstance(value, list):
        return [_tiled(v, copies) for v in value]
    return value


class LayerReplay:
    """The fast sweep's layer access for any encoder family (:mod:`attnbook.engine.families`).

    :meth:`start` runs the model's own forward once on a batch and keeps every layer's output (one per depth;
    ALBERT's shared layer once per depth). :meth:`resume` runs the model's own forward on the batch tiled
    ``copies`` times while each layer below ``start`` hands back its kept output, tiled, instead of computing:
    the embeddings, the masks and whatever the family computes beside its layers (MPNet's position bias,
    DeBERTa's relative positions and its convolution after layer 1, ModernBERT's rotary embeddings and final
    norm, the pooling and classifier head) run as the model's code runs them, from layer ``start`` on under the
    active interventions. Layers below ``start`` see no intervention in the configurations it runs, so the
    outputs are the naive path's up to float rounding.

    When the output reads the first token only (a classifier pooling the first token, or the bare encoder) and the
    family has one (:func:`attnbook.engine.layers.first_query_layer`), the last layer is computed for the first
    query alone, as :class:`EncoderStack` does for BERT (``first_only=False``: the whole layer).
    """

    def __init__(self, model: torch.nn.Module, first_only: bool = True):
        self.model = model
        self.layers = layer_modules(model)
        self.depths: dict[int, list[int]] = {}
        for depth, layer in enumerate(self.layers):
            self.depths.setdefault(id(layer), []).append(depth)
        self.unique = list({id(layer): layer for layer in self.layers}.values())
        family = family_of(model)
        reads_first = model is base_model(model) or (
            type(model).__name__ == family.classifier_class and family.pooling_of(model.config) == "first")
        self.first = first_query_layer(family.name) if first_only and reads_first else None

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    def start(self, inputs: Mapping[str, torch.Tensor]) -> tuple[Any, torch.Tensor, int]:
        kept: list[Any] = []
        handles = [layer.register_forward_hook(lambda module, args, out: kept.append(out)) for layer in self.unique]
        try:
            base = output_of(self.model(**inputs))
        finally:
            for handle in handles:
                handle.remove()
        if len(kept) != self.n_layers:
            raise ModelError(f"{type(self.model).__name__} ran {len(kept)} layer calls for {self.n_layers} depths: "
                             "use fast=False")
        return (dict(inputs), kept), base, int(inputs["input_ids"].shape[0])

    def resume(self, start: int, state: Any, copies: int) -> torch.Tensor:
        inputs, kept = state
        below = [_tiled(out, copies) for out in kept[:start]]
        calls = {id(layer): 0 for layer in self.unique}
        saved = {id(layer): layer.__dict__.get("forward") for layer in self.unique}
        last = self.n_layers - 1

        def skipping(layer: torch.nn.Module):
            compute = layer.forward

            def forward(*args: Any, **kwargs: Any) -> Any:
                i = calls[id(layer)]
                calls[id(layer)] = i + 1
                depths = self.depths[id(layer)]
                depth = depths[i % len(depths)]
                if depth < start:
                    return below[depth]
                if depth == last and self.first is not None:
                    out = self.first(layer, args, kwargs)
                    if out is not NotImplemented:
                        return out
                return compute(*args, **kwargs)

            return forward

        for layer in self.unique:
            layer.forward = skipping(layer)
        try:
            return output_of(self.model(**tile_batch(inputs, copies)))
        finally:
            for layer in self.unique:
                if saved[id(layer)] is None:
                    del layer.forward
                else:
                    layer.forward = saved[id(layer)]


def fast_runner(model: torch.nn.Module) -> EncoderStack | LayerReplay:
    """The fast sweep's layer access for ``model``: :class:`EncoderStack` for BERT's layout (:data:`BERT_LAYOUT`:
    the classifier or bare encoder), :class:`LayerReplay` for every other family of :mod:`attnbook.engine.families`
    (and any head the stack does not read)."""
    try:
        family = family_of(model)
    except UnsupportedModelError:
        return EncoderStack(model)  # outside the family table: BERT's layout or a ModelError saying fast=False
    if family.name in BERT_LAYOUT:
        try:
            return EncoderStack(model)
        except ModelError:
            pass
    return LayerReplay(model)


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
    n_layers, n_heads, _ = model_shape(unwrap(model))
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
    stack = fast_runner(module) if fast else None
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


def _fast_batch(stack: EncoderStack | LayerReplay, inputs, cfg, mode, configs_per_forward, max_rows):
    state, base, n_rows = stack.start(inputs)
    per_forward = configs_per_forward or max(1, max_rows // n_rows)
    starts = first_touched_layer(cfg, mode)
    out = torch.empty((cfg.shape[0], *base.shape), dtype=base.dtype, device=base.device)
    for start in np.unique(starts):
        idx = np.flatnonzero(starts == start)
        if start >= stack.n_layers:  # touches nothing
            out[idx] = base
            continue
        for lo in range(0, len(idx), per_forward):
            chunk = idx[lo : lo + per_forward]
            g = len(chunk)
            with intervene(stack.model, Intervention(mode, cfg[torch.as_tensor(chunk, device=cfg.device)])):
                res = stack.resume(int(start), state, g)
            out[torch.as_tensor(chunk)] = res.reshape(g, n_rows, *res.shape[1:])
    return out, base


# ----------------------------------------------------------------------------- sweeps


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
    n_layers, n_heads, _ = model_shape(unwrap(model))
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
    n_layers, n_heads, _ = model_shape(unwrap(model))
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
    n_layers, n_heads, _ = model_shape(unwrap(model))
    off = np.zeros((n_layers, n_layers, n_heads), dtype=bool)
    for layer in range(n_layers):
        off[layer, layer] = True
    configs = (~off).astype(np.float32) if mode == "mask" else off
    names = [f"layer {l + 1}" for l in range(n_layers)]
    return sweep_configs(model, batches, configs, mode, score_fn, names=names, kind="layers", shape=(n_layers,), **kwargs)
