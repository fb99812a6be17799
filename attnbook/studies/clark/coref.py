"""Coreference from attention: antecedent selection accuracy (Clark et al. §4.3, Table 2).

Clark et al. ask how often the **head word of a coreferent mention attends most to
the head word of one of its antecedents**, over CoNLL-2012 documents truncated to
128 tokens, and compare one head with three baselines: the nearest mention, the
nearest mention with the same head word, and a four-sieve rule-based system in the
spirit of Lee et al. (2011). This module does the same on GUM's OntoNotes-scheme
coreference (OntoGUM, the public corpus closest to CoNLL-2012), read by
:mod:`attnbook.data.gum` with sentences, mention heads, types and agreement features
from GUM's UD trees.

Pipeline (each step a function)::

    docs = gum.load_split("dev", max_docs=None)          # CorefDoc: words, sentences, mentions
    wins = windows(docs, tokenizer, 128, first_only=True)  # CorefWindow: model input + queries
    heads = evaluate_heads(loaded, wins, batch_size=16)    # CorefHeadAccuracy: [layer, head] per type
    base = baselines(wins)                                 # nearest / head match / rule-based
    table2(heads, base)                                    # Table 2's rows measured here

(:func:`attnbook.studies.clark.paper.table2` sets the paper's numbers beside them.)

Definitions used everywhere (stated once; mention head words and types are
:mod:`attnbook.data.gum`'s):

* **Earlier / candidates**: mentions are compared by the position of their head
  words. The candidates of mention *m* are all mentions in the same window whose
  head word precedes *m*'s head word (any cluster); its **antecedents** are the
  candidates of *m*'s cluster. A mention is evaluated (a *query*) when it has at
  least one antecedent in the window.
* **A prediction is a word**: the head word of a candidate. It is correct when it
  is the head word of one of the antecedents (Clark's wording). Baselines and
  attention heads are scored on exactly the same queries and candidates.

Model inputs (Clark's footnote 3 truncates documents to 128 tokens): a document
is cut into **windows of whole sentences** whose word pieces fit ``max_tokens``
(``[CLS]`` and ``[SEP]`` included, one segment). ``first_only=True`` keeps each
document's first window (the paper's setting); ``first_only=False`` tiles the
whole document into consecutive non-overlapping windows (more mentions from the
same documents). Only mentions entirely inside a window are kept, so a chain is
evaluated within a window only. A single sentence longer than the budget forms
its own window and is truncated by :func:`attnbook.engine.inputs.encode_words` (whole
words dropped from its end; mentions reaching past the kept words are dropped).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.data.gum import MENTION_KINDS, CorefDoc, Mention
from attnbook.engine.extract import Batch, Encoded, stream_attention
from attnbook.engine.inputs import encode_words, word_pieces
from attnbook.engine.models import LoadedModel
from attnbook.engine.wordlevel import token_to_word_attention

#: mention types of Table 2 (:data:`attnbook.data.gum.MENTION_KINDS`), and the table's columns ("all" = every type)
KINDS = MENTION_KINDS
COLUMNS = ("all",) + KINDS


#: the baselines' names as rows of Table 2, by key of :func:`baselines`
BASELINE_NAMES = {"nearest": "Nearest", "head_match": "Head-word match", "rule_based": "Rule-based"}


# --------------------------------------------------------------------------- windows and queries


@dataclass(frozen=True)
class Query:
    """A coreferent mention to resolve inside a window.

    ``mention`` indexes ``window.mentions``; ``head`` is its head word (window
    position); ``candidates`` indexes the earlier mentions (head word before
    ``head``), nearest first; ``candidate_words`` are their distinct head words,
    ascending; ``gold_words`` the head words of the antecedents (same cluster).
    """

    mention: int
    head: int
    kind: str
    candidates: tuple[int, ...]
    candidate_words: tuple[int, ...]
    gold_words: frozenset[int]


@dataclass
class CorefWindow:
    """A run of whole sentences of one document, encoded as one model input.

    ``offset`` is the document position of window word 0; ``mentions`` are the
    mentions entirely inside the window, in window positions; ``encoded`` is the
    :func:`~attnbook.engine.inputs.encode_words` input (content word ``w`` is word
    ``1 + w`` of ``encoded.words``, after ``[CLS]``).
    """

    doc: str
    offset: int
    sentences: tuple[int, int]
    words: list[str]
    mentions: list[Mention]
    queries: list[Query]
    encoded: Encoded

    @property
    def n_queries(self) -> int:
        return len(self.queries)


def build_queries(mentions: Sequence[Mention]) -> list[Query]:
    """The queries of a window's mentions: every mention with an antecedent among the earlier mentions."""
    order = sorted(range(len(mentions)), key=lambda j: mentions[j].head)
    queries = []
    for i, m in enumerate(mentions):
        cands = [j for j in order if mentions[j].head < m.head]
        gold = frozenset(mentions[j].head for j in cands if mentions[j].cluster == m.cluster)
        if not gold:
            continue
        queries.append(
            Query(
                mention=i, head=m.head, kind=m.kind,
                candidates=tuple(reversed(cands)),
                candidate_words=tuple(sorted({mentions[j].head for j in cands})),
                gold_words=gold,
            )
        )
    return queries


def _sentence_runs(sent_pieces: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Greedy runs ``[first, stop)`` of consecutive sentences whose pieces fit ``budget``."""
    runs, first = [], 0
    while first < len(sent_pieces):
        stop, total = first, 0
        while stop < len(sent_pieces) and (stop == first or total + sent_pieces[stop] <= budget):
            total += sent_pieces[stop]
            stop += 1
        runs.append((first, stop))
        first = stop
    return runs


def document_windows(
    doc: CorefDoc, tokenizer: Any, max_tokens: int = 128, first_only: bool = True
) -> list[CorefWindow]:
    """The windows of one document (see the module docstring), including windows without queries."""
    if max_tokens < 8:
        raise ParameterError(f"max_tokens must be at least 8, got {max_tokens}")
    pieces = [len(p) for p in word_pieces(tokenizer, doc.words)]
    sent_pieces = [sum(pieces[a:b]) for a, b in doc.sentences]
    runs = _sentence_runs(sent_pieces, max_tokens - 2)
    if first_only:
        runs = runs[:1]
    out = []
    for first, stop in runs:
        lo, hi = doc.sentences[first][0], doc.sentences[stop - 1][1]
        words = doc.words[lo:hi]
        enc = encode_words(tokenizer, words, max_tokens=max_tokens, meta={"doc": doc.name, "offset": lo})
        kept = enc.meta["n_words_kept"][0]
        mentions = [m.shifted(lo) for m in doc.mentions if m.start >= lo and m.end < lo + kept]
        out.append(
            CorefWindow(
                doc=doc.name, offset=lo, sentences=(first, stop), words=list(words[:kept]),
                mentions=mentions, queries=build_queries(mentions), encoded=enc,
            )
        )
    return out


def windows(
    docs: Sequence[CorefDoc],
    tokenizer: Any,
    max_tokens: int = 128,
    first_only: bool = True,
    keep_empty: bool = False,
) -> list[CorefWindow]:
    """Model inputs for coreference: windows of whole sentences fitting ``max_tokens`` pieces.

    ``first_only=True`` is the paper's setting (each document truncated to its
    first ``max_tokens`` tokens, Clark et al. §4.3 footnote 3); ``False`` uses every
    window of every document. Windows without a query are dropped unless ``keep_empty``.
    """
    out = []
    for doc in docs:
        for w in document_windows(doc, tokenizer, max_tokens, first_only):
            if keep_empty or w.queries:
                out.append(w)
    return out


def document_order(wins: Sequence[CorefWindow]) -> list[str]:
    """The documents of the windows that have a query, in order of first appearance: the units the
    coreference comparisons are bootstrapped over (queries of one document are not independent)."""
    out: dict[str, None] = {}
    for w in wins:
        if w.queries:
            out.setdefault(w.doc, None)
    return list(out)


def count_queries(wins: Sequence[CorefWindow]) -> dict[str, int]:
    """Number of evaluated mentions per column of Table 2."""
    n = {c: 0 for c in COLUMNS}
    for w in wins:
        for q in w.queries:
            n[q.kind] += 1
            n["all"] += 1
    return n


# --------------------------------------------------------------------------- attention heads


def score_queries(
    word_attn: np.ndarray, queries: Sequence[Query], positions: Sequence[int] | None = None
) -> np.ndarray:
    """``correct[layer, head, query]``: does each head's most-attended candidate word hold an antecedent?

    ``word_attn[layer, head, query_word, key_word]`` is a word-level map over the
    window's content words; ``positions`` gives the window position of each of its
    rows/columns (ascending; ``None``: row ``w`` is window word ``w``). For each
    query, the head word's row is restricted to the candidate head words; the
    arg-max wins, exact ties going to the nearest candidate.
    """
    word_attn = np.asarray(word_attn)
    pos = None if positions is None else np.asarray(positions, dtype=np.int64)

    def index(words: Sequence[int]) -> np.ndarray:
        w = np.asarray(words, dtype=np.int64)
        if pos is None:
            return w
        k = np.searchsorted(pos, w)
        if (k >= len(pos)).any() or (pos[np.minimum(k, len(pos) - 1)] != w).any():
            raise ValueError(f"words {w.tolist()} are not all among the map's positions")
        return k

    n_layers, n_heads = word_attn.shape[:2]
    out = np.zeros((n_layers, n_heads, len(queries)), dtype=bool)
    for k, q in enumerate(queries):
        cands = np.asarray(q.candidate_words, dtype=np.int64)
        row = int(index([q.head])[0])
        scores = word_attn[:, :, row, index(cands)][..., ::-1]  # nearest first
        chosen = cands[len(cands) - 1 - scores.argmax(-1)]  # [layer, head]
        out[:, :, k] = np.isin(chosen, list(q.gold_words))
    return out


def query_words(queries: Sequence[Query]) -> list[int]:
    """Window positions the queries read: their head words and every candidate head word (ascending)."""
    return sorted({q.head for q in queries} | {w for q in queries for w in q.candidate_words})


def word_attention(
    attn: np.ndarray | torch.Tensor,
    encoded: Encoded,
    from_reduce: str = "mean",
    positions: Sequence[int] | None = None,
) -> np.ndarray:
    """Content-word map ``[layer, head, word, word]`` of one input from its token map ``attn[layer, head, query, key]``.

    ``[CLS]`` and ``[SEP]`` are dropped. With ``positions`` (ascending window
    positions) only those words' rows and columns are computed: the token map is
    first cut down to their pieces, which gives exactly the same entries, since a
    word-level entry depends only on the two words' pieces (§4.1 conversion,
    :func:`~attnbook.engine.wordlevel.token_to_word_attention`).
    """
    if positions is None:
        full = token_to_word_attention(attn, encoded.words, from_reduce=from_reduce)
        n_words = encoded.meta["n_words_kept"][0]
        return full[..., 1 : 1 + n_words, 1 : 1 + n_words]
    groups = [encoded.words[1 + w] for w in positions]
    tokens = [t for g in groups for t in g]
    sub = attn[..., tokens, :][..., tokens]
    local, start = [], 0
    for g in groups:
        local.append(list(range(start, start + len(g))))
        start += len(g)
    return token_to_word_attention(sub, local, from_reduce=from_reduce)


@dataclass
class CorefHeadAccuracy:
    """Per-head antecedent selection counts, overall and by mention type (Clark et al. §4.3).

    ``correct[column]`` is ``[layer, head]`` (int) for each column of :data:`COLUMNS`;
    ``n[column]`` the number of queries. Per document (:func:`document_order`), when kept:
    ``doc_correct[doc, column, layer, head]`` and ``doc_n[doc, column]``, for the bootstrap over documents.
    """

    correct: dict[str, np.ndarray]
    n: dict[str, int]
    docs: list[str] = field(default_factory=list)
    doc_correct: np.ndarray | None = None
    doc_n: np.ndarray | None = None

    def accuracy(self, column: str = "all") -> np.ndarray:
        """``accuracy[layer, head]`` in [0, 1] (NaN when the column has no queries)."""
        _check_column(column)
        if self.n[column] == 0:
            return np.full(self.correct[column].shape, np.nan)
        return self.correct[column] / self.n[column]

    def best(self, column: str = "all") -> tuple[int, int]:
        """0-based ``(layer, head)`` of the most accurate head (first in layer-major order on ties)."""
        acc = self.accuracy(column)
        if np.isnan(acc).all():
            raise EmptyDataError(f"no {column} queries to rank heads by")
        flat = int(np.nanargmax(acc))
        return divmod(flat, acc.shape[1])

    def best_heads(self):
        """DataFrame: for each column, the best head's label, its accuracy (%) and n."""
        import pandas as pd

        rows = []
        for c in COLUMNS:
            if self.n[c] == 0:
                rows.append({"type": c, "head": None, "accuracy": np.nan, "n": 0})
                continue
            layer, head = self.best(c)
            acc = 100 * float(self.accuracy(c)[layer, head])
            rows.append({"type": c, "head": head_label(layer, head), "accuracy": acc, "n": self.n[c]})
        return pd.DataFrame(rows)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Arrays for :func:`attnbook.core.cache.cached_arrays`; inverse of :meth:`from_arrays`."""
        out = {f"correct_{c}": np.asarray(self.correct[c], dtype=np.int64) for c in COLUMNS}
        out["n"] = np.asarray([self.n[c] for c in COLUMNS], dtype=np.int64)
        if self.doc_correct is not None:
            out.update(docs=np.array(self.docs), doc_correct=self.doc_correct, doc_n=self.doc_n)
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "CorefHeadAccuracy":
        per = {}
        if "doc_correct" in arrays:
            per = dict(docs=[str(d) for d in arrays["docs"]], doc_correct=np.asarray(arrays["doc_correct"]),
                       doc_n=np.asarray(arrays["doc_n"]))
        return cls(
            correct={c: np.asarray(arrays[f"correct_{c}"], dtype=np.int64) for c in COLUMNS},
            n={c: int(v) for c, v in zip(COLUMNS, arrays["n"])}, **per,
        )


def _check_column(column: str) -> None:
    if column not in COLUMNS:
        raise ParameterError(f"unknown column {column!r}; one of {', '.join(COLUMNS)}")


class CorefHeadReducer:
    """Streaming reducer: accumulates :func:`score_queries` over windows (no maps kept).

    ``wins[i]`` must be the window of example ``i`` given to
    :func:`~attnbook.engine.extract.stream_attention`. Token maps become word maps with
    :func:`~attnbook.engine.wordlevel.token_to_word_attention` (``from_reduce`` as there),
    computed only for the words the window's queries read (:func:`query_words`). The counts are also kept per
    document (:func:`document_order`).
    """

    def __init__(self, wins: Sequence[CorefWindow], n_layers: int, n_heads: int, from_reduce: str = "mean"):
        self.wins = wins
        self.from_reduce = from_reduce
        self.correct = {c: np.zeros((n_layers, n_heads), dtype=np.int64) for c in COLUMNS}
        self.n = {c: 0 for c in COLUMNS}
        self.docs = document_order(wins)
        self.doc_index = {d: k for k, d in enumerate(self.docs)}
        self.doc_correct = np.zeros((len(self.docs), len(COLUMNS), n_layers, n_heads), dtype=np.int32)
        self.doc_n = np.zeros((len(self.docs), len(COLUMNS)), dtype=np.int32)

    def add(self, word_attn: np.ndarray, queries: Sequence[Query], positions: Sequence[int] | None = None,
            doc: str | None = None) -> None:
        """Fold one window's word map ``word_attn[layer, head, word, word]`` (``positions``: :func:`score_queries`)
        of document ``doc``."""
        if not queries:
            return
        ok = score_queries(word_attn, queries, positions)
        d = self.doc_index.get(doc) if doc is not None else None
        for k, q in enumerate(queries):
            for c in ("all", q.kind):
                self.correct[c] += ok[:, :, k]
                self.n[c] += 1
                if d is not None:
                    self.doc_correct[d, COLUMNS.index(c)] += ok[:, :, k]
                    self.doc_n[d, COLUMNS.index(c)] += 1

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        for b, i in enumerate(batch.index):
            win = self.wins[i]
            if not win.queries:
                continue
            positions = query_words(win.queries)
            words = word_attention(attn[b], batch.examples[b], self.from_reduce, positions)
            self.add(words, win.queries, positions, win.doc)

    def result(self) -> CorefHeadAccuracy:
        return CorefHeadAccuracy({c: v.copy() for c, v in self.correct.items()}, dict(self.n), list(self.docs),
                                 self.doc_correct.copy(), self.doc_n.copy())


@cache.memoized("coref_heads", ignore=("batch_size", "progress"))
def evaluate_heads(
    loaded: LoadedModel,
    wins: Sequence[CorefWindow],
    batch_size: int = 16,
    *,
    from_reduce: str = "mean",
    progress: bool = True,
) -> CorefHeadAccuracy:
    """Antecedent selection accuracy of every attention head on ``wins`` (Clark et al. §4.3, Table 2); cached by
    model, the windows' inputs and queries, and ``from_reduce``."""
    wins = [w for w in wins if w.queries]
    if not wins:
        raise EmptyDataError("no window has a coreferent mention with an antecedent; use more documents")
    reducer = CorefHeadReducer(wins, loaded.n_layers, loaded.n_heads, from_reduce)
    (result,) = stream_attention(
        loaded, [w.encoded for w in wins], [reducer], batch_size=batch_size, progress=progress,
        desc="coreference heads",
    )
    return result


# --------------------------------------------------------------------------- baselines


def predict_nearest(win: CorefWindow, q: Query) -> int:
    """Nearest-mention baseline: the head word of the closest earlier mention."""
    return win.mentions[q.candidates[0]].head


def predict_head_match(win: CorefWindow, q: Query) -> int:
    """The closest earlier mention with the same (lowercased) head word; the closest mention when none has it."""
    target = win.mentions[q.mention].head_word
    for j in q.candidates:
        if win.mentions[j].head_word == target:
            return win.mentions[j].head
    return predict_nearest(win, q)


def agrees(a: Mention, b: Mention) -> bool:
    """Number, gender and person are compatible (equal, or unknown on either side)."""
    pairs = ((a.number, b.number), (a.gender, b.gender), (a.person, b.person))
    return all(x is None or y is None or x == y for x, y in pairs)


#: the four sieves of the rule-based baseline, in order (Clark et al. §4.3, after Lee et al. 2011)
SIEVES: tuple[tuple[str, Callable[[Mention, Mention], bool]], ...] = (
    ("exact string match", lambda m, c: m.text == c.text),
    ("head word match", lambda m, c: m.head_word == c.head_word),
    ("number/gender/person agreement", agrees),
    ("any mention", lambda m, c: True),
)


def predict_rule_based(win: CorefWindow, q: Query) -> int:
    """Four-sieve baseline: the nearest earlier mention passing the earliest sieve of :data:`SIEVES`.

    Sieve 1 compares the whole lowercased mention text, sieve 2 the lowercased
    head words, sieve 3 :func:`agrees` on the features of :func:`attnbook.data.gum.agreement_features`.
    """
    m = win.mentions[q.mention]
    for _, test in SIEVES:
        for j in q.candidates:
            if test(m, win.mentions[j]):
                return win.mentions[j].head
    raise AssertionError("the last sieve accepts every candidate")  # pragma: no cover


@dataclass
class SystemAccuracy:
    """Correct predictions and query counts of one system, per column of :data:`COLUMNS`; per document
    (:func:`document_order`) in ``doc_correct[doc, column]`` / ``doc_n[doc, column]`` when kept."""

    name: str
    correct: dict[str, int] = field(default_factory=lambda: {c: 0 for c in COLUMNS})
    n: dict[str, int] = field(default_factory=lambda: {c: 0 for c in COLUMNS})
    docs: list[str] = field(default_factory=list)
    doc_correct: np.ndarray | None = None
    doc_n: np.ndarray | None = None

    def accuracy(self, column: str = "all") -> float:
        _check_column(column)
        return self.correct[column] / self.n[column] if self.n[column] else float("nan")


def evaluate_predictor(
    wins: Sequence[CorefWindow], predict: Callable[[CorefWindow, Query], int], name: str
) -> SystemAccuracy:
    """Score a rule ``predict(window, query) -> head word`` on every query of ``wins`` (counts kept per document)."""
    docs = document_order(wins)
    index = {d: k for k, d in enumerate(docs)}
    acc = SystemAccuracy(name, docs=docs, doc_correct=np.zeros((len(docs), len(COLUMNS)), dtype=np.int32),
                         doc_n=np.zeros((len(docs), len(COLUMNS)), dtype=np.int32))
    for w in wins:
        for q in w.queries:
            ok = predict(w, q) in q.gold_words
            for c in ("all", q.kind):
                acc.n[c] += 1
                acc.correct[c] += int(ok)
                acc.doc_n[index[w.doc], COLUMNS.index(c)] += 1
                acc.doc_correct[index[w.doc], COLUMNS.index(c)] += int(ok)
    return acc


def baselines(wins: Sequence[CorefWindow]) -> dict[str, SystemAccuracy]:
    """The three baselines of Table 2 on the same queries as the heads: ``nearest``, ``head_match``, ``rule_based``."""
    rules = {"nearest": predict_nearest, "head_match": predict_head_match, "rule_based": predict_rule_based}
    return {key: evaluate_predictor(wins, rule, BASELINE_NAMES[key]) for key, rule in rules.items()}


# --------------------------------------------------------------------------- Table 2


def table2(heads: CorefHeadAccuracy | None, base: dict[str, SystemAccuracy]):
    """Table 2 of Clark et al. measured here: accuracy (%) by mention type for the baselines and the best head.

    Rows: the baselines, then ``"Best head (L-H)"`` (the head best overall, scored in
    every column) when ``heads`` is given, then a ``"mentions (n)"`` row of query
    counts. Columns ``all``/``pronoun``/``proper``/``nominal``.
    """
    import pandas as pd

    rows: dict[str, dict[str, float]] = {}
    n: dict[str, int] | None = None
    for key, acc in base.items():
        rows[acc.name] = {c: 100 * acc.accuracy(c) for c in COLUMNS}
        n = acc.n
    if heads is not None:
        layer, head = heads.best("all")
        label = f"Best head ({head_label(layer, head)})"
        rows[label] = {c: 100 * float(heads.accuracy(c)[layer, head]) for c in COLUMNS}
        n = heads.n
    if n is None:
        raise EmptyDataError("table2 needs head results or at least one baseline")
    rows["mentions (n)"] = {c: float(n[c]) for c in COLUMNS}
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
    df.index.name = "system"
    return df
