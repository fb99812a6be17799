"""Individual attention heads as dependency parsers (Clark et al. §4.2, Table 1).

**What is measured.** Every attention head is read as a classifier: for each
word, the *other* word it attends to most (word-level maps, Clark §4.1: attention
to a split word is summed over its pieces, from a split word averaged; ``[CLS]``
and ``[SEP]`` are ignored as predictions, paper footnote 2, and so is the word
itself) is the head's prediction. For a gold dependency edge (dependent ``d``,
head word ``h``) a head is right

* in the direction ``"dep->head"`` when ``d``'s most-attended word is ``h``;
* in the direction ``"head->dep"`` when ``h``'s most-attended word is ``d``.

A head's accuracy at a relation is the share of that relation's edges it gets
right; Table 1 reports, per relation, the best (layer, head, direction) and a
fixed-offset baseline (the head is always the word ``offset`` positions from
the dependent, offsets -3..+3, best one shown; +1 is right-branching).

**Data.** The paper uses the WSJ Penn Treebank with Stanford Dependencies (SD);
the book uses UD English EWT (:mod:`attnbook.data.conllu`). :data:`TABLE1_UD` maps
every Table 1 row to UD; most are renamings, two need a derivation because UD
makes the *noun* the head of a prepositional phrase while SD makes the
preposition the head:

* ``pobj`` (SD: the noun depends on the preposition) = every UD ``case`` edge
  **reversed**: dependent = the noun, head = its ``case`` word. So "prepositions
  attend to their objects" is this row's ``head->dep`` direction, as in the paper.
* ``prep`` (SD: the preposition depends on what the PP modifies) = dependent = the
  ``case`` word, head = the head of its noun (skipped when the noun is the root).
  Possessive ``'s`` (UD ``case`` with XPOS ``POS``) is excluded from both: SD calls
  it ``possessive``.
* ``poss`` = UD ``nmod:poss``. The paper counts the possessive ``'s`` as a correct
  dependent (Clark §4.2, head 7-6): an edge also counts as right when the
  possessor's ``'s`` (its ``case`` child with XPOS ``POS``) takes the possessor's
  place (``Edges.alt``).
* Differences that remain (not corrected, worth a sentence in the chapter): UD
  ``mark`` also covers infinitival *to* (SD: ``aux``); UD ``compound`` is wider than
  SD ``nn``; the corpora differ (web text vs newswire). UD ``nsubj``/``aux``/``obj``
  exclude their passive/indirect variants exactly as SD does (``nsubj:pass``,
  ``aux:pass``, ``iobj``), and subtypes are never merged (exact deprel match).

**"All"** is UAS-style: every word whose gold head is a word (the root word
has no word head and is skipped); punctuation is **included** by default
(``exclude_punct=True`` drops UD ``punct`` words, the usual parser-evaluation
convention). Like every row, its best head is chosen over both directions.

No map is kept: :class:`SyntaxReducer` folds each batch into counts
``correct[relation, layer, head, direction]``, and keeps the same counts per sentence
(``uint16``, about 9 MB for the 2,001 UD dev sentences and 72 heads, 17 MB for 144) so that
every comparison with the paper can be bootstrapped over sentences, paired where two
accuracies share the sentences.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.data.conllu import Sentence
from attnbook.engine.extract import Batch, Encoded, stream_attention
from attnbook.engine.inputs import encode_words
from attnbook.engine.models import LoadedModel
from attnbook.engine.wordlevel import token_to_word_attention

#: the two ways a head can express an edge
DIRECTIONS = ("dep->head", "head->dep")

#: fixed offsets of the baseline (head position minus dependent position), Clark §4.2
OFFSETS = (-3, -2, -1, 1, 2, 3)

#: Table 1 row (the paper's SD name) -> how its edges are read off a UD tree
TABLE1_UD: dict[str, str] = {
    "All": "every word with a word head (root skipped)",
    "prep": "case word -> head of its noun (derived)",
    "pobj": "noun -> its case word (case reversed)",
    "det": "det",
    "nn": "compound",
    "nsubj": "nsubj",
    "amod": "amod",
    "dobj": "obj",
    "advmod": "advmod",
    "aux": "aux",
    "poss": "nmod:poss ('s counts as the dependent too)",
    "auxpass": "aux:pass",
    "ccomp": "ccomp",
    "mark": "mark",
    "prt": "compound:prt",
}

#: the UD deprel of every row that is a plain renaming
_UD_DEPREL = {
    "det": "det", "nn": "compound", "nsubj": "nsubj", "amod": "amod", "dobj": "obj", "advmod": "advmod",
    "aux": "aux", "poss": "nmod:poss", "auxpass": "aux:pass", "ccomp": "ccomp", "mark": "mark",
    "prt": "compound:prt",
}

#: Table 1 rows in the paper's order
TABLE1_RELATIONS: tuple[str, ...] = tuple(TABLE1_UD)


# ---------------------------------------------------------------------------------------------
# gold edges
# ---------------------------------------------------------------------------------------------
@dataclass
class Edges:
    """Gold edges of one sentence: parallel int arrays (positions 0-based).

    ``rel[e]`` indexes the relation list, ``dep[e]``/``head[e]`` are the dependent and
    head positions, ``alt[e]`` an alternative dependent that also counts (``'s`` for
    ``poss``) or ``-1``.
    """

    rel: np.ndarray
    dep: np.ndarray
    head: np.ndarray
    alt: np.ndarray

    def __len__(self) -> int:
        return int(self.rel.shape[0])

    @staticmethod
    def from_rows(rows: Sequence[tuple[int, int, int, int]]) -> "Edges":
        a = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
        return Edges(a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy(), a[:, 3].copy())

    def shifted(self, by: int) -> "Edges":
        """The same edges with every position moved by ``by`` (e.g. +1 past ``[CLS]``)."""
        alt = np.where(self.alt >= 0, self.alt + by, -1)
        return Edges(self.rel.copy(), self.dep + by, self.head + by, alt)

    def keep(self, mask: np.ndarray) -> "Edges":
        return Edges(self.rel[mask], self.dep[mask], self.head[mask], self.alt[mask])


def _check_relations(relations: Sequence[str]) -> None:
    unknown = [r for r in relations if r not in TABLE1_UD]
    if unknown:
        raise ParameterError(f"unknown relations {unknown}; known: {', '.join(TABLE1_UD)}")


def sentence_edges(
    sentence: Sentence, relations: Sequence[str] = TABLE1_RELATIONS, exclude_punct: bool = False
) -> Edges:
    """The gold edges of ``sentence`` for every relation in ``relations`` (UD mapping: module doc).

    Positions are 0-based word positions in the sentence; an edge can appear under
    several relations (every ``det`` edge is also an ``All`` edge).
    """
    _check_relations(relations)
    heads = sentence.heads0()
    n = len(sentence)
    is_pos_clitic = [sentence.deprel[i] == "case" and sentence.xpos[i] == "POS" for i in range(n)]
    clitic_of: dict[int, int] = {}
    for i in range(n):
        if is_pos_clitic[i] and heads[i] >= 0:
            clitic_of.setdefault(heads[i], i)
    rows: list[tuple[int, int, int, int]] = []
    for r, name in enumerate(relations):
        if name == "All":
            for i in range(n):
                if heads[i] >= 0 and not (exclude_punct and sentence.deprel[i] == "punct"):
                    rows.append((r, i, heads[i], -1))
        elif name in ("prep", "pobj"):
            for i in range(n):
                if sentence.deprel[i] != "case" or is_pos_clitic[i] or heads[i] < 0:
                    continue
                noun = heads[i]
                if name == "pobj":
                    rows.append((r, noun, i, -1))
                elif heads[noun] >= 0:
                    rows.append((r, i, heads[noun], -1))
        else:
            label = _UD_DEPREL[name]
            for i in range(n):
                if sentence.deprel[i] == label and heads[i] >= 0:
                    alt = clitic_of.get(i, -1) if name == "poss" else -1
                    rows.append((r, i, heads[i], alt))
    return Edges.from_rows(rows)


def encode_sentences(
    tokenizer,
    sentences: Sequence[Sentence],
    *,
    max_tokens: int = 128,
    relations: Sequence[str] = TABLE1_RELATIONS,
    exclude_punct: bool = False,
) -> list[Encoded]:
    """Encode each sentence word by word (:func:`attnbook.engine.inputs.encode_words`) with its gold edges.

    ``meta["edges"]`` holds :class:`Edges` in *encoded word* positions (``[CLS]`` is word 0,
    so sentence word ``i`` is ``i + 1``); edges touching a word dropped by truncation are
    removed and counted in ``meta["n_dropped_edges"]``.
    """
    out = []
    for k, s in enumerate(sentences):
        enc = encode_words(tokenizer, s.words, max_tokens=max_tokens, meta={"sentence": k, "sent_id": s.sent_id})
        kept = enc.meta["n_words_kept"][0]
        edges = sentence_edges(s, relations, exclude_punct)
        edges.alt[edges.alt >= kept] = -1  # a truncated alternative dependent just no longer counts
        ok = (edges.dep < kept) & (edges.head < kept)
        enc.meta["edges"] = edges.keep(ok).shifted(1)
        enc.meta["n_dropped_edges"] = int((~ok).sum())
        out.append(enc)
    return out


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------
def head_predictions(word_maps: np.ndarray, ignore: Sequence[int]) -> np.ndarray:
    """Each head's prediction for each word: ``pred[layer, head, word]`` = most-attended other word.

    ``word_maps[layer, head, from_word, to_word]``; words in ``ignore`` (``[CLS]``, ``[SEP]``)
    and the word itself are never predicted (ties: the leftmost word).
    """
    a = np.array(word_maps, dtype=np.float32, copy=True)
    n = a.shape[-1]
    if a.shape[-2] != n:
        raise ValueError(f"expected word_maps[..., from, to] square, got {a.shape}")
    a[..., list(ignore)] = -np.inf
    idx = np.arange(n)
    a[..., idx, idx] = -np.inf
    return a.argmax(-1)


def score_predictions(pred: np.ndarray, edges: Edges, n_relations: int) -> np.ndarray:
    """Counts of right predictions ``correct[relation, layer, head, direction]`` for one sentence."""
    n_layers, n_heads = pred.shape[:2]
    out = np.zeros((n_relations, n_layers, n_heads, 2), dtype=np.int64)
    if len(edges) == 0:
        return out
    has_alt = edges.alt >= 0
    alt = np.where(has_alt, edges.alt, edges.dep)  # stand-in index where there is no alternative
    d2h = (pred[:, :, edges.dep] == edges.head) | (has_alt & (pred[:, :, alt] == edges.head))
    h2d = (pred[:, :, edges.head] == edges.dep) | (has_alt & (pred[:, :, edges.head] == edges.alt))
    onehot = np.zeros((len(edges), n_relations), dtype=np.int64)
    onehot[np.arange(len(edges)), edges.rel] = 1
    out[..., 0] = np.einsum("lhe,er->rlh", d2h.astype(np.int64), onehot)
    out[..., 1] = np.einsum("lhe,er->rlh", h2d.astype(np.int64), onehot)
    return out


def offset_counts(edges: Edges, n_relations: int, offsets: Sequence[int] = OFFSETS) -> np.ndarray:
    """Right guesses of each fixed-offset baseline, ``correct[relation, offset]`` for one sentence.

    Offset ``o`` predicts that the head of the word at ``i`` is the word at ``i + o``.
    """
    off = np.asarray(offsets)[None, :]
    diff = (edges.head - edges.dep)[:, None]
    diff_alt = np.where(edges.alt >= 0, edges.head - edges.alt, 0)[:, None]
    hit = (diff == off) | ((edges.alt >= 0)[:, None] & (diff_alt == off))
    out = np.zeros((n_relations, len(offsets)), dtype=np.int64)
    np.add.at(out, edges.rel, hit.astype(np.int64))
    return out


def relation_counts(edges: Edges, n_relations: int) -> np.ndarray:
    return np.bincount(edges.rel, minlength=n_relations).astype(np.int64)


@dataclass
class HeadAccuracy:
    """Clark §4.2 counts: every head's right predictions per relation and direction, and the baselines.

    ``correct[relation, layer, head, direction]``, ``total[relation]`` (edges),
    ``baseline_correct[relation, offset]`` over ``offsets``; accuracies are fractions.
    The same counts per sentence (the units a bootstrap resamples), when kept:
    ``sentence_correct[sentence, relation, layer, head, direction]``, ``sentence_total[sentence, relation]``,
    ``sentence_baseline[sentence, relation, offset]`` (sentences in input order).
    """

    relations: list[str]
    correct: np.ndarray
    total: np.ndarray
    baseline_correct: np.ndarray
    offsets: list[int] = field(default_factory=lambda: list(OFFSETS))
    n_sentences: int = 0
    n_dropped_edges: int = 0
    sentence_correct: np.ndarray | None = None
    sentence_total: np.ndarray | None = None
    sentence_baseline: np.ndarray | None = None

    @property
    def has_sentences(self) -> bool:
        """Whether the per-sentence counts (for bootstrap intervals) are kept."""
        return self.sentence_correct is not None

    @property
    def n_layers(self) -> int:
        return int(self.correct.shape[1])

    @property
    def n_heads(self) -> int:
        return int(self.correct.shape[2])

    def _rel(self, relation: str) -> int:
        try:
            return self.relations.index(relation)
        except ValueError:
            raise ParameterError(f"relation {relation!r} was not evaluated; have {self.relations}") from None

    def accuracy(self) -> np.ndarray:
        """``acc[relation, layer, head, direction]`` (NaN for a relation without edges)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.correct / self.total[:, None, None, None]

    def for_relation(self, relation: str, direction: str = "dep->head") -> np.ndarray:
        """``acc[layer, head]`` of every head at ``relation`` in ``direction``."""
        if direction not in DIRECTIONS:
            raise ParameterError(f"direction is one of {DIRECTIONS}, got {direction!r}")
        return self.accuracy()[self._rel(relation), :, :, DIRECTIONS.index(direction)]

    def best(self, relation: str) -> tuple[int, int, str, float]:
        """The best head at ``relation`` over both directions: ``(layer, head, direction, accuracy)``, 0-based."""
        r = self._rel(relation)
        if self.total[r] == 0:
            raise EmptyDataError(f"no {relation} edges in the evaluated sentences")
        acc = self.correct[r]  # [layer, head, direction]; ties: first in layer, head, direction order
        layer, head, d = np.unravel_index(int(np.argmax(acc)), acc.shape)
        return int(layer), int(head), DIRECTIONS[d], float(acc[layer, head, d] / self.total[r])

    def baseline(self, relation: str) -> tuple[int, float]:
        """The best fixed offset at ``relation`` and its accuracy."""
        r = self._rel(relation)
        if self.total[r] == 0:
            raise EmptyDataError(f"no {relation} edges in the evaluated sentences")
        k = int(np.argmax(self.baseline_correct[r]))
        return int(self.offsets[k]), float(self.baseline_correct[r, k] / self.total[r])

    def __add__(self, other: "HeadAccuracy") -> "HeadAccuracy":
        if self.relations != other.relations or self.offsets != other.offsets:
            raise ValueError("can only add HeadAccuracy over the same relations and offsets")
        both = self.has_sentences and other.has_sentences
        cat = (lambda a, b: np.concatenate([a, b])) if both else (lambda a, b: None)  # noqa: E731
        return HeadAccuracy(
            list(self.relations), self.correct + other.correct, self.total + other.total,
            self.baseline_correct + other.baseline_correct, list(self.offsets),
            self.n_sentences + other.n_sentences, self.n_dropped_edges + other.n_dropped_edges,
            cat(self.sentence_correct, other.sentence_correct), cat(self.sentence_total, other.sentence_total),
            cat(self.sentence_baseline, other.sentence_baseline),
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """For :func:`attnbook.core.cache.cached_arrays` (no pickles)."""
        out = {
            "relations": np.array(self.relations), "correct": self.correct, "total": self.total,
            "baseline_correct": self.baseline_correct, "offsets": np.array(self.offsets),
            "n_sentences": np.array(self.n_sentences), "n_dropped_edges": np.array(self.n_dropped_edges),
        }
        if self.has_sentences:
            out.update(sentence_correct=self.sentence_correct, sentence_total=self.sentence_total,
                       sentence_baseline=self.sentence_baseline)
        return out

    @staticmethod
    def from_arrays(a: dict[str, np.ndarray]) -> "HeadAccuracy":
        per = {k: (np.asarray(a[k]) if k in a else None)
               for k in ("sentence_correct", "sentence_total", "sentence_baseline")}
        return HeadAccuracy(
            [str(r) for r in a["relations"]], np.asarray(a["correct"]), np.asarray(a["total"]),
            np.asarray(a["baseline_correct"]), [int(o) for o in a["offsets"]],
            int(a["n_sentences"]), int(a["n_dropped_edges"]), **per,
        )


class SyntaxReducer:
    """Streams Clark §4.2 counts: converts each example's maps to words, scores every head.

    Feed it :func:`encode_sentences` outputs through :func:`attnbook.engine.extract.stream_attention`.
    Keeps only counts: the totals, and each sentence's counts (``uint16``; one sentence's row is
    ``relations x layers x heads x 2`` numbers) for the bootstrap over sentences.
    """

    def __init__(
        self,
        relations: Sequence[str],
        n_layers: int,
        n_heads: int,
        offsets: Sequence[int] = OFFSETS,
        from_reduce: str = "mean",
    ):
        self.relations = list(relations)
        self.offsets = list(offsets)
        self.from_reduce = from_reduce
        r = len(self.relations)
        self.correct = np.zeros((r, n_layers, n_heads, 2), dtype=np.int64)
        self.total = np.zeros(r, dtype=np.int64)
        self.baseline_correct = np.zeros((r, len(self.offsets)), dtype=np.int64)
        self.n_sentences = 0
        self.n_dropped = 0
        self.sentences: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = []  # (order, seq, counts...)

    def add_example(self, word_maps: np.ndarray, example: Encoded) -> None:
        """Fold one example's word-level maps ``[layer, head, from_word, to_word]`` into the counts."""
        edges: Edges = example.meta["edges"]
        r = len(self.relations)
        pred = head_predictions(word_maps, example.meta["special_words"])
        correct = score_predictions(pred, edges, r)
        total = relation_counts(edges, r)
        base = offset_counts(edges, r, self.offsets)
        self.correct += correct
        self.total += total
        self.baseline_correct += base
        order = int(example.meta.get("sentence", self.n_sentences))
        self.sentences.append((order, self.n_sentences, correct.astype(np.uint16), total.astype(np.int32),
                               base.astype(np.uint16)))
        self.n_sentences += 1
        self.n_dropped += int(example.meta.get("n_dropped_edges", 0))

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        for b, example in enumerate(batch.examples):
            n = int(batch.lengths[b])
            maps = attn[b, :, :, :n, :n].float().cpu().numpy()
            self.add_example(token_to_word_attention(maps, example.words, self.from_reduce), example)

    def result(self) -> HeadAccuracy:
        kept = sorted(self.sentences, key=lambda x: x[:2])
        r, (n_layers, n_heads) = len(self.relations), self.correct.shape[1:3]
        stack = (lambda k, shape, dtype: np.stack([x[k] for x in kept]) if kept  # noqa: E731
                 else np.zeros((0,) + shape, dtype=dtype))
        return HeadAccuracy(
            list(self.relations), self.correct.copy(), self.total.copy(), self.baseline_correct.copy(),
            list(self.offsets), self.n_sentences, self.n_dropped,
            stack(2, (r, n_layers, n_heads, 2), np.uint16), stack(3, (r,), np.int32),
            stack(4, (r, len(self.offsets)), np.uint16),
        )


def evaluate_word_maps(
    word_maps: Sequence[np.ndarray],
    encoded: Sequence[Encoded],
    relations: Sequence[str] = TABLE1_RELATIONS,
    offsets: Sequence[int] = OFFSETS,
) -> HeadAccuracy:
    """Clark §4.2 counts from word-level maps held in memory (one ``[layer, head, word, word]`` per example).

    The non-streaming twin of :class:`SyntaxReducer` (tests, hand-built maps).
    """
    if len(word_maps) != len(encoded):
        raise ValueError(f"{len(word_maps)} maps for {len(encoded)} examples")
    if not encoded:
        raise EmptyDataError("no sentences to evaluate")
    n_layers, n_heads = np.asarray(word_maps[0]).shape[:2]
    red = SyntaxReducer(relations, n_layers, n_heads, offsets)
    for m, ex in zip(word_maps, encoded):
        red.add_example(np.asarray(m), ex)
    return red.result()


@cache.memoized("syntax_heads", ignore=("batch_size", "progress"))
def evaluate_heads(
    loaded: LoadedModel,
    sentences: Sequence[Sentence],
    *,
    max_tokens: int = 128,
    batch_size: int = 32,
    relations: Sequence[str] = TABLE1_RELATIONS,
    exclude_punct: bool = False,
    offsets: Sequence[int] = OFFSETS,
    from_reduce: str = "mean",
    progress: bool = True,
) -> HeadAccuracy:
    """Evaluate every head of ``loaded`` as a dependency classifier on ``sentences`` (Clark §4.2).

    Streams the model over the sentences (:class:`SyntaxReducer`); cached by model, sentences and parameters.
    """
    if not sentences:
        raise EmptyDataError("no sentences to evaluate")
    _check_relations(relations)
    encoded = encode_sentences(
        loaded.tokenizer, sentences, max_tokens=max_tokens, relations=relations, exclude_punct=exclude_punct
    )
    reducer = SyntaxReducer(relations, loaded.n_layers, loaded.n_heads, offsets, from_reduce)
    (acc,) = stream_attention(
        loaded, encoded, [reducer], batch_size=batch_size, progress=progress, desc="heads as parsers (§4.2)"
    )
    return acc


# ---------------------------------------------------------------------------------------------
# baselines and tables
# ---------------------------------------------------------------------------------------------
def right_branching_uas(sentences: Sequence[Sentence], exclude_punct: bool = False) -> float:
    """UAS of the right-branching baseline: every word's head is the next word (Clark §4.2, §5).

    Scored over words whose gold head is a word (the root word is skipped), punctuation
    included unless ``exclude_punct``; the last word of a sentence is always wrong.
    """
    right = total = 0
    for s in sentences:
        for i, (h, rel) in enumerate(zip(s.heads0(), s.deprel)):
            if h < 0 or (exclude_punct and rel == "punct"):
                continue
            total += 1
            right += h == i + 1
    if total == 0:
        raise EmptyDataError("no scored words")
    return right / total


def table1(acc: HeadAccuracy):
    """Clark Table 1 measured here, as a tidy DataFrame, accuracies in percent.

    Columns: relation, ud (how the row is read off UD), n (edges), head (best, 1-based
    ``layer-head``), direction, accuracy, baseline_offset, baseline_accuracy.
    (:func:`attnbook.studies.clark.paper.table1` adds the paper's columns.)
    """
    import pandas as pd

    rows = []
    for rel in acc.relations:
        r = acc._rel(rel)
        row: dict = {"relation": rel, "ud": TABLE1_UD.get(rel, rel), "n": int(acc.total[r])}
        if acc.total[r] > 0:
            layer, head, direction, a = acc.best(rel)
            off, b = acc.baseline(rel)
            row.update(head=head_label(layer, head), direction=direction, accuracy=100 * a,
                       baseline_offset=off, baseline_accuracy=100 * b)
        else:
            row.update(head=None, direction=None, accuracy=float("nan"), baseline_offset=None,
                       baseline_accuracy=float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def best_heads_by_relation(acc: HeadAccuracy) -> dict[str, list[str]]:
    """1-based ``layer-head`` label -> the relations (with edges) at which that head is the best single head."""
    out: dict[str, list[str]] = {}
    for rel in acc.relations:
        if acc.total[acc._rel(rel)]:
            layer, head, _, _ = acc.best(rel)
            out.setdefault(head_label(layer, head), []).append(rel)
    return out


def direction_preference(acc: HeadAccuracy) -> "pd.DataFrame":  # noqa: F821
    """Per relation, the best head's accuracy in each direction (Clark §4.2: dependents attend to heads).

    Columns: relation, best_dep_to_head, best_head_to_dep (percent).
    """
    import pandas as pd

    a = acc.accuracy()
    rows = []
    for rel in acc.relations:
        r = acc._rel(rel)
        rows.append({
            "relation": rel,
            "best_dep_to_head": 100 * float(np.nanmax(a[r, :, :, 0])) if acc.total[r] else float("nan"),
            "best_head_to_dep": 100 * float(np.nanmax(a[r, :, :, 1])) if acc.total[r] else float("nan"),
        })
    return pd.DataFrame(rows)

