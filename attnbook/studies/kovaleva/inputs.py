"""The GLUE dev inputs the Kovaleva measurements share (§4.1, §4.3-4.5).

Rows are the data lines of a task's TSV in file order (header excluded); every encoded input
keeps ``task``, ``split`` and ``row`` in its ``meta``, so every map can be traced back to its text.
"""
from __future__ import annotations

import numpy as np

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.glue import read_tsv, task_path
from attnbook.engine.inputs import Encoded
from attnbook.studies.kovaleva.features import encode_texts


def read_glue_texts(task: str, split: str = "dev") -> list[tuple[str, str | None]]:
    """The texts of a GLUE split as ``(first, second or None)``; list position ``i`` is *row* ``i``.

    Rows are the data lines of the task's TSV in file order (header excluded), read with
    :func:`attnbook.data.glue.read_tsv` (which names file and line of a malformed row).
    """

    return [(ex.text_a.strip(), ex.text_b.strip() if ex.text_b is not None else None)
            for ex in read_tsv(task_path(task, split), task)]


def encode_text(tokenizer, first: str, second: str | None = None, *, max_tokens: int = 128, meta: dict | None = None
                ) -> Encoded:
    """``[CLS] first [SEP] (second [SEP])`` with the tokenizer's own truncation (longest side first)."""
    enc = tokenizer(first, second, truncation=True, max_length=max_tokens)
    ids = list(enc["input_ids"])
    types = list(enc.get("token_type_ids", [0] * len(ids)))
    return Encoded(input_ids=ids, token_type_ids=types, tokens=tokenizer.convert_ids_to_tokens(ids),
                   meta=dict(meta or {}))


def glue_examples(tokenizer, task: str, n: int | None = None, *, seed: int = 0, split: str = "dev",
                  max_tokens: int = 128) -> list[Encoded]:
    """Up to ``n`` encoded rows of a GLUE split, a seeded random sample (all rows, in order, if ``n`` is None).

    ``meta`` holds ``task``, ``split`` and ``row`` (0-based data row), so every map can be traced back.
    """
    texts = read_glue_texts(task, split)
    rows = sample_rows(len(texts), n, seed)
    return [encode_text(tokenizer, *texts[r], max_tokens=max_tokens, meta={"task": task, "split": split, "row": r})
            for r in rows]


def sample_rows(n_rows: int, n: int | None, seed: int) -> list[int]:
    """``n`` sorted row indices out of ``n_rows`` (all rows when ``n`` is None or too large), seeded."""
    if n_rows < 1:
        raise EmptyDataError("no rows to sample from")
    if n is not None and n < 1:
        raise ParameterError(f"n_examples must be at least 1, got {n}")
    if n is None or n >= n_rows:
        return list(range(n_rows))
    return sorted(np.random.default_rng(seed).choice(n_rows, size=n, replace=False).tolist())


def dev_inputs(tokenizer, task: str, n: int | None, *, seed: int = 0, max_tokens: int = 128) -> list[Encoded]:
    """Up to ``n`` random dev inputs of ``task``, tagged and encoded word by word.

    One set serves §4.1 (pattern shares), §4.3 (cosine) and §4.4-4.5 (feature attention),
    as in the paper, which used up to 1000 dev examples per task for each. ``meta`` holds
    ``task`` and ``row`` (0-based data row of the dev file).
    """

    texts = read_glue_texts(task, "dev")
    rows = sample_rows(len(texts), n, seed)
    return encode_texts(tokenizer, [texts[r] for r in rows], max_tokens=max_tokens,
                        meta=[{"task": task, "split": "dev", "row": r} for r in rows])
