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
``batch.query_mask`` when they average over queries.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Protocol, Sequence

import numpy as np
import torch

from attnbook.engine.models import LoadedModel


@dataclass
class Encoded:
    """One model input: word-piece ids, segment ids and the pieces as strings.

    ``words`` optionally groups piece positions into words (a list of lists of
    positions), for word-level analyses; ``meta`` carries anything else
    (source article, gold annotations, ...).
    """

    input_ids: list[int]
    token_type_ids: list[int]
    tokens: list[str]
    words: list[list[int]] | None = None
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class Batch:
    """A padded batch of :class:`Encoded` inputs, with the masks reducers need.

    ``index[b]`` is example ``b``'s position in the sequence given to :func:`stream_attention`.
    """

    input_ids: torch.Tensor  # [batch, seq]
    token_type_ids: torch.Tensor  # [batch, seq]
    attention_mask: torch.Tensor  # [batch, seq], 1 for real tokens
    lengths: torch.Tensor  # [batch]
    examples: list[Encoded]
    index: list[int]

    @property
    def query_mask(self) -> torch.Tensor:
        """``[batch, seq]`` float mask of real (unpadded) positions."""
        return self.attention_mask.to(torch.float32)

    def token_mask(self, predicate) -> torch.Tensor:
        """``[batch, seq]`` float mask of positions whose piece string satisfies ``predicate``."""
        out = torch.zeros(self.input_ids.shape, dtype=torch.float32)
        for b, ex in enumerate(self.examples):
            for i, tok in enumerate(ex.tokens):
                if predicate(tok):
                    out[b, i] = 1.0
        return out

    def id_mask(self, ids: Iterable[int]) -> torch.Tensor:
        """``[batch, seq]`` float mask of positions holding any of the vocabulary ``ids``."""
        ids_t = torch.tensor(sorted(set(ids)), dtype=self.input_ids.dtype)
        return torch.isin(self.input_ids, ids_t).to(torch.float32) * self.query_mask


class Reducer(Protocol):
    """Folds attention maps into statistics, one batch at a time.

    Optionally a reducer also defines ``update_layers(layers, batch)``, taking the per-layer maps
    ``layers[layer][batch, head, query, key]`` unstacked (see the module docstring).
    """

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        """``attn[batch, layer, head, query, key]`` (float32, padded to the batch's longest input)."""

    def result(self) -> Any:
        """The statistics, usually a dict of numpy arrays indexed ``[layer, head, ...]``."""


def make_batches(examples: Sequence[Encoded], batch_size: int, pad_id: int = 0, bucket: bool = True) -> Iterator[Batch]:
    """Pad ``examples`` into batches; with ``bucket``, examples of similar length share a batch.

    Buckets come longest first, so every later batch's tensors fit in memory the allocator freed from an
    earlier one. In ascending order glibc's heap grew with every batch (peak RSS up to 20% higher for 1000
    than for 100 segments although no data is kept); longest first, ``make bench`` measures about 8%
    (median of fresh processes), the rest being glibc's heap policy (3% with its mmap threshold fixed).
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    order = (sorted(range(len(examples)), key=lambda i: -len(examples[i])) if bucket
             else list(range(len(examples))))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        exs = [examples[i] for i in idx]
        width = max(len(e) for e in exs)
        ids = torch.full((len(exs), width), pad_id, dtype=torch.long)
        types = torch.zeros((len(exs), width), dtype=torch.long)
        mask = torch.zeros((len(exs), width), dtype=torch.long)
        for b, e in enumerate(exs):
            n = len(e)
            ids[b, :n] = torch.tensor(e.input_ids, dtype=torch.long)
            types[b, :n] = torch.tensor(e.token_type_ids, dtype=torch.long)
            mask[b, :n] = 1
        yield Batch(ids, types, mask, mask.sum(1), exs, idx)


def check_inputs(loaded: LoadedModel, examples: Sequence[Encoded]) -> None:
    """Refuse empty input and inputs longer than the model's window.

    attnbook never truncates silently inside the engine: inputs are truncated when they are built
    (:func:`attnbook.studies.clark.segments.encode_pair`, :func:`attnbook.engine.inputs.encode_words`, each stating its rule),
    so an over-long input here is a caller's mistake.
    """
    from attnbook.core.errors import EmptyDataError, ParameterError

    if len(examples) == 0:
        raise EmptyDataError("no inputs to run the model on (did a filter remove everything?)")
    longest = max(len(e) for e in examples)
    if longest > loaded.max_length:
        raise ParameterError(
            f"an input has {longest} word pieces but {loaded.name} reads at most {loaded.max_length}; "
            "build inputs with a smaller max_tokens (they are truncated by the stated rule when built)"
        )


def forward_layer_attentions(model: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, ...]:
    """One forward pass; returns the per-layer maps ``layers[layer][batch, head, query, key]``."""
    out = model(
        input_ids=batch.input_ids,
        token_type_ids=batch.token_type_ids,
        attention_mask=batch.attention_mask,
        output_attentions=True,
    )
    return tuple(out.attentions)


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
        with torch.inference_mode():
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
