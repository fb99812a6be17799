"""The Argument Reasoning Comprehension Task files (Habernal et al., 2018) and Niven & Kao's adversarial files.

An ARCT item is a claim C, a reason R and two candidate warrants; exactly one warrant W makes
"R, and since W, C" hold, the other (the alternative A) supports the opposite claim (R ∧ A → ¬C).
``label`` says which of ``warrant0`` / ``warrant1`` is the correct one (Niven & Kao §1).

This module reads and writes the files, nothing else (the cue statistics and the adversarial
construction are Niven & Kao's science, :mod:`attnbook.studies.niven_kao.cues`):

* the original SemEval-2018 Task 12 files and the four adversarial files of Niven & Kao §6,
  by name (:data:`FILES`, :func:`arct_file`, :func:`load_arct`) or by path (:func:`read_arct`),
  and a writer that :func:`read_arct` reads back (:func:`write_arct`);
* the authors' claim negations, ``claim_map.csv`` (:func:`read_claim_map`);
* subsets for small profiles that keep an adversarial file's pairs together (:func:`take`,
  :func:`take_paired`), the labels (:func:`labels_of`) and a description of the loaded files
  (:func:`describe_splits`, :func:`item_markdown`).

Layout of the data folder (``attnbook fetch arct``): ``arct/original/{train,dev,test}-full.txt``
(tab-separated, a ``#id`` header, the eight :data:`FIELDS` in any order, raw quotes) and
``arct/adversarial/*.csv`` (the same plus a last ``adversarial`` / ``swapped`` column, CSV quoting).

Every file is read as a :class:`datasets.Dataset` (:func:`arct_dataset`, :func:`read_arct_dataset`; columns
:data:`COLUMNS`, ``label`` a ``ClassLabel`` named ``warrant0`` / ``warrant1``, ``flag`` a nullable bool), kept in
the book's cache by :func:`attnbook.data.hf.cached`; :func:`load_arct` and :func:`read_arct` build the
:class:`ArctItem` s from its rows.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from attnbook.core.cache import code_hash
from attnbook.core.errors import EmptyDataError, MalformedInputError, ParameterError
from attnbook.core.io import atomic_write_text
from attnbook.data import hf
from attnbook.data.registry import data_path

if TYPE_CHECKING:
    from datasets import Dataset, Features

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
#: the columns of an ARCT Dataset, in :class:`ArctItem`'s field order
COLUMNS = ("id", "warrant0", "warrant1", "label", "reason", "claim", "debate_title", "debate_info", "flag")


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
    if name not in FILES:
        raise ParameterError(f"unknown ARCT file {name!r}; choose one of: {', '.join(FILES)}")
    return data_path("arct", *FILES[name])


def load_arct(name: str) -> list[ArctItem]:
    """Read an ARCT file of the data directory by name (see :data:`FILES`)."""
    return read_arct(arct_file(name))


def arct_dataset(name: str) -> Dataset:
    """An ARCT file of the data directory by name (see :data:`FILES`) as a Dataset (:func:`read_arct_dataset`)."""
    return read_arct_dataset(arct_file(name))


def features() -> Features:
    """The typed columns of an ARCT Dataset: :data:`COLUMNS` as strings, ``label`` a ``ClassLabel`` (``warrant0``,
    ``warrant1``: which warrant is correct) and ``flag`` a bool (null in the original files)."""
    from datasets import ClassLabel, Features, Value

    return Features({c: ClassLabel(names=["warrant0", "warrant1"]) if c == "label" else
                     Value("bool") if c == "flag" else Value("string") for c in COLUMNS})


def items_of(ds: Dataset) -> list[ArctItem]:
    """An ARCT Dataset's rows as :class:`ArctItem` s, in order."""
    cols = hf.rows(ds)
    return [ArctItem(*row) for row in zip(*(cols[c] for c in COLUMNS))]


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
    """Read a tab-separated ARCT file with a ``#id`` header (columns in any order): :func:`read_arct_dataset`'s
    rows as :class:`ArctItem` s."""
    return items_of(read_arct_dataset(path, quoting=quoting))


def read_arct_dataset(path: Path | str, *, quoting: str = "auto") -> Dataset:
    """A tab-separated ARCT file with a ``#id`` header (columns in any order) as a Dataset, cached by its content.

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

    def build():
        return _parse_arct(path, quoting), features(), ""

    parts = {"reader": "arct", "code": code_hash(_parse_arct), "sha256": hf.file_sha256(path), "quoting": quoting}
    return hf.cached("arct", parts, build)


def _parse_arct(path: Path, quoting: str) -> dict[str, list]:
    """The columns (:data:`COLUMNS`) of an ARCT file; every check of :func:`read_arct_dataset`."""
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
    return {c: [getattr(it, c) for it in items] for c in COLUMNS}


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


def describe_splits(data: Mapping[str, Sequence[ArctItem]]):
    """Items, label counts and constructed copies (flag ``True``) of every loaded file, as a DataFrame."""
    import pandas as pd

    rows = []
    for name, items in data.items():
        labels = labels_of(items)
        rows.append({"file": name, "items": len(items), "label 0": int((labels == 0).sum()),
                     "label 1": int((labels == 1).sum()), "constructed copies": sum(bool(it.flag) for it in items)})
    return pd.DataFrame(rows)


def item_markdown(item: ArctItem, split: str = "train") -> str:
    """One item as the chapter shows it: claim, reason, the two warrants and which one the label marks."""
    return (
        f"**Example** ({split}): *claim* {item.claim} — *reason* {item.reason}\n\n"
        f"- warrant0: {item.warrant0}\n- warrant1: {item.warrant1}\n\n"
        f"The label is **{item.label}**: \"{item.correct_warrant}\" is the warrant that makes the argument work."
    )


__all__: list[str] = [
    "ArctItem", "FILES", "FIELDS", "FLAG_COLUMNS", "CLAIM_MAP", "NEGATED_SUFFIX", "SWAPPED_SUFFIX", "COLUMNS",
    "arct_file", "load_arct", "arct_dataset", "read_arct", "read_arct_dataset", "features", "items_of", "write_arct",
    "read_claim_map", "take", "take_paired", "labels_of", "describe_splits", "item_markdown",
]
