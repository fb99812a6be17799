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

Every split is read as a :class:`datasets.Dataset` (:func:`glue_dataset`, :func:`tsv_dataset`): columns
``text_a``, ``text_b`` (pair tasks), ``label`` (a ``ClassLabel`` with the task's label strings as names; STS-B a
``float64`` score) and ``line`` (the 1-based file line), kept in the book's cache by :func:`attnbook.data.hf.cached`.
:func:`load_split` and :func:`read_tsv` build the book's :class:`GlueSplit` / :class:`Example` view from it.

A task is named by the book's short name (``SST-2``, ``sst2``, ``MNLI-m``) or the Hugging Face way
(:func:`task_spec`): ``glue/sst2`` (or ``nyu-mll/glue/sst2``) is the book's SST-2 when its files are local (the
same data: GLUE's train and dev files); any other ``name/config`` or ``owner/name[/config]`` is a Hugging Face
dataset with a text and a label column, loaded by ``datasets.load_dataset`` from the network or offline from the
``datasets`` cache (:class:`HubTaskSpec`). A name that is neither gets one :class:`ParameterError` naming the fix.
"""
from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from attnbook.core.cache import code_hash
from attnbook.core.errors import EmptyDataError, MalformedInputError, ParameterError
from attnbook.core.paths import data_dir
from attnbook.data import hf
from attnbook.data.registry import data_path, fetch_name

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict, Features

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


#: Hugging Face GLUE configs that are the book's tasks (the same train and dev files), under either repository name
HUB_GLUE = {"sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qqp": "QQP", "rte": "RTE", "qnli": "QNLI",
            "mnli": "MNLI-m", "mnli_matched": "MNLI-m", "mnli_mismatched": "MNLI-mm"}
_GLUE_REPOS = ("glue", "nyu-mll/glue")


@dataclass(frozen=True)
class HubTaskSpec(TaskSpec):
    """A task read from a Hugging Face dataset (``datasets.load_dataset(repo, config)``) instead of local files.

    ``name`` is the name the task was asked for (``task_spec(name)`` finds it again), ``text_a`` / ``text_b`` /
    ``label`` are the dataset's columns, ``train_file`` / ``dev_file`` its split names (``""``: no such split).
    """

    repo: str = ""
    config: str | None = None


_HUB_SPECS: dict[tuple[str, str], HubTaskSpec] = {}


def task_spec(task: str | TaskSpec) -> TaskSpec:
    """The :class:`TaskSpec` of ``task``: a book name (case-insensitive; ``"MNLI"`` means matched) or a Hugging Face
    name (``glue/sst2``: the book's SST-2 when its files are local; ``owner/name[/config]``: a :class:`HubTaskSpec`).

    A Hugging Face name that is neither local nor loadable raises one :class:`ParameterError` that names the fix.
    """
    if isinstance(task, TaskSpec):
        return task
    text = str(task).strip()
    name = _ALIASES.get(text.lower())
    if name is not None:
        return TASKS[name]
    repo, _, config = text.lower().rpartition("/")
    book = HUB_GLUE.get(config) if repo in _GLUE_REPOS else None
    if book is not None and (available(book, "train") or available(book, "dev")):
        return TASKS[book]
    if "/" not in text:
        raise ParameterError(f"unknown GLUE task {task!r}; known: {', '.join(TASKS)}, or a Hugging Face dataset "
                             "as name/config (e.g. glue/sst2) or owner/name[/config]")
    return _hub_spec(text, book)


def task_name(task: str | TaskSpec) -> str:
    """The name a chapter keeps for ``task``: a book name as given, ``glue/sst2`` -> ``SST-2`` when its files are
    local, any other Hugging Face name as given. Raises as :func:`task_spec` does for an unknown name."""
    spec = task_spec(task)
    return task if isinstance(task, str) and "/" not in task else spec.name


def _hub_spec(name: str, book: str | None) -> HubTaskSpec:
    key = (name, str(hf.hub_cache()))
    if key in _HUB_SPECS:
        return _HUB_SPECS[key]
    readings = hf.hub_candidates(name)
    if book is not None:  # GLUE by either repository name
        config = name.rpartition("/")[2]
        readings = [(r, config) for r in _GLUE_REPOS] + [r for r in readings if r[0] not in _GLUE_REPOS]
    reasons = []
    for repo, config in readings:
        try:
            splits = _hub_splits(repo, config)
        except hf.NotFound as exc:
            reasons.append(f"load_dataset({repo!r}, {config!r}): {exc}")
            continue
        _HUB_SPECS[key] = spec = _spec_from_hub(name, repo, config, splits)
        return spec
    shown = readings[:1] if book else readings[::-1][:2]  # owner/name first; glue/<config> is GLUE's config
    calls = " or ".join(f"datasets.load_dataset({r!r}" + (f", {c!r})" if c else ")") for r, c in shown)
    folders = " or ".join(f"{hf.cache_folder(r)}/" for r in dict.fromkeys(r for r, _ in shown))
    local = (f"It is GLUE's {book}: put its files in {data_dir() / 'glue' / TASKS[book].folder} "
             f"(attnbook fetch {fetch_name('glue', (TASKS[book].folder,))}, or point ATTNBOOK_DATA at a folder that "
             "has them), or") if book else "Either name one of the book's tasks, or"
    raise ParameterError(
        f"task {name!r} is not one of the book's GLUE tasks with local files and is not in the Hugging Face datasets "
        f"cache ({hf.hub_cache()}).\n  {local} put the dataset into that cache: on a machine with network run "
        f"{calls} (a dataset with a text column and a label column) and copy the folder {folders} of its datasets "
        f"cache into this one (or set HF_DATASETS_CACHE to a cache that has it).\n"
        f"  The book's tasks: {', '.join(TASKS)} (also as glue/<config>, e.g. glue/sst2).\n"
        f"  datasets said: {'; '.join(reasons)}")


_HUB_DATA: dict[tuple[str, str | None, str], DatasetDict] = {}


def _hub_splits(repo: str, config: str | None) -> DatasetDict:
    key = (repo, config, str(hf.hub_cache()))
    if key not in _HUB_DATA:
        _HUB_DATA[key] = hf.load_hub(repo, config)
    return _HUB_DATA[key]


def _spec_from_hub(name: str, repo: str, config: str | None, splits: DatasetDict) -> HubTaskSpec:
    from datasets import ClassLabel

    train = "train" if "train" in splits else ""
    dev = next((s for s in ("validation", "dev", "validation_matched", "test") if s in splits), "")
    if not (train or dev):
        raise ParameterError(f"{name}: the dataset has no train or validation split, only {list(splits)}")
    features = splits[dev or train].features
    a, b, label = hf.text_label_columns(features, name)
    kind = features[label]
    if isinstance(kind, ClassLabel):
        labels: tuple[str, ...] | None = tuple(kind.names)
    elif kind.dtype.startswith("float"):
        labels = None
    else:  # integer classes 0..k-1 without names
        k = 1 + max(max(splits[s][label]) for s in (train, dev) if s)
        labels = tuple(str(i) for i in range(k))
    where = f"{repo}" + (f", config {config}" if config else "")
    return HubTaskSpec(name, name, a, b, label, labels, dev_file=dev, train_file=train,
                       description=f"Hugging Face dataset {where}", repo=repo, config=config)


@dataclass(frozen=True)
class Example:
    """One GLUE example: text(s), label (class index, or float score for STS-B), 1-based file line."""

    text_a: str
    text_b: str | None
    label: int | float
    line: int


@dataclass
class GlueSplit:
    """The examples of one task's split, with the file they came from.

    :attr:`dataset` is the same examples as a :class:`datasets.Dataset` (the one :func:`load_split` read them from).
    """

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

    @property
    def dataset(self) -> Dataset:
        """The examples as a Dataset (:func:`features` of the task), in order. Not a dataclass field: a split's
        content digest (cache keys) is its examples'."""
        got = self.__dict__.get("_dataset")
        if got is None or got[0] is not self.examples or len(got[1]) != len(self.examples):
            got = (self.examples, examples_dataset(self.task, self.examples))
            self.__dict__["_dataset"] = got
        return got[1]


def features(task: str | TaskSpec) -> Features:
    """The typed columns of a task's Dataset: ``text_a``, ``text_b`` (pair tasks), ``label`` (a ``ClassLabel``
    named by the task's label strings; STS-B and other regression tasks ``float64``) and ``line`` (1-based)."""
    from datasets import ClassLabel, Features, Value

    spec = task_spec(task)
    cols: dict[str, Any] = {"text_a": Value("string")}
    if spec.is_pair:
        cols["text_b"] = Value("string")
    cols["label"] = Value("float64") if spec.labels is None else ClassLabel(names=list(spec.labels))
    cols["line"] = Value("int64")
    return Features(cols)


def examples_of(ds: Dataset) -> list[Example]:
    """A task Dataset's rows as :class:`Example` s, in order."""
    cols = hf.rows(ds)
    texts_b = cols.get("text_b") or [None] * len(cols["text_a"])
    return [Example(*row) for row in zip(cols["text_a"], texts_b, cols["label"], cols["line"])]


def examples_dataset(task: str | TaskSpec, examples: Sequence[Example]) -> Dataset:
    """An in-memory Dataset of ``examples`` (e.g. a split built by hand)."""
    spec = task_spec(task)
    cols = {"text_a": [e.text_a for e in examples], "text_b": [e.text_b for e in examples],
            "label": [e.label for e in examples], "line": [e.line for e in examples]}
    return hf.table(cols, features(spec))


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


def _parse_tsv(path: Path, spec: TaskSpec, skip_malformed: bool) -> tuple[dict[str, list], list[int]]:
    """The columns of a GLUE TSV file (:func:`features`) and the lines of the rows skipped as malformed."""
    cols: dict[str, list] = {"text_a": [], "text_b": [], "label": [], "line": []}
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
            cols["text_a"].append(fields[i_a])
            cols["text_b"].append(fields[i_b] if i_b is not None else None)
            cols["label"].append(label)
            cols["line"].append(line_no)
    return cols, skipped


def tsv_dataset(path: Path | str, task: str | TaskSpec, *, skip_malformed: bool = False) -> Dataset:
    """A GLUE TSV file of ``task`` as a Dataset (all rows, file order), cached by the file's content.

    Columns are located by the header. Raises :class:`MalformedInputError`
    (file, 1-based line) for a missing column in the header, a row whose field
    count differs from the header's, or a bad label. With ``skip_malformed``
    bad *rows* are dropped with one warning instead (the original QQP training
    file is known to hold a few broken lines); a bad header always raises.
    """
    spec = task_spec(task)
    path = Path(path)

    def build():
        cols, skipped = _parse_tsv(path, spec, skip_malformed)
        return cols, features(spec), json.dumps({"skipped_lines": skipped}) if skipped else ""

    parts = {"reader": "glue.tsv", "code": code_hash(_parse_tsv), "sha256": hf.file_sha256(path),
             "task": dataclasses.asdict(spec), "skip_malformed": bool(skip_malformed)}
    ds = hf.cached("glue", parts, build)
    skipped = json.loads(ds.info.description).get("skipped_lines", []) if ds.info.description else []
    if skipped:
        warnings.warn(
            f"{path}: skipped {len(skipped)} malformed row(s) at line(s) {skipped[:10]}"
            + (" ..." if len(skipped) > 10 else ""),
            stacklevel=3,
        )
    return ds


def read_tsv(path: Path | str, task: str | TaskSpec, *, skip_malformed: bool = False) -> list[Example]:
    """Read a GLUE TSV file of ``task`` into :class:`Example` s (all rows, file order): :func:`tsv_dataset`'s rows.

    For a :class:`HubTaskSpec`, ``path`` is what :func:`task_path` gave for one of its splits, and the rows are
    that split's (:func:`glue_dataset`), so code that reads a task's file reads a Hugging Face dataset alike.
    """
    spec = task_spec(task)
    if isinstance(spec, HubTaskSpec):
        split = next((s for s in ("train", "dev") if spec.file(s) and Path(path) == task_path(spec, s)), None)
        if split is None:
            raise ParameterError(f"{path} is not a split of {spec.name}")
        return examples_of(glue_dataset(spec, split))
    return examples_of(tsv_dataset(path, spec, skip_malformed=skip_malformed))


def _hub_dataset(spec: HubTaskSpec, split: str) -> Dataset:
    """A Hugging Face dataset's split in the book's columns (:func:`features`); ``line`` is the 1-based row, and
    rows without a label (``-1``, as in GLUE's test splits) are left out."""
    source = _hub_splits(spec.repo, spec.config)[_split_name(spec, split)]

    def build():
        cols = hf.rows(source.select_columns([c for c in (spec.text_a, spec.text_b, spec.label) if c]))
        keep = [i for i, v in enumerate(cols[spec.label]) if v is not None and (spec.labels is None or v >= 0)]
        take = lambda c: [cols[c][i] for i in keep] if c else [None] * len(keep)  # noqa: E731
        label = [float(v) for v in take(spec.label)] if spec.labels is None else [int(v) for v in take(spec.label)]
        return ({"text_a": take(spec.text_a), "text_b": take(spec.text_b), "label": label,
                 "line": [i + 1 for i in keep]}, features(spec), "")

    parts = {"reader": "glue.hub", "code": code_hash(_hub_dataset), "task": dataclasses.asdict(spec), "split": split,
             "sha256": [hf.file_sha256(f) for f in hf.split_files(source)] or source._fingerprint}
    return hf.cached("hub", parts, build)


def _split_name(spec: TaskSpec, split: str) -> str:
    name = spec.file(split)
    if not name:
        raise ParameterError(f"{spec.name} has no {split} split ({spec.description}); it has "
                             f"{', '.join(s for s in (spec.train_file, spec.dev_file) if s)}")
    return name


def glue_dataset(task: str | TaskSpec, split: str = "dev", *, skip_malformed: bool | None = None) -> Dataset:
    """A task's ``train`` or ``dev`` split as a Dataset (:func:`features`): the local TSV file
    (:func:`tsv_dataset`; ``skip_malformed`` defaults to :attr:`TaskSpec.skip_malformed`) or, for a
    :class:`HubTaskSpec`, the Hugging Face dataset's train / validation split."""
    spec = task_spec(task)
    if isinstance(spec, HubTaskSpec):
        return _hub_dataset(spec, split)
    lenient = spec.skip_malformed if skip_malformed is None else skip_malformed
    return tsv_dataset(task_path(spec, split), spec, skip_malformed=lenient)


def task_path(task: str | TaskSpec, split: str) -> Path:
    """``data_path("glue", folder, file)`` of a task's split; raises MissingDataError when absent. A Hugging Face
    dataset's split: its (first) Arrow file in the ``datasets`` cache."""
    spec = task_spec(task)
    if isinstance(spec, HubTaskSpec):
        return hf.split_files(_hub_splits(spec.repo, spec.config)[_split_name(spec, split)])[0]
    return data_path("glue", spec.folder, spec.file(split))


def sample_indices(n_total: int, n: int | None, seed: int) -> list[int] | None:
    """The rows :func:`subsample` keeps of ``n_total`` (sorted), or None for all of them."""
    if n is None or n >= n_total:
        return None
    if n < 1:
        raise ParameterError(f"a cap must be at least 1, got {n}")
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_total, size=n, replace=False)).tolist()


def subsample(examples: Sequence[Example], n: int | None, seed: int) -> list[Example]:
    """At most ``n`` examples drawn uniformly without replacement (seeded), kept in file order.

    Kovaleva et al. (§4.3, footnote 5) randomly sample 1000 dev examples for the
    larger tasks; the book caps training sets the same way in its quick profile.
    """
    keep = sample_indices(len(examples), n, seed)
    return list(examples) if keep is None else [examples[i] for i in keep]


def load_split(
    task: str | TaskSpec,
    split: str = "dev",
    *,
    cap: int | None = None,
    seed: int = 0,
    skip_malformed: bool | None = None,
) -> GlueSplit:
    """Read a task's ``train`` or ``dev`` split (:func:`glue_dataset`), capped to ``cap`` examples (:func:`subsample`).

    ``skip_malformed`` defaults to the task's :attr:`TaskSpec.skip_malformed`
    (true only for QQP); otherwise a malformed row raises :class:`MalformedInputError`.
    """
    spec = task_spec(task)
    path = task_path(spec, split)
    ds = glue_dataset(spec, split, skip_malformed=skip_malformed)
    if len(ds) == 0:
        raise EmptyDataError(f"{path} has a header but no examples")
    keep = sample_indices(len(ds), cap, seed)
    sample = ds if keep is None else ds.select(keep)
    out = GlueSplit(spec, split, path, examples_of(sample), n_total=len(ds))
    out.__dict__["_dataset"] = (out.examples, sample)
    return out


def load_rest(
    task: str | TaskSpec,
    split: str = "dev",
    *,
    cap: int | None,
    seed: int = 0,
    limit: int | None = None,
    skip_malformed: bool | None = None,
) -> GlueSplit:
    """The examples of ``split`` that :func:`load_split` with the same ``cap`` and ``seed`` leaves out, in file
    order: where a choice made on that sample (the best head to disable, say) is tested without the sample's
    selection bias. At most ``limit`` of them, a seeded sample (``seed + 1``); no example when the cap keeps the
    whole split."""
    spec = task_spec(task)
    path = task_path(spec, split)
    ds = glue_dataset(spec, split, skip_malformed=skip_malformed)
    keep = sample_indices(len(ds), cap, seed)
    rest = [] if keep is None else sorted(set(range(len(ds))) - set(keep))
    pick = sample_indices(len(rest), limit, seed + 1)
    rest = rest if pick is None else [rest[i] for i in pick]
    sample = ds.select(rest)
    out = GlueSplit(spec, split, path, examples_of(sample), n_total=len(ds))
    out.__dict__["_dataset"] = (out.examples, sample)
    return out


def available(task: str | TaskSpec, split: str) -> bool:
    """Whether the data directory holds ``task``'s ``split`` file (a Hugging Face dataset: whether it has the split)."""
    spec = task_spec(task)
    if isinstance(spec, HubTaskSpec):
        return bool(spec.file(split))
    return data_path("glue", spec.folder, spec.file(split), must_exist=False).exists()


def label_counts(split: GlueSplit) -> dict[str, int]:
    """Examples per label string (classification tasks), e.g. to compare with a majority baseline."""
    if split.task.labels is None:
        raise ParameterError(f"{split.task.name} is a regression task: it has no label counts")
    counts = np.bincount(split.labels, minlength=split.task.num_labels)
    return {name: int(c) for name, c in zip(split.task.labels, counts)}
