"""How many maps fall in each pattern class (Kovaleva et al. §4.1, Fig. 2).

The paper runs its CNN over up to 1000 dev examples of each GLUE task through the fine-tuned model
and counts the classes over all maps (Heterogeneous from 32% on MRPC to 61% on QQP). Here a
streaming reducer counts the classes per head (:class:`PatternCounter`) under one or several
classifiers (the rule set, :func:`rule_classifier`; the CNN, :func:`cnn_classifier`), all fed by
the same forward passes (:func:`pattern_proportions`). :func:`pattern_shares` is the cached
measurement a chapter calls: its key is the model's :attr:`~attnbook.engine.models.LoadedModel.key`,
the inputs' digest and the classifiers' own digests, so two models (a pre-trained encoder and a
classifier fine-tuned from it) never share an entry.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.engine.extract import Batch, Encoded, stream_attention
from attnbook.stats import Estimate, ratio_estimate
from attnbook.studies.kovaleva.cnn import PatternCNN, resize_images
from attnbook.studies.kovaleva.patterns import CLASSES, DEFAULT_RULES, PatternRules, map_features_batch

# ---------------------------------------------------------------------------------------------
# counting classes over a corpus (Fig. 2)
# ---------------------------------------------------------------------------------------------
Classifier = Callable[[torch.Tensor, Batch], torch.Tensor]


def _batch_layout(batch: Batch, cls_id: int, sep_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    qm = batch.query_mask
    special = (torch.isin(batch.input_ids, torch.tensor([cls_id, sep_id])).float()) * qm
    return qm, special, batch.token_type_ids


def rule_classifier(cls_id: int, sep_id: int, rules: PatternRules = DEFAULT_RULES) -> Classifier:
    """A classifier for :class:`PatternCounter`: the rule set on every map of a batch."""

    def classify(attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        qm, special, seg = _batch_layout(batch, cls_id, sep_id)
        return rules.classify(map_features_batch(attn, qm, special, seg))

    return classify


def cnn_classifier(model: PatternCNN, size: int = 32) -> Classifier:
    """A classifier for :class:`PatternCounter`: the CNN on every (unpadded, resized) map of a batch."""

    def classify(attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        b, n_layers, n_heads = attn.shape[:3]
        out = torch.empty(b, n_layers, n_heads, dtype=torch.long)
        model.eval()
        with torch.no_grad():
            for i in range(b):
                n = int(batch.lengths[i])
                imgs = resize_images(attn[i, :, :, :n, :n].reshape(-1, 1, n, n).float(), size)
                out[i] = model(imgs).argmax(-1).view(n_layers, n_heads)
        return out

    return classify


class PatternCounter:
    """Streaming reducer: how often each head's map falls in each class (Kovaleva Fig. 2).

    ``result()``: ``counts[layer, head, class]`` (maps of each class), ``fractions[class]``
    (share of all maps: the Fig. 2 bar of one task), ``per_input[input, class]`` (each input's maps of each
    class, in the order the inputs were seen: what a bootstrap over inputs resamples) and ``n_examples``.
    """

    def __init__(self, classify: Classifier):
        self.classify = classify
        self.counts: np.ndarray | None = None
        self.per_input: list[np.ndarray] = []
        self.n_examples = 0

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        labels = self.classify(attn, batch)  # [batch, layer, head]
        onehot = torch.nn.functional.one_hot(labels, len(CLASSES))  # [batch, layer, head, class]
        per = onehot.sum((1, 2)).numpy()
        self.per_input.extend(per.astype(np.int32))
        summed = onehot.sum(0).numpy()
        self.counts = summed if self.counts is None else self.counts + summed
        self.n_examples += attn.shape[0]

    def result(self) -> dict[str, np.ndarray]:
        if self.counts is None:
            raise EmptyDataError("no examples were classified")
        total = self.counts.sum()
        return {"counts": self.counts, "fractions": self.counts.sum((0, 1)) / total,
                "per_input": np.stack(self.per_input), "n_examples": np.array(self.n_examples)}


def pattern_proportions(
    loaded, examples: Sequence[Encoded], classify: Classifier | dict[str, Classifier], *, batch_size: int = 16,
    progress: bool = False,
) -> dict[str, np.ndarray] | dict[str, dict[str, np.ndarray]]:
    """Class counts and shares over ``examples`` (one task's dev inputs) for ``loaded`` (Fig. 2).

    ``classify`` is one classifier (returns one :class:`PatternCounter` result) or a dict of
    them (returns a dict of results; every classifier sees the same forward passes).
    """

    if not examples:
        raise EmptyDataError("no examples to classify")
    many = isinstance(classify, dict)
    counters = {k: PatternCounter(c) for k, c in (classify.items() if many else [("_", classify)])}
    out = stream_attention(loaded, examples, counters, batch_size=batch_size, progress=progress,
                           desc="classifying patterns")
    return out if many else out["_"]


# ---------------------------------------------------------------------------------------------
# cached: the class shares of one model on one set of inputs
# ---------------------------------------------------------------------------------------------
def flatten(nested: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``{"a": {"x": arr}}`` -> ``{"a::x": arr}``, to cache several reducers' results as one set of arrays."""
    out = {}
    for outer, inner in nested.items():
        if "::" in outer:
            raise ParameterError(f"key {outer!r} contains '::'")
        for k, v in inner.items():
            out[f"{outer}::{k}"] = np.asarray(v)
    return out


def unflatten(flat: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """Inverse of :func:`flatten`."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, v in flat.items():
        outer, sep, inner = key.partition("::")
        if not sep:
            raise ParameterError(f"key {key!r} was not made by flatten()")
        out.setdefault(outer, {})[inner] = v
    return out


@cache.memoized("kovaleva_patterns", ignore=("batch_size",))
def pattern_share_arrays(loaded, examples: Sequence[Encoded], cnn: PatternCNN, rules: PatternRules,
                         specials: tuple[int, int], *, batch_size: int = 16) -> dict[str, np.ndarray]:
    """:func:`pattern_shares` as flat arrays, cached by the model's identity (a fine-tuned classifier's checkpoint,
    else its weights), the inputs, the CNN's weights, the rule set and the special-token ids (``specials``:
    ``[CLS]`` and ``[SEP]``) the classifiers look for."""
    classifiers = {"cnn": cnn_classifier(cnn, cnn.size), "rules": rule_classifier(specials[0], specials[1], rules)}
    return flatten(pattern_proportions(loaded, list(examples), classifiers, batch_size=batch_size))


def pattern_shares(loaded, examples: Sequence[Encoded], cnn: PatternCNN, *, rules: PatternRules = DEFAULT_RULES,
                   batch_size: int = 16) -> dict[str, dict[str, np.ndarray]]:
    """Kovaleva Fig. 2 for one model on one task's inputs: :class:`PatternCounter` results under the CNN
    (``"cnn"``) and the rule set (``"rules"``), from the same forward passes; cached
    (:func:`pattern_share_arrays`), so the pre-trained encoder and a classifier fine-tuned from it are two
    computations."""
    tok = loaded.tokenizer
    specials = (int(tok.cls_token_id), int(tok.sep_token_id))
    return unflatten(pattern_share_arrays(loaded, examples, cnn, rules, specials, batch_size=batch_size))


def share_estimates(result: Mapping[str, np.ndarray], *, n_resamples: int = 2000, seed: int = 0
                    ) -> dict[str, Estimate]:
    """Each class's share of all maps (one :class:`PatternCounter` result) with its 95% bootstrap interval over
    the inputs (each input contributes all its heads' maps): class name -> :class:`~attnbook.stats.Estimate`."""
    per = np.asarray(result["per_input"], dtype=np.float64)  # [input, class]
    totals = per.sum(1)
    out = {}
    for c, name in enumerate(CLASSES):
        out[name] = ratio_estimate(per[:, c], totals, unit="inputs", n_resamples=n_resamples, seed=seed)
    return out


def share_numbers(shares: Mapping[tuple[str, str], Mapping[str, Mapping[str, np.ndarray]]]) -> dict[str, dict]:
    """What a chapter records of :func:`pattern_shares` results keyed ``(which model, task)``: ``"which/task"`` ->
    classifier -> the class shares (4 decimals)."""
    return {f"{which}/{task}": {k: v["fractions"].round(4).tolist() for k, v in r.items()}
            for (which, task), r in shares.items()}
