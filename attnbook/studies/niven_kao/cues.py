"""The Argument Reasoning Comprehension Task and its statistical cues (Niven & Kao, 2019).

An ARCT item (Habernal et al., 2018) is a claim C, a reason R and two candidate
warrants; exactly one warrant W makes "R, and since W, C" hold, the other (the
alternative A) supports the opposite claim (R ∧ A → ¬C). ``label`` says which of
``warrant0`` / ``warrant1`` is the correct one (Niven & Kao §1).

This module is the data side of the chapter, everything without a neural model:

* **readers and a writer** for the original SemEval-2018 files and the four
  adversarial files of Niven & Kao (:func:`load_arct`, :func:`read_arct`,
  :func:`write_arct`, :func:`read_claim_map`);
* **cue statistics** over the warrants (§4): applicability, productivity and
  coverage of every unigram and bigram (:func:`cue_statistics`, :func:`cue_row`);
* **the adversarial transform** (§6): negate the claim and invert the label
  (:func:`negate_claims`, :func:`make_adversarial`), the warrant swap of the
  training file the paper's adversarial runs actually used (:func:`swap_warrants`),
  and a check against the shipped files (:func:`agreement_with_shipped`);
* the two **baselines without training**: majority label and the "not" cue
  (:func:`majority_baseline`, :func:`cue_baseline`);
* Altair charts of the above (:func:`cue_scatter`, :func:`accuracy_bars`).

Tokenisation for the cue statistics (stated once, used everywhere), see :func:`tokenize`:
lowercase; with ``negation="expand"`` (default) the contractions "n't" become a
separate "not" ("don't" → "do not", "can't" → "can not", "won't" → "will not")
and "cannot" becomes "can not", the effect of the authors' cleaning step;
then the words are the maximal runs of letters and digits (punctuation and
apostrophes split words: "it's" → "it", "s"). ``negation="keep"`` skips the
rewriting, so only a whole word "not" counts as "not".
"""
from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from attnbook.core.errors import AttnbookError, EmptyDataError, MalformedInputError, ParameterError

# ---- the paper's numbers -------------------------------------------------------------------


def _stats(mean: float, std: float | None = None, median: float | None = None, max_: float | None = None) -> dict:
    return {k: v for k, v in (("mean", mean), ("std", std), ("median", median), ("max", max_)) if v is not None}


#: Every number of Niven & Kao (2019) the chapter compares with (test accuracy unless the key says otherwise).
#: Sources: Table 1 (baselines, BERT), §4 text (degenerate runs), Table 2 (the "not" cue),
#: Table 3 (probes), Table 4 (adversarial test). 20 seeds per row (``n_seeds``).
PAPER: dict[str, Any] = {
    "n_seeds": 20,
    "table1": {
        "Human (trained)": _stats(0.909, 0.11),
        "Human (untrained)": _stats(0.798, 0.16),
        "BERT (Large)": {**_stats(0.671, 0.09, 0.712, 0.770), "dev_mean": 0.701, "dev_std": 0.05},
        "GIST": {**_stats(0.711, 0.01), "dev_mean": 0.716, "dev_std": 0.01},
        "BERT (Base)": {**_stats(0.623, 0.07, 0.651, 0.685), "dev_mean": 0.680, "dev_std": 0.02},
        "World Knowledge": {**_stats(0.568, 0.03, None, 0.610), "dev_mean": 0.674, "dev_std": 0.01},
        "BoV": {**_stats(0.564, 0.02, 0.569, 0.595), "dev_mean": 0.639, "dev_std": 0.02},
        "BiLSTM": {**_stats(0.552, 0.02, 0.552, 0.592), "dev_mean": 0.658, "dev_std": 0.01},
    },
    # BERT Large failed to train in 5 of 20 runs (training accuracy < 80%); the other 15 runs:
    "bert_large_non_degenerate": {**_stats(0.716, 0.04), "n_failed": 5, "n_runs": 20},
    # Table 2: productivity and coverage of the cue "not"; the headline row is "all" (train+dev+test).
    "not_cue": {
        "train": {"productivity": 0.65, "coverage": 0.66},
        "dev": {"productivity": 0.62, "coverage": 0.44},
        "test": {"productivity": 0.52, "coverage": 0.77},
        "all": {"productivity": 0.61, "coverage": 0.64},
    },
    # Table 3: probing with partial input (BERT = BERT Large).
    "table3": {
        "BERT": {
            "full": _stats(0.671, 0.09, 0.712, 0.770),
            "W": _stats(0.656, 0.05, 0.675, 0.712),
            "RW": _stats(0.600, 0.10, 0.574, 0.750),
            "CW": _stats(0.532, 0.09, 0.503, 0.732),
        },
        "BoV": {
            "full": _stats(0.564, 0.02, 0.569, 0.595),
            "W": _stats(0.567, 0.02, 0.572, 0.606),
            "RW": _stats(0.554, 0.02, 0.557, 0.579),
            "CW": _stats(0.545, 0.02, 0.544, 0.589),
        },
        "BiLSTM": {
            "full": _stats(0.552, 0.02, 0.552, 0.592),
            "W": _stats(0.550, 0.02, 0.547, 0.577),
            "RW": _stats(0.547, 0.02, 0.551, 0.577),
            "CW": _stats(0.552, 0.02, 0.550, 0.601),
        },
    },
    # Table 4: adversarial test set (train on train-swapped, validate/test on *-adv-negated; README erratum).
    "table4": {
        "BERT": {
            "full": _stats(0.504, 0.01, 0.505, 0.533),
            "W": _stats(0.501, 0.00, 0.501, 0.502),
            "RW": _stats(0.500, 0.00, 0.500, 0.502),
            "CW": _stats(0.501, 0.01, 0.500, 0.518),
        },
        # not in the ACL paper's table; recomputed from the authors' per-seed results (reference note)
        "BoV": {"full": _stats(0.499, 0.001, 0.499, 0.501)},
        "BiLSTM": {"full": _stats(0.500, 0.001, 0.500, 0.503)},
    },
    "bert_recipe": {"lr": 2e-5, "epochs": 20, "batch_items": 8, "warmup": 0.1, "weight_decay": 0.01},
}


# ---- files ----------------------------------------------------------------------------------

#: name -> path inside the ``arct`` data folder
FILES: dict[str, tuple[str, str]] = {
    "train": ("original", "train-full.txt"),
    "dev": ("original", "dev-full.txt"),
    "test": ("original", "test-full.txt"),
    "train-swapped": ("adversarial", "train-swapped.csv"),
    "train-adv-negated": ("adversarial", "train-adv-negated.csv"),
    "dev-adv-negated": ("adversarial", "dev-adv-negated.csv"),
    "test-adv-negated": ("adversarial", "test-adv-negated.csv"),
}
CLAIM_MAP = ("adversarial", "claim_map.csv")

#: header names of the eight fields every ARCT file has (any order; the test files differ)
FIELDS = ("#id", "warrant0", "warrant1", "correctLabelW0orW1", "reason", "claim", "debateTitle", "debateInfo")
#: the extra last column of the adversarial files: ``adversarial`` or ``swapped`` (True/False)
FLAG_COLUMNS = ("adversarial", "swapped")
#: id suffixes the shipped adversarial files give to the copies
NEGATED_SUFFIX = "-adversarial"
SWAPPED_SUFFIX = "_swapped"


@dataclass(frozen=True)
class ArctItem:
    """One ARCT data point. ``label`` is 0 if ``warrant0`` is the correct warrant, 1 if ``warrant1`` is.

    ``flag`` is the adversarial files' last column (``True`` for a constructed copy,
    ``False`` for an original item, ``None`` in the original files).
    """

    id: str
    warrant0: str
    warrant1: str
    label: int
    reason: str
    claim: str
    debate_title: str = ""
    debate_info: str = ""
    flag: bool | None = None

    @property
    def warrants(self) -> tuple[str, str]:
        return (self.warrant0, self.warrant1)

    @property
    def correct_warrant(self) -> str:
        return self.warrants[self.label]

    @property
    def alternative_warrant(self) -> str:
        return self.warrants[1 - self.label]


def arct_file(name: str) -> Path:
    """Path of an ARCT file by name (``train``, ``dev``, ``test``, ``train-swapped``, ``*-adv-negated``)."""
    from attnbook.data.registry import data_path

    if name not in FILES:
        raise ParameterError(f"unknown ARCT file {name!r}; choose one of: {', '.join(FILES)}")
    return data_path("arct", *FILES[name])


def load_arct(name: str) -> list[ArctItem]:
    """Read an ARCT file of the data directory by name (see :data:`FILES`)."""
    return read_arct(arct_file(name))


def _unquote(field: str, path: Path, lineno: int) -> str:
    """Undo CSV quoting of one field: ``"a ""b"" c"`` -> ``a "b" c``."""
    if '"' not in field:
        return field
    inner = field[1:-1]
    if len(field) < 2 or field[0] != '"' or field[-1] != '"' or inner.replace('""', "").count('"'):
        raise MalformedInputError(
            path, lineno,
            f"field {field[:40]!r} has a quote but is not CSV-quoted (wrap it in quotes, double inner quotes)",
        )
    return inner.replace('""', '"')


def read_arct(path: Path | str, *, quoting: str = "auto") -> list[ArctItem]:
    """Read a tab-separated ARCT file with a ``#id`` header (columns in any order).

    Every row must have as many fields as the header; the label must be ``0`` or
    ``1``; the optional flag column (``adversarial`` / ``swapped``) must be
    ``True`` or ``False``; ids must be unique. Violations raise
    :class:`MalformedInputError` with the file and the 1-based line.

    Quoting: the original files are raw (a ``"`` is just a character); the
    adversarial files were written with CSV quoting (a field that contains ``"`` is
    wrapped in quotes and its quotes doubled). ``quoting="auto"`` assumes CSV quoting
    exactly when the file has the adversarial flag column; ``"csv"`` / ``"none"`` force it.
    """
    if quoting not in ("auto", "csv", "none"):
        raise ParameterError(f"quoting must be 'auto', 'csv' or 'none', got {quoting!r}")
    path = Path(path)
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise MalformedInputError(path, None, "empty file; an ARCT file starts with a '#id' header line")
    header = lines[0].rstrip("\r").split("\t")
    if header[0] != "#id":
        raise MalformedInputError(path, 1, f"the header must start with '#id', got {header[0]!r}")
    missing = [f for f in FIELDS if f not in header]
    extra = [h for h in header if h not in FIELDS]
    if missing:
        raise MalformedInputError(path, 1, f"header lacks column(s) {', '.join(missing)}")
    if len(extra) > 1 or (extra and extra[0] not in FLAG_COLUMNS):
        raise MalformedInputError(
            path, 1, f"unknown column(s) {', '.join(extra)}; the only extra column allowed is one of {FLAG_COLUMNS}"
        )
    if len(set(header)) != len(header):
        raise MalformedInputError(path, 1, "a column name appears twice in the header")
    col = {name: i for i, name in enumerate(header)}
    flag_col = col[extra[0]] if extra else None
    csv_quoted = quoting == "csv" or (quoting == "auto" and flag_col is not None)
    items: list[ArctItem] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip("\r")
        if not line.strip():
            raise MalformedInputError(path, lineno, "empty line inside an ARCT file")
        parts = line.split("\t")
        if len(parts) != len(header):
            raise MalformedInputError(path, lineno, f"expected {len(header)} tab-separated fields, got {len(parts)}")
        if csv_quoted:
            parts = [_unquote(p, path, lineno) for p in parts]
        label_text = parts[col["correctLabelW0orW1"]].strip()
        if label_text not in ("0", "1"):
            raise MalformedInputError(path, lineno, f"correctLabelW0orW1 must be 0 or 1, got {label_text!r}")
        flag: bool | None = None
        if flag_col is not None:
            flag_text = parts[flag_col].strip()
            if flag_text not in ("True", "False"):
                raise MalformedInputError(
                    path, lineno, f"column {header[flag_col]} must be True or False, got {flag_text!r}"
                )
            flag = flag_text == "True"
        item = ArctItem(
            id=parts[col["#id"]],
            warrant0=parts[col["warrant0"]],
            warrant1=parts[col["warrant1"]],
            label=int(label_text),
            reason=parts[col["reason"]],
            claim=parts[col["claim"]],
            debate_title=parts[col["debateTitle"]],
            debate_info=parts[col["debateInfo"]],
            flag=flag,
        )
        for name in ("id", "warrant0", "warrant1", "claim"):
            if not getattr(item, name).strip():
                raise MalformedInputError(path, lineno, f"field {name} is empty")
        if item.id in seen:
            raise MalformedInputError(path, lineno, f"id {item.id} already used on line {seen[item.id]}")
        seen[item.id] = lineno
        items.append(item)
    if not items:
        raise EmptyDataError(f"{path} has a header but no items")
    return items


def write_arct(
    items: Sequence[ArctItem],
    path: Path | str,
    *,
    columns: Sequence[str] = FIELDS,
    flag_column: str | None = None,
) -> Path:
    """Write ``items`` as a tab-separated ARCT file that :func:`read_arct` reads back (atomically).

    ``columns`` orders the eight fields (the test files put the label after
    ``debateInfo``); ``flag_column`` (``"adversarial"`` or ``"swapped"``) adds the
    adversarial files' last column. Fields must not contain tabs or newlines. Files with a
    flag column are written with CSV quoting of the fields that contain ``"``, as the
    shipped adversarial files are.
    """
    from attnbook.core.io import atomic_write_text

    if sorted(columns) != sorted(FIELDS) or columns[0] != "#id":
        raise ParameterError(f"columns must be the eight ARCT fields starting with '#id', got {list(columns)}")
    if flag_column is not None and flag_column not in FLAG_COLUMNS:
        raise ParameterError(f"flag_column must be one of {FLAG_COLUMNS} or None")
    attr = {
        "#id": "id", "warrant0": "warrant0", "warrant1": "warrant1", "correctLabelW0orW1": "label",
        "reason": "reason", "claim": "claim", "debateTitle": "debate_title", "debateInfo": "debate_info",
    }
    header = list(columns) + ([flag_column] if flag_column else [])
    out = ["\t".join(header)]
    for item in items:
        fields = [str(getattr(item, attr[c])) for c in columns]
        if flag_column:
            fields.append(str(bool(item.flag)))
        if any(("\t" in f or "\n" in f or "\r" in f) for f in fields):
            raise ParameterError(f"item {item.id}: a field contains a tab or a line break")
        if flag_column:
            fields = ['"' + f.replace('"', '""') + '"' if '"' in f else f for f in fields]
        out.append("\t".join(fields))
    atomic_write_text(path, "\n".join(out) + "\n")
    return Path(path)


def read_claim_map(path: Path | str | None = None) -> dict[str, str]:
    """Original claim -> negated claim from the comma-separated ``claim_map.csv`` (Niven & Kao §6).

    The file has the header ``original,negated`` and CSV quoting. A row without
    exactly two non-empty fields, or a claim mapped twice to different negations,
    raises :class:`MalformedInputError` (1-based line).
    """
    if path is None:
        from attnbook.data.registry import data_path

        path = data_path("arct", *CLAIM_MAP)
    path = Path(path)
    mapping: dict[str, str] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != ["original", "negated"]:
            raise MalformedInputError(path, 1, f"header must be 'original,negated', got {header!r}")
        for row in reader:
            line = reader.line_num
            if len(row) != 2 or not row[0].strip() or not row[1].strip():
                raise MalformedInputError(path, line, f"expected two non-empty fields (original,negated), got {row!r}")
            original, negated = row
            if mapping.get(original, negated) != negated:
                raise MalformedInputError(path, line, f"claim {original!r} already maps to {mapping[original]!r}")
            mapping[original] = negated
    if not mapping:
        raise EmptyDataError(f"{path} maps no claims")
    return mapping


def take(items: Sequence[ArctItem], n: int | None) -> list[ArctItem]:
    """The first ``n`` items (all of them when ``n`` is 0 or ``None``), for small profiles."""
    return list(items) if not n else list(items[:n])


def take_paired(items: Sequence[ArctItem], n: int | None) -> list[ArctItem]:
    """The first ``n`` original items of an adversarial file (flag ``False``) and their constructed copies.

    Copies are matched through the id suffixes of the shipped files, so the pairs stay together
    and the subset keeps every warrant pair under both labels.
    """
    if not n:
        return list(items)
    originals = [it for it in items if not it.flag][:n]
    keep = {it.id for it in originals}
    base = lambda i: i.removesuffix(NEGATED_SUFFIX).removesuffix(SWAPPED_SUFFIX)  # noqa: E731
    return originals + [it for it in items if it.flag and base(it.id) in keep]


def labels_of(items: Sequence[ArctItem]) -> np.ndarray:
    """The labels ``[n]`` (int64) of ``items``."""
    return np.array([it.label for it in items], dtype=np.int64)


# ---- cue statistics (Niven & Kao §4) ---------------------------------------------------------

_CONTRACTIONS = ((re.compile(r"\bcan'?t\b"), "can not"), (re.compile(r"\bwon'?t\b"), "will not"),
                 (re.compile(r"\bcannot\b"), "can not"), (re.compile(r"n't\b"), " not"))
_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str, negation: str = "expand") -> list[str]:
    """Lowercased words of ``text`` for the cue statistics (the policy is in the module doc).

    ``negation="expand"`` rewrites "n't" / "cannot" to "not" first (as the authors'
    cleaning does); ``"keep"`` leaves them, so "don't" gives "don", "t".
    """
    if negation not in ("expand", "keep"):
        raise ParameterError(f"negation must be 'expand' or 'keep', got {negation!r}")
    text = text.lower().replace("\u2019", "'")
    if negation == "expand":
        for pattern, repl in _CONTRACTIONS:
            text = pattern.sub(repl, text)
    return _WORD.findall(text)


def ngrams(tokens: Sequence[str], orders: Sequence[int] = (1, 2)) -> set[str]:
    """The set of n-grams (space-joined) of ``tokens`` for every order in ``orders``."""
    out: set[str] = set()
    for n in orders:
        out.update(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


def cue_counts(
    cues0: Sequence[set[str]], cues1: Sequence[set[str]], labels: Sequence[int] | np.ndarray
) -> tuple[Counter, Counter]:
    """Per cue k: applicability α_k and the number of applicable items where k is in the correct warrant.

    ``cues0[i]`` / ``cues1[i]`` are the cue sets T_0^(i), T_1^(i) of item i's two
    warrants and ``labels[i]`` its label. A cue is *applicable* to item i when it
    is in exactly one of the two warrants (Niven & Kao §4); it is *productive*
    there when that warrant is the correct one.
    """
    if not (len(cues0) == len(cues1) == len(labels)):
        raise ValueError("cues0, cues1 and labels must have the same length")
    applicable: Counter = Counter()
    productive: Counter = Counter()
    for t0, t1, y in zip(cues0, cues1, labels):
        only0, only1 = t0 - t1, t1 - t0
        applicable.update(only0)
        applicable.update(only1)
        productive.update(only1 if int(y) == 1 else only0)
    return applicable, productive


def warrant_cues(
    items: Sequence[ArctItem], orders: Sequence[int] = (1, 2), negation: str = "expand"
) -> tuple[list[set[str]], list[set[str]]]:
    """The cue sets (n-grams of :func:`tokenize`) of every item's ``warrant0`` and ``warrant1``."""
    c0 = [ngrams(tokenize(it.warrant0, negation), orders) for it in items]
    c1 = [ngrams(tokenize(it.warrant1, negation), orders) for it in items]
    return c0, c1


def cue_statistics(
    items: Sequence[ArctItem],
    orders: Sequence[int] = (1, 2),
    negation: str = "expand",
    min_applicability: int = 1,
):
    """Applicability, productivity and coverage of every unigram and bigram cue in the warrants (§4).

    For n items and a cue k:

    * applicability α_k = number of items where k is in one warrant but not the other;
    * productivity π_k = share of those items where k is in the correct warrant;
    * coverage ξ_k = α_k / n.

    A cue helps a learner when π_k > 1/2 (two labels). Returns a pandas DataFrame with
    columns ``cue``, ``order`` (1 or 2), ``applicability``, ``productive``,
    ``productivity``, ``coverage``, sorted by productivity then applicability
    (both descending), with cues of applicability below ``min_applicability`` left out.
    """
    import pandas as pd

    if not items:
        raise EmptyDataError("no ARCT items to count cues in")
    c0, c1 = warrant_cues(items, orders, negation)
    applicable, productive = cue_counts(c0, c1, labels_of(items))
    n = len(items)
    rows = [
        (k, k.count(" ") + 1, a, productive[k], productive[k] / a, a / n)
        for k, a in applicable.items()
        if a >= min_applicability
    ]
    table = pd.DataFrame(rows, columns=["cue", "order", "applicability", "productive", "productivity", "coverage"])
    return top_cues(table, n=None)


def top_cues(
    table, *, min_applicability: int = 1, by: str = "productivity", n: int | None = 20, order: int | None = None
):
    """The rows of a :func:`cue_statistics` table sorted by ``by`` (descending; ties by applicability, then cue).

    Keeps cues with applicability ≥ ``min_applicability`` (and of n-gram ``order`` if given); ``n=None`` keeps all.
    """
    if by not in ("productivity", "applicability", "coverage", "productive"):
        raise ParameterError(f"cannot sort cues by {by!r}")
    keep = table[table["applicability"] >= min_applicability]
    if order is not None:
        keep = keep[keep["order"] == order]
    secondary = "applicability" if by != "applicability" else "productivity"
    keep = keep.sort_values([by, secondary, "cue"], ascending=[False, False, True], kind="mergesort")
    keep = keep.reset_index(drop=True)
    return keep if n is None else keep.head(n)


def cue_row(items: Sequence[ArctItem], cue: str, negation: str = "expand") -> dict:
    """α, π and ξ of one cue (a word or a space-separated bigram) over ``items``, e.g. Table 2's "not"."""
    if not items:
        raise EmptyDataError("no ARCT items to count the cue in")
    order = len(tokenize(cue, negation))
    if order < 1:
        raise ParameterError(f"cue {cue!r} has no words after tokenisation")
    key = " ".join(tokenize(cue, negation))
    c0, c1 = warrant_cues(items, (order,), negation)
    applicable, productive = cue_counts(c0, c1, labels_of(items))
    a = applicable[key]
    return {
        "cue": key,
        "n_items": len(items),
        "applicability": a,
        "productivity": productive[key] / a if a else float("nan"),
        "coverage": a / len(items),
    }


# ---- the adversarial transform (Niven & Kao §6) ----------------------------------------------


class MissingNegationError(AttnbookError, KeyError):
    """A claim has no entry in the claim map, so its adversarial copy cannot be made."""

    def __init__(self, claim: str, item_id: str):
        self.claim, self.item_id = claim, item_id
        super().__init__(
            f"item {item_id}: claim {claim!r} is not in the claim map; add an 'original,negated' row for it"
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


def negate_claims(items: Sequence[ArctItem], claim_map: Mapping[str, str]) -> list[ArctItem]:
    """The adversarial copy of every item: claim negated, label inverted, warrants unchanged (§6).

    Since R ∧ A → ¬C, the alternative warrant A is the correct warrant for the
    negated claim ¬C. Each copy gets the id ``<id>-adversarial`` and ``flag=True``
    (as in the shipped files). A claim missing from ``claim_map`` raises
    :class:`MissingNegationError`.
    """
    out = []
    for it in items:
        if it.claim not in claim_map:
            raise MissingNegationError(it.claim, it.id)
        out.append(replace(it, id=it.id + NEGATED_SUFFIX, claim=claim_map[it.claim], label=1 - it.label, flag=True))
    return out


def make_adversarial(items: Sequence[ArctItem], claim_map: Mapping[str, str]) -> list[ArctItem]:
    """The adversarial data set of §6: the originals (``flag=False``) followed by their negated copies.

    Every warrant pair then occurs once with each label, so any cue in the
    warrants alone is worth exactly 50%.
    """
    originals = [replace(it, flag=False) for it in items]
    return originals + negate_claims(items, claim_map)


def swap_warrants(items: Sequence[ArctItem]) -> list[ArctItem]:
    """The originals followed by copies with ``warrant0``/``warrant1`` swapped and the label flipped.

    This is ``train-swapped.csv``, the training file the paper's adversarial runs
    actually used (repository README erratum): the claim is *not* negated, so
    the correct warrant stays correct; only its position changes.
    """
    originals = [replace(it, flag=False) for it in items]
    copies = [
        replace(it, id=it.id + SWAPPED_SUFFIX, warrant0=it.warrant1, warrant1=it.warrant0, label=1 - it.label,
                flag=True)
        for it in items
    ]
    return originals + copies


def agreement_with_shipped(ours: Sequence[ArctItem], shipped: Sequence[ArctItem]) -> dict:
    """Compare a constructed file with a shipped one, item by item through the ids.

    Returns counts: ``n_ours``, ``n_shipped``, ``matched_ids``, ``identical`` (all
    fields equal), ``claim_differs``, ``label_differs``, ``warrants_differ``,
    ``other_differs``, ``agreement`` (identical / matched ids) and up to five
    example ids that differ.
    """
    by_id = {it.id: it for it in shipped}
    matched = identical = 0
    diff = Counter()
    examples: list[str] = []
    for it in ours:
        other = by_id.get(it.id)
        if other is None:
            continue
        matched += 1
        if it == other:
            identical += 1
            continue
        diff["claim_differs"] += it.claim != other.claim
        diff["label_differs"] += it.label != other.label
        diff["warrants_differ"] += it.warrants != other.warrants
        diff["other_differs"] += (it.reason, it.debate_title, it.debate_info, it.flag) != (
            other.reason, other.debate_title, other.debate_info, other.flag)
        if len(examples) < 5:
            examples.append(it.id)
    return {
        "n_ours": len(ours),
        "n_shipped": len(shipped),
        "matched_ids": matched,
        "identical": identical,
        "claim_differs": diff["claim_differs"],
        "label_differs": diff["label_differs"],
        "warrants_differ": diff["warrants_differ"],
        "other_differs": diff["other_differs"],
        "agreement": identical / matched if matched else float("nan"),
        "examples": examples,
    }


# ---- baselines without training (Niven & Kao Table 1, §4) -----------------------------------


def accuracy(predictions: np.ndarray | Sequence[int], labels: np.ndarray | Sequence[int]) -> float:
    """Share of predictions equal to the labels."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if predictions.shape != labels.shape or predictions.size == 0:
        raise ValueError(
            f"need equally long, non-empty predictions and labels, got {predictions.shape} and {labels.shape}"
        )
    return float((predictions == labels).mean())


def majority_label(train: Sequence[ArctItem]) -> int:
    """The more frequent label in the training items (ties: 0)."""
    labels = labels_of(train)
    if labels.size == 0:
        raise EmptyDataError("no training items")
    return int(labels.sum() * 2 > labels.size)


def majority_baseline(train: Sequence[ArctItem], test: Sequence[ArctItem]) -> float:
    """Accuracy on ``test`` of always predicting the majority label of ``train``."""
    return accuracy(np.full(len(test), majority_label(train)), labels_of(test))


def cue_predictions(
    items: Sequence[ArctItem],
    cue: str = "not",
    *,
    fallback: str = "majority",
    majority: int = 0,
    seed: int = 0,
    negation: str = "expand",
) -> tuple[np.ndarray, np.ndarray]:
    """Predict the warrant that contains ``cue`` when exactly one does (the cue-only learner of §4).

    Elsewhere predict ``majority`` (``fallback="majority"``) or a seeded coin flip
    (``fallback="random"``). Returns ``(predictions[n], applicable[n])``.
    """
    if fallback not in ("majority", "random"):
        raise ParameterError(f"fallback must be 'majority' or 'random', got {fallback!r}")
    order = len(tokenize(cue, negation))
    key = " ".join(tokenize(cue, negation))
    c0, c1 = warrant_cues(items, (order,), negation)
    rng = np.random.default_rng(seed)
    coins = rng.integers(0, 2, size=len(items))
    preds = np.empty(len(items), dtype=np.int64)
    applicable = np.zeros(len(items), dtype=bool)
    for i, (t0, t1) in enumerate(zip(c0, c1)):
        if (key in t0) != (key in t1):
            preds[i] = 0 if key in t0 else 1
            applicable[i] = True
        else:
            preds[i] = majority if fallback == "majority" else coins[i]
    return preds, applicable


def cue_baseline(
    train: Sequence[ArctItem], test: Sequence[ArctItem], cue: str = "not", *, fallback: str = "majority", seed: int = 0
) -> dict:
    """Accuracy of the cue-only learner on ``test`` (fallback label from ``train``), overall and where it applies."""
    preds, applicable = cue_predictions(test, cue, fallback=fallback, majority=majority_label(train), seed=seed)
    labels = labels_of(test)
    return {
        "cue": cue,
        "accuracy": accuracy(preds, labels),
        "coverage": float(applicable.mean()),
        "accuracy_where_applicable": (
            accuracy(preds[applicable], labels[applicable]) if applicable.any() else float("nan")
        ),
    }


# ---- tables for the chapter ------------------------------------------------------------------


def describe_splits(data: Mapping[str, Sequence[ArctItem]]):
    """Items, label counts and constructed copies (flag ``True``) of every loaded file, as a DataFrame."""
    import pandas as pd

    rows = []
    for name, items in data.items():
        labels = labels_of(items)
        rows.append({"file": name, "items": len(items), "label 0": int((labels == 0).sum()),
                     "label 1": int((labels == 1).sum()), "constructed copies": sum(bool(it.flag) for it in items)})
    return pd.DataFrame(rows)


def not_cue_table(splits: Mapping[str, Sequence[ArctItem]], cue: str = "not"):
    """Table 2 of Niven & Kao beside our counts: productivity and coverage of ``cue`` per split.

    ``splits`` maps ``train``/``dev``/``test`` (and optionally ``all``) to items. Two
    tokenisations are counted (module doc): ``expand`` ("n't" → "not", the authors'
    cleaning) and ``keep`` (whole word "not" only).
    """
    import pandas as pd

    rows = []
    for split, items in splits.items():
        paper = PAPER["not_cue"].get(split, {}) if cue == "not" else {}
        e, k = cue_row(items, cue, "expand"), cue_row(items, cue, "keep")
        rows.append({
            "split": split, "items": len(items),
            "paper productivity": paper.get("productivity"), "paper coverage": paper.get("coverage"),
            "productivity": round(e["productivity"], 3), "coverage": round(e["coverage"], 3),
            "productivity (whole word)": round(k["productivity"], 3), "coverage (whole word)": round(k["coverage"], 3),
        })
    return pd.DataFrame(rows)


def baseline_table(train: Sequence[ArctItem], tests: Mapping[str, Sequence[ArctItem]], cue: str = "not", seed: int = 0):
    """Accuracy of the majority label and of the cue-only learner (majority / coin-flip fallback) per test set."""
    import pandas as pd

    rows = []
    for name, items in tests.items():
        maj = cue_baseline(train, items, cue, fallback="majority", seed=seed)
        coin = cue_baseline(train, items, cue, fallback="random", seed=seed)
        rows.append({"test set": name, "items": len(items), "majority label": round(majority_baseline(train, items), 3),
                     f'"{cue}" cue, else majority': round(maj["accuracy"], 3),
                     f'"{cue}" cue, else coin flip': round(coin["accuracy"], 3),
                     "cue applies to": round(maj["coverage"], 3),
                     "accuracy where it applies": round(maj["accuracy_where_applicable"], 3)})
    return pd.DataFrame(rows)


# ---- charts ----------------------------------------------------------------------------------


def cue_scatter(table, *, min_applicability: int = 20, highlight: Iterable[str] = ("not",), n_max: int = 400):
    """Altair scatter of cue coverage (x) against productivity (y), one point per cue (§4).

    Shows cues with applicability ≥ ``min_applicability`` (at most ``n_max``, the most
    applicable); the cues in ``highlight`` are labelled; a rule marks π = 1/2 (chance).
    """
    import altair as alt

    data = top_cues(table, min_applicability=min_applicability, by="applicability", n=n_max).copy()
    data["kind"] = np.where(data["order"] == 1, "unigram", "bigram")
    data["highlight"] = data["cue"].isin(list(highlight))
    base = alt.Chart(data)
    points = base.mark_circle(opacity=0.6).encode(
        x=alt.X("coverage:Q", title="coverage ξ (share of items the cue applies to)"),
        y=alt.Y("productivity:Q", title="productivity π (share where it marks the correct warrant)",
                scale=alt.Scale(zero=False)),
        color=alt.Color("kind:N", title="cue"),
        size=alt.Size("applicability:Q", legend=None, scale=alt.Scale(range=[15, 200])),
        tooltip=["cue", "applicability", alt.Tooltip("productivity:Q", format=".3f"),
                 alt.Tooltip("coverage:Q", format=".3f")],
    )
    labels = base.transform_filter(alt.datum.highlight).mark_text(dx=8, align="left", fontWeight="bold").encode(
        x="coverage:Q", y="productivity:Q", text="cue:N"
    )
    chance = alt.Chart({"values": [{"y": 0.5}]}).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    return (points + labels + chance).properties(
        width=480, height=320, title=f"Warrant cues with applicability ≥ {min_applicability}"
    )


def accuracy_bars(frame, *, x: str = "input", y: str = "accuracy", color: str = "source", chance: float = 0.5):
    """Altair grouped bars of accuracy by input (or model), one bar per ``color`` group, with a chance rule.

    ``frame`` is a pandas DataFrame with columns ``x``, ``y`` and ``color``
    (e.g. input ∈ {W, R+W, C+W, full}, source ∈ {paper, this run}).
    """
    import altair as alt

    order = list(dict.fromkeys(frame[x]))
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X(f"{x}:N", sort=order, title=None),
        xOffset=alt.XOffset(f"{color}:N"),
        y=alt.Y(f"{y}:Q", scale=alt.Scale(domain=[0, 1]), title=y),
        color=alt.Color(f"{color}:N", title=None),
        tooltip=[x, color, alt.Tooltip(f"{y}:Q", format=".3f")],
    )
    rule = alt.Chart({"values": [{"y": chance}]}).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    return (bars + rule).properties(width=360, height=260)


__all__: list[str] = [
    "PAPER", "ArctItem", "FILES", "FIELDS", "arct_file", "load_arct", "read_arct", "write_arct", "read_claim_map",
    "take", "take_paired",
    "labels_of", "tokenize", "ngrams", "cue_counts", "warrant_cues", "cue_statistics", "top_cues", "cue_row",
    "MissingNegationError", "negate_claims", "make_adversarial", "swap_warrants", "agreement_with_shipped",
    "accuracy", "majority_label", "majority_baseline", "cue_predictions", "cue_baseline", "cue_scatter",
    "accuracy_bars", "describe_splits", "not_cue_table", "baseline_table",
]

