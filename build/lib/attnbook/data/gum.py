"""GUM coreference in its OntoGUM version (OntoNotes scheme), read with GUM's own UD trees.

GUM (Zeldes 2017) is the freely available corpus closest to CoNLL-2012 (Clark et al. §4.3 use
CoNLL-2012, which is licensed). Each document comes as two aligned files under
``<data>/coref/gum/``:

* ``coref_ontogum_conll/<name>.conll`` - three tab-separated columns (token index, form, CoNLL-2012
  coreference brackets), read by :func:`read_coref_conll`;
* ``dep_conllu/<name>.conllu`` - the same tokens as UD words with heads, UPOS, XPOS and FEATS,
  read by :func:`read_ud_words`;

and ``splits.md`` lists the documents of each split (:func:`read_splits`, :func:`split_documents`).
:func:`load_document` / :func:`load_split` give :class:`CorefDoc` objects whose gold mentions carry
what the tree says about them (stated once):

* **Mention head word**: the token of the span whose UD head (basic ``HEAD`` column) lies outside
  the span (the root counts as outside). When several tokens qualify (spans crossing sentences or
  subtrees), non-punctuation tokens are preferred and the *last* of them is taken; when none
  qualifies (impossible in a well-formed tree) the span's last token is taken.
* **Mention type** (from the head word, Clark et al. Table 2's columns): ``pronoun`` if UPOS is
  ``PRON`` or XPOS is a Penn pronoun tag (``PRP``, ``PRP$``, ``WP``, ``WP$``); ``proper`` if UPOS is
  ``PROPN``; ``nominal`` otherwise.
* **Agreement** (number, gender, person) from :data:`PRONOUN_LEXICON` for pronouns, else UD FEATS.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from attnbook.core.errors import EmptyDataError, MalformedInputError, MissingDataError, ParameterError
from attnbook.core.paths import data_dir
from attnbook.data.conllu import iter_conllu
from attnbook.data.registry import data_path

#: mention types, from the head word (see the module docstring)
MENTION_KINDS = ("pronoun", "proper", "nominal")

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


# --------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Mention:
    """One gold mention: an inclusive span ``[start, end]`` of word positions and its cluster.

    Positions are document positions in a :class:`CorefDoc` (and window positions in a
    window of :mod:`attnbook.studies.clark.coref`). ``head`` is the head word's position, ``kind`` one of
    :data:`MENTION_KINDS`; ``text`` (lowercased span), ``head_word`` (lowercased) and the
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

