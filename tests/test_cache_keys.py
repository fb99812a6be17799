"""Cache keys cover the code they run: a memoized function's key changes with any code its module reaches.

The key of a memoized function holds the code of every ``attnbook`` module in its module's import closure
(docstrings and comments left out), or, where that closure reaches plotting or the chapters, of its module plus an
explicit ``depends=`` list that must cover what the function calls.
"""
from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import attnbook
from attnbook.core import cache, code_keys

PACKAGE_DIR = Path(attnbook.__file__).resolve().parent
#: modules no cached result should be keyed on through an import closure: plotting and the chapters
TOO_WIDE = re.compile(r"^attnbook\.(chapters(\..*)?|charts|.*\.charts|.*encoder_charts)$")


# ---------------------------------------------------------------------------------------------- the package's memoized
def memoized_functions() -> list[tuple[str, str, ast.Call]]:
    """Every ``@cache.memoized(...)`` function in the package: ``(module, function, decorator call)``."""
    out = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and ast.unparse(dec.func) in ("cache.memoized", "memoized"):
                    out.append((module.removesuffix(".__init__"), node.name, dec))
    return out


MEMOIZED = memoized_functions()


def test_the_package_has_its_memoized_functions():
    names = {f"{m}.{f}" for m, f, _ in MEMOIZED}
    for expected in ("attnbook.studies.heads_off.effects.switched_off",
                     "attnbook.studies.michel.importance.importance_of", "attnbook.engine.evaluate.dev_outputs"):
        assert expected in names
    assert "attnbook.studies.kovaleva.table1.dev_outputs" not in names  # one dev_outputs: the engine's
    assert len(MEMOIZED) >= 20


def _wrapper(module: str, function: str):
    return getattr(importlib.import_module(module), function)


def _reach(module: str, name: str, seen: set[tuple[str, str]] | None = None) -> set[str]:
    """The package modules whose code ``module.name`` (a function or class) calls, followed statically through the
    names its body uses: imported modules and their functions, and functions beside it."""
    seen = set() if seen is None else seen
    if (module, name) in seen:
        return set()
    seen.add((module, name))
    path = code_keys.module_file(module)
    if path is None:
        return set()
    tree = ast.parse(path.read_text())
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defs.update({t.id: n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)})
    aliases: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                aliases[a.asname or a.name] = (sub, None) if code_keys.module_file(sub) else (node.module, a.name)
    if name not in defs:
        if name in aliases:  # a name this module imports from another
            target, attr = aliases[name]
            return {module} | (_reach(target, attr, seen) if attr else {target})
        return {module}
    out = {module}
    for node in ast.walk(defs[name]):
        chain: list[str] = []
        cur: ast.AST = node
        while isinstance(cur, ast.Attribute):
            chain.insert(0, cur.attr)
            cur = cur.value
        if not isinstance(cur, ast.Name):
            continue
        chain.insert(0, cur.id)
        if chain[0] in defs and chain[0] != name:
            out |= _reach(module, chain[0], seen)
        elif chain[0] in aliases:
            target, attr = aliases[chain[0]]
            if attr is not None:
                out |= _reach(target, attr, seen)
                continue
            rest = chain[1:]
            while rest and code_keys.module_file(f"{target}.{rest[0]}"):
                target, rest = f"{target}.{rest[0]}", rest[1:]
            if code_keys.module_file(target):
                out |= _reach(target, rest[0], seen) if rest else {target}
    return {m for m in out if code_keys.module_file(m)}


@pytest.mark.parametrize("module,function", [(m, f) for m, f, _ in MEMOIZED], ids=[f"{m}.{f}" for m, f, _ in MEMOIZED])
def test_every_memoized_function_is_keyed_on_the_code_it_runs(module, function):
    fn = _wrapper(module, function)
    got = fn.code_key()
    if fn.depends is None:  # keyed on its module's import closure, which must not reach plotting or the chapters
        assert got.modules == code_keys.closure(module)
        wide = [m for m in got.modules if TOO_WIDE.match(m)]
        assert not wide, (f"{module}.{function} is keyed on an import closure that reaches {wide}: give its "
                          f"@cache.memoized a depends=[...] list of the modules it calls")
    else:  # an explicit list: its module and exactly those, which must cover what it calls
        assert got.modules == tuple(sorted({module, *fn.depends}))
    missing = sorted(_reach(module, function) - set(got.modules))
    assert not missing, f"{module}.{function} calls code in {missing}, which its cache key does not cover"


def test_the_static_reach_follows_calls_into_other_modules():
    reached = _reach("attnbook.studies.heads_off.effects", "switched_off")
    assert "attnbook.engine.sweeps" in reached and "attnbook.studies.heads_off.effects" in reached
    assert "attnbook.engine.mask_gradients" in _reach("attnbook.studies.michel.importance", "importance_of")


def test_namespaces_have_one_spelling():
    names = {}
    for module, function, dec in MEMOIZED:
        first = dec.args[0].value if dec.args and isinstance(dec.args[0], ast.Constant) else function
        names[f"{module}.{function}"] = first
        assert re.fullmatch(cache.NAMESPACE_STYLE, first), f"{module}.{function}: namespace {first!r}"
    assert names["attnbook.studies.heads_off.effects.switched_off"] == "head_sweeps"


# ---------------------------------------------------------------------------------------------- the regression
KEY_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
import attnbook
assert attnbook.__file__.startswith({root!r}), attnbook.__file__
from attnbook.studies.heads_off.effects import switched_off
print(switched_off.key(None, [[101, 2023, 102]], "single_heads", "disable", "accuracy"))
"""


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def _edit(path: Path, function: str, how: str) -> None:
    """Edit ``function`` in the file: ``"code"`` adds a statement to its body; ``"docs"`` rewrites its docstring
    and adds comments (no code changes)."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    fn = _function(ast.parse(text), function)
    first = fn.body[1] if ast.get_docstring(fn) is not None else fn.body[0]
    indent = " " * first.col_offset
    if how == "code":
        lines.insert(first.lineno - 1, f"{indent}_edited = len({fn.args.args[0].arg!r})\n")
    else:
        doc = fn.body[0]
        lines.insert(first.lineno - 1, f"{indent}# a comment between the docstring and the code\n")
        lines[doc.end_lineno - 1] = lines[doc.end_lineno - 1].replace('"""', ' Edited wording."""', 1)
        lines.insert(fn.lineno - 1, "# a comment above the function\n")
    path.write_text("".join(lines))
    assert ast.parse(path.read_text())  # still Python


@pytest.fixture
def package_copy(tmp_path):
    root = tmp_path / "src"
    shutil.copytree(PACKAGE_DIR, root / "attnbook", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    def key() -> str:
        env = {**os.environ, "ATTNBOOK_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(root)}
        run = subprocess.run([sys.executable, "-c", KEY_SCRIPT.format(root=str(root))], capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=300)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip().splitlines()[-1]

    return root / "attnbook", key


def test_switched_off_is_recomputed_after_a_change_in_engine_sweeps(package_copy):
    package, key = package_copy
    sweeps = package / "engine" / "sweeps.py"
    before = key()
    _edit(sweeps, "sweep_single_heads", "docs")
    assert key() == before, "a docstring or comment edit in engine/sweeps.py changed switched_off's cache key"
    _edit(sweeps, "sweep_single_heads", "code")
    assert key() != before, "a code change in engine/sweeps.py left switched_off's cache key as it was"


def test_a_module_hash_ignores_docstrings_comments_and_layout(tmp_path):
    one = tmp_path / "one.py"
    one.write_text('"""Doc."""\nimport os\n\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n')
    two = tmp_path / "two.py"
    two.write_text('"""Other."""\nimport os\ndef f(x):\n    # a comment\n    return x + 1\n')
    three = tmp_path / "three.py"
    three.write_text('"""Doc."""\nimport os\n\n\ndef f(x):\n    """Doc."""\n    return x + 2\n')
    assert code_keys.module_info(one)[0] == code_keys.module_info(two)[0] != code_keys.module_info(three)[0]


def test_relative_imports_and_imports_inside_functions_are_followed(tmp_path, monkeypatch):
    pkg = tmp_path / "attnbook"
    (pkg / "sub").mkdir(parents=True)
    for name, body in {"__init__.py": "", "sub/__init__.py": "", "base.py": "X = 1\n",
                       "sub/a.py": "from . import b\nfrom ..base import X\n",
                       "sub/b.py": "def f():\n    import attnbook.sub.c\n", "sub/c.py": "Y = 2\n",
                       "unused.py": "Z = 3\n"}.items():
        (pkg / name).write_text(body)
    assert code_keys.closure("attnbook.sub.a", None, tmp_path) == (
        "attnbook.base", "attnbook.sub.a", "attnbook.sub.b", "attnbook.sub.c")
    with pytest.raises(code_keys.CodeKeyError, match="by their dotted names"):
        code_keys.code_key("attnbook.sub.a", None, ("attnbook.nowhere",), tmp_path)


def test_module_hashes_are_remembered_on_disk_by_content(tmp_path, monkeypatch):
    """The second process reads the hashes the first one wrote to the cache root, and gets the same key."""
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    code = textwrap.dedent("""
        import json, sys
        from attnbook.core import cache
        from attnbook.engine import sweeps
        k = cache.code_key(sweeps.sweep_single_heads)
        print(json.dumps([k.hash, len(k.modules)]))
    """)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300) for _ in "ab"]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
    memo = json.loads((tmp_path / "cache" / code_keys.MEMO_FILE).read_text())
    assert len(memo) >= json.loads(runs[0].stdout)[1]
