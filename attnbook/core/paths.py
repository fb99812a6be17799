"""Where things live: data, caches, results and the book.

Each location has an environment variable so CI, a seminar machine or a
laptop can move it without code changes:

=================  ==============================================  ==========================
variable           what                                            default
=================  ==============================================  ==========================
``ATTNBOOK_DATA``  the data directory (layout of ``shared/data``)  ``<project>/data``
``ATTNBOOK_CACHE`` cached extraction results and checkpoints       ``~/.cache/attnbook``
``ATTNBOOK_RESULTS`` each chapter's machine-readable results       ``<project>/book/results``
``ATTNBOOK_HOME``   the project (notebooks/, book/, _config.yml)    the checkout
=================  ==============================================  ==========================
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def project_root() -> Path:
    """The book project: ``$ATTNBOOK_HOME`` if set, else the checkout that holds ``_toc.yml``
    (the package's parent in an editable install), else the cwd."""
    env = os.environ.get("ATTNBOOK_HOME")
    if env:
        return Path(env).expanduser().resolve()
    candidate = PACKAGE_DIR.parent
    if (candidate / "_toc.yml").exists():
        return candidate
    return Path.cwd()


def data_dir() -> Path:
    """The data directory: ``$ATTNBOOK_DATA`` or ``<project>/data``."""
    env = os.environ.get("ATTNBOOK_DATA")
    return Path(env).expanduser().resolve() if env else project_root() / "data"


def cache_dir() -> Path:
    """The cache directory: ``$ATTNBOOK_CACHE`` or ``~/.cache/attnbook`` (created on demand)."""
    env = os.environ.get("ATTNBOOK_CACHE")
    path = Path(env).expanduser() if env else Path.home() / ".cache" / "attnbook"
    path.mkdir(parents=True, exist_ok=True)
    return path


def results_dir() -> Path:
    """Where chapters write their results files: ``$ATTNBOOK_RESULTS`` or ``<project>/book/results``."""
    env = os.environ.get("ATTNBOOK_RESULTS")
    path = Path(env).expanduser() if env else project_root() / "book" / "results"
    path.mkdir(parents=True, exist_ok=True)
    return path


def hub_cache_dir() -> Path | None:
    """The Hugging Face hub cache as the environment names it now (``HF_HUB_CACHE``, else ``HF_HOME/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return None
