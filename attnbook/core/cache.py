"""A disk cache for expensive results, keyed by content.

A cache entry is identified by the SHA-256 of a canonical JSON description of
everything that determines the result: the model's weight fingerprint, the
data files' checksums, the parameters, and a hash of the code that computes it.
Rebuilding the book after a prose edit therefore recomputes nothing heavy, and
changing any input recomputes exactly what it affects.

Entries are ``<key>.npz`` (arrays; no pickles) plus ``<key>.json`` (the
description and the npz's SHA-256), both written atomically, the JSON last. An
entry whose npz fails its checksum is recomputed with a warning.

An expensive function is cached by decorating it with :func:`memoized`: its key is
the function's qualified name, a hash of the code it runs (every ``attnbook`` module
its module reaches through imports, docstrings and comments left out:
:mod:`attnbook.core.code_keys`) and the content digest of its bound arguments, so no
cache key is written by hand and a change of code it runs or of any argument (the
model included) names a new entry. Whether the cache is read and written is one
setting for the whole process (:func:`set_enabled`, ``$ATTNBOOK_USE_CACHE``),
never an argument.

The process remembers which entries it read or wrote (:func:`used_entries`, fine-tuned checkpoints included): a
chapter's provenance file lists them, so ``attnbook cache prune --unused`` can remove whatever the book in the
results folder did not use, and ``attnbook cache list`` can say which chapter an entry serves.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import json
import os
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

import numpy as np

from attnbook.core import code_keys
from attnbook.core.io import atomic_path, atomic_write_json, sha256_file
from attnbook.core.paths import cache_dir


def key(parts: dict[str, Any]) -> str:
    """The cache key of a result: SHA-256 (hex, 24 chars) of the canonical JSON of ``parts``.

    ``parts`` names everything the result depends on: the model's :attr:`~attnbook.engine.models.LoadedModel.key`,
    :func:`digest` of the inputs, the parameters and a hash of the code (:func:`code_hash`).
    """
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def digest(*objects: Any) -> str:
    """SHA-256 (hex, 24 chars) of the *content* of ``objects``: the one way to name inputs in a cache key.

    Understands numbers, strings, bytes, paths, ``None``, NumPy arrays and torch tensors (dtype, shape and
    bytes), mappings (by sorted key), lists, tuples, sets, dataclasses (class name and every field), functions
    (by ``score_name`` or module and qualified name: :func:`_callable_name`) and any
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
    elif isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)) \
            or (callable(obj) and hasattr(obj, "score_name")):
        _feed(h, ("callable", _callable_name(obj)))
    elif isinstance(obj, range):
        _feed(h, list(obj))
    elif isinstance(obj, (set, frozenset)):
        _feed(h, sorted(obj, key=repr))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"c{type(obj).__name__}:".encode())
        for f in dataclasses.fields(obj):
            _feed(h, f.name)
            _feed(h, getattr(obj, f.name))
    else:
        raise TypeError(f"digest() does not know how to name a {type(obj).__name__}; give it a __digest__() method")


def _callable_name(fn: Any) -> Any:
    """A function in a key: its ``score_name`` attribute, else ``module.qualname`` (a partial: its function and
    arguments). A lambda or a nested function has no stable name and is refused."""
    if getattr(fn, "score_name", None):
        return str(fn.score_name)
    if isinstance(fn, functools.partial):
        return (_callable_name(fn.func), list(fn.args), dict(fn.keywords))
    qualname = getattr(fn, "__qualname__", "")
    if not qualname or "<lambda>" in qualname or "<locals>" in qualname:
        raise TypeError(f"digest() cannot name the function {qualname or fn!r}: give it a score_name attribute "
                        "or define it at module level")
    return f"{getattr(fn, '__module__', '')}.{qualname}"


class CacheCorruptWarning(UserWarning):
    """A cache entry failed its checksum and is being recomputed."""


def _entry(namespace: str, name: str, root: Path | None) -> tuple[Path, Path]:
    folder = (root or cache_dir()) / namespace
    return folder / f"{name}.npz", folder / f"{name}.json"


_USED: set[str] = set()


def note_use(namespace: str, name: str) -> None:
    """Remember that this process read or wrote the entry ``namespace/name`` (:func:`used_entries`)."""
    _USED.add(f"{namespace}/{name}")


def used_entries() -> list[str]:
    """The entries (``namespace/key``, as ``attnbook cache list --all`` names them) this process read or wrote
    since the last :func:`forget_used`, sorted."""
    return sorted(_USED)


def forget_used() -> None:
    """Start a new record of used entries (a chapter's set-up calls it)."""
    _USED.clear()


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
        arrays = {k: data[k] for k in data.files}
    note_use(namespace, npz.stem)
    return arrays


def save_arrays(namespace: str, parts: dict[str, Any], arrays: dict[str, np.ndarray], root: Path | None = None) -> Path:
    """Store ``arrays`` under ``parts``; returns the npz path."""
    npz, meta = _entry(namespace, key(parts), root)
    with atomic_path(npz) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **{k: np.asarray(v) for k, v in arrays.items()})
    atomic_write_json(meta, {"parts": parts, "sha256": sha256_file(npz)})
    note_use(namespace, npz.stem)
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


def frame_arrays(frame: Any) -> dict[str, np.ndarray]:
    """A pandas DataFrame of numbers, text and missing values as arrays (one per column; no pickles).

    Numeric columns are stored as they are; any other column as numbers or unicode text plus a mask of its
    missing entries, so ``None`` comes back as ``None`` (not the text ``"None"``) and a column of integers
    with gaps comes back as integers with gaps (:func:`frame_from_arrays`).
    """
    import pandas as pd

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


def frame_from_arrays(got: Mapping[str, np.ndarray]) -> Any:
    """The DataFrame :func:`frame_arrays` stored."""
    import pandas as pd

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


def cached_frame(namespace: str, parts: dict[str, Any], compute: Callable[[], Any], *,
                 enabled: bool = True, root: Path | None = None):
    """:func:`cached_arrays` for a pandas DataFrame (:func:`frame_arrays`)."""
    fresh: dict[str, Any] = {}

    def arrays() -> dict[str, np.ndarray]:
        fresh["frame"] = compute()
        return frame_arrays(fresh["frame"])

    got = cached_arrays(namespace, parts, arrays, enabled=enabled, root=root)
    return fresh["frame"] if "frame" in fresh else frame_from_arrays(got)


# ---------------------------------------------------------------------------------------------- one switch per process
_enabled: bool | None = None


def enabled() -> bool:
    """Whether :func:`memoized` functions read and write the cache: :func:`set_enabled`'s value, else
    ``$ATTNBOOK_USE_CACHE`` (``0``/``false``/``no`` turn it off), else on."""
    if _enabled is not None:
        return _enabled
    return os.environ.get("ATTNBOOK_USE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def set_enabled(flag: bool | None) -> None:
    """Turn the cache on or off for this process (``None``: back to ``$ATTNBOOK_USE_CACHE``). A chapter's
    ``use_cache`` parameter and the CLI's ``--no-cache`` set it once; no function takes it as an argument."""
    global _enabled
    _enabled = None if flag is None else bool(flag)


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run a block with the cache neither read nor written (tests, timing a computation), then restore."""
    global _enabled
    before = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = before


# ---------------------------------------------------------------------------------------------- the decorator
F = TypeVar("F", bound=Callable[..., Any])
_CODEC = "__codec__"


def code_key(fn: Callable[..., Any], depends: Sequence[str] | None = None) -> code_keys.CodeKey:
    """The code ``fn`` is keyed on (:mod:`attnbook.core.code_keys`): every ``attnbook`` module its module reaches
    through imports (with ``depends``: its module plus exactly those), docstrings and comments left out. A function
    defined outside the package is keyed on its own file plus the package modules that file reaches. While the
    cache is on, the module hashes learnt are kept in the cache root for the next process."""
    fn = inspect.unwrap(fn)
    module = inspect.getmodule(fn)
    if module is None:
        raise TypeError(f"cannot tell which module defines {fn!r}; define it at module level in a file")
    name = module.__name__
    source = inspect.getsourcefile(module)
    path = Path(source).resolve() if source else None
    if path is None:
        raise TypeError(f"{name} has no source file to key {fn.__qualname__} on; define it in a .py file")
    got = code_keys.code_key(name, None if path == code_keys.module_file(name) else path, depends)
    if enabled():
        code_keys.save_memo()
    return got


def code_hash(fn: Callable[..., Any], depends: Sequence[str] | None = None) -> str:
    """SHA-256 (hex, 16 chars) of the code ``fn`` is keyed on (:func:`code_key`): editing a comment or a docstring
    keeps the entries it names; any change of code in a module it reaches names new ones."""
    return code_key(fn, depends).hash


def _encode(result: Any) -> dict[str, np.ndarray]:
    """The arrays that store ``result``: a mapping of arrays as it is; a pandas DataFrame by :func:`frame_arrays`;
    an object with ``to_arrays()`` and a ``from_arrays`` class method, with its class named; a single array."""
    import pandas as pd

    if isinstance(result, Mapping):
        return {str(k): np.asarray(v) for k, v in result.items()}
    if isinstance(result, pd.DataFrame):
        return {**frame_arrays(result), _CODEC: np.asarray("frame")}
    if hasattr(result, "to_arrays") and hasattr(type(result), "from_arrays"):
        cls = type(result)
        return {**result.to_arrays(), _CODEC: np.asarray(f"{cls.__module__}:{cls.__qualname__}")}
    if isinstance(result, np.ndarray) or np.isscalar(result):
        return {"value": np.asarray(result), _CODEC: np.asarray("array")}
    raise TypeError(f"memoized: cannot store a {type(result).__name__}; return arrays, a DataFrame or an object "
                    "with to_arrays() and from_arrays()")


def _decode(arrays: dict[str, np.ndarray]) -> Any:
    codec = str(arrays.pop(_CODEC)) if _CODEC in arrays else None
    if codec is None:
        return arrays
    if codec == "frame":
        return frame_from_arrays(arrays)
    if codec == "array":
        return arrays["value"]
    module, _, qualname = codec.partition(":")
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    return cls.from_arrays(arrays)


#: how a cache namespace (the folder of a memoized function's entries) is spelled: lower case, words joined by ``_``
NAMESPACE_STYLE = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*"


def memoized(namespace: str | None = None, *, ignore: tuple[str, ...] = (), depends: Sequence[str] | None = None,
             version: str | None = None) -> Callable[[F], F]:
    """Cache a function's result on disk under its arguments' content.

    The key is the function's module and qualified name, :func:`code_hash` of the code it runs (every ``attnbook``
    module its module reaches through imports; with ``depends``, its module plus exactly the modules listed, for a
    function whose module imports far more than it calls), ``version`` for what lies outside the package (a
    library's version), and :func:`digest` of its bound arguments with defaults applied, leaving out the ``ignore``
    ones (batch sizes, progress bars: they change how, not what). A model is digested by its weights' identity
    (:attr:`~attnbook.engine.models.LoadedModel.key`), tensors, frames and data by content. Results are arrays,
    DataFrames or objects with ``to_arrays``/``from_arrays`` (:func:`_encode`). With the cache off (:func:`enabled`)
    the function simply runs. The code is hashed at the first call, once per process.

    ``namespace`` is the entries' folder (:data:`NAMESPACE_STYLE`; default: the qualified name). The wrapper has
    ``.key(*args, **kwargs)`` (the entry's key), ``.parts(...)``, ``.code_key()`` (the modules and their hash),
    ``.depends``, ``.namespace`` and ``.uncached`` (the function itself).
    """
    listed = None if depends is None else tuple(depends)

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        name = f"{fn.__module__}.{fn.__qualname__}"
        folder = namespace or fn.__qualname__.replace(".", "_").lower()

        @functools.lru_cache(maxsize=1)
        def code() -> code_keys.CodeKey:
            return code_key(fn, listed)

        def parts_of(args: tuple, kwargs: dict) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            named = {k: v for k, v in bound.arguments.items() if k not in ignore}
            return {"function": name, "code": code().hash + (f"+{version}" if version else ""), "args": digest(named)}

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not enabled():
                return fn(*args, **kwargs)
            parts = parts_of(args, kwargs)
            hit = load_arrays(folder, parts)
            if hit is not None:
                try:
                    return _decode(hit)
                except (ImportError, AttributeError) as exc:  # written by a version whose result class lives elsewhere
                    warnings.warn(f"cache entry {folder}/{key(parts)} names a result class this code does not have "
                                  f"({exc}); recomputing it", CacheCorruptWarning, stacklevel=2)
            result = fn(*args, **kwargs)
            arrays = _encode(result)
            save_arrays(folder, parts, arrays)
            return _decode(dict(arrays)) if isinstance(result, Mapping) else result

        wrapper.key = lambda *args, **kwargs: key(parts_of(args, kwargs))  # type: ignore[attr-defined]
        wrapper.parts = lambda *args, **kwargs: parts_of(args, kwargs)  # type: ignore[attr-defined]
        wrapper.code_key = code  # type: ignore[attr-defined]
        wrapper.depends = listed  # type: ignore[attr-defined]
        wrapper.uncached = fn  # type: ignore[attr-defined]
        wrapper.namespace = folder  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
