"""A disk cache for expensive results, keyed by content.

A cache entry is identified by the SHA-256 of a canonical JSON description of
everything that determines the result: the model's weight fingerprint, the
data files' checksums, the parameters, and a version string of the code that
computes it. Rebuilding the book after a prose edit therefore recomputes
nothing heavy, and changing any input recomputes exactly what it affects.

Entries are ``<key>.npz`` (arrays; no pickles) plus ``<key>.json`` (the
description and the npz's SHA-256), both written atomically, the JSON last. An
entry whose npz fails its checksum is recomputed with a warning.
"""
from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from attnbook.core.io import atomic_path, atomic_write_json, sha256_file
from attnbook.core.paths import cache_dir


def key(parts: dict[str, Any]) -> str:
    """The cache key of a result: SHA-256 (hex, 24 chars) of the canonical JSON of ``parts``.

    ``parts`` names everything the result depends on: the model's :attr:`~attnbook.engine.models.LoadedModel.key`,
    :func:`digest` of the inputs, the parameters and a code version string.
    """
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def digest(*objects: Any) -> str:
    """SHA-256 (hex, 24 chars) of the *content* of ``objects``: the one way to name inputs in a cache key.

    Understands numbers, strings, bytes, paths, ``None``, NumPy arrays and torch tensors (dtype, shape and
    bytes), mappings (by sorted key), lists, tuples, sets, dataclasses (class name and every field) and any
    object with a ``__digest__()`` method, which returns what identifies it (e.g. an encoded input's piece
    ids). Anything else raises ``TypeError``: a silent ``repr`` could name two different inputs alike.
    """
    h = hashlib.sha256()
    for obj in objects:
        _feed(h, obj)
    return h.hexdigest()[:24]


def _feed(h, obj: Any) -> None:  # noqa: C901 - one branch per kind of content
    import dataclasses

    if hasattr(obj, "__digest__"):
        h.update(b"D")
        _feed(h, obj.__digest__())
    elif obj is None or isinstance(obj, (bool, int, float, str)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, bytes):
        h.update(b"b%d:" % len(obj) + obj)
    elif isinstance(obj, Path):
        _feed(h, str(obj))
    elif isinstance(obj, (np.ndarray, np.generic)):
        a = np.ascontiguousarray(obj)
        if a.dtype == object:
            _feed(h, a.tolist())
            return
        h.update(f"a{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())
    elif type(obj).__module__.startswith("torch") and hasattr(obj, "detach"):
        _feed(h, obj.detach().cpu().contiguous().numpy())
    elif isinstance(obj, Mapping):
        h.update(b"m%d:" % len(obj))
        for k in sorted(obj, key=str):
            _feed(h, str(k))
            _feed(h, obj[k])
    elif isinstance(obj, (list, tuple)):
        if obj and all(type(x) is int for x in obj):  # the common case: token ids, fast
            h.update(b"i")
            _feed(h, np.asarray(obj, dtype=np.int64))
            return
        if obj and all(type(x) is str for x in obj):  # words: the bytes the loop below feeds, in one update
            h.update(b"l%d:" % len(obj) + "".join(f"str:{x!r};" for x in obj).encode())
            return
        h.update(b"l%d:" % len(obj))
        for x in obj:
            _feed(h, x)
    elif isinstance(obj, (set, frozenset)):
        _feed(h, sorted(obj, key=repr))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"c{type(obj).__name__}:".encode())
        for f in dataclasses.fields(obj):
            _feed(h, f.name)
            _feed(h, getattr(obj, f.name))
    else:
        raise TypeError(f"digest() does not know how to name a {type(obj).__name__}; give it a __digest__() method")


class CacheCorruptWarning(UserWarning):
    """A cache entry failed its checksum and is being recomputed."""


def _entry(namespace: str, name: str, root: Path | None) -> tuple[Path, Path]:
    folder = (root or cache_dir()) / namespace
    return folder / f"{name}.npz", folder / f"{name}.json"


def load_arrays(namespace: str, parts: dict[str, Any], root: Path | None = None) -> dict[str, np.ndarray] | None:
    """The cached arrays for ``parts``, or ``None`` when absent or corrupt (corrupt: with a warning)."""
    npz, meta = _entry(namespace, key(parts), root)
    if not (npz.exists() and meta.exists()):
        return None
    try:
        recorded = json.loads(meta.read_text())["sha256"]
    except (ValueError, KeyError):
        recorded = None
    if recorded != sha256_file(npz):
        warnings.warn(f"cache entry {npz} failed its checksum; recomputing", CacheCorruptWarning, stacklevel=3)
        return None
    with np.load(npz, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def save_arrays(namespace: str, parts: dict[str, Any], arrays: dict[str, np.ndarray], root: Path | None = None) -> Path:
    """Store ``arrays`` under ``parts``; returns the npz path."""
    npz, meta = _entry(namespace, key(parts), root)
    with atomic_path(npz) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **{k: np.asarray(v) for k, v in arrays.items()})
    atomic_write_json(meta, {"parts": parts, "sha256": sha256_file(npz)})
    return npz


def cached_arrays(
    namespace: str,
    parts: dict[str, Any],
    compute: Callable[[], dict[str, np.ndarray]],
    *,
    enabled: bool = True,
    root: Path | None = None,
) -> dict[str, np.ndarray]:
    """Return the cached result for ``parts``, computing and storing it on a miss."""
    if enabled:
        hit = load_arrays(namespace, parts, root)
        if hit is not None:
            return hit
    arrays = {k: np.asarray(v) for k, v in compute().items()}
    if enabled:
        save_arrays(namespace, parts, arrays, root)
    return arrays


def cached_frame(namespace: str, parts: dict[str, Any], compute: Callable[[], Any], *,
                 enabled: bool = True, root: Path | None = None):
    """:func:`cached_arrays` for a pandas DataFrame of numbers, text and missing values (one array per column).

    Numeric columns are stored as they are; any other column as numbers or unicode text plus a mask of its
    missing entries, so ``None`` comes back as ``None`` (not the text ``"None"``) and a column of integers
    with gaps comes back as integers with gaps. No pickles.
    """
    import pandas as pd

    fresh: dict[str, Any] = {}

    def arrays() -> dict[str, np.ndarray]:
        frame = compute()
        fresh["frame"] = frame
        out = {"columns": np.asarray([str(c) for c in frame.columns])}
        for c in frame.columns:
            values = frame[c].to_numpy()
            if values.dtype.kind in "biuf":
                out[f"col:{c}"] = values
                continue
            missing = np.asarray(pd.isna(frame[c]), dtype=bool)
            present = [v for v, m in zip(values, missing) if not m]
            if present and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in present):
                kind, stored = "int", np.array([0 if m else int(v) for v, m in zip(values, missing)], dtype=np.int64)
            elif present and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in present):
                kind, stored = "float", np.array([np.nan if m else float(v) for v, m in zip(values, missing)])
            else:
                kind, stored = "text", np.array(["" if m else str(v) for v, m in zip(values, missing)], dtype=str)
            out[f"col:{c}"], out[f"missing:{c}"], out[f"kind:{c}"] = stored, missing, np.asarray(kind)
        return out

    got = cached_arrays(namespace, parts, arrays, enabled=enabled, root=root)
    if "frame" in fresh:
        return fresh["frame"]
    columns = {}
    for c in (str(x) for x in got["columns"]):
        values = got[f"col:{c}"]
        if f"missing:{c}" in got:
            convert = {"int": int, "float": float, "text": str}[str(got[f"kind:{c}"])]
            missing = got[f"missing:{c}"]
            values = [None if m else convert(v) for v, m in zip(values, missing)]
            if missing.any():  # keep None as None (pandas would turn it into NaN)
                values = pd.Series(values, dtype=object)
        columns[c] = values
    return pd.DataFrame(columns)
