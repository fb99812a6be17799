"""The one measurement of chapter 9 that no other chapter makes: Jensen-Shannon divergences between the heads of
different models, on word-level maps so that heads of different tokenisers attend over the same words.

Each model reads the same UD EWT dev sentences word by word (:func:`attnbook.engine.inputs.encode_words`); its
maps become word-level maps (:class:`WordMaps`); :class:`attnbook.studies.clark.distances.HeadDistances` (Clark
§6's distance) compares every two heads query word by query word. The distances are cached, the maps are not.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.heads import head_label
from attnbook.data.conllu import Sentence, load_ud
from attnbook.engine.extract import stream_attention
from attnbook.engine.inputs import Batch, Encoded, encode_words
from attnbook.engine.models import LoadedModel
from attnbook.engine.wordlevel import token_to_word_attention
from attnbook.studies.clark import distances


class WordMaps:
    """Reducer keeping every sentence's word-level maps ``[layer * head, word, word]`` (float16), the start and
    separator tokens as words of their own (:func:`attnbook.engine.inputs.encode_words`' grouping), so every row is a
    distribution (:func:`attnbook.engine.wordlevel.token_to_word_attention`: to a word summed, from a word averaged)."""

    def __init__(self, n: int):
        self.maps: list[np.ndarray | None] = [None] * n

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        for b, (i, example) in enumerate(zip(batch.index, batch.examples)):
            n = int(batch.lengths[b])
            w = token_to_word_attention(attn[b, :, :, :n, :n], example.words)
            self.maps[i] = w.reshape(-1, *w.shape[-2:]).astype(np.float16)

    def result(self) -> list[np.ndarray]:
        return self.maps  # type: ignore[return-value]


def word_maps(loaded: LoadedModel, encoded: Sequence[Encoded], *, batch_size: int = 32,
              progress: bool = True) -> list[np.ndarray]:
    """:class:`WordMaps` of ``encoded``, one float16 ``[layer * head, word, word]`` array per sentence (in memory:
    :func:`joint_distance_arrays` caches what is made of them)."""
    (maps,) = stream_attention(loaded, encoded, [WordMaps(len(encoded))], batch_size=batch_size, progress=progress,
                               desc="word-level maps (all models' heads)")
    return maps


_PER_HEAD = ("model", "layer", "n_layers", "label")


def joint_distances(models: Mapping[str, LoadedModel], n_sentences: int, *, max_tokens: int = 128,
                    batch_size: int = 32) -> dict[str, Any]:
    """Mean Jensen-Shannon divergence between every two heads of all ``models`` (Clark §6's distance, here across
    models) on the first ``n_sentences`` UD EWT dev sentences (:func:`joint_distance_arrays`, cached). Returns its
    arrays plus ``model``, ``layer`` (1-based), ``n_layers``, ``label`` per head (models in order, each layer-major)
    and ``n_sentences``."""
    out = dict(joint_distance_arrays(models, load_ud("dev", n_sentences), max_tokens=max_tokens,
                                     batch_size=batch_size))
    out["n_sentences"] = int(out["n_sentences"])
    out.update({k: np.asarray(out[k]).tolist() for k in _PER_HEAD})
    return out


@cache.memoized("across_distances", ignore=("batch_size",))
def joint_distance_arrays(models: Mapping[str, LoadedModel], sentences: Sequence[Sentence], *, max_tokens: int = 128,
                          batch_size: int = 32) -> dict[str, np.ndarray]:
    """:func:`joint_distances`' arrays, cached by the models' weights, the sentences and ``max_tokens``. Each model
    reads the sentences word by word, its maps become word-level maps (:class:`WordMaps`), so the heads of different
    tokenisers attend over the same words, and :class:`attnbook.studies.clark.distances.HeadDistances` compares them
    query word by query word. Sentences a model had to cut are left out for all. The maps themselves are not kept
    (2 bytes per head and word pair: 72.8 MiB for the quick profile's two models on 300 sentences)."""
    maps, kept = {}, np.ones(len(sentences), dtype=bool)
    for key, m in models.items():
        enc = [encode_words(m.tokenizer, s.words, max_tokens=max_tokens, meta={"sentence": k})
               for k, s in enumerate(sentences)]
        kept &= np.array([e.meta["n_words_kept"][0] == len(s.words) for e, s in zip(enc, sentences)])
        maps[key] = word_maps(m, enc, batch_size=batch_size, progress=False)
    per_head = [(key, l + 1, m.n_layers, head_label(l, h)) for key, m in models.items()
                for l in range(m.n_layers) for h in range(m.n_heads)]
    reducer, keep = distances.HeadDistances(1, len(per_head)), np.flatnonzero(kept)
    for start in range(0, len(keep), batch_size):
        idx = keep[start:start + batch_size]
        words = [maps[next(iter(maps))][i].shape[-1] for i in idx]  # the same for every model: start, words, end
        attn, mask = torch.zeros(len(idx), 1, len(per_head), max(words), max(words)), torch.zeros(len(idx), max(words))
        for b, (i, n) in enumerate(zip(idx, words)):
            attn[b, 0, :, :n, :n] = torch.from_numpy(np.concatenate([one[i] for one in maps.values()]).astype(np.float32))
            mask[b, :n] = 1
        reducer.update(attn, Batch(input_ids=mask.long(), attention_mask=mask, index=[int(i) for i in idx]))
    out = {**reducer.result(), "n_sentences": np.asarray(len(keep))}
    out.update({name: np.asarray([x[i] for x in per_head]) for i, name in enumerate(_PER_HEAD)})
    return out
