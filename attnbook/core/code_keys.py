"""The code a cached result depends on, named by a hash: the part of a cache key that changes when that code does.

A memoized function (:func:`attnbook.core.cache.memoized`) runs the code of its own module and of every
``attnbook`` module that module imports, directly or through others: its *import closure* within the package,
read from the source without importing anything (``import`` and ``from ... import`` statements anywhere in a
module, inside functions too; relative imports resolved; modules outside ``attnbook/`` left out). A module's code
is its syntax tree with docstrings removed (comments and layout are not in the tree), so editing a docstring, a
comment or the spacing keeps every cache entry, and any change of code in the closure names new ones.

Where the closure reaches far beyond what a function runs (plotting, the chapters), the decorator names the modules
instead (``depends=``): the defining module plus exactly the named ones, each by its own code.

Module hashes and closures are computed once per process. Parsing is what costs, so a module's hash and imports
are also kept on disk (``code-hashes.json`` in the cache root, written by :func:`save_memo` while the cache is
on), under the SHA-256 of the file's bytes and the Python version: a file that has not changed is not parsed
again.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from attnbook.core.paths import cache_dir

#: the package whose modules a closure holds
PACKAGE = "attnbook"
#: the folder that holds the package (``<root>/attnbook/...``): the package's own location, so a copy hashes itself
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
#: the file in the cache root that remembers module hashes across processes
MEMO_FILE = "code-hashes.json"
#: at most this many module versions are remembered (the oldest are dropped)
MEMO_SIZE = 2000


class CodeKeyError(ValueError):
    """A module named in a code key is not a module of the package."""


@dataclass(frozen=True)
class CodeKey:
    """The code part of a cache key: the modules it covers and their hash."""

    modules: tuple[str, ...]
    hash: str


@functools.lru_cache(maxsize=None)
def module_file(name: str, root: Path = PACKAGE_ROOT) -> Path | None:
    """The source file of package module ``name`` (a package: its ``__init__.py``), or ``None``."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return tree


# ---------------------------------------------------------------------------------------------- one module
_memo: dict[str, Any] | None = None
_memo_dirty = False


def _memo_path() -> Path | None:
    try:
        return cache_dir() / MEMO_FILE
    except OSError:
        return None


def _load_memo() -> dict[str, Any]:
    global _memo
    if _memo is None:
        path = _memo_path()
        try:
            got = json.loads(path.read_text()) if path is not None and path.is_file() else {}
        except (OSError, ValueError):
            got = {}
        _memo = got if isinstance(got, dict) else {}
    return _memo


def save_memo() -> None:
    """Write the module hashes learnt in this process to the cache root (merged with what is there; a cache root
    that cannot be written is left as it is)."""
    global _memo_dirty
    if not _memo_dirty or _memo is None:
        return
    path = _memo_path()
    if path is None:
        return
    try:
        on_disk = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        on_disk = {}
    merged = {**(on_disk if isinstance(on_disk, dict) else {}), **_memo}
    merged = dict(list(merged.items())[-MEMO_SIZE:])
    tmp = path.with_name(f".{MEMO_FILE}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(merged, separators=(",", ":")))
        os.replace(tmp, path)
        _memo_dirty = False
    except OSError:
        tmp.unlink(missing_ok=True)


_Imports = tuple[tuple[int, str, tuple[str, ...]], ...]
_SEEN: dict[str, tuple[str, _Imports]] = {}


@functools.lru_cache(maxsize=None)
def _package_module_info(path: Path) -> tuple[str, _Imports]:
    return module_info(path)


def module_info(path: Path) -> tuple[str, _Imports]:
    """A module's code hash (SHA-256, hex, 16 chars, of its syntax tree without docstrings) and its import
    statements as ``(level, module, names)`` (``import a.b``: ``(0, "a.b", ())``), by the file's content."""
    global _memo_dirty
    raw = path.read_bytes()
    tag = f"{sys.version_info[0]}.{sys.version_info[1]}:{hashlib.sha256(raw).hexdigest()}"
    if tag in _SEEN:
        return _SEEN[tag]
    memo = _load_memo()
    if isinstance(memo.get(tag), list) and len(memo[tag]) == 2:
        code, imports = memo[tag]
        _SEEN[tag] = str(code), tuple((int(lv), str(m), tuple(n)) for lv, m, n in imports)
        return _SEEN[tag]
    tree = ast.parse(raw, filename=str(path))
    found: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(0, a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(a.name for a in node.names)))
    code = hashlib.sha256(ast.dump(_strip_docstrings(tree)).encode()).hexdigest()[:16]
    imports = tuple(sorted(set(found)))
    memo[tag] = [code, [list(i) for i in imports]]
    _memo_dirty = True
    _SEEN[tag] = code, imports
    return code, imports


def _info(path: Path, root: Path) -> tuple[str, _Imports]:
    """:func:`module_info`, read once per process for the package's own files."""
    return _package_module_info(path) if path.is_relative_to(root / PACKAGE) else module_info(path)


def source_hash(path: Path, root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 (hex, 16 chars) of a module's syntax tree without docstrings (comments and layout do not count)."""
    return _info(path, root)[0]


# ---------------------------------------------------------------------------------------------- the closure
def _resolve(level: int, module: str, name: str, is_package: bool) -> str | None:
    """The absolute module of a ``from`` import with ``level`` leading dots, made in module ``name``."""
    if not level:
        return module
    parts = (name if is_package else name.rpartition(".")[0]).split(".")
    if level - 1 >= len(parts) or not parts[0]:
        return None
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


def direct_imports(name: str, path: Path | None = None, root: Path = PACKAGE_ROOT) -> frozenset[str]:
    """The package modules that module ``name`` (source ``path``; default: the package's file for it) imports
    anywhere in its source. ``from m import x`` counts ``m.x`` when that is a module, else ``m``."""
    return _package_imports(name, root) if path is None else _imports(name, path, root)


@functools.lru_cache(maxsize=None)
def _package_imports(name: str, root: Path) -> frozenset[str]:
    return _imports(name, None, root)


def _imports(name: str, path: Path | None, root: Path) -> frozenset[str]:
    path = path or module_file(name, root)
    if path is None:
        raise CodeKeyError(f"{name} is not a module of the {PACKAGE} package under {root}: name one such as "
                           f"'{PACKAGE}.engine.sweeps'")
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for level, module, names in _info(path, root)[1]:
        if not names:
            out.add(module)
            continue
        base = _resolve(level, module, name, is_package)
        if base is None:
            continue
        for alias in names:
            sub = f"{base}.{alias}"
            out.add(sub if module_file(sub, root) is not None else base)
    return frozenset(m for m in out if m != name and module_file(m, root) is not None)


def closure(name: str, path: Path | None = None, root: Path = PACKAGE_ROOT) -> tuple[str, ...]:
    """Module ``name`` and every package module it reaches through imports, sorted (``path``: the source of a
    module outside the package; it is listed by its name too)."""
    if path is None:
        return _package_closure(name, root)
    out = {name}
    for m in direct_imports(name, path, root):
        out.update(_package_closure(m, root))
    return tuple(sorted(out))


@functools.lru_cache(maxsize=None)
def _package_closure(name: str, root: Path) -> tuple[str, ...]:
    seen, todo = {name}, list(direct_imports(name, None, root))
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += direct_imports(m, None, root)
    return tuple(sorted(seen))


def modules_hash(modules: Iterable[str], extra: dict[str, Path] | None = None, root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 (hex, 16 chars) of the named modules' :func:`source_hash`, by name (``extra``: source files of
    modules outside the package)."""
    h = hashlib.sha256()
    for m in sorted(set(modules)):
        path = (extra or {}).get(m) or module_file(m, root)
        if path is None:
            raise CodeKeyError(f"{m} is not a module of the {PACKAGE} package under {root}: name one such as "
                               f"'{PACKAGE}.engine.sweeps'")
        h.update(f"{m}={source_hash(path, root)};".encode())
    return h.hexdigest()[:16]


def code_key(module: str, path: Path | None = None, depends: Iterable[str] | None = None,
             root: Path = PACKAGE_ROOT) -> CodeKey:
    """The code a function defined in ``module`` is keyed on: the closure of ``module``, or with ``depends``,
    ``module`` itself plus exactly the named modules (``path``: the source of a module outside the package, read
    afresh each call; the package's own modules are read once per process)."""
    depends = None if depends is None else tuple(sorted(set(depends)))
    if path is None:
        return _package_code_key(module, depends, root)
    return _code_key(module, path, depends, root)


@functools.lru_cache(maxsize=None)
def _package_code_key(module: str, depends: tuple[str, ...] | None, root: Path) -> CodeKey:
    if module_file(module, root) is None:
        raise CodeKeyError(f"{module} is not a module of the {PACKAGE} package under {root}")
    return _code_key(module, None, depends, root)


def _code_key(module: str, path: Path | None, depends: tuple[str, ...] | None, root: Path) -> CodeKey:
    if depends is None:
        modules = closure(module, path, root)
    else:
        unknown = [m for m in depends if module_file(m, root) is None]
        if unknown:
            raise CodeKeyError(f"depends= names {', '.join(unknown)}, not modules of the {PACKAGE} package: list "
                               f"modules by their dotted names, e.g. '{PACKAGE}.engine.sweeps'")
        modules = tuple(sorted({module, *depends}))
    return CodeKey(modules, modules_hash(modules, {module: path} if path else None, root))
