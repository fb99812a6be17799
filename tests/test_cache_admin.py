"""``attnbook cache``: what the disk cache holds, whether it is intact, and pruning it without breaking it.

The cache is built by the real writers (``cache.save_arrays``, a ``@cache.memoized`` function,
``checkpoints.save_checkpoint``) into ``tmp_path``; nothing here reads or writes the user's cache.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from attnbook.chapters.cli import main
from attnbook.core import cache, cache_admin
from attnbook.core.cache import CacheCorruptWarning
from attnbook.core.cache_admin import CHECKPOINT_KIND, CORRUPT, INCOMPLETE, OK, STALE_TEMP, UNCHECKED, WRITING
from attnbook.engine import checkpoints, finetune

CALLS: list[int] = []


@cache.memoized("toy_sums")
def toy_sum(values: list[int]) -> dict:
    CALLS.append(1)
    return {"sum": np.asarray(sum(values)), "values": np.asarray(values)}


class _Config:
    def to_json_file(self, path: str) -> None:
        Path(path).write_text(json.dumps({"model_type": "toy"}))


def _toy_classifier() -> torch.nn.Module:
    net = torch.nn.Linear(4, 3)
    net.config = _Config()
    return net


def _files(root: Path) -> dict[str, int]:
    """Every file under ``root`` with its size (a symlink: as a link, never followed)."""
    return {str(p.relative_to(root)): p.lstat().st_size for p in sorted(root.rglob("*"))
            if p.is_file() or p.is_symlink()}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A cache of 3 memoized results, 2 stored frames and 2 checkpoints, at ``$ATTNBOOK_CACHE``."""
    path = tmp_path / "cache"
    monkeypatch.setenv("ATTNBOOK_CACHE", str(path))
    monkeypatch.setattr(cache, "_enabled", True)
    CALLS.clear()
    for values in ([1, 2], [3, 4, 5], [6]):
        toy_sum(values)
    for i in range(2):
        cache.save_arrays("toy_frames", {"frame": i}, {"x": np.arange(10 * (i + 1))})
    for seed in (0, 1):
        parts = {"task": "SST-2", "init": "pretrained_ft", "seed": seed, "fraction": 1.0}
        checkpoints.save_checkpoint(_toy_classifier(), cache.key(parts), {"parts": parts})
    return path


def _by_kind(root=None):
    return {k: len(v) for k, v in cache_admin.by_kind(cache_admin.entries(root)).items()}


# ---------------------------------------------------------------------------------------------- list and size
def test_entries_are_described_by_kind_size_age_and_source(root):
    found = cache_admin.entries()
    assert _by_kind() == {"checkpoint": 2, "toy_frames": 2, "toy_sums": 3}
    assert {e.status for e in found} == {UNCHECKED}  # complete; checksums not recomputed by a listing
    # every byte belongs to an entry, but the module code hashes (attnbook.core.code_keys) beside them
    assert cache_admin.total_size(root) == sum(n for p, n in _files(root).items() if p != cache_admin.MEMO_FILE)
    sums = [e for e in found if e.kind == "toy_sums"]
    assert {e.key for e in sums} == {toy_sum.key(v) for v in ([1, 2], [3, 4, 5], [6])}
    assert all(e.source.endswith(".toy_sum") for e in sums)  # the function recorded in each entry's JSON
    assert all([p.suffix for p in e.paths] == [".json", ".npz"] for e in sums)  # the JSON removed first
    ckpt = [e for e in found if e.kind == CHECKPOINT_KIND]
    assert sorted(e.source for e in ckpt) == ["SST-2 pretrained_ft seed 0", "SST-2 pretrained_ft seed 1"]
    assert all(e.paths == (root / "finetune" / e.key,) and e.size > 48 for e in ckpt)
    assert all(e.chapter == "unknown" for e in found)  # nothing stored names a chapter: not guessed
    assert all(0 <= e.age_days < 1 for e in found)


def test_list_and_size_commands(root, capsys):
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert f"attnbook cache at {root}: 7 entries" in out
    lines = {line.split()[0]: line.split() for line in out.splitlines()[2:5]}
    assert set(lines) == {"checkpoint", "toy_frames", "toy_sums"}
    assert lines["toy_sums"][1] == "3" and lines["toy_sums"][-1] == "-"  # 3 entries, no problems
    assert "by chapter: unknown: 7 entries" in out
    assert toy_sum.key([6]) not in out
    assert main(["cache", "list", "--all"]) == 0
    out = capsys.readouterr().out
    assert f"toy_sums/{toy_sum.key([6])}" in out and "SST-2 pretrained_ft seed 1" in out
    assert main(["cache", "size"]) == 0
    out = capsys.readouterr().out
    total = sum(_files(root).values())
    assert out.startswith(cache_admin.human_size(total)) and f"({total} bytes)" in out and "7 entries" in out


def test_an_empty_cache_is_listed_as_empty(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "fresh"))
    assert main(["cache", "list"]) == 0
    assert "0 entries" in capsys.readouterr().out and cache_admin.entries() == []


def test_human_sizes_and_ages():
    assert [cache_admin.human_size(n) for n in (0, 1023, 1536, 6 * 1024 ** 3, 3 * 1024 ** 4)] == \
        ["0 B", "1023 B", "1.5 KiB", "6.0 GiB", "3.0 TiB"]
    assert [cache_admin.human_age(d) for d in (10 / 86400, 0.01, 0.5, 40.0)] == ["10 s", "14 min", "12.0 h", "40.0 d"]


# ---------------------------------------------------------------------------------------------- verify
def test_verify_passes_an_intact_cache(root, capsys):
    assert cache_admin.verify() == []
    assert {e.status for e in cache_admin.entries(check=True)} == {OK}
    assert main(["cache", "verify"]) == 0
    assert "all 7 entries pass their checksums" in capsys.readouterr().out


def test_verify_finds_corrupt_entries_as_the_cache_would(root, capsys):
    npz = root / "toy_sums" / f"{toy_sum.key([3, 4, 5])}.npz"
    data = bytearray(npz.read_bytes())
    data[-30] ^= 0xFF
    npz.write_bytes(bytes(data))
    with pytest.warns(CacheCorruptWarning):  # the cache itself rejects it too
        assert cache.load_arrays("toy_sums", toy_sum.parts([3, 4, 5])) is None
    weights = next((root / "finetune").iterdir()) / checkpoints.WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")
    assert checkpoints.read_complete(weights.parent) is None
    problems = cache_admin.verify()
    assert {(p.entry.kind, p.entry.key, p.entry.status) for p in problems} == {
        ("toy_sums", toy_sum.key([3, 4, 5]), CORRUPT), (CHECKPOINT_KIND, weights.parent.name, CORRUPT)}
    assert any(checkpoints.WEIGHTS_FILE in p.message for p in problems)
    assert main(["cache", "verify"]) == 1
    out = capsys.readouterr().out
    assert "2 of 7 entries are broken" in out and toy_sum.key([3, 4, 5]) in out
    assert "attnbook cache prune --kind checkpoint --kind toy_sums" in out
    (rm,) = [line.split() for line in out.splitlines() if line.strip().startswith("rm -r")]
    assert set(rm[2:]) == {str(weights.parent), str(npz), str(npz.with_suffix(".json"))}


def test_unreadable_metadata_is_corrupt(root):
    meta = root / "toy_frames" / f"{cache.key({'frame': 0})}.json"
    meta.write_text("{not json")
    (problem,) = cache_admin.verify()
    assert problem.entry.status == CORRUPT and "unreadable" in problem.entry.detail


def test_half_written_entries_are_reported_and_pruned(root, monkeypatch, capsys):
    # a write that stopped after the data, before the metadata (the JSON is written last)
    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cache, "atomic_write_json", crash)
    with pytest.raises(KeyboardInterrupt):
        toy_sum([7, 8])
    monkeypatch.undo()
    monkeypatch.setenv("ATTNBOOK_CACHE", str(root))
    half_key = toy_sum.key([7, 8])
    assert (root / "toy_sums" / f"{half_key}.npz").exists()
    assert not (root / "toy_sums" / f"{half_key}.json").exists()
    # a writer killed inside atomic_path leaves its temp file
    target = root / "toy_frames" / f"{cache.key({'frame': 9})}.npz"
    code = ("import os, sys; from attnbook.core.io import atomic_path\n"
            "with atomic_path(sys.argv[1]) as tmp:\n    tmp.write_bytes(b'half'); os._exit(1)")
    assert subprocess.run([sys.executable, "-c", code, str(target)], check=False).returncode == 1
    (stale,) = [p for p in target.parent.iterdir() if ".tmp-" in p.name]
    # a writer still running (this process) is not a problem and is never removed
    live = root / "toy_sums" / f".{toy_sum.key([9])}.npz.tmp-{os.getpid()}-abc"
    live.write_bytes(b"being written")

    statuses = {(e.kind, e.status) for e in cache_admin.entries()}
    assert ("toy_sums", INCOMPLETE) in statuses and ("toy_frames", STALE_TEMP) in statuses
    assert ("toy_sums", WRITING) in statuses
    problems = cache_admin.verify()
    assert {(p.entry.key, p.entry.status) for p in problems} == {(half_key, INCOMPLETE),
                                                                  (target.stem, STALE_TEMP)}
    assert main(["cache", "verify"]) == 1
    assert stale.name in capsys.readouterr().out
    assert main(["cache", "list"]) == 0
    assert "toy_frames" in capsys.readouterr().out

    report = cache_admin.prune(kinds=["toy_frames", "toy_sums"], dry_run=False)
    assert not stale.exists() and not (root / "toy_sums" / f"{half_key}.npz").exists()
    assert live.exists() and [e.status for e in report.writing] == [WRITING]
    assert cache_admin.verify() == []


def test_an_interrupted_checkpoint_folder_is_incomplete(root):
    folder = next((root / "finetune").iterdir())
    (folder / checkpoints.COMPLETE_FILE).unlink()
    (problem,) = cache_admin.verify()
    assert problem.entry.status == INCOMPLETE and problem.entry.paths == (folder,)


# ---------------------------------------------------------------------------------------------- prune
def test_a_dry_run_removes_nothing(root, capsys):
    before = _files(root)
    report = cache_admin.prune(everything=True)  # dry by default
    assert report.dry_run and len(report.removed) == 7 and report.freed == sum(before.values())
    assert main(["cache", "prune", "--all", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would remove 7 entries") and "nothing was removed (dry run)" in out
    assert _files(root) == before


def test_prune_by_kind_removes_exactly_those_entries_and_their_checksums(root, capsys):
    before = _files(root)
    sums = {str(p.relative_to(root)) for e in cache_admin.entries() if e.kind == "toy_sums" for p in e.paths}
    assert len(sums) == 6  # 3 entries: data and metadata (its checksum) each
    assert main(["cache", "prune", "--kind", "toy_sums"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("removed 3 entries") and "4 entries left" in out
    assert _files(root) == {k: v for k, v in before.items() if k not in sums}
    assert _by_kind() == {"checkpoint": 2, "toy_frames": 2}
    toy_sum([6])  # gone, so computed again
    assert len(CALLS) == 4


def test_prune_checkpoints_removes_whole_folders(root):
    report = cache_admin.prune(kinds=["finetune"], dry_run=False)  # the folder's name works as the kind too
    assert [e.kind for e in report.removed] == [CHECKPOINT_KIND] * 2
    assert list((root / "finetune").iterdir()) == []  # no folder and no temporary left
    assert _by_kind() == {"toy_frames": 2, "toy_sums": 3}


def test_prune_older_than_and_keep(root):
    old = next(e for e in cache_admin.entries() if e.kind == "toy_frames")
    then = time.time() - 40 * 86400
    for p in old.paths:
        os.utime(p, (then, then))
    report = cache_admin.prune(older_than=30, dry_run=False)
    assert [e.key for e in report.removed] == [old.key]
    assert _by_kind() == {"checkpoint": 2, "toy_frames": 1, "toy_sums": 3}
    newest = max((e for e in cache_admin.entries() if e.kind == "toy_sums"), key=lambda e: e.mtime)
    kept = cache_admin.prune(kinds=["toy_sums"], keep=1, dry_run=False)
    assert len(kept.removed) == 2
    assert [e.key for e in cache_admin.entries() if e.kind == "toy_sums"] == [newest.key]


def test_prune_without_a_selector_refuses(root, capsys):
    before = _files(root)
    with pytest.raises(cache_admin.CacheSelectorError):
        cache_admin.prune(dry_run=False)
    assert main(["cache", "prune"]) == 2
    err = capsys.readouterr().err
    assert "--older-than DAYS" in err and "--kind K" in err and "--all" in err
    assert _files(root) == before


def test_an_unknown_kind_is_named_and_nothing_is_removed(root, capsys):
    assert main(["cache", "prune", "--kind", "toy_sum"]) == 0
    out = capsys.readouterr().out
    assert "removed 0 entries" in out and "no entries of kind 'toy_sum' here" in out and "toy_sums" in out


# ---------------------------------------------------------------------------------------------- what the book used
def _provenance(folder: Path, chapter: str, entries, profile: str = "quick") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"chapter": chapter, "profile": profile}
    if entries is not None:
        record["cache_entries"] = sorted(entries)
    (folder / f"{chapter}.provenance.json").write_text(json.dumps(record))


def test_the_process_records_every_entry_it_read_or_wrote_as_the_listing_names_it(root):
    cache.forget_used()
    toy_sum([1, 2])  # read
    toy_sum([7])  # computed and written
    ckpt = sorted((e for e in cache_admin.entries() if e.kind == CHECKPOINT_KIND), key=lambda e: e.source)
    assert finetune._present(ckpt[0].key)  # found complete, so not trained again: used
    checkpoints.save_checkpoint(_toy_classifier(), "f" * 24, {"parts": {"seed": 2}})  # written: used
    names = {e.name: e for e in cache_admin.entries()}
    used = cache.used_entries()
    assert set(used) <= set(names)  # the listing's own names
    assert f"toy_sums/{toy_sum.key([1, 2])}" in used and f"toy_sums/{toy_sum.key([7])}" in used
    assert ckpt[0].name in used and f"finetune/{'f' * 24}" in used
    assert f"toy_sums/{toy_sum.key([6])}" not in used and ckpt[1].name not in used
    cache.forget_used()
    assert cache.used_entries() == []


def test_prune_unused_removes_exactly_what_no_chapter_of_the_book_used(root, tmp_path, capsys):
    results = tmp_path / "results"
    found = {e.name: e for e in cache_admin.entries()}
    ckpt = sorted(n for n in found if n.startswith("finetune/"))
    sums = sorted(n for n in found if n.startswith("toy_sums/"))
    _provenance(results, "01_a", [sums[0], ckpt[0]])
    _provenance(results, "02_b", [ckpt[0], "toy_sums/" + "0" * 24])  # an entry since removed: ignored
    keep = {sums[0], ckpt[0]}
    assert main(["cache", "prune", "--unused", "--results", str(results), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"keeping what the book in {results} (2 chapters; profile quick) used" in out
    assert f"would remove {len(found) - 2} entries" in out and _files(root)  # a dry run
    assert main(["cache", "list", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    groups = out[out.index("by chapter of"):].splitlines()[1:4]
    assert {line[:31].strip(): line.split()[-3] for line in groups} == {
        "01_a": "2", "02_b": "1", cache_admin.UNUSED: str(len(found) - 2)}  # the shared checkpoint under both
    report = cache_admin.prune(unused_by=cache_admin.book_record(results), kinds=["toy_sums"], dry_run=False)
    assert {e.name for e in report.removed} == set(sums) - keep  # with --kind: unused AND of that kind
    assert set(e.name for e in cache_admin.entries()) == set(found) - (set(sums) - keep)
    cache_admin.prune(unused_by=cache_admin.book_record(results), dry_run=False)
    assert {e.name for e in cache_admin.entries()} == keep


def test_prune_unused_refuses_when_the_book_does_not_say_what_it_used(root, tmp_path, capsys):
    before = _files(root)
    results = tmp_path / "results"
    assert main(["cache", "prune", "--unused", "--results", str(results)]) == 2  # no book built there
    assert "no chapter's provenance file is there" in capsys.readouterr().err
    _provenance(results, "01_a", [])
    _provenance(results, "04_old", None)  # written before chapters recorded their entries
    assert main(["cache", "prune", "--unused", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "chapters 04_old record no cache entries" in err and "make book" in err and "--kind" in err
    assert _files(root) == before


def test_prune_leaves_files_that_are_not_entries_and_never_follows_links(root, tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "a.npz").write_bytes(b"keep me")
    (root / "README.txt").write_text("notes")
    (root / "toy_sums" / "notes.txt").write_text("mine")
    (root / "toy_sums" / f"{'a' * 24}.npz").symlink_to(outside / "a.npz")
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    assert {p.name for p in cache_admin.foreign(root)} == {"README.txt", "notes.txt", "a" * 24 + ".npz",
                                                           "elsewhere"}
    report = cache_admin.prune(root, everything=True, dry_run=False)
    assert len(report.removed) == 7 and not report.failed
    assert _files(outside) == {"a.npz": 7}
    assert set(_files(root)) == {"README.txt", "toy_sums/notes.txt", f"toy_sums/{'a' * 24}.npz", "elsewhere"}


def test_a_folder_that_is_not_a_cache_is_refused(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True)
    (home / "projects" / "thesis.tex").write_text("\\documentclass{article}")
    (home / "notes.txt").write_text("x")
    before = _files(home)
    for call in (lambda: cache_admin.entries(home), lambda: cache_admin.prune(home, everything=True, dry_run=False)):
        with pytest.raises(cache_admin.CacheRootError, match=r"\$ATTNBOOK_CACHE"):
            call()
    with pytest.raises(cache_admin.CacheRootError, match="no attnbook cache"):
        cache_admin.entries(tmp_path / "missing")
    monkeypatch.setenv("ATTNBOOK_CACHE", str(home))
    assert main(["cache", "prune", "--all"]) == 2
    err = capsys.readouterr().err
    assert "does not look like an attnbook cache" in err and f"$ATTNBOOK_CACHE to the attnbook cache folder (now: {home})" in err
    assert _files(home) == before


# ---------------------------------------------------------------------------------------------- the contract
def test_layout_constants_agree_with_the_writers():
    import inspect
    import re

    source = inspect.getsource(checkpoints)  # the file names are declared once, in core.cache_admin
    assert not re.search(r"^(COMPLETE_FILE|WEIGHTS_FILE|CHECKPOINTS_FOLDER)\s*=", source, re.M)
    assert cache_admin.COMPLETE_FILE == checkpoints.COMPLETE_FILE
    assert cache_admin.WEIGHTS_FILE == checkpoints.WEIGHTS_FILE
    assert len(cache.key({"x": 1})) == 24
    assert checkpoints.checkpoints_root().name == cache_admin.CHECKPOINTS_FOLDER


def test_the_command_line_entry_point_stays_light(root):
    code = ("import sys; from attnbook.chapters.cli import main\n"
            "assert 'attnbook.core.cache_admin' not in sys.modules\n"
            "rc = main(['cache', 'size'])\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'torch', 'pandas'})\n"
            "print('heavy:', heavy); sys.exit(rc)")
    env = {**os.environ, "ATTNBOOK_CACHE": str(root)}
    done = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "7 entries" in done.stdout and "heavy: []" in done.stdout


def test_a_cache_with_only_the_readers_datasets_is_still_a_cache(tmp_path):
    """The data readers keep their corpora as saved datasets under ``<cache>/datasets/`` (attnbook.data.hf): such a
    cache is read, not refused as a stranger's folder, and the datasets are left alone."""
    folder = tmp_path / "cache" / cache_admin.DATASETS_FOLDER / "glue-0123abcd"
    folder.mkdir(parents=True)
    (folder / "data-00000-of-00001.arrow").write_bytes(b"x" * 10)
    assert cache_admin.entries(tmp_path / "cache") == []


def test_the_code_hashes_file_is_not_an_entry_and_is_left_alone(tmp_path, monkeypatch):
    """The module hashes :mod:`attnbook.core.code_keys` remembers sit in the cache root: a cache holding only them is
    still a cache, and pruning every entry keeps them."""
    from attnbook.core import code_keys

    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    memo = tmp_path / "cache" / code_keys.MEMO_FILE
    memo.parent.mkdir(parents=True)
    memo.write_text("{}")
    assert cache_admin.entries(memo.parent) == []
    cache.save_arrays("toy_sums", {"x": 1}, {"x": np.zeros(1)})
    cache_admin.prune(memo.parent, everything=True, dry_run=False)
    assert cache_admin.entries(memo.parent) == [] and memo.read_text() == "{}"


def test_entries_of_code_that_changed_are_pruned_as_unused_after_the_next_build(root, tmp_path):
    """A change of code a memoized function runs names new entries; the build after it records only those, so
    ``attnbook cache prune --unused`` removes the entries the old code wrote."""
    stale = {**toy_sum.parts([3, 4, 5]), "code": "0" * 16}  # the same call, keyed on other code
    cache.save_arrays("toy_sums", stale, {"sum": np.asarray(12), "values": np.asarray([3, 4, 5])})
    cache.forget_used()
    toy_sum([3, 4, 5])  # the build: reads the entry its current code names
    results = tmp_path / "results"
    _provenance(results, "01_a", cache.used_entries())
    report = cache_admin.prune(unused_by=cache_admin.book_record(results), kinds=["toy_sums"], dry_run=False)
    assert f"toy_sums/{cache.key(stale)}" in {e.name for e in report.removed}
    assert f"toy_sums/{toy_sum.key([3, 4, 5])}" in {e.name for e in cache_admin.entries()}
