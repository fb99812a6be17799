"""One cache decorator (core/cache.memoized): its key is the function, the code it runs and its bound arguments."""
from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import torch

from attnbook.core import cache
from tiny_models import Named


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A module written to disk, importable, whose code the test can change."""
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(body: str, name: str = "memo_mod"):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
        sys.modules.pop(name, None)
        return importlib.import_module(name)

    yield write
    sys.modules.pop("memo_mod", None)


BODY = '''
from attnbook.core import cache
import numpy as np
CALLS = []

@cache.memoized("memo-test", ignore=("batch_size",))
def stat(model, data, *, scale: float = 1.0, batch_size: int = 4):
    """A statistic."""
    CALLS.append(1)
    return {"x": np.asarray(data, dtype=float) * scale}
'''


def test_every_argument_and_the_model_are_in_the_key(module):
    m = module(BODY)
    a, b = Named("model-a"), Named("model-b")
    key = m.stat.key(a, [1, 2, 3])
    assert m.stat.key(a, [1, 2, 3], batch_size=99) == key  # ignored: changes how, not what
    assert m.stat.key(a, [1, 2, 3], scale=1.0) == key  # defaults are bound: the same call
    for other in (m.stat.key(b, [1, 2, 3]), m.stat.key(a, [1, 2, 4]), m.stat.key(a, [1, 2, 3], scale=2.0),
                  m.stat.key(a, np.array([1, 2, 3]))):
        assert other != key
    first = m.stat(a, [1, 2, 3])
    again = m.stat(a, [1, 2, 3], batch_size=8)
    assert m.CALLS == [1] and np.array_equal(first["x"], again["x"])
    m.stat(b, [1, 2, 3])
    assert len(m.CALLS) == 2


def test_a_changed_function_body_invalidates_its_entries_but_a_docstring_does_not(module):
    m = module(BODY)
    key = m.stat.key(Named("a"), [1])
    m2 = module(BODY.replace('"""A statistic."""', '"""Another docstring."""'))
    assert m2.stat.key(Named("a"), [1]) == key
    m3 = module(BODY.replace("* scale", "* scale + 0"))
    assert m3.stat.key(Named("a"), [1]) != key


def test_a_function_outside_the_package_is_keyed_on_its_file_and_the_package_modules_it_reaches(module):
    m = module(BODY)
    got = m.stat.code_key()
    assert got.modules[0] == "attnbook.core.cache" and "memo_mod" in got.modules
    assert m.stat.depends is None and m.stat.namespace == "memo-test"
    listed = module(BODY.replace('ignore=("batch_size",))', 'ignore=("batch_size",), depends=["attnbook.stats"])'))
    assert listed.stat.code_key().modules == ("attnbook.stats", "memo_mod")
    assert listed.stat.key(Named("a"), [1]) != m.stat.key(Named("a"), [1])
    with pytest.raises(ValueError, match="dotted names"):
        module(BODY.replace('ignore=("batch_size",))', 'depends=["sweeps.py"])')).stat.key(Named("a"), [1])


def test_the_switch_is_one_setting_for_the_process(module):
    m = module(BODY)
    with cache.disabled():
        m.stat(Named("a"), [1])
        m.stat(Named("a"), [1])
    assert len(m.CALLS) == 2  # off: computed each time, nothing stored
    m.stat(Named("a"), [1])
    m.stat(Named("a"), [1])
    assert len(m.CALLS) == 3
    cache.set_enabled(False)
    try:
        m.stat(Named("a"), [1])
        assert len(m.CALLS) == 4
    finally:
        cache.set_enabled(None)


def test_the_environment_turns_the_cache_off(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_USE_CACHE", "0")
    assert not cache.enabled()
    monkeypatch.setenv("ATTNBOOK_USE_CACHE", "1")
    assert cache.enabled()


FRAME_BODY = '''
from attnbook.core import cache
import pandas as pd
import numpy as np

@cache.memoized("memo-frames")
def table(n: int):
    return pd.DataFrame({"a": np.arange(n), "b": ["x"] * n, "c": pd.Series([None] + ["y"] * (n - 1), dtype=object)})

@cache.memoized("memo-arrays")
def vector(n: int):
    return np.arange(n) * 2.0
'''


def test_frames_and_arrays_come_back_as_they_went_in(module):
    m = module(FRAME_BODY, "memo_frames")
    first, second = m.table(3), m.table(3)
    pd.testing.assert_frame_equal(first.astype(object), second.astype(object))
    assert second["c"].iloc[0] is None
    assert np.array_equal(m.vector(4), m.vector(4)) and m.vector(4).dtype == np.float64


def test_an_entry_naming_a_class_this_code_lacks_is_recomputed_not_fatal(module):
    """An entry whose result class this code cannot import (written under the same key by other code) is
    recomputed, not fatal."""
    m = module(BODY)
    parts = m.stat.parts(None, [1, 2])
    cache.save_arrays("memo-test", parts, {"x": np.zeros(2), "__codec__": np.asarray("attnbook.no_such_module:Result")})
    with pytest.warns(cache.CacheCorruptWarning, match="names a result class this code does not have"):
        got = m.stat(None, [1, 2])
    np.testing.assert_array_equal(got["x"], [1.0, 2.0])
    assert len(m.CALLS) == 1 and np.array_equal(m.stat(None, [1, 2])["x"], [1.0, 2.0]) and len(m.CALLS) == 1


def test_arguments_without_a_stable_name_are_refused():
    with pytest.raises(TypeError, match="lambda"):
        cache.digest(lambda x: x)
    with pytest.raises(TypeError, match="__digest__"):
        cache.digest(object())
    assert cache.digest(torch.ones(2)) == cache.digest(np.ones(2, dtype=np.float32))
    assert cache.digest(range(3)) == cache.digest([0, 1, 2])
