"""Coreference from attention: antecedent selection accuracy (Clark et al. §4.3, Table 2).

Clark et al. ask how often the **head word of a coreferent mention attends most to
the head word of one of its antecedents**, over CoNLL-2012 documents truncated to
128 tokens, and compare one head (5-4 in bert-base) with three baselines: the
nearest mention, the nearest mention with the same head word, and a four-sieve
rule-based system in the spirit of Lee et al. (2011). This module does the same
on GUM's OntoNotes-scheme coreference (OntoGUM, the public corpus closest to
CoNLL-2012), with sentences, heads, UPOS/XPOS and features from GUM's UD trees.

Pipeline (each step a function)::

    docs = load_split("dev", max_docs=None)              # CorefDoc: words, sentences, mentions
    wins = windows(docs, tokenizer, 128, first_only=True)  # CorefWindow: model input + queries
    heads = evaluate_heads(loaded, wins, batch_size=16)    # CorefHeadAccuracy: [layer, head] per type
    base = baselines(wins)                                 # nearest / head match / rule-based
    table2(heads, base)                                    # the paper's Table 2, ours next to theirs

Definitions used everywhere (stated once):

* **Mention head word**: the token of the span whose UD head (basic ``HEAD``
  column) lies outside the span (the root counts as outside). When several tokens
  qualify (spans crossing sentences or subtrees), non-punctuation tokens are
  preferred and the *last* of them is taken; when none qualifies (impossible in a
  well-formed tree) the span's last token is taken.
* **Mention type** (from the head word): ``pronoun`` if UPOS is ``PRON`` or XPOS
  is a Penn pronoun tag (``PRP``, ``PRP$``, ``WP``, ``WP$``); ``proper`` if UPOS is
  ``PROPN``; ``nominal`` otherwise.
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

import re
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

from attnbook.data.conllu import iter_conllu
from attnbook.data.registry import data_path
from attnbook.core.errors import EmptyDataError, MalformedInputError, MissingDataError, ParameterError
from attnbook.engine.extract import Batch, Encoded, stream_attention
from attnbook.core.heads import head_label
from attnbook.engine.inputs import encode_words, word_pieces
from attnbook.core.paths import data_dir
from attnbook.engine.wordlevel import token_to_word_attention
from attnbook import verdict

#: mention types of Table 2, and the table's columns ("all" = every type)
KINDS = ("pronoun", "proper", "nominal")
COLUMNS = ("all",) + KINDS

#: Clark et al. (2019) Table 2: antecedent selection accuracy (%) on CoNLL-2012,
#: bert-base-uncased, documents truncated to 128 tokens. Neural coref (Wiseman et
#: al. 2015) is reported overall only, on full documents with its own mentions.
PAPER_TABLE2: dict[str, dict[str, float | None]] = {
    "Nearest": {"all": 27, "pronoun": 29, "proper": 29, "nominal": 19},
    "Head-word match": {"all": 52, "pronoun": 47, "proper": 67, "nominal": 40},
    "Rule-based": {"all": 69, "pronoun": 70, "proper": 77, "nominal": 60},
    "Neural coref": {"all": 83, "pronoun": None, "proper": None, "nominal": None},
    "Head 5-4": {"all": 65, "pronoun": 64, "proper": 73, "nominal": 58},
}
#: the paper's best coreference head (1-based layer-head), Clark et al. §4.3 / Figure 5 (65.1%)
PAPER_BEST_HEAD = "5-4"

#: version of the code that computes cached coreference results (part of cache keys)
CODE_VERSION = "coref-1"

#: the baselines' names as rows of Table 2, by key of :func:`baselines`
BASELINE_NAMES = {"nearest": "Nearest", "head_match": "Head-word match", "rule_based": "Rule-based"}

_PRONOUN_XPOS = {"PRP", "PRP$", "WP", "WP$"}

#: pronoun -> (number, gender, person); ``None`` = unknown / either. Takes precedence over UD FEATS.
PRONOUN_LEXICON: dict[str, tuple[str | None, str | None, int | None]] = {
    **{w: ("sing", None, 1) for w in ("i", "me", "my", "mine", "myself")},
    **{w: ("plur", None, 1) for w in ("we", "us", "our", "ours", "ourselves")},
    **{w: (None, None, 2) for w in ("you", "your", "yours", "ya", "y'all")},
    "yourself": ("sing", None, 2),
    "yourselves": ("plur", None, 2),
    **{w: ("sing", "masc", 3) for w in ("he", "him", "his", "himself")},
    **{w: ("sing", "fem", 3) for w in ("she", "her", "hers", "herself")},
    **{w: ("sing", "neut", 3) for w in ("it", "its", "itself")},
    **{w: ("plur", None, 3) for w in ("they", "them", "their", "theirs", "themselves")},
    **{w: ("sing", None, 3) for w in ("this", "that")},
    **{w: ("plur", None, 3) for w in ("these", "those")},
}
_UD_NUMBER = {"Sing": "sing", "Plur": "plur"}
_UD_GENDER = {"Masc": "masc", "Fem": "fem", "Neut": "neut"}


# --------------------------------------------------------------------------- data structures


@dataclass(frozen=True)
class Mention:
    """One gold mention: an inclusive span ``[start, end]`` of word positions and its cluster.

    Positions are document positions in a :class:`CorefDoc` and window positions in
    a :class:`CorefWindow`. ``head`` is the head word's position, ``kind`` one of
    :data:`KINDS`; ``text`` (lowercased span), ``head_word`` (lowercased) and the
    agreement features ``number`` (``"sing"``/``"plur"``), ``gender``
    (``"masc"``/``"fem"``/``"neut"``) and ``person`` (1/2/3) feed the baselines;
    ``None`` means unknown.
    """

    start: int
    end: int
    cluster: str
    head: int
    kind: str
    text: str
    head_word: str
    number: str | None = None
    gender: str | None = None
    person: int | None = None

    def shifted(self, offset: int) -> "Mention":
        """The same mention with every position moved by ``-offset``."""
        return replace(self, start=self.start - offset, end=self.end - offset, head=self.head - offset)


@dataclass
class CorefDoc:
    """A document: words with their UD annotation, sentence spans and gold mentions.

    ``heads[i]`` is word ``i``'s UD head as a document position (``-1`` for a root);
    ``sentences`` lists ``(start, stop)`` word ranges (``stop`` exclusive);
    ``mentions`` are sorted by ``(start, end)``.
    """

    name: str
    words: list[str]
    sentences: list[tuple[int, int]]
    heads: np.ndarray
    upos: list[str]
    xpos: list[str]
    feats: list[dict[str, str]]
    mentions: list[Mention]

    def __len__(self) -> int:
        return len(self.words)


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


# --------------------------------------------------------------------------- readers

_BRACKET = re.compile(r"\(([^()|\s]+)\)|\(([^()|\s]+)|([^()|\s]+)\)")


def parse_coref_cell(cell: str) -> list[tuple[str, str]]:
    """Parse a CoNLL-2012 coreference cell into ``[(kind, id)]``, kind ``"single"``/``"open"``/``"close"``.

    Handles ``_``/``-`` (nothing), ``(7)``, ``(7``, ``7)``, concatenations such as
    ``(1(2)`` and ``|``-separated parts. Raises ``ValueError`` on anything else.
    """
    cell = cell.strip()
    if cell in ("_", "-", ""):
        return []
    out: list[tuple[str, str]] = []
    for part in cell.split("|"):
        if not part:
            raise ValueError(f"empty part in coreference cell {cell!r}")
        pos = 0
        while pos < len(part):
            m = _BRACKET.match(part, pos)
            if m is None:
                raise ValueError(f"cannot parse coreference cell {cell!r} at {part[pos:]!r}")
            single, opening, closing = m.groups()
            if single is not None:
                out.append(("single", single))
            elif opening is not None:
                out.append(("open", opening))
            else:
                out.append(("close", closing))
            pos = m.end()
    return out


@dataclass
class _ConllDoc:
    forms: list[str]
    spans: list[tuple[int, int, str]]
    lines: list[int]  # 1-based line of each token


class CorefFormatWarning(UserWarning):
    """A bracket problem in a coreference file was skipped (``strict=False``)."""


def read_coref_conll(path: Path | str, strict: bool = True) -> _ConllDoc:
    """Read a 3-column OntoGUM ``.conll`` file: token index, form, coreference brackets.

    Returns the forms, the mention spans ``(start, end_inclusive, cluster_id)`` in
    the order they close, and each token's 1-based line. A closing bracket closes
    the most recent open mention of its id (CoNLL-2012 convention). Raises
    :class:`MalformedInputError` (file, line) on a wrong column count, a token
    index out of sequence, an unparsable cell, a closing bracket without an
    opening one, a mention left open, or a second document in the file. With
    ``strict=False`` the two bracket problems are skipped with a
    :class:`CorefFormatWarning` instead (the unmatched bracket is ignored); the one
    such file in the data is ``GENTLE_poetry_road`` (test2), line 21.
    """
    path = Path(path)
    forms: list[str] = []
    spans: list[tuple[int, int, str]] = []
    lines: list[int] = []
    open_: dict[str, list[tuple[int, int]]] = {}  # id -> stack of (start token, line)
    begun = ended = False
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            if line.startswith("#"):
                if line.startswith("#begin document") or line.startswith("# begin document"):
                    if begun:
                        raise MalformedInputError(path, lineno, "a second '# begin document'; one document per file")
                    begun = True
                elif line.startswith("#end document") or line.startswith("# end document"):
                    ended = True
                continue
            if not line.strip():
                continue
            if ended:
                raise MalformedInputError(path, lineno, "token line after '# end document'")
            cols = line.split("\t")
            if len(cols) != 3:
                raise MalformedInputError(
                    path, lineno, f"expected 3 tab-separated columns (index, form, coref), got {len(cols)}"
                )
            index, form, cell = cols
            if index.strip() != str(len(forms)):
                raise MalformedInputError(
                    path, lineno, f"token index {index!r} out of sequence; expected {len(forms)}"
                )
            try:
                items = parse_coref_cell(cell)
            except ValueError as exc:
                raise MalformedInputError(path, lineno, str(exc)) from None
            tok = len(forms)
            forms.append(form)
            lines.append(lineno)
            for kind, cid in items:
                if kind == "single":
                    spans.append((tok, tok, cid))
                elif kind == "open":
                    open_.setdefault(cid, []).append((tok, lineno))
                else:
                    stack = open_.get(cid)
                    if not stack:
                        problem = f"closing bracket '{cid})' without an opening '({cid}'"
                        if strict:
                            raise MalformedInputError(path, lineno, problem)
                        warnings.warn(f"{path}:{lineno}: {problem}; ignored", CorefFormatWarning, stacklevel=2)
                        continue
                    start, _ = stack.pop()
                    spans.append((start, tok, cid))
    for cid, stack in open_.items():
        for start, lineno in stack:
            problem = f"mention '({cid}' opened here is never closed"
            if strict:
                raise MalformedInputError(path, lineno, problem)
            warnings.warn(f"{path}:{lineno}: {problem}; ignored", CorefFormatWarning, stacklevel=2)
    if not forms:
        raise MalformedInputError(path, None, "no tokens")
    return _ConllDoc(forms, spans, lines)


@dataclass
class _UDWords:
    forms: list[str]
    heads: np.ndarray
    upos: list[str]
    xpos: list[str]
    feats: list[dict[str, str]]
    sentences: list[tuple[int, int]]


def _parse_feats(text: str) -> dict[str, str]:
    if text in ("_", ""):
        return {}
    out = {}
    for item in text.split("|"):
        key, sep, value = item.partition("=")
        if sep:
            out[key] = value
    return out


def read_ud_words(path: Path | str) -> _UDWords:
    """The words of a CoNLL-U file as one document: forms, document-level heads, UPOS, XPOS, FEATS, sentences.

    Read with :func:`attnbook.data.conllu.iter_conllu`: multiword-token ranges (``4-5``)
    and empty nodes (``8.1``) are not words, so words align with OntoGUM tokens;
    malformed lines raise :class:`MalformedInputError` (file, line).
    """
    forms: list[str] = []
    heads: list[int] = []
    upos: list[str] = []
    xpos: list[str] = []
    feats: list[dict[str, str]] = []
    sentences: list[tuple[int, int]] = []
    for sent in iter_conllu(path):
        start = len(forms)
        forms.extend(sent.words)
        heads.extend(-1 if h == 0 else start + h - 1 for h in sent.head)
        upos.extend(sent.upos)
        xpos.extend(sent.xpos)
        feats.extend(_parse_feats(f) for f in sent.feats)
        sentences.append((start, len(forms)))
    if not forms:
        raise MalformedInputError(path, None, "no word lines")
    return _UDWords(forms, np.asarray(heads, dtype=np.int64), upos, xpos, feats, sentences)


def read_splits(path: Path | str | None = None) -> dict[str, list[str]]:
    """Document names per split from GUM's ``splits.md`` (``## dev`` then ``  * GUM_...`` lines).

    ``train`` is the section of that name when present, else every document not in another split.
    """
    path = Path(path) if path is not None else data_path("coref", "gum", "splits.md")
    splits: dict[str, list[str]] = {}
    current: str | None = None
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.strip()
            if line.startswith("## "):
                current = line[3:].strip()
                splits.setdefault(current, [])
            elif line.startswith("* "):
                if current is None:
                    raise MalformedInputError(path, lineno, "document listed before any '## split' heading")
                splits[current].append(line[2:].strip())
    if not splits:
        raise MalformedInputError(path, None, "no '## split' sections found")
    return splits


def split_documents(split: str) -> list[str]:
    """Names of the documents of ``split`` (``train``/``dev``/``test``/``test2``) that are in the data.

    GUM's ``GUM_reddit_*`` documents are listed in ``splits.md`` but not shipped
    (their text must be restored online) and are skipped; any other listed
    document that is missing raises :class:`MissingDataError`.
    """
    splits = read_splits()
    folder = data_path("coref", "gum", "coref_ontogum_conll")
    present = sorted(p.stem for p in folder.glob("*.conll"))
    if split == "train" and "train" not in splits:
        others = {n for names in splits.values() for n in names}
        return [n for n in present if n not in others]
    if split not in splits:
        raise ParameterError(f"unknown split {split!r}; splits.md has: {', '.join(splits)}")
    have = set(present)
    out = []
    for name in splits[split]:
        if name in have:
            out.append(name)
        elif not name.startswith("GUM_reddit_"):
            raise MissingDataError(folder / f"{name}.conll", "coref", data_dir())
    return out


def document_files(name: str) -> tuple[Path, Path]:
    """``(coref .conll, UD .conllu)`` paths of document ``name``."""
    return (
        data_path("coref", "gum", "coref_ontogum_conll", f"{name}.conll"),
        data_path("coref", "gum", "dep_conllu", f"{name}.conllu"),
    )


def split_files(split: str, max_docs: int | None = None) -> list[Path]:
    """Every data file :func:`load_split` reads (for provenance and cache keys)."""
    files = [data_path("coref", "gum", "splits.md")]
    for name in _take(split_documents(split), max_docs):
        files.extend(document_files(name))
    return files


# --------------------------------------------------------------------------- mentions


def mention_head(start: int, end: int, heads: np.ndarray, upos: Sequence[str] | None = None) -> int:
    """The head word of the inclusive span ``[start, end]``: the token whose UD head is outside the span.

    Several such tokens: the last non-punctuation one (``upos`` given) or the last one.
    None (not possible in a tree): the span's last token.
    """
    outside = [i for i in range(start, end + 1) if not start <= heads[i] <= end]
    if upos is not None:
        content = [i for i in outside if upos[i] != "PUNCT"]
        outside = content or outside
    return outside[-1] if outside else end


def mention_kind(upos: str, xpos: str) -> str:
    """``pronoun`` / ``proper`` / ``nominal`` from the head word's UPOS and XPOS (see module docstring)."""
    if upos == "PRON" or xpos in _PRONOUN_XPOS:
        return "pronoun"
    if upos == "PROPN":
        return "proper"
    return "nominal"


def agreement_features(word: str, kind: str, feats: dict[str, str]) -> tuple[str | None, str | None, int | None]:
    """``(number, gender, person)`` of a mention from its head word.

    Pronouns: :data:`PRONOUN_LEXICON` when the word is in it, else the UD FEATS
    ``Number``/``Gender``/``Person``. Other mentions: ``Number`` from FEATS, no
    gender (unknown), third person.
    """
    lower = word.lower()
    if kind == "pronoun" and lower in PRONOUN_LEXICON:
        return PRONOUN_LEXICON[lower]
    number = _UD_NUMBER.get(feats.get("Number", ""))
    if kind == "pronoun":
        gender = _UD_GENDER.get(feats.get("Gender", ""))
        person = int(feats["Person"]) if feats.get("Person", "") in ("1", "2", "3") else None
        return number, gender, person
    return number, None, 3


def build_mentions(
    spans: Iterable[tuple[int, int, str]],
    words: Sequence[str],
    heads: np.ndarray,
    upos: Sequence[str],
    xpos: Sequence[str],
    feats: Sequence[dict[str, str]],
) -> list[Mention]:
    """:class:`Mention` objects (head, type, text, agreement) for gold spans, sorted by ``(start, end)``."""
    out = set()
    for start, end, cid in spans:
        h = mention_head(start, end, heads, upos)
        kind = mention_kind(upos[h], xpos[h])
        number, gender, person = agreement_features(words[h], kind, feats[h])
        out.add(
            Mention(
                start=start, end=end, cluster=str(cid), head=h, kind=kind,
                text=" ".join(words[start : end + 1]).lower(), head_word=words[h].lower(),
                number=number, gender=gender, person=person,
            )
        )
    return sorted(out, key=lambda m: (m.start, m.end, m.cluster))


def load_document(
    conll_path: Path | str, conllu_path: Path | str, name: str | None = None, strict: bool = True
) -> CorefDoc:
    """Read one document from its OntoGUM ``.conll`` and its UD ``.conllu`` file.

    Tokens must align one to one. A token whose ``.conll`` form is empty takes the
    CoNLL-U form (the one known case: ``GUM_news_iodine`` token 379, ``|``); any
    other count or form mismatch raises :class:`MalformedInputError`. ``strict`` as
    in :func:`read_coref_conll`.
    """
    conll_path, conllu_path = Path(conll_path), Path(conllu_path)
    coref = read_coref_conll(conll_path, strict=strict)
    ud = read_ud_words(conllu_path)
    if len(coref.forms) != len(ud.forms):
        raise MalformedInputError(
            conll_path, None,
            f"{len(coref.forms)} tokens, but {conllu_path.name} has {len(ud.forms)} words; the files must align 1:1",
        )
    words = []
    for i, (a, b) in enumerate(zip(coref.forms, ud.forms)):
        if a != b and a.strip():
            raise MalformedInputError(
                conll_path, coref.lines[i], f"token {i} is {a!r} but word {i} of {conllu_path.name} is {b!r}"
            )
        words.append(b)
    mentions = build_mentions(coref.spans, words, ud.heads, ud.upos, ud.xpos, ud.feats)
    return CorefDoc(
        name=name or conll_path.stem, words=words, sentences=ud.sentences, heads=ud.heads,
        upos=ud.upos, xpos=ud.xpos, feats=ud.feats, mentions=mentions,
    )


def _take(names: list[str], max_docs: int | None) -> list[str]:
    if max_docs is None:
        return names
    if max_docs < 1:
        raise ParameterError(f"max_docs must be at least 1 (or None for all), got {max_docs}")
    return names[:max_docs]


def load_split(split: str = "dev", max_docs: int | None = None, strict: bool = True) -> list[CorefDoc]:
    """The documents of a GUM split (``train``/``dev``/``test``/``test2``).

    ``max_docs`` keeps the first documents in ``splits.md`` order (``None``: all).

    ``strict=False`` skips bracket errors with a warning (needed for ``test2``, see
    :func:`read_coref_conll`); train, dev and test read cleanly in strict mode.
    """
    docs = [
        load_document(*document_files(name), name=name, strict=strict)
        for name in _take(split_documents(split), max_docs)
    ]
    if not docs:
        raise EmptyDataError(f"split {split!r} has no documents in the data directory")
    return docs


# --------------------------------------------------------------------------- windows and queries


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
    ``n[column]`` the number of queries.
    """

    correct: dict[str, np.ndarray]
    n: dict[str, int]

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
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "CorefHeadAccuracy":
        return cls(
            correct={c: np.asarray(arrays[f"correct_{c}"], dtype=np.int64) for c in COLUMNS},
            n={c: int(v) for c, v in zip(COLUMNS, arrays["n"])},
        )


def _check_column(column: str) -> None:
    if column not in COLUMNS:
        raise ParameterError(f"unknown column {column!r}; one of {', '.join(COLUMNS)}")


class CorefHeadReducer:
    """Streaming reducer: accumulates :func:`score_queries` over windows (no maps kept).

    ``wins[i]`` must be the window of example ``i`` given to
    :func:`~attnbook.engine.extract.stream_attention`. Token maps become word maps with
    :func:`~attnbook.engine.wordlevel.token_to_word_attention` (``from_reduce`` as there),
    computed only for the words the window's queries read (:func:`query_words`).
    """

    def __init__(self, wins: Sequence[CorefWindow], n_layers: int, n_heads: int, from_reduce: str = "mean"):
        self.wins = wins
        self.from_reduce = from_reduce
        self.correct = {c: np.zeros((n_layers, n_heads), dtype=np.int64) for c in COLUMNS}
        self.n = {c: 0 for c in COLUMNS}

    def add(self, word_attn: np.ndarray, queries: Sequence[Query], positions: Sequence[int] | None = None) -> None:
        """Fold one window's word map ``word_attn[layer, head, word, word]`` (``positions``: :func:`score_queries`)."""
        if not queries:
            return
        ok = score_queries(word_attn, queries, positions)
        for k, q in enumerate(queries):
            for c in ("all", q.kind):
                self.correct[c] += ok[:, :, k]
                self.n[c] += 1

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        for b, i in enumerate(batch.index):
            win = self.wins[i]
            if not win.queries:
                continue
            positions = query_words(win.queries)
            words = word_attention(attn[b], batch.examples[b], self.from_reduce, positions)
            self.add(words, win.queries, positions)

    def result(self) -> CorefHeadAccuracy:
        return CorefHeadAccuracy({c: v.copy() for c, v in self.correct.items()}, dict(self.n))


def evaluate_heads(
    loaded: Any,
    wins: Sequence[CorefWindow],
    batch_size: int = 16,
    *,
    from_reduce: str = "mean",
    progress: bool = True,
    use_cache: bool = False,
) -> CorefHeadAccuracy:
    """Antecedent selection accuracy of every attention head on ``wins`` (Clark et al. §4.3, Table 2).

    With ``use_cache`` the counts are cached (:func:`attnbook.core.cache.cached_arrays`) by model
    key, a digest of the windows' inputs and queries (:func:`attnbook.core.cache.digest`),
    ``from_reduce`` and :data:`CODE_VERSION`.
    """
    wins = [w for w in wins if w.queries]
    if not wins:
        raise EmptyDataError("no window has a coreferent mention with an antecedent; use more documents")

    def compute() -> CorefHeadAccuracy:
        reducer = CorefHeadReducer(wins, loaded.n_layers, loaded.n_heads, from_reduce)
        (result,) = stream_attention(
            loaded, [w.encoded for w in wins], [reducer], batch_size=batch_size, progress=progress,
            desc="coreference heads",
        )
        return result

    if not use_cache:
        return compute()
    from attnbook.core import cache

    parts = {"model": loaded.key, "windows": cache.digest(wins), "from_reduce": from_reduce, "code": CODE_VERSION}
    return CorefHeadAccuracy.from_arrays(cache.cached_arrays("coref_heads", parts, lambda: compute().to_arrays()))


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
    head words, sieve 3 :func:`agrees` on the features of :func:`agreement_features`.
    """
    m = win.mentions[q.mention]
    for _, test in SIEVES:
        for j in q.candidates:
            if test(m, win.mentions[j]):
                return win.mentions[j].head
    raise AssertionError("the last sieve accepts every candidate")  # pragma: no cover


@dataclass
class SystemAccuracy:
    """Correct predictions and query counts of one system, per column of :data:`COLUMNS`."""

    name: str
    correct: dict[str, int] = field(default_factory=lambda: {c: 0 for c in COLUMNS})
    n: dict[str, int] = field(default_factory=lambda: {c: 0 for c in COLUMNS})

    def accuracy(self, column: str = "all") -> float:
        _check_column(column)
        return self.correct[column] / self.n[column] if self.n[column] else float("nan")


def evaluate_predictor(
    wins: Sequence[CorefWindow], predict: Callable[[CorefWindow, Query], int], name: str
) -> SystemAccuracy:
    """Score a rule ``predict(window, query) -> head word`` on every query of ``wins``."""
    acc = SystemAccuracy(name)
    for w in wins:
        for q in w.queries:
            ok = predict(w, q) in q.gold_words
            for c in ("all", q.kind):
                acc.n[c] += 1
                acc.correct[c] += int(ok)
    return acc


def baselines(wins: Sequence[CorefWindow]) -> dict[str, SystemAccuracy]:
    """The three baselines of Table 2 on the same queries as the heads: ``nearest``, ``head_match``, ``rule_based``."""
    rules = {"nearest": predict_nearest, "head_match": predict_head_match, "rule_based": predict_rule_based}
    return {key: evaluate_predictor(wins, rule, BASELINE_NAMES[key]) for key, rule in rules.items()}


# --------------------------------------------------------------------------- Table 2


def table2(heads: CorefHeadAccuracy | None, base: dict[str, SystemAccuracy], with_paper: bool = True):
    """Table 2 of Clark et al.: accuracy (%) by mention type for the baselines and the best head.

    Rows: the baselines, then ``"Best head (L-H)"`` (the head best overall, scored in
    every column) when ``heads`` is given, then a ``"mentions (n)"`` row of query
    counts. Columns ``all``/``pronoun``/``proper``/``nominal``; with ``with_paper``
    also ``paper <column>`` from :data:`PAPER_TABLE2` (the best-head row is compared
    with the paper's head 5-4).
    """
    import pandas as pd

    rows: dict[str, dict[str, float]] = {}
    paper_rows: dict[str, str] = {}
    n: dict[str, int] | None = None
    for key, acc in base.items():
        rows[acc.name] = {c: 100 * acc.accuracy(c) for c in COLUMNS}
        paper_rows[acc.name] = acc.name
        n = acc.n
    if heads is not None:
        layer, head = heads.best("all")
        label = f"Best head ({head_label(layer, head)})"
        rows[label] = {c: 100 * float(heads.accuracy(c)[layer, head]) for c in COLUMNS}
        paper_rows[label] = f"Head {PAPER_BEST_HEAD}"
        n = heads.n
    if n is None:
        raise EmptyDataError("table2 needs head results or at least one baseline")
    rows["mentions (n)"] = {c: float(n[c]) for c in COLUMNS}
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
    if with_paper:
        for c in COLUMNS:
            df[f"paper {c}"] = [_paper_value(paper_rows.get(r), c) for r in df.index]
    df.index.name = "system"
    return df


def _paper_value(row: str | None, column: str) -> float:
    if row is None or row not in PAPER_TABLE2:
        return float("nan")
    v = PAPER_TABLE2[row][column]
    return float("nan") if v is None else float(v)


def paper_table2():
    """:data:`PAPER_TABLE2` as a DataFrame (rows = systems, columns = mention types, %)."""
    import pandas as pd

    df = pd.DataFrame.from_dict(PAPER_TABLE2, orient="index", columns=list(COLUMNS)).astype(float)
    df.index.name = "system"
    return df


# --------------------------------------------------------------------------- paper vs this run


def paper_comparison(heads: CorefHeadAccuracy, base: dict[str, SystemAccuracy]) -> list[dict]:
    """Rows of "paper vs this run" for Clark §4.3 (Table 2), each with a verdict computed from the numbers.

    Accuracies on GUM and CoNLL-2012 are not comparable as such (other texts, another mix
    of mention types), so the findings are compared as margins within each corpus
    (:func:`attnbook.verdict.margin`, 10-point size classes): the best head over the
    head-word-match baseline (paper: "over 10 points"), the best head against the
    rule-based system (paper: close, -4), the order of the three baselines, and the
    mention type on which the head gains most over head-word match (paper: nominal).
    The best head is the one best on all mentions, scored in every column, as in Table 2.
    ``base`` is :func:`baselines`' result.
    """
    from attnbook.studies.clark.syntax import SPECIALIST_MARGIN

    layer, head = heads.best("all")
    label = head_label(layer, head)
    ours = {c: 100 * float(heads.accuracy(c)[layer, head]) for c in COLUMNS}
    paper_head = PAPER_TABLE2[f"Head {PAPER_BEST_HEAD}"]
    paper_hm, paper_rb = PAPER_TABLE2["Head-word match"], PAPER_TABLE2["Rule-based"]
    hm = {c: 100 * base["head_match"].accuracy(c) for c in COLUMNS}
    rb = {c: 100 * base["rule_based"].accuracy(c) for c in COLUMNS}
    near = 100 * base["nearest"].accuracy("all")
    rows = [dict(
        experiment="§4.3 coreference", quantity="best head, antecedent selection accuracy (all mentions)",
        paper=f"{paper_head['all']:.0f} ({PAPER_BEST_HEAD})", ours=f"{ours['all']:.1f} ({label})",
        verdict=verdict.NOT_COMPARABLE,
        note=f"CoNLL-2012 vs GUM/OntoGUM; {heads.n['pronoun']} of {heads.n['all']} queries here are pronouns",
    )]
    for name, paper_base, ours_base, finding in (
        ("head-word match", paper_hm, hm, "paper: over 10 points better"),
        ("rule-based", paper_rb, rb, "paper: close to the rule-based system"),
    ):
        pm, om = paper_head["all"] - paper_base["all"], ours["all"] - ours_base["all"]
        rows.append(dict(
            experiment="§4.3 coreference", quantity=f"best head minus {name} (points, all mentions)",
            paper=round(pm, 1), ours=round(om, 1), verdict=verdict.margin(pm, om, SPECIALIST_MARGIN), note=finding,
        ))
    order_ok = near < hm["all"] < rb["all"]
    rows.append(dict(
        experiment="§4.3 coreference", quantity="baselines: nearest < head-word match < rule-based",
        paper=f"{PAPER_TABLE2['Nearest']['all']:.0f} < {paper_hm['all']:.0f} < {paper_rb['all']:.0f}",
        ours=f"{near:.1f}, {hm['all']:.1f}, {rb['all']:.1f}", verdict=verdict.conditions(order_ok),
        note="same order" if order_ok else "another order here",
    ))
    kinds = [k for k in KINDS if heads.n[k] > 0]
    if kinds:
        paper_gain = {k: paper_head[k] - paper_hm[k] for k in KINDS}
        ours_gain = {k: ours[k] - hm[k] for k in kinds}
        pk, ok = max(paper_gain, key=paper_gain.get), max(ours_gain, key=ours_gain.get)
        rows.append(dict(
            experiment="§4.3 coreference", quantity="mention type where the head gains most over head-word match",
            paper=f"{pk} ({paper_gain[pk]:+.0f})", ours=f"{ok} ({ours_gain[ok]:+.1f})",
            verdict=verdict.conditions(pk == ok),
            note="gains here: " + ", ".join(f"{k} {ours_gain[k]:+.1f}" for k in kinds),
        ))
    return rows
