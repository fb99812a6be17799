"""Atomic writes and the content cache: interrupted runs leave nothing that loads as complete."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings

import numpy as np
import pytest

from attnbook.core.cache import CacheCorruptWarning, cached_arrays, key as cache_key, load_arrays
from attnbook.core.io import atomic_path, atomic_write_json, atomic_write_text


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "a" / "f.json"
    atomic_write_json(target, {"b": 1, "a": [1, 2]})
    assert json.loads(target.read_text()) == {"a": [1, 2], "b": 1}
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)  # usual permissions, not mkstemp's
    atomic_write_text(target, "x")
    assert target.read_text() == "x"
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]


def test_exception_mid_write_keeps_old_file(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


WRITER = r"""
import sys, time, numpy as np
from attnbook.core.cache import save_arrays
class Slow(dict):
    pass
import attnbook.core.io as io
orig = io.sha256_file
def slow_sha(path, chunk=1 << 20):
    print("WRITING", flush=True)
    time.sleep(30)  # killed here: the npz is in place but its checksum record is not
    return orig(path, chunk)
import attnbook.core.cache as cache
cache.sha256_file = slow_sha
save_arrays("ns", {"k": 1}, {"x": np.arange(10**6)}, root=__import__("pathlib").Path(sys.argv[1]))
"""


def test_killed_writer_leaves_no_complete_entry(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "WRITING"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert load_arrays("ns", {"k": 1}, root=tmp_path) is None  # no checksum record -> not complete
    calls = []
    out = cached_arrays("ns", {"k": 1}, lambda: calls.append(1) or {"x": np.arange(3)}, root=tmp_path)
    assert calls == [1] and out["x"].tolist() == [0, 1, 2]


KILL_MID_NPZ = r"""
import sys, os, numpy as np
from pathlib import Path
import attnbook.core.io as io
real_replace = os.replace
def never(*a, **k):
    print("BEFORE-RENAME", flush=True)
    import time; time.sleep(30)
io.os.replace = never
from attnbook.core.cache import save_arrays
save_arrays("ns", {"k": 2}, {"x": np.arange(10)}, root=Path(sys.argv[1]))
"""


def test_killed_before_rename_leaves_only_temp_files(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", KILL_MID_NPZ, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "BEFORE-RENAME"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    names = [p.name for p in (tmp_path / "ns").iterdir()]
    assert names and all(".tmp-" in n for n in names)
    assert load_arrays("ns", {"k": 2}, root=tmp_path) is None


def test_cache_roundtrip_and_corruption(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"a": np.arange(5, dtype=np.float32), "b": np.eye(2)}

    first = cached_arrays("ns", {"p": 1}, compute, root=tmp_path)
    second = cached_arrays("ns", {"p": 1}, compute, root=tmp_path)
    assert len(calls) == 1
    np.testing.assert_array_equal(first["a"], second["a"])
    cached_arrays("ns", {"p": 2}, compute, root=tmp_path)  # other parameters: other entry
    assert len(calls) == 2
    npz = tmp_path / "ns" / f"{cache_key({'p': 1})}.npz"
    data = bytearray(npz.read_bytes())
    data[-20] ^= 0xFF
    npz.write_bytes(bytes(data))
    with pytest.warns(CacheCorruptWarning, match="failed its checksum"):
        again = cached_arrays("ns", {"p": 1}, compute, root=tmp_path)
    assert len(calls) == 3
    np.testing.assert_array_equal(again["b"], np.eye(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cached_arrays("ns", {"p": 1}, compute, root=tmp_path)  # repaired: no warning, no compute
    assert len(calls) == 3


def test_cache_key_is_canonical():
    assert cache_key({"a": 1, "b": [1, 2]}) == cache_key({"b": [1, 2], "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2})


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    from attnbook.chapters.runner import remove_stale_temporaries

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".01_x.ipynb.tmp-{dead.pid}-abc.ipynb"
    live = tmp_path / f".01_x.ipynb.tmp-{os.getpid()}-def.ipynb"
    stale.write_text("half")
    live.write_text("running")
    removed = remove_stale_temporaries(tmp_path, "01_x")
    assert removed == [stale] and not stale.exists() and live.exists()


def test_cached_frame_roundtrip_and_reuse(tmp_path):
    import pandas as pd

    from attnbook.core.cache import cached_frame, digest

    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"ordering": ["random", "random"], "seed": [0, 1], "share_pruned": [0.0, 0.5],
                             "score": [81.5, 70.25]})

    parts = {"kind": "pruning", "ordering": digest(np.arange(6.0).reshape(2, 3))}
    first = cached_frame("pruning_curves", parts, compute, root=tmp_path)
    again = cached_frame("pruning_curves", parts, compute, root=tmp_path)
    assert len(calls) == 1
    pd.testing.assert_frame_equal(first, again, check_dtype=False)
    assert again["score"].tolist() == [81.5, 70.25] and again["ordering"].tolist() == ["random", "random"]
    other = cached_frame("pruning_curves", {**parts, "ordering": digest(np.arange(6.0))}, compute, root=tmp_path)
    assert len(calls) == 2 and len(other) == 2


def test_digest_names_content():
    import torch

    from attnbook.core.cache import digest

    a = np.arange(6.0).reshape(2, 3)
    assert digest(a) == digest(a.copy()) and digest(a) != digest(a.reshape(3, 2)) and digest(a) != digest(a + 1)
    assert digest(a) != digest(a.astype(np.float32))
    assert digest(torch.tensor([1, 2, 3])) == digest(np.array([1, 2, 3]))
    assert digest({"x": 1, "y": [1, 2]}) == digest({"y": [1, 2], "x": 1})
    assert digest([1, 2]) != digest([2, 1]) and digest("1") != digest(1) and digest(1) != digest(1.0)
    assert digest("random") != digest(np.ones(3)) and digest(None) != digest("None")
    with pytest.raises(TypeError):
        digest(object())


def test_digest_of_words_is_the_element_by_element_digest():
    """The one-update path for lists of strings feeds exactly the bytes of the element-by-element path (so cache
    keys did not change), and a list mixing strings with anything else still goes element by element."""
    import hashlib

    from attnbook.core.cache import _feed, digest

    words = ["The", "cat", "'s", 'say "hi"', "naïve", "", "\n"]
    h = hashlib.sha256()
    h.update(b"l%d:" % len(words))
    for w in words:
        _feed(h, w)
    assert digest(words) == h.hexdigest()[:24]
    assert digest(["a", "b"]) != digest(["ab"]) != digest(["a", 1]) and digest(["a", 1]) != digest(["a", "1"])
    assert digest(["a", "b"]) == "4831b63297b3dd74c2f8bc94"  # before the fast path


def test_digest_of_inputs_ignores_what_the_model_does_not_see():
    from dataclasses import replace

    from attnbook.data.conllu import parse_conllu
    from attnbook.core.cache import digest
    from attnbook.engine.inputs import Encoded

    e = Encoded([101, 7, 102], [0, 0, 0], ["[CLS]", "a", "[SEP]"], words=[[0], [1], [2]], meta={"row": 3})
    assert digest(e) == digest(replace(e, meta={"row": 4}, tokens=["x", "y", "z"]))
    assert digest(e) != digest(replace(e, input_ids=[101, 8, 102]))
    assert digest(e) != digest(replace(e, words=[[0, 1], [2]]))
    text = "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\tNN\t_\t0\troot\t_\t_\n\n"
    (s,) = parse_conllu(text.splitlines(keepends=True), "a.conllu")
    (t,) = parse_conllu(text.splitlines(keepends=True), "elsewhere/b.conllu")
    assert digest(s) == digest(t)
    assert digest(s) != digest(replace(s, head=[0, 1]))


def test_cached_frame_keeps_missing_values_and_integers(tmp_path):
    """Regression: a column of None (the seed of a non-random pruning order) came back as the text "None"."""
    import pandas as pd

    from attnbook.core.cache import cached_frame

    frame = pd.DataFrame({"seed": pd.Series([None, None, 0, 1], dtype=object), "name": ["a", None, "c", "d"],
                          "none": pd.Series([None] * 4, dtype=object), "x": [0.5, 1.5, 2.5, 3.5]})
    cached_frame("t", {"k": 1}, lambda: frame, root=tmp_path)
    again = cached_frame("t", {"k": 1}, lambda: 1 / 0, root=tmp_path)
    assert again["seed"].tolist() == [None, None, 0, 1] and isinstance(again["seed"][2], int)
    assert again["name"].tolist() == ["a", None, "c", "d"] and again["none"].tolist() == [None] * 4
    assert again["x"].tolist() == [0.5, 1.5, 2.5, 3.5]
