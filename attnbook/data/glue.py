"""GLUE tasks in the standard ``glue_data`` TSV layout (Kovaleva et al. §3, Michel et al. §3.1).

Kovaleva et al. fine-tune and analyse BERT on seven GLUE tasks (MRPC, STS-B,
SST-2, QQP, RTE, QNLI, MNLI-matched; their Table 1); Michel et al. evaluate on
MNLI-matched and use MNLI-mismatched as the out-of-domain set (§3.4). Each
task lives in ``data_path("glue", FOLDER)`` as ``train.tsv`` and a dev file
(``dev.tsv``; MNLI: ``dev_matched.tsv`` / ``dev_mismatched.tsv``).

Format facts the readers rely on:

* tab-separated, one header line naming the columns; the files are **not**
  CSV-quoted (a ``"`` is an ordinary character), so lines are split on tabs;
* MRPC files start with a UTF-8 byte-order mark (read with ``utf-8-sig``);
* columns are found by header name, so the MNLI train (12 columns) and dev
  (15 columns) layouts are read by the same spec;
* labels are mapped to class indices in GLUE's label order (:attr:`TaskSpec.labels`);
  STS-B is a regression task whose label is a float similarity score in [0, 5].

A row with the wrong number of fields, or a label outside the task's label set,
raises :class:`~attnbook.core.errors.MalformedInputError` with the file and the
1-based line number; a missing file raises
:class:`~attnbook.core.errors.MissingDataError`, which names ``attnbook fetch glue``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from attnbook.core.errors import EmptyDataError, MalformedInputError, ParameterError
from attnbook.data.registry import data_path

#: GLUE's binary label order for the entailment tasks (index 0 = entailment).
_NLI2 = ("entailment", "not_entailment")


@dataclass(frozen=True)
class TaskSpec:
    """How to read one GLUE task and what its labels mean.

    ``text_a`` / ``text_b`` / ``label`` are header column names (``text_b`` is
    ``None`` for the single-sentence SST-2). ``labels`` lists the label strings
    in class-index order; ``None`` marks the regression task STS-B.
    """

    name: str
    folder: str
    text_a: str
    text_b: str | None
    label: str
    labels: tuple[str, ...] | None
    dev_file: str = "dev.tsv"
    train_file: str = "train.tsv"
    description: str = ""
    skip_malformed: bool = False  # default of load_split: drop broken rows with a warning instead of raising

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        """Size of the model's output layer: one unit for regression, else one per class."""
        return 1 if self.labels is None else len(self.labels)

    @property
    def is_pair(self) -> bool:
        return self.text_b is not None

    def file(self, split: str) -> str:
        if split == "train":
            return self.train_file
        if split == "dev":
            return self.dev_file
        raise ParameterError(f"unknown split {split!r}; choose 'train' or 'dev'")


#: The tasks, in the column order of Kovaleva et al.'s Table 1, then MNLI-mismatched (Michel §3.4).
TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("MRPC", "MRPC", "#1 String", "#2 String", "Quality", ("0", "1"),
                 description="paraphrase detection (1 = paraphrase)"),
        TaskSpec("STS-B", "STS-B", "sentence1", "sentence2", "score", None,
                 description="semantic similarity, a score in [0, 5] (regression)"),
        TaskSpec("SST-2", "SST-2", "sentence", None, "label", ("0", "1"),
                 description="binary sentiment (1 = positive)"),
        TaskSpec("QQP", "QQP", "question1", "question2", "is_duplicate", ("0", "1"), skip_malformed=True,
                 description="duplicate question detection (1 = duplicate); the released files hold a few "
                             "rows with missing fields, which BERT's GLUE code skips, and so does load_split"),
        TaskSpec("RTE", "RTE", "sentence1", "sentence2", "label", _NLI2,
                 description="recognising textual entailment"),
        TaskSpec("QNLI", "QNLI", "question", "sentence", "label", _NLI2,
                 description="does the sentence answer the question (SQuAD-derived NLI)"),
        TaskSpec("MNLI-m", "MNLI", "sentence1", "sentence2", "gold_label",
                 ("contradiction", "entailment", "neutral"), dev_file="dev_matched.tsv",
                 description="multi-genre NLI, matched dev set"),
        TaskSpec("MNLI-mm", "MNLI", "sentence1", "sentence2", "gold_label",
                 ("contradiction", "entailment", "neutral"), dev_file="dev_mismatched.tsv",
                 description="multi-genre NLI, mismatched dev set (Michel §3.4)"),
    )
}

#: Kovaleva et al.'s seven tasks, in their Table 1 order.
KOVALEVA_TASKS = ("MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m")

_ALIASES = {
    "mrpc": "MRPC", "sts-b": "STS-B", "stsb": "STS-B", "sts": "STS-B", "sst-2": "SST-2", "sst2": "SST-2",
    "qqp": "QQP", "rte": "RTE", "qnli": "QNLI", "mnli": "MNLI-m", "mnli-m": "MNLI-m", "mnli_m": "MNLI-m",
    "mnli-matched": "MNLI-m", "mnli-mm": "MNLI-mm", "mnli_mm": "MNLI-mm", "mnli-mismatched": "MNLI-mm",
}


def task_spec(task: str | TaskSpec) -> TaskSpec:
    """The :class:`TaskSpec` of ``task`` (case-insensitive; ``"MNLI"`` means matched)."""
    if isinstance(task, TaskSpec):
        return task
    name = _ALIASES.get(str(task).strip().lower())
    if name is None:
        raise ParameterError(f"unknown GLUE task {task!r}; known: {', '.join(TASKS)}")
    return TASKS[name]


@dataclass(frozen=True)
class Example:
    """One GLUE example: text(s), label (class index, or float score for STS-B), 1-based file line."""

    text_a: str
    text_b: str | None
    label: int | float
    line: int


@dataclass
class GlueSplit:
    """The examples of one task's split, with the file they came from."""

    task: TaskSpec
    split: str
    path: Path
    examples: list[Example] = field(default_factory=list)
    n_total: int = 0  # rows in the file before any cap

    def __len__(self) -> int:
        return len(self.examples)

    @property
    def labels(self) -> np.ndarray:
        """Gold labels ``[n]``: int64 class indices, or float64 scores for STS-B."""
        dtype = np.float64 if self.task.is_regression else np.int64
        return np.asarray([e.label for e in self.examples], dtype=dtype)


def _parse_label(spec: TaskSpec, raw: str, path: Path, line: int) -> int | float:
    raw = raw.strip()
    if spec.labels is None:
        try:
            value = float(raw)
        except ValueError:
            raise MalformedInputError(path, line, f"{spec.name} score {raw!r} is not a number") from None
        if not np.isfinite(value):
            raise MalformedInputError(path, line, f"{spec.name} score {raw!r} is not finite")
        return value
    try:
        return spec.labels.index(raw)
    except ValueError:
        raise MalformedInputError(
            path, line, f"{spec.name} label {raw!r} is not one of {', '.join(spec.labels)}"
        ) from None


def read_tsv(path: Path | str, task: str | TaskSpec, *, skip_malformed: bool = False) -> list[Example]:
    """Read a GLUE TSV file of ``task`` into :class:`Example` s (all rows, file order).

    Columns are located by the header. Raises :class:`MalformedInputError`
    (file, 1-based line) for a missing column in the header, a row whose field
    count differs from the header's, or a bad label. With ``skip_malformed``
    bad *rows* are dropped with one warning instead (the original QQP training
    file is known to hold a few broken lines); a bad header always raises.
    """
    spec = task_spec(task)
    path = Path(path)
    examples: list[Example] = []
    skipped: list[int] = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        header_line = fh.readline()
        if not header_line:
            raise MalformedInputError(path, 1, "empty file: expected a header line")
        header = header_line.rstrip("\r\n").split("\t")
        wanted = [spec.text_a, spec.label] + ([spec.text_b] if spec.text_b else [])
        missing = [c for c in wanted if c not in header]
        if missing:
            raise MalformedInputError(
                path, 1, f"header lacks column(s) {missing} of {spec.name}; found {header}"
            )
        i_a, i_label = header.index(spec.text_a), header.index(spec.label)
        i_b = header.index(spec.text_b) if spec.text_b else None
        for line_no, raw in enumerate(fh, start=2):
            row = raw.rstrip("\r\n")
            if not row.strip():
                continue
            fields = row.split("\t")
            try:
                if len(fields) != len(header):
                    raise MalformedInputError(
                        path, line_no, f"{len(fields)} tab-separated fields, the header has {len(header)}"
                    )
                label = _parse_label(spec, fields[i_label], path, line_no)
            except MalformedInputError:
                if not skip_malformed:
                    raise
                skipped.append(line_no)
                continue
            examples.append(
                Example(fields[i_a], fields[i_b] if i_b is not None else None, label, line_no)
            )
    if skipped:
        warnings.warn(
            f"{path}: skipped {len(skipped)} malformed row(s) at line(s) {skipped[:10]}"
            + (" ..." if len(skipped) > 10 else ""),
            stacklevel=2,
        )
    return examples


def task_path(task: str | TaskSpec, split: str) -> Path:
    """``data_path("glue", folder, file)`` of a task's split; raises MissingDataError when absent."""
    spec = task_spec(task)
    return data_path("glue", spec.folder, spec.file(split))


def subsample(examples: Sequence[Example], n: int | None, seed: int) -> list[Example]:
    """At most ``n`` examples drawn uniformly without replacement (seeded), kept in file order.

    Kovaleva et al. (§4.3, footnote 5) randomly sample 1000 dev examples for the
    larger tasks; the book caps training sets the same way in its quick profile.
    """
    if n is None or n >= len(examples):
        return list(examples)
    if n < 1:
        raise ParameterError(f"a cap must be at least 1, got {n}")
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(examples), size=n, replace=False))
    return [examples[i] for i in keep]


def load_split(
    task: str | TaskSpec,
    split: str = "dev",
    *,
    cap: int | None = None,
    seed: int = 0,
    skip_malformed: bool | None = None,
) -> GlueSplit:
    """Read a task's ``train`` or ``dev`` split from the data directory, capped to ``cap`` examples.

    ``skip_malformed`` defaults to the task's :attr:`TaskSpec.skip_malformed`
    (true only for QQP); otherwise a malformed row raises :class:`MalformedInputError`.
    """
    spec = task_spec(task)
    path = task_path(spec, split)
    lenient = spec.skip_malformed if skip_malformed is None else skip_malformed
    rows = read_tsv(path, spec, skip_malformed=lenient)
    if not rows:
        raise EmptyDataError(f"{path} has a header but no examples")
    return GlueSplit(spec, split, path, subsample(rows, cap, seed), n_total=len(rows))


def available(task: str | TaskSpec, split: str) -> bool:
    """Whether the data directory holds ``task``'s ``split`` file."""
    spec = task_spec(task)
    return data_path("glue", spec.folder, spec.file(split), must_exist=False).exists()


def label_counts(split: GlueSplit) -> dict[str, int]:
    """Examples per label string (classification tasks), e.g. to compare with a majority baseline."""
    if split.task.labels is None:
        raise ParameterError(f"{split.task.name} is a regression task: it has no label counts")
    counts = np.bincount(split.labels, minlength=split.task.num_labels)
    return {name: int(c) for name, c in zip(split.task.labels, counts)}
