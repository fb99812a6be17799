"""The probes' data (Clark et al. §5): word-level maps of every head, gold heads, word vectors, batches.

BERT is frozen, so its word-level attention maps (Clark §4.1 conversion) are fixed inputs,
extracted once per sentence and kept in memory as float16 ``[heads, words, words]`` (about
``2 · layers · heads · n_words²`` bytes, ~85 KB for a UD train sentence and 72 heads). Words are
UD syntactic words; ``[CLS]``/``[SEP]`` are not candidates and their attention is not a feature.
A word is scored when its gold head is a word that survived truncation (``max_tokens``,
:mod:`attnbook.engine.inputs`), punctuation included unless ``exclude_punct``.

Two reparametrisations that leave each probe's family of functions unchanged and only condition
Adam (:mod:`attnbook.studies.clark.probes`): :func:`attention_scale` and :func:`vector_standardizer`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.conllu import Sentence
from attnbook.engine.extract import Batch, Encoded, stream_attention
from attnbook.engine.inputs import encode_words
from attnbook.engine.models import LoadedModel
from attnbook.engine.wordlevel import token_to_word_attention


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
@dataclass
class ProbeData:
    """Sentences ready for the probes (all per-sentence arrays cover the ``n`` kept words).

    ``maps[s]``: float16 ``[layer * head, n, n]`` word-level attention among the words
    (layer-major head order, ``α[k, from, to]``); ``heads[s]``: int64 ``[n]`` gold head
    position, ``-1`` when the word is not scored; ``vectors[s]``: float32 ``[n, dim]``.
    """

    maps: list[np.ndarray]
    heads: list[np.ndarray]
    vectors: list[np.ndarray]
    words: list[list[str]]
    n_layers: int
    n_heads: int

    def __len__(self) -> int:
        return len(self.heads)

    @property
    def n_scored(self) -> int:
        return int(sum((h >= 0).sum() for h in self.heads))

    @property
    def dim(self) -> int:
        return int(self.vectors[0].shape[1]) if self.vectors else 0

    def nbytes(self) -> int:
        return int(sum(m.nbytes for m in self.maps))


def gold_heads(sentence: Sentence, n_kept: int, exclude_punct: bool = False) -> np.ndarray:
    """Gold head positions of the first ``n_kept`` words; ``-1`` = not scored (root, cut head, punct)."""
    out = np.full(n_kept, -1, dtype=np.int64)
    for i, (h, rel) in enumerate(zip(sentence.heads0()[:n_kept], sentence.deprel[:n_kept])):
        if 0 <= h < n_kept and not (exclude_punct and rel == "punct"):
            out[i] = h
    return out


def encode_for_probe(tokenizer, sentences: Sequence[Sentence], max_tokens: int = 128) -> list[Encoded]:
    """Word-by-word encodings (:func:`attnbook.engine.inputs.encode_words`) of ``sentences``."""
    return [
        encode_words(tokenizer, s.words, max_tokens=max_tokens, meta={"sentence": k}) for k, s in enumerate(sentences)
    ]


def content_maps(word_maps: np.ndarray, example: Encoded) -> np.ndarray:
    """The ``[layer * head, n, n]`` float16 block of the sentence's words (``[CLS]``/``[SEP]`` removed)."""
    n = example.meta["n_words_kept"][0]
    a = word_maps[:, :, 1 : n + 1, 1 : n + 1]
    return a.reshape(-1, n, n).astype(np.float16)


class WordMapCollector:
    """Reducer keeping each example's content-word maps (float16); memory grows with the data (capped by callers)."""

    def __init__(self, n_examples: int, from_reduce: str = "mean"):
        self.maps: list[np.ndarray | None] = [None] * n_examples
        self.from_reduce = from_reduce

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        for b, (i, example) in enumerate(zip(batch.index, batch.examples)):
            n = int(batch.lengths[b])
            wm = token_to_word_attention(attn[b, :, :, :n, :n].float().cpu().numpy(), example.words, self.from_reduce)
            self.maps[i] = content_maps(wm, example)

    def result(self) -> list[np.ndarray]:
        return self.maps  # type: ignore[return-value]


def model_word_vectors(loaded: LoadedModel, encoded: Sequence[Encoded]) -> list[np.ndarray]:
    """A word's vector = the mean of its pieces' input (word-piece) embeddings in ``loaded``."""
    emb = loaded.model.get_input_embeddings().weight.detach().cpu().float().numpy()
    out = []
    for ex in encoded:
        n = ex.meta["n_words_kept"][0]
        ids = np.asarray(ex.input_ids)
        out.append(np.stack([emb[ids[ex.words[w]]].mean(0) for w in range(1, n + 1)]).astype(np.float32))
    return out


def glove_word_vectors(
    glove, sentences: Sequence[Sentence], encoded: Sequence[Encoded]
) -> tuple[list[np.ndarray], float]:
    """GloVe vectors of the kept words (lowercased, OOV -> zero) and the OOV rate over those words."""
    out, oov, total = [], 0, 0
    for s, ex in zip(sentences, encoded):
        n = ex.meta["n_words_kept"][0]
        vecs, mask = glove.lookup(s.words[:n])
        out.append(vecs)
        oov += int(mask.sum())
        total += n
    return out, (oov / total if total else float("nan"))


def extract_word_maps(
    loaded: LoadedModel,
    encoded: Sequence[Encoded],
    *,
    batch_size: int = 32,
    progress: bool = True,
    desc: str = "attention maps for the probes (§5)",
) -> list[np.ndarray]:
    """Every example's float16 content-word maps ``[layer * head, n, n]`` (:class:`WordMapCollector`).

    Not written to the cache: they are the book's largest intermediate (2 bytes per head and word pair: 246 MB for
    all-MiniLM-L6-v2's 4,001 quick-profile sentences, as much again for its random-init copy), while the probes'
    whole summary is cached under every input that made the maps
    (:func:`attnbook.studies.clark.probes.probe_result_arrays`). A rebuild never needs them; changing a probe's own
    setting (epochs, learning rate, width) extracts them again, which :mod:`attnbook.chapters.profiles.ch02` counts
    in the probes' time.
    """
    collector = WordMapCollector(len(encoded))
    (maps,) = stream_attention(loaded, encoded, [collector], batch_size=batch_size, progress=progress, desc=desc)
    return maps


def extract_probe_data(
    loaded: LoadedModel,
    sentences: Sequence[Sentence],
    *,
    word_vectors: str = "glove",
    glove=None,
    max_tokens: int = 128,
    batch_size: int = 32,
    exclude_punct: bool = False,
    progress: bool = True,
    desc: str = "attention maps for the probes (§5)",
) -> tuple[ProbeData, dict]:
    """Word-level maps of every head, gold heads and word vectors of ``sentences``.

    ``word_vectors`` is ``"glove"`` (needs ``glove``, :func:`attnbook.data.glove.load_glove`) or
    ``"model"`` (mean input embedding of a word's pieces). Returns the data and an info
    dict (``oov_rate`` for GloVe, ``n_words``, ``n_scored``, ``n_truncated_words``, ``map_bytes``).
    """
    if not sentences:
        raise EmptyDataError("no sentences for the probe")
    if word_vectors not in ("glove", "model"):
        raise ParameterError(f"word_vectors is 'glove' or 'model', got {word_vectors!r}")
    if word_vectors == "glove" and glove is None:
        raise ParameterError("word_vectors='glove' needs the GloVe table: pass glove=attnbook.data.glove.load_glove()")
    encoded = encode_for_probe(loaded.tokenizer, sentences, max_tokens)
    maps = extract_word_maps(loaded, encoded, batch_size=batch_size, progress=progress, desc=desc)
    info: dict = {}
    if word_vectors == "glove":
        vectors, info["oov_rate"] = glove_word_vectors(glove, sentences, encoded)
    else:
        vectors = model_word_vectors(loaded, encoded)
    kept = [ex.meta["n_words_kept"][0] for ex in encoded]
    heads = [gold_heads(s, n, exclude_punct) for s, n in zip(sentences, kept)]
    data = ProbeData(maps, heads, vectors, [list(s.words[:n]) for s, n in zip(sentences, kept)],
                     loaded.n_layers, loaded.n_heads)
    info.update(n_sentences=len(data), n_words=int(sum(kept)), n_scored=data.n_scored,
                n_truncated_words=int(sum(len(s) for s in sentences) - sum(kept)), map_bytes=data.nbytes())
    return data, info


def vector_standardizer(train: ProbeData):
    """A function mapping :class:`ProbeData` to a copy whose vectors are standardised on ``train``'s words.

    Each dimension gets mean 0 and standard deviation ``1/sqrt(dim)`` over the training
    words (so a vector's norm is about 1). Every probe is linear in ``v ⊕ 1`` before
    anything else, so this affine change is a reparametrisation (same family of probes)
    that lets one Adam learning rate suit GloVe and model embeddings alike. OOV words
    (zero vectors) map to a constant vector, still carrying no word identity.
    """
    allv = np.concatenate(train.vectors).astype(np.float64)
    mu = allv.mean(0)
    sd = (allv.std(0) + 1e-6) * np.sqrt(allv.shape[1])

    def apply(data: ProbeData) -> ProbeData:
        vecs = [((v - mu) / sd).astype(np.float32) for v in data.vectors]
        return ProbeData(data.maps, data.heads, vecs, data.words, data.n_layers, data.n_heads)

    return apply


# ---------------------------------------------------------------------------------------------
# batches
# ---------------------------------------------------------------------------------------------
@dataclass
class ProbeBatch:
    """Padded tensors: ``alpha[b, k, from, to]``, ``vectors[b, word, dim]``, ``mask[b, word]``, ``gold[b, word]``."""

    alpha: torch.Tensor
    vectors: torch.Tensor
    mask: torch.Tensor
    gold: torch.Tensor

    def candidates(self) -> torch.Tensor:
        """``[b, dependent j, candidate i]``: real words other than ``j`` itself."""
        n = self.mask.shape[1]
        eye = torch.eye(n, dtype=torch.bool)
        return self.mask[:, None, :] & self.mask[:, :, None] & ~eye


def make_probe_batches(data: ProbeData, batch_size: int) -> list[ProbeBatch]:
    """Length-bucketed padded batches (alpha kept float16 until used)."""
    if batch_size < 1:
        raise ParameterError("batch_size must be at least 1")
    order = sorted(range(len(data)), key=lambda s: len(data.heads[s]))
    k = data.maps[0].shape[0]
    dim = data.dim
    out = []
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        width = max(len(data.heads[s]) for s in idx)
        alpha = torch.zeros((len(idx), k, width, width), dtype=torch.float16)
        vec = torch.zeros((len(idx), width, dim), dtype=torch.float32)
        mask = torch.zeros((len(idx), width), dtype=torch.bool)
        gold = torch.full((len(idx), width), -1, dtype=torch.long)
        for b, s in enumerate(idx):
            n = len(data.heads[s])
            alpha[b, :, :n, :n] = torch.from_numpy(np.asarray(data.maps[s], dtype=np.float16))
            vec[b, :n] = torch.from_numpy(data.vectors[s])
            mask[b, :n] = True
            gold[b, :n] = torch.from_numpy(data.heads[s])
        out.append(ProbeBatch(alpha, vec, mask, gold))
    return out


def attention_scale(data: ProbeData) -> np.ndarray:
    """Per-map feature scale: ``1 / RMS`` of the attention weights between distinct words of ``data``.

    Multiplying head ``k``'s maps by a constant only rescales its weights (``w_k``, ``W_k``),
    so the probes' family of functions is unchanged; the scaling conditions Adam's
    steps (every head's feature then has root-mean-square 1).
    :meth:`AttentionOnlyProbe.raw_weights` undoes it.
    """
    k = data.maps[0].shape[0]
    s2 = np.zeros(k)
    count = 0
    for m in data.maps:
        n = m.shape[-1]
        if n < 2:
            continue
        off = ~np.eye(n, dtype=bool)
        v = m.astype(np.float64)[:, off]  # [k, n*(n-1)]
        s2 += (v**2).sum(1)
        count += v.shape[1]
    if count == 0:
        raise EmptyDataError("no word pairs to scale the attention features on")
    return (1.0 / np.sqrt(s2 / count + 1e-12)).astype(np.float32)
