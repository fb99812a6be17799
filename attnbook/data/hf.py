"""Hugging Face ``datasets`` under the book's readers, and datasets named the Hugging Face way.

The corpora the chapters read come out of their readers as :class:`datasets.Dataset` objects with typed
``Features`` (a label is a ``ClassLabel`` with its names): GLUE (:func:`attnbook.data.glue.glue_dataset`), ARCT
(:func:`attnbook.data.arct.arct_dataset`) and WikiText (:func:`attnbook.data.wiki.wiki_dataset`). The book's typed
views (``GlueSplit``, ``ArctItem``, ``Article``) are built from those Datasets, row by row in order.

The parsing of the local files stays the book's: it names the file and the 1-based line of a malformed row, which
``datasets``' generic CSV builder cannot; and ``Dataset.from_generator`` took about 3 s for SST-2's 67k training rows
where parsing and :func:`table` take about 0.5 s (measured on the book's 2-core machine). :func:`cached` turns a
reader's columns into a Dataset once and keeps it as Arrow under ``<cache>/datasets/<kind>-<fingerprint>/``,
the fingerprint (``datasets``' own :class:`~datasets.fingerprint.Hasher`) naming the reader's code, the file's
SHA-256 and the options; a later read memory-maps it, and ``Dataset.map`` (tokenisation) caches its results beside
it under ``datasets``' chained fingerprints. With the book's cache off (:func:`attnbook.core.cache.enabled`) the
Dataset is built in memory and nothing is written.

:func:`load_hub` loads a dataset by Hugging Face name and config with ``datasets.load_dataset``: from the network
when there is one, else offline from the ``datasets`` cache (``$HF_DATASETS_CACHE``, read when called);
:func:`text_label_columns` finds its text column(s) and its label column. Which names mean the book's own GLUE files
and which a Hugging Face dataset is decided in :func:`attnbook.data.glue.task_spec`.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from attnbook.core import cache
from attnbook.core.errors import ParameterError
from attnbook.core.io import sha256_file, temp_prefix
from attnbook.core.paths import cache_dir

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict, Features

#: the folder of :func:`cached` Datasets inside the book's cache
FOLDER = "datasets"

_SHA: dict[tuple[str, int, int], str] = {}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """``datasets`` without progress bars or info/warning logs (a chapter's page shows its own progress)."""
    import datasets

    bars, level = datasets.is_progress_bar_enabled(), datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    try:
        yield
    finally:
        datasets.logging.set_verbosity(level)
        if bars:
            datasets.enable_progress_bars()


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a file's content, computed once per process for each (path, size, modification time)."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _SHA:
        _SHA[key] = sha256_file(path)
    return _SHA[key]


def table(columns: Mapping[str, Sequence[Any]], features: Features, *, fingerprint: str | None = None,
          description: str = "") -> Dataset:
    """An in-memory Dataset of ``columns`` (name -> values, all of one length) typed by ``features``."""
    import pyarrow as pa
    from datasets import Dataset, DatasetInfo

    data = pa.Table.from_pydict({name: list(columns[name]) for name in features}, schema=features.arrow_schema)
    return Dataset(data, info=DatasetInfo(features=features, description=description), fingerprint=fingerprint)


def cached(kind: str, parts: Mapping[str, Any],
           build: Callable[[], tuple[Mapping[str, Sequence[Any]], Features, str]]) -> Dataset:
    """The Dataset ``build()`` makes (``(columns, features, description)``), kept under the book's cache.

    ``parts`` names everything the rows depend on (the reader's code, the file's SHA-256, options); their
    ``datasets`` fingerprint names the folder ``<cache>/datasets/<kind>-<fingerprint>/``. An entry is written to a
    temporary folder and renamed into place, so a reader never sees half of one; two processes building the same
    entry keep the first. With the cache off nothing is read or written.
    """
    from datasets import load_from_disk
    from datasets.fingerprint import Hasher

    fingerprint = Hasher.hash({"kind": kind, **parts})
    folder = cache_dir() / FOLDER / f"{kind}-{fingerprint}"
    use = cache.enabled()
    if use and (folder / "state.json").is_file():
        with quiet():
            return load_from_disk(str(folder))
    columns, features, description = build()
    ds = table(columns, features, fingerprint=fingerprint, description=description)
    if not use or ds.num_rows == 0:  # datasets cannot load an empty saved Dataset back
        return ds
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(folder.name), dir=folder.parent))
    try:
        with quiet():
            ds.save_to_disk(str(tmp))
        try:
            os.rename(tmp, folder)
        except OSError:  # another process wrote it first: keep theirs
            if not (folder / "state.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with quiet():
        return load_from_disk(str(folder))


def rows(ds: Dataset) -> dict[str, list]:
    """A Dataset's columns as Python lists (class indices for a ``ClassLabel``), in row order."""
    return ds.to_dict()


# ---------------------------------------------------------------------------------------------- by Hugging Face name
def hub_cache() -> Path:
    """The ``datasets`` cache: ``$HF_DATASETS_CACHE`` when set (read now), else the one ``datasets`` configured."""
    env = os.environ.get("HF_DATASETS_CACHE")
    if env:
        return Path(env).expanduser()
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE)


def cache_folder(repo: str) -> str:
    """The folder ``datasets`` keeps ``repo`` in inside its cache (``nyu-mll/glue`` -> ``nyu-mll___glue``)."""
    from datasets.naming import camelcase_to_snakecase

    parts = repo.split("/")
    parts[-1] = camelcase_to_snakecase(parts[-1])
    return "___".join(parts)


def hub_candidates(name: str) -> list[tuple[str, str | None]]:
    """The ``(repository, config)`` readings of a name: ``a/b/c`` is ``a/b`` config ``c``; ``a/b`` is ``a`` config
    ``b`` (as ``glue/sst2``) or the repository ``a/b`` with its only config; ``a`` is the repository ``a``."""
    parts = [p for p in name.strip().split("/") if p]
    if len(parts) == 3:
        return [("/".join(parts[:2]), parts[2])]
    if len(parts) == 2:
        return [(parts[0], parts[1]), ("/".join(parts), None)]
    if len(parts) == 1:
        return [(parts[0], None)]
    raise ParameterError(f"{name!r} is not a Hugging Face dataset name (name, name/config or owner/name/config)")


class NotFound(Exception):
    """``datasets`` could not load a name (its reason is the message); :func:`attnbook.data.glue.task_spec` turns
    every reading's reason into one :class:`~attnbook.core.errors.ParameterError` that names the fix."""


def load_hub(repo: str, config: str | None = None) -> DatasetDict:
    """``datasets.load_dataset(repo, config)``: every split, from the network or offline from :func:`hub_cache`.

    The name is given as ``hf://datasets/<repo>`` so that a folder of the same name in the working directory is
    never read instead. Raises :class:`NotFound` with ``datasets``' reason when neither has it.
    """
    import datasets

    with quiet():
        try:
            got = datasets.load_dataset(f"hf://datasets/{repo}", config, cache_dir=str(hub_cache()))
        except (OSError, ValueError) as exc:  # ConnectionError, DatasetNotFoundError, "Couldn't find cache for ..."
            raise NotFound(" ".join(str(exc).split())) from None
    if not isinstance(got, datasets.DatasetDict):
        raise NotFound(f"load_dataset({repo!r}, {config!r}) gave no splits")
    return got


#: text columns of common datasets, tried in this order (pairs first); else the dataset's string columns
_PAIRS = (("sentence1", "sentence2"), ("question1", "question2"), ("premise", "hypothesis"), ("question", "sentence"),
          ("question", "passage"), ("text_a", "text_b"))
_SINGLES = ("sentence", "text", "content", "review", "document")
_LABELS = ("label", "labels", "gold_label", "score")


def text_label_columns(features: Features, name: str) -> tuple[str, str | None, str]:
    """``(text_a, text_b or None, label)`` column names of a dataset with a text (or text pair) and a label column.

    The label: ``label``, ``labels``, ``gold_label`` or ``score``, else the one ``ClassLabel`` column; the texts: a
    known pair (``sentence1``/``sentence2``, ``premise``/``hypothesis``, ...) or single (``sentence``, ``text``, ...),
    else the dataset's one or two string columns. Raises :class:`ParameterError` naming the columns otherwise.
    """
    from datasets import ClassLabel, Value

    strings = [c for c, f in features.items() if isinstance(f, Value) and f.dtype in ("string", "large_string")]
    numeric = [c for c, f in features.items() if isinstance(f, ClassLabel)
               or (isinstance(f, Value) and (f.dtype.startswith(("int", "float")) or f.dtype == "bool"))]
    labels = [c for c in _LABELS if c in numeric] or [c for c in numeric if isinstance(features[c], ClassLabel)]
    texts = next(([a, b] for a, b in _PAIRS if a in strings and b in strings), None) \
        or next(([c] for c in _SINGLES if c in strings), None) or (strings if 1 <= len(strings) <= 2 else None)
    if not labels or not texts:
        raise ParameterError(
            f"{name}: a task needs one or two text columns and a label column (a ClassLabel, or a number named "
            f"{'/'.join(_LABELS)}); its columns are {({c: str(f) for c, f in features.items()})}")
    return texts[0], (texts[1] if len(texts) == 2 else None), labels[0]


def split_files(ds: Dataset) -> list[Path]:
    """The Arrow files behind a Dataset (empty for one held in memory)."""
    return [Path(f["filename"]) for f in ds.cache_files]


__all__ = ["FOLDER", "NotFound", "cache_folder", "cached", "file_sha256", "hub_cache", "hub_candidates", "load_hub",
           "quiet", "rows", "split_files", "table", "text_label_columns"]
