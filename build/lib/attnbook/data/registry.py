"""The data directory and the datasets in it.

The layout is the one of the project's ``shared/data`` folder; each dataset is a
sub-folder (``wiki/``, ``ud_ewt/``, ...). :func:`data_path` is the one way code
reaches a data file: it raises :class:`~attnbook.core.errors.MissingDataError`, which
names the ``attnbook fetch`` command, when the file is not there.
"""
from __future__ import annotations

from pathlib import Path

from attnbook.core.errors import MissingDataError
from attnbook.core.paths import data_dir

#: dataset name -> short description (the names are the data directory's sub-folders)
DATASETS: dict[str, str] = {
    "wiki": "WikiText-2 articles (Clark §3, §6 segments)",
    "ud_ewt": "Universal Dependencies English EWT (Clark §4.2, §5)",
    "coref": "GUM / OntoGUM coreference with UD trees (Clark §4.3)",
    "glue": "GLUE tasks in the standard TSV layout (Kovaleva, Michel)",
    "arct": "Argument Reasoning Comprehension Task, original and adversarial (Niven & Kao)",
    "framenet": "FrameNet 1.7 frames and full-text annotations (Kovaleva §4.2)",
    "glove": "GloVe 6B 50d word vectors (Clark §5)",
}


def data_path(dataset: str, *parts: str, must_exist: bool = True) -> Path:
    """Path of ``parts`` inside ``dataset``'s folder of the data directory.

    Raises :class:`MissingDataError` (naming ``attnbook fetch <dataset>`` and
    ``ATTNBOOK_DATA``) when ``must_exist`` and the path is absent.
    """
    if dataset not in DATASETS:
        raise KeyError(f"unknown dataset {dataset!r}; known: {', '.join(sorted(DATASETS))}")
    root = data_dir()
    path = root.joinpath(dataset, *parts)
    if must_exist and not path.exists():
        raise MissingDataError(path, fetch_name(dataset, parts), root)
    return path


#: GLUE files that are not in the small ``glue`` download but in ``glue_large`` (MNLI, QQP, QNLI train)
GLUE_LARGE = {("MNLI",), ("QQP",), ("QNLI", "train.tsv")}


def fetch_name(dataset: str, parts: tuple[str, ...]) -> str:
    """The ``attnbook fetch`` name that provides ``parts`` of ``dataset``."""
    if dataset == "glue" and parts and ((parts[0],) in GLUE_LARGE or tuple(parts[:2]) in GLUE_LARGE):
        return "glue_large"
    return dataset
