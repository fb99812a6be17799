"""Shared fixtures: a tiny randomly initialised BERT built in the test (no download)."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Tests never write into the user's cache or the book's results folder.
# The folder holds the smoke book's and the rehearsal's caches (~0.7 GB a run): it goes when the run ends, however it
# ends, so repeated runs do not fill the disk. Worker processes the tests start (spawned, so they import this file
# again, and they leave without running atexit) share the run's folder through the environment instead of making
# their own.
_TEST_STATE = os.environ.get("ATTNBOOK_TEST_STATE")
if not _TEST_STATE:
    _TEST_STATE = tempfile.mkdtemp(prefix="attnbook-tests-")
    os.environ["ATTNBOOK_TEST_STATE"] = _TEST_STATE
    atexit.register(shutil.rmtree, _TEST_STATE, ignore_errors=True)
os.environ["ATTNBOOK_CACHE"] = os.path.join(_TEST_STATE, "cache")
os.environ["ATTNBOOK_RESULTS"] = os.path.join(_TEST_STATE, "results")


def pytest_collection_modifyitems(config, items):
    """Tests that wait for a long run go last (in their own order), so the other tests run while it works."""
    import longruns

    items.sort(key=lambda item: bool(set(getattr(item, "fixturenames", ())) & set(longruns.RUNS)))


def pytest_collection_finish(session):
    """Start the long runs the selected tests need (the smoke book, the paper rehearsal) now, in the background,
    so they run beside the other tests instead of one after the other (:mod:`longruns`)."""
    import longruns

    if session.config.option.collectonly:
        return
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    runs = {name: fn for name, fn in longruns.RUNS.items() if name in needed}
    if os.environ.get("ATTNBOOK_BUILT_BOOK"):  # the page checks read a book already built: no smoke build
        runs.pop("smoke_book", None)
    if runs:
        # the long runs have the other core: this process computes on one thread, and so do the chapters, kernels and
        # servers the tests start (the package's set-up reads OMP_NUM_THREADS: attnbook.engine.models.set_threads)
        torch.set_num_threads(1)
        os.environ.update(longruns.ONE_THREAD)
    longruns.start(runs)


def pytest_unconfigure(config):
    """An interrupted run leaves no long run's subprocess (or its Jupyter kernel) behind."""
    import longruns

    longruns.stop()


def shared_data_dir():
    """The real data directory (CI points ATTNBOOK_DATA at shared/data); tests that read real files need it."""
    path = os.environ.get("ATTNBOOK_DATA")
    if not path or not os.path.isdir(path):
        raise RuntimeError("set ATTNBOOK_DATA to the data directory (CI: ../shared/data) to run these tests")
    return path


@pytest.fixture(scope="session")
def tokenizer():
    """The bert-base-uncased WordPiece tokenizer shipped with the embedded model."""
    from transformers import AutoTokenizer

    from attnbook.engine.models import embedded_model_path

    return AutoTokenizer.from_pretrained(embedded_model_path())


def make_tiny_bert(tokenizer, n_layers: int = 2, n_heads: int = 4, hidden: int = 32, seed: int = 0):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=n_layers,
        num_attention_heads=n_heads,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
        attn_implementation="eager",
    )
    model = BertModel(config)
    model.eval()
    return model


@pytest.fixture(scope="session")
def tiny_bert(tokenizer):
    """A LoadedModel around a 2-layer, 4-head, hidden-32 random BERT."""
    from attnbook.engine.models import wrap_model

    return wrap_model(make_tiny_bert(tokenizer), tokenizer, name="tiny-random-bert")


@pytest.fixture(scope="session")
def smoke_book_dask():
    """The smoke book built through a two-worker local cluster (:func:`longruns.smoke_book_dask`), in its own
    project folder and cache."""
    import longruns

    return longruns.result("smoke_book_dask", longruns.smoke_book_dask)


@pytest.fixture(scope="session")
def smoke_book():
    """The smoke book's project folder (:func:`longruns.smoke_book`), started in the background when collection
    ended; shared by the book's page checks and the fresh-environment run that compares its results with it. With
    ``ATTNBOOK_BUILT_BOOK`` set to a built project folder (``make book``'s checkout), the page checks read that book
    instead (``ATTNBOOK_BUILT_BOOK=. pytest tests/test_book.py -k chromium``)."""
    import longruns

    built = os.environ.get("ATTNBOOK_BUILT_BOOK")
    if built:  # the page checks on a book already built (e.g. the quick book): its project folder
        return Path(built)
    return longruns.result("smoke_book", longruns.smoke_book)
