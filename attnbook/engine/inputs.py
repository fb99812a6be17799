"""Model inputs: :class:`Encoded` examples, the one padded :class:`Batch` type, and words turned into pieces.

Word-level analyses (dependency heads, coreference, FrameNet, linguistic
features) start from gold words. :func:`encode_words` runs the WordPiece
tokenizer word by word, so every word maps to a contiguous run of pieces, and
returns an :class:`Encoded` whose ``words`` field lists those
runs. ``[CLS]`` and ``[SEP]`` are one-piece words of their own at the ends of the
list (``meta["special_words"]`` gives their word indices), so a converted
word-level map keeps rows that sum to 1.

Truncation policy (stated once, applied everywhere): when the pieces do not fit
in ``max_tokens`` (special tokens included), whole words are dropped from the
end of the longest sentence first, never part of a word; ``meta["n_words_kept"]``
says how many words of each sentence survived, and callers drop annotations
that point past them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import torch

from attnbook.core.errors import ParameterError
from attnbook.data.glue import Example, TaskSpec


@dataclass
class Encoded:
    """One model input: word-piece ids, segment ids and the pieces as strings.

    ``words`` optionally groups piece positions into words (a list of lists of
    positions), for word-level analyses; ``meta`` carries anything else
    (source article, gold annotations, ...). Its :func:`~attnbook.core.cache.digest`
    is the ids, segment ids and word grouping: what a model and a word-level reducer see.
    """

    input_ids: list[int]
    token_type_ids: list[int]
    tokens: list[str]
    words: list[list[int]] | None = None
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.input_ids)

    def __digest__(self) -> tuple:
        return (self.input_ids, self.token_type_ids, self.words)


@dataclass
class Batch:
    """A padded batch of model inputs ``[batch, seq]``: the one batch type of the engine.

    Made from :class:`Encoded` inputs (:func:`make_batches`: ``examples`` and ``index`` say which),
    from tokenizer output (classification data: ``labels`` holds the gold labels), or by
    :meth:`select`. ``index[b]`` is row ``b``'s position in the sequence the batches were made from.
    """

    input_ids: torch.Tensor  # [batch, seq]
    attention_mask: torch.Tensor  # [batch, seq], 1 for real tokens
    token_type_ids: torch.Tensor | None = None  # [batch, seq]
    labels: torch.Tensor | None = None  # [batch] gold labels (float for regression)
    examples: list[Encoded] | None = None
    index: list[int] | None = None

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Batch":
        """A batch from a mapping with ``input_ids``, ``attention_mask`` (default: all ones),
        ``token_type_ids`` and ``labels`` (or ``label``); arrays and lists become tensors."""
        def tensor(v, dtype=None):
            if v is None or isinstance(v, torch.Tensor):
                return v
            return torch.as_tensor(np.asarray(v), dtype=dtype)

        if values.get("input_ids") is None:
            raise ParameterError(f"a batch needs 'input_ids'; got keys {sorted(values)}")
        ids = tensor(values["input_ids"], torch.long)
        mask = tensor(values.get("attention_mask"), torch.long)
        labels = values.get("labels", values.get("label"))
        return cls(ids, torch.ones_like(ids) if mask is None else mask, tensor(values.get("token_type_ids"), torch.long),
                   tensor(labels))

    @property
    def size(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def lengths(self) -> torch.Tensor:
        """``[batch]`` number of real tokens of each row."""
        return self.attention_mask.sum(1)

    @property
    def inputs(self) -> dict[str, torch.Tensor]:
        """The model's keyword inputs (``input_ids``, ``attention_mask`` and, when present, ``token_type_ids``)."""
        out = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.token_type_ids is not None:
            out["token_type_ids"] = self.token_type_ids
        return out

    @property
    def query_mask(self) -> torch.Tensor:
        """``[batch, seq]`` float mask of real (unpadded) positions."""
        return self.attention_mask.to(torch.float32)

    def token_mask(self, predicate) -> torch.Tensor:
        """``[batch, seq]`` float mask of positions whose piece string satisfies ``predicate``."""
        if self.examples is None:
            raise ParameterError("token_mask needs the batch's Encoded examples (make it with make_batches)")
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

    def select(self, rows: Sequence[int] | np.ndarray) -> "Batch":
        """The rows ``rows`` of this batch, trimmed to their longest input."""
        idx = torch.as_tensor(np.asarray(rows, dtype=np.int64))
        mask = self.attention_mask[idx]
        width = max(int(mask.sum(1).max()), 1) if len(idx) else 1
        cut = lambda t: None if t is None else t[idx][:, :width]  # noqa: E731
        return Batch(cut(self.input_ids), cut(self.attention_mask), cut(self.token_type_ids),
                     None if self.labels is None else self.labels[idx],
                     None if self.examples is None else [self.examples[int(i)] for i in idx],
                     None if self.index is None else [self.index[int(i)] for i in idx])

    def to(self, device: torch.device | str) -> "Batch":
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return Batch(move(self.input_ids), move(self.attention_mask), move(self.token_type_ids), move(self.labels),
                     self.examples, self.index)

    def __digest__(self) -> tuple:
        return (self.input_ids, self.attention_mask, self.token_type_ids,
                None if self.labels is None else self.labels.to(torch.float64))


def pad_rows(rows: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad integer sequences: ``(values[n, width], mask[n, width])``, ``width`` the longest length."""
    width = max(len(r) for r in rows)
    values = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        values[i, : len(r)] = torch.as_tensor(list(r), dtype=torch.long)
        mask[i, : len(r)] = 1
    return values, mask


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
        ids, mask = pad_rows([e.input_ids for e in exs], pad_id)
        types, _ = pad_rows([e.token_type_ids for e in exs], 0)
        yield Batch(ids, mask, types, examples=exs, index=idx)


def word_pieces(tokenizer: Any, words: Sequence[str]) -> list[list[str]]:
    """The WordPiece pieces of each word (a word that tokenizes to nothing becomes ``[UNK]``).

    A fast (Rust) tokenizer encodes the whole sequence in one call, each word pre-tokenized on its own, and the
    pieces are grouped back by word: the same pieces as ``tokenizer.tokenize(word)`` word by word (a test checks
    it on the book's corpora) with one call per sequence instead of one per word, whose Python overhead dominated
    the atlas's re-encoding of chapters 1-6's inputs.
    Other tokenizers go word by word."""
    words = list(words)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not words:
        return [tokenizer.tokenize(w) or [tokenizer.unk_token] for w in words]
    truncation, padding = backend.truncation, backend.padding  # left set by an earlier call with truncation=True
    if truncation is not None:
        backend.no_truncation()
    if padding is not None:
        backend.no_padding()
    try:
        enc = backend.encode(words, is_pretokenized=True, add_special_tokens=False)
    finally:
        if truncation is not None:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)
    out: list[list[str]] = [[] for _ in words]
    for piece, word in zip(enc.tokens, enc.word_ids):
        out[word].append(piece)
    return [pieces or [tokenizer.unk_token] for pieces in out]


@dataclass(frozen=True)
class Template:
    """How a tokenizer frames one sequence and a pair with its special tokens, as it does itself
    (``[CLS] a [SEP] b [SEP]`` for BERT, ``<s> a </s></s> b </s>`` for RoBERTa): the special tokens before, between
    and after, and the segment id of each part (``types``: before, first, between, second, after)."""

    before: tuple[str, ...]
    between: tuple[str, ...]
    after: tuple[str, ...]
    single_after: tuple[str, ...]
    types: tuple[int, int, int, int, int]

    def n_special(self, pair: bool) -> int:
        return len(self.before) + (len(self.between) + len(self.after) if pair else len(self.single_after))


_TEMPLATES: dict[int, Template] = {}


def _find(seq: list[int], part: list[int], start: int) -> int:
    for i in range(start, len(seq) - len(part) + 1):
        if seq[i:i + len(part)] == part:
            return i
    return -1


def template(tokenizer: Any) -> Template:
    """The tokenizer's own framing of a sequence and a pair (:class:`Template`), read off its encoding of two
    probe texts. Raises :class:`ParameterError` for a tokenizer that puts no special token first (every word-level
    analysis reads that token as the sequence start)."""
    key = id(tokenizer)
    if key not in _TEMPLATES:
        a = tokenizer("a", add_special_tokens=False)["input_ids"]
        b = tokenizer("b", add_special_tokens=False)["input_ids"]
        pair = tokenizer("a", "b", return_token_type_ids=True)
        ids, types = list(pair["input_ids"]), list(pair.get("token_type_ids") or [0] * len(pair["input_ids"]))
        i = _find(ids, a, 0)
        j = _find(ids, b, i + len(a))
        single = list(tokenizer("a")["input_ids"])
        k = _find(single, a, 0)
        if i <= 0 or j < 0 or k < 0:
            raise ParameterError(f"{type(tokenizer).__name__} puts no special token before a sequence (or its pair "
                                 "encoding could not be read); attnbook needs a sequence-start token")
        names = tokenizer.convert_ids_to_tokens
        _TEMPLATES[key] = Template(tuple(names(ids[:i])), tuple(names(ids[i + len(a):j])),
                                   tuple(names(ids[j + len(b):])), tuple(names(single[k + len(a):])),
                                   (types[0], types[i], types[i + len(a)] if j > i + len(a) else types[i], types[j],
                                    types[-1]))
    return _TEMPLATES[key]


def role_names(tokenizer: Any) -> dict[str, str]:
    """The model's own tokens for the roles the papers name after BERT's: ``{"[CLS]": "<s>", "[SEP]": "</s>"}`` for
    RoBERTa, the identity for BERT. Labels a reader sees use these."""
    return {"[CLS]": str(tokenizer.cls_token), "[SEP]": str(tokenizer.sep_token)}


def roles_sentence(tokenizer: Any) -> str:
    """A sentence saying which of the model's tokens play ``[CLS]``'s and ``[SEP]``'s roles (empty for BERT's)."""
    names = role_names(tokenizer)
    if names == {"[CLS]": "[CLS]", "[SEP]": "[SEP]"}:
        return ""
    return (f"In this model `{names['[CLS]']}` plays the role the papers give `[CLS]` (the sequence start) and "
            f"`{names['[SEP]']}` that of `[SEP]` (the separator); the papers' names are kept where a claim is "
            "quoted.")


def frame(tokenizer: Any, first: Sequence[str], second: Sequence[str] | None = None
          ) -> tuple[list[str], list[int], list[list[int]]]:
    """``first`` (and ``second``) pieces framed by the tokenizer's special tokens (:func:`template`): the tokens,
    their segment ids and the position runs of the special tokens (the start, after the first sequence, after the
    second)."""
    t = template(tokenizer)
    tokens, types, runs = list(t.before), [t.types[0]] * len(t.before), [list(range(len(t.before)))]

    def add(pieces: Sequence[str], segment: int, closing: Sequence[str], closing_type: int) -> None:
        tokens.extend(pieces)
        types.extend([segment] * len(pieces))
        runs.append(list(range(len(tokens), len(tokens) + len(closing))))
        tokens.extend(closing)
        types.extend([closing_type] * len(closing))

    if second is None:
        add(first, t.types[1], t.single_after, t.types[1])
    else:
        add(first, t.types[1], t.between, t.types[2])
        add(second, t.types[3], t.after, t.types[4])
    return tokens, types, runs


def encode_words(
    tokenizer: Any,
    words: Sequence[str],
    second: Sequence[str] | None = None,
    *,
    max_tokens: int = 128,
    meta: dict | None = None,
) -> Encoded:
    """Encode one word sequence (or a pair) as the tokenizer frames it (:func:`template`): ``[CLS] words [SEP]
    (second [SEP])`` for BERT, ``<s> words </s>(</s> second </s>)`` for RoBERTa.

    Returns an :class:`Encoded` whose ``words`` lists, in order, the piece positions of the start token (``[CLS]``),
    of every kept word of ``words``, of the separator after them (``[SEP]``; RoBERTa's ``</s></s>`` is one word of
    two pieces), then (for a pair) of every kept word of ``second`` and of the closing separator.
    """
    first_pieces = word_pieces(tokenizer, words)
    second_pieces = word_pieces(tokenizer, second) if second is not None else None
    n_special = template(tokenizer).n_special(second_pieces is not None)
    budget = max_tokens - n_special
    if budget < 2:
        raise ValueError(f"max_tokens={max_tokens} leaves no room for words")
    lens = [sum(map(len, first_pieces)), sum(map(len, second_pieces)) if second_pieces else 0]
    while lens[0] + lens[1] > budget:  # drop whole words from the end of the longer side
        side = first_pieces if (lens[0] >= lens[1] or second_pieces is None) else second_pieces
        dropped = side.pop()
        lens[0 if side is first_pieces else 1] -= len(dropped)

    flat_first = [p for w in first_pieces for p in w]
    flat_second = None if second_pieces is None else [p for w in second_pieces for p in w]
    tokens, types, runs = frame(tokenizer, flat_first, flat_second)
    groups: list[list[int]] = [runs[0]]
    special_words = [0]
    position = len(runs[0])
    for side, run in zip([first_pieces] + ([second_pieces] if second_pieces is not None else []), runs[1:]):
        for pieces in side:
            groups.append(list(range(position, position + len(pieces))))
            position += len(pieces)
        special_words.append(len(groups))
        groups.append(run)
        position += len(run)
    info = dict(meta or {})
    info["special_words"] = special_words
    info["n_words_kept"] = [len(first_pieces)] + ([len(second_pieces)] if second_pieces is not None else [])
    return Encoded(
        input_ids=tokenizer.convert_tokens_to_ids(tokens),
        token_type_ids=types,
        tokens=tokens,
        words=groups,
        meta=info,
    )


def content_word_index(encoded: Encoded, sentence: int, word: int) -> int:
    """Index in ``encoded.words`` of word ``word`` (0-based) of sentence ``sentence`` (0 or 1)."""
    kept = encoded.meta["n_words_kept"]
    if word >= kept[sentence]:
        raise IndexError(f"word {word} of sentence {sentence} was truncated away")
    return 1 + word if sentence == 0 else 2 + kept[0] + word


@dataclass
class EncodedSet:
    """Tokenised examples: per-example id lists and the gold labels."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: np.ndarray
    regression: bool

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.input_ids), dtype=np.int64, count=len(self.input_ids))


def encode_examples(tokenizer: Any, examples: Sequence[Example], spec: TaskSpec, max_length: int) -> EncodedSet:
    """``[CLS] a [SEP] (b [SEP])`` WordPiece ids, truncated longest-first to ``max_length`` (as BERT's GLUE code)."""
    if not examples:
        raise ParameterError(f"no {spec.name} examples to encode")
    a = [e.text_a for e in examples]
    b = [e.text_b or "" for e in examples] if spec.is_pair else None
    enc = tokenizer(a, b, truncation=True if b is None else "longest_first", max_length=max_length,
                    return_token_type_ids=True)
    dtype = np.float32 if spec.is_regression else np.int64
    labels = np.asarray([e.label for e in examples], dtype=dtype)
    return EncodedSet(list(enc["input_ids"]), list(enc["token_type_ids"]), labels, spec.is_regression)


def collate(data: EncodedSet, idx: Sequence[int], pad_id: int) -> Batch:
    """The examples ``idx`` padded to the longest of them, with their labels: one :class:`~attnbook.engine.inputs.Batch`."""
    ids, mask = pad_rows([data.input_ids[i] for i in idx], pad_id)
    types, _ = pad_rows([data.token_type_ids[i] for i in idx], 0)
    return Batch(ids, mask, types, torch.from_numpy(data.labels[np.asarray(idx)]))
