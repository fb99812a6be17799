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

import json
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from attnbook.core.io import atomic_path, atomic_write_json, sha256_file
from attnbook.core.paths import cache_dir


def cache_key(parts: dict[str, Any]) -> str:
    """SHA-256 (hex, 24 chars) of the canonical JSON of ``parts``."""
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    import hashlib

    return hashlib.sha256(blob.encode()).hexdigest()[:24]


class CacheCorruptWarning(UserWarning):
    """A cache entry failed its checksum and is being recomputed."""


def _entry(namespace: str, key: str, root: Path | None) -> tuple[Path, Path]:
    folder = (root or cache_dir()) / namespace
    return folder / f"{key}.npz", folder / f"{key}.json"


def load_arrays(namespace: str, parts: dict[str, Any], root: Path | None = None) -> dict[str, np.ndarray] | None:
    """The cached arrays for ``parts``, or ``None`` when absent or corrupt (corrupt: with a warning)."""
    npz, meta = _entry(namespace, cache_key(parts), root)
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
    npz, meta = _entry(namespace, cache_key(parts), root)
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


def examples_digest(examples) -> str:
    """SHA-256 (24 hex) of a sequence of :class:`~attnbook.engine.extract.Encoded` inputs (ids and segment ids)."""
    import hashlib

    h = hashlib.sha256()
    for ex in examples:
        h.update(np.asarray(ex.input_ids, dtype=np.int64).tobytes())
        h.update(np.asarray(ex.token_type_ids, dtype=np.int8).tobytes())
        h.update(b"|")
    return h.hexdigest()[:24]
