"""The datasets each chapter reads, and the set-up a notebook does for itself in a fresh environment.

Every chapter notebook opens with a set-up cell (:data:`SETUP_CELL`, removed from the rendered page): where
``attnbook`` is not importable (Colab, a fresh virtualenv, a notebook downloaded from the book's page) it installs
the package, then :func:`ensure_data` fetches whichever of the chapter's datasets (:data:`CHAPTER_DATASETS`) are
missing from the data directory (``$ATTNBOOK_DATA``, else ``./data``). Where both are present, as in the book's own
build, the cell does nothing and prints nothing. ``ATTNBOOK_SOURCE`` (a pip requirement: a folder, a wheel, a
``git+`` URL) and ``ATTNBOOK_DATA_MIRROR`` (a mirror of the upstream files, see :mod:`attnbook.data.fetch`) point
the cell elsewhere, e.g. at a local copy offline.
"""
from __future__ import annotations

from pathlib import Path

from attnbook.chapters.toc import CHAPTERS
from attnbook.core.paths import data_dir
from attnbook.data.fetch import fetch
from attnbook.data.manifest import Manifest

#: the manifest datasets (``attnbook fetch`` names) a chapter reads in every profile, as each chapter declares them
#: (:attr:`attnbook.chapters.spec.Chapter.datasets`); the paper profile's GLUE tasks that are not in the standard
#: download (``glue_large``) are fetched on request (the chapters name them)
CHAPTER_DATASETS: dict[str, tuple[str, ...]] = {c.id: c.datasets for c in CHAPTERS}

#: where the cell installs attnbook from when it is missing (``ATTNBOOK_SOURCE`` overrides it)
DEFAULT_SOURCE = "git+https://github.com/attnbook/attnbook"

SETUP_CELL = '''# Set-up for a fresh environment (Colab, a new virtualenv, a notebook downloaded from the book): installs attnbook
# and fetches the data this chapter reads when they are missing. Where both are present it does nothing.
import importlib.util, os, subprocess, sys
if importlib.util.find_spec("attnbook") is None:
    where = os.environ.get("ATTNBOOK_SOURCE", "{source}")
    if subprocess.run([sys.executable, "-m", "pip", "install", "-q", where]).returncode != 0:
        raise ModuleNotFoundError(
            f"attnbook is not installed for this kernel's Python ({sys.executable}), and pip could not install it "
            f"from {where} (offline?). In a checkout of the book: run `make install`, then choose the kernel "
            "'attnbook (.venv)' (Kernel > Change Kernel...). Elsewhere: set ATTNBOOK_SOURCE to a local copy of "
            "attnbook (a folder or a wheel) and restart the kernel.") from None
from attnbook.chapters.datasets import ensure_data
ensure_data("{chapter}")'''


def setup_cell(chapter: str) -> str:
    """The set-up cell's source for ``chapter``."""
    if chapter not in CHAPTER_DATASETS:
        raise KeyError(f"no chapter {chapter!r}: a chapter declares its datasets in its module of "
                       "attnbook.chapters.profiles")
    return SETUP_CELL.replace("{source}", DEFAULT_SOURCE).replace("{chapter}", chapter)


def missing_datasets(chapter: str, dest: Path | str | None = None) -> list[str]:
    """The datasets of ``chapter`` with a file absent from ``dest`` (default: the data directory). Only presence
    is checked here (a stat per file); ``attnbook fetch --verify`` checks the bytes."""

    root = Path(dest) if dest is not None else data_dir()
    manifest = Manifest.load()
    return [name for name in CHAPTER_DATASETS[chapter]
            if any(not e.target(root).is_file() for e in manifest.entries([name]))]


def ensure_data(chapter: str, dest: Path | str | None = None, base_url: str | None = None) -> None:
    """Fetch the datasets of ``chapter`` that are not complete in ``dest`` (default: the data directory) from their
    upstream sources, or from ``base_url`` / ``$ATTNBOOK_DATA_MIRROR``, saying which; with every file present it
    prints nothing, writes nothing and returns nothing (the set-up cell's last line shows no value). The fetch first
    says which hosts it checks; a host that cannot be reached stops it within
    :data:`attnbook.data.fetch.PROBE_TIMEOUT` seconds with :class:`attnbook.data.fetch_status.UnreachableHostError`
    naming the hosts and the fix. A failed download raises :class:`attnbook.data.fetch.FetchError` naming the
    files."""
    import os

    todo = missing_datasets(chapter, dest)
    if todo:
        root = Path(dest) if dest is not None else data_dir()
        print(f"{chapter} reads {', '.join(todo)}: not complete in {root}, fetching")
        fetch(todo, root, base_url or os.environ.get("ATTNBOOK_DATA_MIRROR") or None)
