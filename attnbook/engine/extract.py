"""The extraction engine: batched forward passes that stream attention maps into reducers.

Holding every map is out of the question (1000 segments x 144 heads x 128 x 128
float32 is 9.4 GB), so the engine never keeps them. It sorts inputs by length
(bucketing keeps padding low), runs one forward pass per batch with
``output_attentions=True``, stacks the layers into one tensor (when a reducer needs it)

    ``attn[batch, layer, head, query, key]``

and hands it to every reducer, which folds it into running sums. A reducer that
also has ``update_layers(layers, batch)`` can take the model's per-layer maps
``layers[layer][batch, head, query, key]`` as they are; when every reducer of a
pass can, the stacking copy (a tenth of the forward pass's time) is skipped. Padded query
rows and key columns are zero in the maps the model returns for keys (the mask
adds -inf before the softmax) but *not* for queries: reducers must use
``batch.query_mask`` when they average over queries. :func:`attention_maps` is the one-batch form for a model of any
family (pruned heads as NaN at their original place), which ``attnbook.heads.attention`` shows.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Protocol, Sequence

import numpy as np
import torch

from attnbook.core import memory
from attnbook.core.errors import EmptyDataError, ModelError, ParameterError
from attnbook.engine.families import model_shape, sites, slices_of
from attnbook.engine.inputs import Batch, Encoded, make_batches  # noqa: F401  (re-exported for reducers)
from attnbook.engine.models import LoadedModel


class Reducer(Protocol):
    """Folds attention maps into statistics, one batch at a time.

    Optionally a reducer also defines ``update_layers(layers, batch)``, taking the per-layer maps
    ``layers[layer][batch, head, query, key]`` unstacked (see the module docstring).
    """

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        """``attn[batch, layer, head, query, key]`` (float32, padded to the batch's longest input)."""

    def result(self) -> Any:
        """The statistics, usually a dict of numpy arrays indexed ``[layer, head, ...]``."""


def check_inputs(loaded: LoadedModel, examples: Sequence[Encoded]) -> None:
    """Refuse empty input and inputs longer than the model's window.

    attnbook never truncates silently inside the engine: inputs are truncated when they are built
    (:func:`attnbook.studies.clark.segments.encode_pair`, :func:`attnbook.engine.inputs.encode_words`, each stating its rule),
    so an over-long input here is a caller's mistake.
    """

    if len(examples) == 0:
        raise EmptyDataError("no inputs to run the model on (did a filter remove everything?)")
    longest = max(len(e) for e in examples)
    if longest > loaded.max_length:
        raise ParameterError(
            f"an input has {longest} word pieces but {loaded.name} reads at most {loaded.max_length}; "
            "build inputs with a smaller max_tokens (they are truncated by the stated rule when built)"
        )


def forward_layer_attentions(model: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, ...]:
    """One forward pass; returns the per-layer maps ``layers[layer][batch, head, query, key]``.

    The pass runs on the model's device (a GPU when the model was loaded there) and the maps come back
    on the CPU as float32, beside ``batch``, so every reducer works the same whatever the device.
    """
    device = next(model.parameters()).device
    on = batch.to(device) if device.type != "cpu" else batch
    out = model(
        input_ids=on.input_ids,
        token_type_ids=on.token_type_ids,
        attention_mask=on.attention_mask,
        output_attentions=True,
    )
    if device.type == "cpu":
        return tuple(out.attentions)
    return tuple(a.float().cpu() for a in out.attentions)


def forward_attentions(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    """One forward pass; returns ``attn[batch, layer, head, query, key]``."""
    return torch.stack(forward_layer_attentions(model, batch), dim=1)


def stream_attention(
    loaded: LoadedModel,
    examples: Sequence[Encoded],
    reducers: Sequence[Reducer] | dict[str, Reducer],
    *,
    batch_size: int = 32,
    progress: bool = True,
    desc: str = "extracting attention",
) -> Any:
    """Run ``loaded.model`` over ``examples`` and feed every batch's maps to each reducer.

    Returns the reducers' results (a list, or a dict when reducers were given as a dict).
    Memory stays flat in the number of examples: one batch of maps is alive at a time.
    """
    from tqdm.auto import tqdm

    check_inputs(loaded, examples)
    named = dict(reducers) if isinstance(reducers, dict) else {str(i): r for i, r in enumerate(reducers)}
    pad_id = loaded.tokenizer.pad_token_id or 0
    model = loaded.model
    was_training = model.training
    model.eval()
    n_batches = (len(examples) + batch_size - 1) // batch_size
    by_layer = all(callable(getattr(r, "update_layers", None)) for r in named.values())
    try:
        with torch.inference_mode(), memory.streaming():
            for batch in tqdm(
                make_batches(examples, batch_size, pad_id), total=n_batches, desc=desc, disable=not progress
            ):
                layers = forward_layer_attentions(model, batch)
                if by_layer:
                    for reducer in named.values():
                        reducer.update_layers(layers, batch)
                    continue
                attn = torch.stack(layers, dim=1)
                del layers
                for reducer in named.values():
                    reducer.update(attn, batch)
    finally:
        model.train(was_training)
    results = {k: r.result() for k, r in named.items()}
    return results if isinstance(reducers, dict) else [results[str(i)] for i in range(len(named))]


def stream_batches(
    model: LoadedModel | torch.nn.Module,
    batches: Sequence[Batch],
    reducers: Sequence[Reducer] | dict[str, Reducer],
    *,
    progress: bool = False,
    desc: str = "attention over batches",
) -> Any:
    """Feed the maps ``attn[batch, layer, head, query, key]`` of ready-made ``batches`` to each reducer.

    For batches that already exist (a classifier's dev batches, :class:`Batch` es with gold labels)
    where :func:`stream_attention` would encode and bucket :class:`Encoded` inputs itself. ``model`` is a
    :class:`LoadedModel` or a torch module returning attentions; it runs in eval mode without gradients.
    Returns the reducers' results like :func:`stream_attention`.
    """
    from tqdm.auto import tqdm

    net = model.model if isinstance(model, LoadedModel) else model
    table = reducers if isinstance(reducers, dict) else dict(enumerate(reducers))
    mode = net.training
    net.eval()
    try:
        with torch.inference_mode(), memory.streaming():
            for batch in tqdm(batches, desc=desc, disable=not progress):
                maps = forward_attentions(net, batch)
                for reducer in table.values():
                    reducer.update(maps, batch)
    finally:
        net.train(mode)
    out = {name: reducer.result() for name, reducer in table.items()}
    return out if isinstance(reducers, dict) else list(out.values())


def collect_maps(loaded: LoadedModel, examples: Sequence[Encoded], batch_size: int = 16) -> list[np.ndarray]:
    """Every example's full map ``attn[layer, head, query, key]`` (unpadded), in input order.

    Only for small inputs (tests, figures of a few sentences): memory grows with the data.
    """
    keep = _KeepMaps(len(examples))
    stream_attention(loaded, examples, [keep], batch_size=batch_size, progress=False)
    return keep.result()


class _KeepMaps:
    def __init__(self, n: int):
        self.maps: list[np.ndarray | None] = [None] * n

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        for b, i in enumerate(batch.index):
            n = int(batch.lengths[b])
            self.maps[i] = attn[b, :, :, :n, :n].numpy().copy()

    def result(self) -> list[np.ndarray]:
        return self.maps  # type: ignore[return-value]


@contextmanager
def eager_attention(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Run ``model`` with transformers' eager attention inside the block (the only implementation that returns
    attention probabilities); the previous implementation is restored afterwards. Families whose attention
    code has no implementation switch (MPNet, DeBERTa) compute eagerly anyway."""
    previous = getattr(model.config, "_attn_implementation", None)
    switch = previous not in (None, "eager") and getattr(model, "_can_set_attn_implementation", lambda: False)()
    if switch:
        model.set_attn_implementation("eager")
    try:
        yield model
    finally:
        if switch:
            model.set_attn_implementation(previous)


def attention_maps(model: torch.nn.Module, **inputs: Any) -> torch.Tensor:
    """``attn[layer, batch, head, query, key]`` (float, detached) of one batch: the model's own
    ``output_attentions=True`` probabilities with eager attention, any family. Pruned heads are NaN (their original
    position is kept).

    ModernBERT in float64: its eager softmax runs in float32, so where a local window holds only padding the
    row is NaN and the NaN spreads through the padded keys; run it in float32 (or without padding) for maps."""
    n_layers, n_heads, _ = model_shape(model)
    with eager_attention(model), torch.no_grad():
        out = model(**inputs, output_attentions=True)
    maps = getattr(out, "attentions", None)
    if maps is None or len(maps) != n_layers or any(m is None for m in maps):
        raise ModelError(f"{type(model).__name__} returned {0 if maps is None else len(maps)} attention maps for "
                         f"{n_layers} layers; it needs eager attention and output_attentions support")
    first = maps[0]
    full = first.new_full((n_layers, first.shape[0], n_heads, first.shape[-2], first.shape[-1]), float("nan"))
    for site, layer_maps in zip(sites(model), maps):
        for s, head in enumerate(slices_of(site, n_heads)):
            if head >= 0:
                full[site.depth, :, head] = layer_maps[:, s]
    return full
